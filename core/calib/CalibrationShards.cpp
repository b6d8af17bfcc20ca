#include "calib/CalibrationShards.h"

#include "dist/RankGroup.h"
#include "quant/MinMaxObserver.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>

namespace qs {

namespace {

// A tensor's values as doubles (float, bfloat16 and half all convert exactly) and back.
std::vector<double> asDoubles(const at::Tensor& t) {
    const at::Tensor d = t.detach().to(at::kCPU, at::kDouble).contiguous();
    return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

at::Tensor fromDoubles(const std::vector<double>& v, const at::Tensor& like) {
    return at::tensor(at::ArrayRef<double>(v), at::kDouble)
        .reshape(like.sizes())
        .to(like.device(), like.scalar_type());
}

bool mergeable(const quant::QuantSpec& spec) {
    if (spec.isDynamic)
        return true;
    const std::unique_ptr<quant::Observer> observer = quant::Observer::create(spec);
    const auto* minMax = dynamic_cast<const quant::MinMaxObserver*>(observer.get());
    return minMax && !minMax->keepsLatestOnly();
}

bool mergeable(const quant::QuantScheme& scheme) {
    return (!scheme.input || mergeable(*scheme.input)) &&
           (!scheme.output || mergeable(*scheme.output));
}

void mergeRange(RankGroup& group, quant::MinMaxObserver& observer) {
    quant::Range r = observer.range();
    if (r.min.defined())
        r.min = fromDoubles(group.min(asDoubles(r.min)), r.min);
    if (r.max.defined())
        r.max = fromDoubles(group.max(asDoubles(r.max)), r.max);
    if (r.globalAmax.defined())
        r.globalAmax = fromDoubles(group.max(asDoubles(r.globalAmax)), r.globalAmax);
    observer.setRange(std::move(r));
}

void mergeQuantizer(RankGroup& group, const std::string& layer, ActivationQuantizer& q) {
    if (!q.needsObservation())
        return;
    auto* minMax = dynamic_cast<quant::MinMaxObserver*>(q.observer());
    if (!minMax || minMax->keepsLatestOnly())
        throw Error(layer, "observer",
                    "a distributed run merges min/max observers across ranks only; this "
                    "layer's static " +
                        quant::dataTypeName(q.spec().dtype) +
                        " observer (percentile, MSE or a cast) is not merged yet: calibrate in "
                        "one process");
    if (!minMax->hasObserved())
        throw Error(layer, "observer", "this rank observed no calibration batch");
    mergeRange(group, *minMax);
}

void checkShardCount(const CalibrationShards& shards, size_t held, const std::string& what,
                     bool noneAllowed = false) {
    if (held != shards.mine.size() || (held == 0 && !noneAllowed))
        throw Error(what, "calibration",
                    "this rank holds " + std::to_string(held) + " partial sums for its " +
                        std::to_string(shards.mine.size()) +
                        " calibration batches (a layer that does not see every batch, such as "
                        "a routed expert, cannot be combined across ranks yet)");
}

// The shards' values in shard order, handed to `take(shard, values, n)` on every rank. Round k
// holds shards kN .. kN+N-1, one per rank: this rank's k-th shard is kN + rank. `part(k)` gives
// this rank's k-th shard's values; every rank's length travels first when `sameLength` is not
// promised (a round then pads to its longest).
void inShardOrder(const CalibrationShards& shards, size_t held,
                  const std::function<std::vector<double>(size_t)>& part, bool sameLength,
                  const std::function<void(int64_t, const double*, size_t)>& take) {
    RankGroup& group = *shards.group;
    const int ranks = group.size();
    const int64_t rounds = (shards.count + ranks - 1) / ranks;
    size_t fixed = 0;
    std::vector<double> all;
    for (int64_t k = 0; k < rounds; ++k) {
        std::vector<double> mine = size_t(k) < held ? part(size_t(k)) : std::vector<double>{};
        std::vector<double> lengths;
        if (sameLength) {
            if (k == 0)
                fixed = mine.size();
            lengths.assign(size_t(ranks), double(fixed));
            mine.resize(fixed, 0.0); // a rank past its last shard sends zeros
        } else {
            const double length = double(mine.size());
            lengths.resize(size_t(ranks));
            group.allGather(&length, 1, lengths.data());
        }
        const size_t longest = size_t(*std::max_element(lengths.begin(), lengths.end()));
        mine.resize(longest, 0.0);
        all.resize(size_t(ranks) * longest);
        group.allGather(mine.data(), longest, all.data());
        for (int r = 0; r < ranks && k * ranks + r < shards.count; ++r)
            take(k * ranks + r, all.data() + size_t(r) * longest, size_t(lengths[size_t(r)]));
    }
}

} // namespace

at::Tensor sumInShardOrder(const CalibrationShards& shards, const std::vector<at::Tensor>& mine,
                           const std::string& what) {
    checkShardCount(shards, mine.size(), what);
    const at::Tensor& like = mine.front();
    const size_t n = size_t(like.numel());
    at::Tensor total;
    inShardOrder(
        shards, mine.size(),
        [&](size_t k) {
            std::vector<double> part = asDoubles(mine[k]);
            if (part.size() != n)
                throw Error(what, "calibration", "partial sums of different sizes");
            return part;
        },
        /*sameLength=*/true,
        [&](int64_t, const double* values, size_t) {
            // The first taken as it is, the others added in shard order.
            const at::Tensor p =
                at::from_blob(const_cast<double*>(values), like.sizes(), at::kDouble)
                    .to(like.scalar_type(), false, true);
            total = total.defined() ? total + p : p;
        });
    return total.to(like.device());
}

std::vector<std::vector<double>> gatherInShardOrder(const CalibrationShards& shards,
                                                    const std::vector<std::vector<double>>& mine,
                                                    const std::string& what) {
    checkShardCount(shards, mine.size(), what, /*noneAllowed=*/true);
    std::vector<std::vector<double>> all(size_t(shards.count));
    inShardOrder(
        shards, mine.size(), [&](size_t k) { return mine[k]; }, /*sameLength=*/false,
        [&](int64_t shard, const double* values, size_t n) {
            all[size_t(shard)].assign(values, values + n);
        });
    return all;
}

bool observersMerge(const Recipe& recipe) {
    bool ok = !recipe.global || mergeable(*recipe.global);
    for (const LayerOverride& o : recipe.layerOverrides)
        ok = ok && mergeable(o.scheme);
    for (const auto& [kind, scheme] : recipe.layerTypeOverrides)
        ok = ok && mergeable(scheme);
    return ok && (!recipe.kvCache || mergeable(*recipe.kvCache));
}

std::vector<at::Tensor> broadcastFrom(const CalibrationShards& shards, int root,
                                      const std::vector<at::Tensor>& tensors) {
    RankGroup& group = *shards.group;
    const bool sends = group.rank() == root;
    // The header: per tensor whether it is defined, its dtype and its shape.
    std::vector<double> header;
    std::vector<double> payload;
    if (sends)
        for (const at::Tensor& t : tensors) {
            header.push_back(t.defined() ? 1 : 0);
            if (!t.defined())
                continue;
            header.push_back(double(int(t.scalar_type())));
            header.push_back(double(t.dim()));
            for (const int64_t d : t.sizes())
                header.push_back(double(d));
            const std::vector<double> values = asDoubles(t);
            payload.insert(payload.end(), values.begin(), values.end());
        }
    double sizes[2] = {double(header.size()), double(payload.size())};
    group.broadcast(sizes, 2, root);
    header.resize(size_t(sizes[0]));
    payload.resize(size_t(sizes[1]));
    group.broadcast(header.data(), header.size(), root);
    group.broadcast(payload.data(), payload.size(), root);

    std::vector<at::Tensor> out;
    size_t h = 0, p = 0;
    while (h < header.size()) {
        if (header[h++] == 0) {
            out.emplace_back();
            continue;
        }
        const auto type = at::ScalarType(int(header[h++]));
        const int64_t dims = int64_t(header[h++]);
        std::vector<int64_t> shape(static_cast<size_t>(dims));
        int64_t numel = 1;
        for (int64_t& d : shape) {
            d = int64_t(header[h++]);
            numel *= d;
        }
        out.push_back(
            at::tensor(at::ArrayRef<double>(payload.data() + p, size_t(numel)), at::kDouble)
                .reshape(shape)
                .to(type));
        p += size_t(numel);
    }
    return out;
}

int64_t sumOverRanks(const CalibrationShards& shards, int64_t mine) {
    // Counts below 2^53 add exactly in double.
    return int64_t(shards.group->sum({double(mine)}).front());
}

void mergeObservers(const CalibrationShards& shards, std::vector<LayerPlan>& plans) {
    for (LayerPlan& p : plans) {
        if (p.input)
            mergeQuantizer(*shards.group, p.name, *p.input);
        if (p.output)
            mergeQuantizer(*shards.group, p.name, *p.output);
    }
}

} // namespace qs

#include "calib/CalibrationShards.h"

#include "dist/RankGroup.h"
#include "quant/MinMaxObserver.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/ATen.h>

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

} // namespace

at::Tensor sumInShardOrder(const CalibrationShards& shards, const std::vector<at::Tensor>& mine,
                           const std::string& what) {
    if (mine.size() != shards.mine.size() || mine.empty())
        throw Error(what, "calibration",
                    "this rank holds " + std::to_string(mine.size()) + " partial sums for its " +
                        std::to_string(shards.mine.size()) +
                        " calibration batches (a layer that does not see every batch, such as "
                        "a routed expert, cannot be combined across ranks yet)");
    RankGroup& group = *shards.group;
    const int ranks = group.size();
    const at::Tensor& like = mine.front();
    const int64_t n = like.numel();
    std::vector<double> all(size_t(ranks) * size_t(n));
    at::Tensor total;
    // Round k holds shards kN .. kN+N-1, one per rank: this rank's k-th shard is kN + rank.
    const int64_t rounds = (shards.count + ranks - 1) / ranks;
    for (int64_t k = 0; k < rounds; ++k) {
        std::vector<double> part = size_t(k) < mine.size() ? asDoubles(mine[size_t(k)])
                                                           : std::vector<double>(size_t(n), 0.0);
        if (part.size() != size_t(n))
            throw Error(what, "calibration", "partial sums of different sizes");
        group.allGather(part.data(), size_t(n), all.data());
        for (int r = 0; r < ranks && k * ranks + r < shards.count; ++r) {
            const at::Tensor p =
                at::from_blob(all.data() + size_t(r) * size_t(n), like.sizes(), at::kDouble)
                    .to(like.scalar_type(), false, true);
            total = total.defined() ? total + p : p;
        }
    }
    return total.to(like.device());
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

#include "dist/RankGroup.h"

#include "util/Error.h"

#include <ATen/ATen.h>

#include <algorithm>

#ifdef QS_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace qs {

#ifdef QS_WITH_GLOO
struct RankGroup::Impl {
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
};
#else
struct RankGroup::Impl {};
#endif

RankGroup::RankGroup(LaunchEnvironment env, std::unique_ptr<Impl> impl)
    : m_env(std::move(env)), m_impl(std::move(impl)) {}

RankGroup::~RankGroup() = default;

bool RankGroup::available() {
#ifdef QS_WITH_GLOO
    return true;
#else
    return false;
#endif
}

std::shared_ptr<RankGroup> RankGroup::join(const LaunchEnvironment& env,
                                           std::chrono::seconds timeout) {
    auto impl = std::make_unique<Impl>();
    if (env.worldSize == 1)
        return std::shared_ptr<RankGroup>(new RankGroup(env, std::move(impl)));
    const std::string where = env.masterAddr + ":" + std::to_string(env.masterPort);
#ifdef QS_WITH_GLOO
    try {
        c10d::TCPStoreOptions options;
        options.port = uint16_t(env.masterPort);
        options.isServer = env.rank == 0;
        options.numWorkers = size_t(env.worldSize);
        options.waitWorkers = true;
        options.timeout = timeout;
        impl->store = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, options);
        auto gloo = c10d::ProcessGroupGloo::Options::create(timeout);
        // Local ranks (a loopback master) talk over loopback; across machines each rank binds
        // to the address its own hostname resolves to, as torch.distributed does by default.
        const bool loopback = env.masterAddr == "127.0.0.1" || env.masterAddr == "localhost";
        gloo->devices.push_back(loopback
                                    ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                    : c10d::ProcessGroupGloo::createDefaultDevice());
        impl->group =
            c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, env.rank, env.worldSize, gloo);
    } catch (const std::exception& e) {
        throw Error("distributed run", where,
                    "rank " + std::to_string(env.rank) + " of " + std::to_string(env.worldSize) +
                        " could not join the group within " + std::to_string(timeout.count()) +
                        " s (is rank 0 running, is the port free?): " + e.what());
    }
    return std::shared_ptr<RankGroup>(new RankGroup(env, std::move(impl)));
#else
    (void)timeout;
    throw Error("distributed run", where,
                "this build has no Gloo (c10d::ProcessGroupGloo): build against Debian's "
                "LibTorch with libgloo-dev installed");
#endif
}

std::vector<double> RankGroup::reduce(const std::vector<double>& values, Reduction op) {
    if (size() == 1 || values.empty())
        return values;
#ifdef QS_WITH_GLOO
    at::Tensor t = at::tensor(at::ArrayRef<double>(values), at::kDouble);
    std::vector<at::Tensor> tensors{t};
    c10d::AllreduceOptions options;
    options.reduceOp = op == Reduction::Sum   ? c10d::ReduceOp::SUM
                       : op == Reduction::Min ? c10d::ReduceOp::MIN
                                              : c10d::ReduceOp::MAX;
    collective("reduce", [&] { m_impl->group->allreduce(tensors, options)->wait(); });
    const double* p = t.data_ptr<double>();
    return std::vector<double>(p, p + t.numel());
#else
    (void)op;
    throw Error("distributed run", "reduce", "this build has no Gloo");
#endif
}

std::vector<double> RankGroup::sum(const std::vector<double>& values) {
    return reduce(values, Reduction::Sum);
}

std::vector<double> RankGroup::min(const std::vector<double>& values) {
    return reduce(values, Reduction::Min);
}

std::vector<double> RankGroup::max(const std::vector<double>& values) {
    return reduce(values, Reduction::Max);
}

double RankGroup::max(double value) {
    return max(std::vector<double>{value}).front();
}

void RankGroup::allGather(const double* mine, size_t n, double* all) {
    if (size() == 1 || n == 0) {
        std::copy(mine, mine + n, all);
        return;
    }
#ifdef QS_WITH_GLOO
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    std::vector<at::Tensor> input{
        at::from_blob(const_cast<double*>(mine), {int64_t(n)}, opts).clone()};
    std::vector<std::vector<at::Tensor>> output(1);
    for (int r = 0; r < size(); ++r)
        output[0].push_back(at::from_blob(all + size_t(r) * n, {int64_t(n)}, opts));
    collective("gather", [&] { m_impl->group->allgather(output, input)->wait(); });
#else
    throw Error("distributed run", "gather", "this build has no Gloo");
#endif
}

void RankGroup::broadcast(double* data, size_t n, int root) {
    if (size() == 1 || n == 0)
        return;
#ifdef QS_WITH_GLOO
    std::vector<at::Tensor> tensors{
        at::from_blob(data, {int64_t(n)}, at::TensorOptions().dtype(at::kDouble))};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    collective("broadcast", [&] { m_impl->group->broadcast(tensors, options)->wait(); });
#else
    (void)data;
    (void)root;
    throw Error("distributed run", "broadcast", "this build has no Gloo");
#endif
}

void RankGroup::collective(const char* what, const std::function<void()>& body) {
    try {
        body();
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        // Gloo says what the socket saw (a peer that closed, a timeout), not which rank is gone:
        // the launcher (--nproc) names the rank whose process ended.
        throw Error("distributed run", what,
                    "rank " + std::to_string(rank()) + " of " + std::to_string(size()) +
                        " lost the other ranks (one died, hung past --dist-timeout or failed): " +
                        e.what());
    }
}

} // namespace qs

#include "dist/RankGroup.h"

#include "util/Error.h"

#include <ATen/ATen.h>

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

std::vector<double> RankGroup::sum(const std::vector<double>& values) {
    if (size() == 1 || values.empty())
        return values;
#ifdef QS_WITH_GLOO
    at::Tensor t = at::tensor(at::ArrayRef<double>(values), at::kDouble);
    std::vector<at::Tensor> tensors{t};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    m_impl->group->allreduce(tensors, options)->wait();
    const double* p = t.data_ptr<double>();
    return std::vector<double>(p, p + t.numel());
#else
    throw Error("distributed run", "sum", "this build has no Gloo");
#endif
}

double RankGroup::max(double value) {
    if (size() == 1)
        return value;
#ifdef QS_WITH_GLOO
    at::Tensor t = at::full({1}, value, at::kDouble);
    std::vector<at::Tensor> tensors{t};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MAX;
    m_impl->group->allreduce(tensors, options)->wait();
    return t.item<double>();
#else
    throw Error("distributed run", "max", "this build has no Gloo");
#endif
}

} // namespace qs

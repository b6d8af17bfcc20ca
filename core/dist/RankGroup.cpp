#include "dist/RankGroup.h"

#include "util/Error.h"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>

#if defined(QS_WITH_GLOO) || defined(QS_WITH_NCCL)
#define QS_WITH_C10D 1
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#ifdef QS_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef QS_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace qs {

// The joined backend, if any, and the device its tensors live on (the CPU for Gloo, this rank's
// GPU for NCCL). The collectives take host doubles: for NCCL they go to the GPU and back, one
// copy each way, which the figures they carry (ranges, Hessian parts, solved weights) afford.
struct RankGroup::Impl {
    at::Device device{at::kCPU};
    std::string backend = "none";
#ifdef QS_WITH_C10D
    c10::intrusive_ptr<c10d::Store> store;
#endif
#ifdef QS_WITH_GLOO
    c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#ifdef QS_WITH_NCCL
    c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
    ~Impl() {
        if (nccl)
            nccl->shutdown(); // torch.distributed's destroy_process_group()
    }
#endif

    bool joined() const {
        return backend != "none";
    }

    // Calls `f` with the joined process group (both types have the same collectives).
    template <class F> void with(F&& f) {
#ifdef QS_WITH_NCCL
        if (nccl)
            return f(*nccl);
#endif
#ifdef QS_WITH_GLOO
        if (gloo)
            return f(*gloo);
#endif
        (void)f;
        throw Error("distributed run", "collective", "no process group was joined");
    }

    // `host` on the backend's device, and back: the same tensor on the CPU.
    at::Tensor there(const at::Tensor& host) const {
        return device.is_cpu() ? host : host.to(device);
    }
    static void back(at::Tensor& host, const at::Tensor& there) {
        if (!there.is_same(host))
            host.copy_(there);
    }
};

namespace {

// What went wrong in words: c10's errors append a C++ backtrace to what(), which helps nobody
// reading a launch error.
std::string plainWords(const std::exception& e) {
    if (const auto* c10 = dynamic_cast<const c10::Error*>(&e))
        return c10->what_without_backtrace();
    return e.what();
}

} // namespace

#ifdef QS_WITH_C10D
namespace {

// How long a rank waits for torchrun's agent's store to answer its first request. The agent is
// up before it starts the ranks, so an answer is immediate when the two speak one protocol.
constexpr std::chrono::seconds kAgentProbe{10};

// One request to the store torchrun's agent serves. The store's wire protocol changes between
// PyTorch releases (a LibTorch 1.13 client gets no answer from a 2.x agent), so a torchrun from
// another PyTorch than this build's LibTorch fails here, with the two ways out.
void probeAgentStore(c10d::Store& store, const std::string& address, const std::string& me) {
    try {
        // A wait (get) is the request whose reply LibTorch bounds by the store's timeout: a
        // reply that never comes to an `add` would block for ever.
        const std::string key = "probe/" + me;
        store.set(key, std::vector<uint8_t>{1});
        store.get(key);
    } catch (const std::exception& e) {
        throw Error("distributed run", address,
                    me +
                        ": torchrun's agent serves the rendezvous store here "
                        "(TORCHELASTIC_USE_AGENT_STORE=True) but did not answer this build's "
                        "LibTorch within " +
                        std::to_string(kAgentProbe.count()) +
                        " s, as happens when torchrun comes from another PyTorch release. Use "
                        "the torchrun of the PyTorch this build links, or let rank 0 serve its "
                        "own store: TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 torchrun "
                        "--rdzv-backend c10d --rdzv-endpoint HOST:PORT ... (" +
                        plainWords(e) + ")");
    }
}

} // namespace
#endif

RankGroup::RankGroup(LaunchEnvironment env, std::unique_ptr<Impl> impl)
    : m_env(std::move(env)), m_impl(std::move(impl)) {}

RankGroup::~RankGroup() = default;

bool RankGroup::available() {
#ifdef QS_WITH_C10D
    return true;
#else
    return false;
#endif
}

bool RankGroup::availableOn(const std::string& device) {
#ifdef QS_WITH_GLOO
    (void)device;
    return true;
#elif defined(QS_WITH_NCCL)
    return at::Device(device).is_cuda();
#else
    (void)device;
    return false;
#endif
}

std::string RankGroup::backend() const {
    return m_impl->backend;
}

std::shared_ptr<RankGroup> RankGroup::join(const LaunchEnvironment& env,
                                           std::chrono::seconds timeout,
                                           const std::string& device) {
    auto impl = std::make_unique<Impl>();
    const at::Device where(device);
    const std::string address = env.masterAddr + ":" + std::to_string(env.masterPort);
    const std::string me =
        "rank " + std::to_string(env.rank) + " of " + std::to_string(env.worldSize);
#ifdef QS_WITH_NCCL
    const bool nccl = where.is_cuda();
#else
    const bool nccl = false;
#endif
    if (env.worldSize == 1 && !nccl)
        return std::shared_ptr<RankGroup>(new RankGroup(env, std::move(impl)));
    if (where.is_cuda()) {
        const int gpus = int(at::detail::getCUDAHooks().getNumGPUs());
        const int index = where.has_index() ? where.index() : 0;
        if (index >= gpus)
            throw Error("distributed run", "LOCAL_RANK",
                        me + " computes on GPU " + std::to_string(index) + " (one GPU per local " +
                            "rank) but this machine has " + std::to_string(gpus) +
                            ": start at most " + std::to_string(gpus) + " ranks per node");
    }
#ifdef QS_WITH_C10D
#ifndef QS_WITH_GLOO
    if (!nccl)
        throw Error("distributed run", address,
                    "this build has no Gloo, which ranks on the CPU need (a pip LibTorch ships "
                    "no Gloo headers): compute on CUDA (--device cuda, NCCL) or build against "
                    "Debian's LibTorch with libgloo-dev");
#endif
    try {
        c10d::TCPStoreOptions options;
        options.port = uint16_t(env.masterPort);
        // torchrun's agent already serves a store there: every rank is its client.
        options.isServer = env.rank == 0 && !env.agentStore;
        options.numWorkers = size_t(env.worldSize);
        // Every rank counts itself in and the server waits for all (torch.distributed's
        // default). Not at the agent's store: the count is a request LibTorch does not bound by
        // the timeout, and the agent waits for nobody; the probe below asks first.
        options.waitWorkers = !env.agentStore;
        options.timeout = timeout;
        if (env.agentStore)
            options.timeout = std::min(timeout, kAgentProbe);
        impl->store = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, options);
        if (env.agentStore) {
            // Keys of our own, apart from the agent's and from an earlier restart's.
            impl->store = c10::make_intrusive<c10d::PrefixStore>(
                "quantscope/attempt_" + std::to_string(env.restartAttempt), impl->store);
            probeAgentStore(*impl->store, address, me);
            impl->store->setTimeout(timeout);
        }
        if (nccl) {
#ifdef QS_WITH_NCCL
            auto options = c10d::ProcessGroupNCCL::Options::create();
            options->timeout = timeout;
            impl->device = at::Device(at::kCUDA, where.has_index() ? where.index() : 0);
            impl->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, env.rank,
                                                                     env.worldSize, options);
            impl->nccl->setBoundDeviceId(impl->device);
            // The communicator now, so that a rank that never comes fails the join, not the
            // first collective.
            impl->nccl->eagerConnectSingleDevice(impl->device);
            impl->backend = "nccl";
#endif
        } else {
#ifdef QS_WITH_GLOO
            auto gloo = c10d::ProcessGroupGloo::Options::create(timeout);
            // Local ranks (a loopback master) talk over loopback; across machines each rank
            // binds to the address its own hostname resolves to, as torch.distributed does.
            const bool loopback = env.masterAddr == "127.0.0.1" || env.masterAddr == "localhost";
            gloo->devices.push_back(
                loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                         : c10d::ProcessGroupGloo::createDefaultDevice());
            impl->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, env.rank,
                                                                     env.worldSize, gloo);
            impl->backend = "gloo";
#endif
        }
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        throw Error("distributed run", address,
                    me + " could not join the group (" + (nccl ? "NCCL" : "Gloo") + ") within " +
                        std::to_string(timeout.count()) +
                        " s (is rank 0 running, is the port free?): " + plainWords(e));
    }
    return std::shared_ptr<RankGroup>(new RankGroup(env, std::move(impl)));
#else
    (void)timeout;
    throw Error("distributed run", address,
                "this build has no process group (c10d's Gloo or NCCL): build against Debian's "
                "LibTorch with libgloo-dev installed, or a CUDA LibTorch for NCCL");
#endif
}

std::vector<double> RankGroup::reduce(const std::vector<double>& values, Reduction op) {
    if (!m_impl->joined() || values.empty())
        return values;
#ifdef QS_WITH_C10D
    at::Tensor host = at::tensor(at::ArrayRef<double>(values), at::kDouble);
    std::vector<at::Tensor> tensors{m_impl->there(host)};
    c10d::AllreduceOptions options;
    options.reduceOp = op == Reduction::Sum   ? c10d::ReduceOp::SUM
                       : op == Reduction::Min ? c10d::ReduceOp::MIN
                                              : c10d::ReduceOp::MAX;
    collective("reduce", [&] {
        m_impl->with([&](auto& group) { group.allreduce(tensors, options)->wait(); });
    });
    Impl::back(host, tensors[0]);
    const double* p = host.data_ptr<double>();
    return std::vector<double>(p, p + host.numel());
#else
    (void)op;
    throw Error("distributed run", "reduce", "this build has no process group");
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
    if (!m_impl->joined() || n == 0) {
        std::copy(mine, mine + n, all);
        return;
    }
#ifdef QS_WITH_C10D
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    std::vector<at::Tensor> input{
        m_impl->there(at::from_blob(const_cast<double*>(mine), {int64_t(n)}, opts).clone())};
    std::vector<at::Tensor> hosts;
    std::vector<std::vector<at::Tensor>> output(1);
    for (int r = 0; r < size(); ++r) {
        hosts.push_back(at::from_blob(all + size_t(r) * n, {int64_t(n)}, opts));
        output[0].push_back(m_impl->there(hosts.back()));
    }
    collective("gather",
               [&] { m_impl->with([&](auto& group) { group.allgather(output, input)->wait(); }); });
    for (size_t r = 0; r < hosts.size(); ++r)
        Impl::back(hosts[r], output[0][r]);
#else
    throw Error("distributed run", "gather", "this build has no process group");
#endif
}

void RankGroup::broadcast(double* data, size_t n, int root) {
    if (!m_impl->joined() || n == 0)
        return;
#ifdef QS_WITH_C10D
    at::Tensor host = at::from_blob(data, {int64_t(n)}, at::TensorOptions().dtype(at::kDouble));
    std::vector<at::Tensor> tensors{m_impl->there(host)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    collective("broadcast", [&] {
        m_impl->with([&](auto& group) { group.broadcast(tensors, options)->wait(); });
    });
    Impl::back(host, tensors[0]);
#else
    (void)data;
    (void)root;
    throw Error("distributed run", "broadcast", "this build has no process group");
#endif
}

void RankGroup::collective(const char* what, const std::function<void()>& body) {
    try {
        body();
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        // Gloo says what the socket saw (a peer that closed, a timeout), not which rank is gone:
        // the launcher (--nproc) names the rank whose process ended. (NCCL's watchdog ends a
        // rank stuck past the timeout itself, as under torch.distributed.)
        throw Error("distributed run", what,
                    "rank " + std::to_string(rank()) + " of " + std::to_string(size()) +
                        " lost the other ranks (one died, hung past --dist-timeout or failed): " +
                        plainWords(e));
    }
}

} // namespace qs

#pragma once

#include "dist/LaunchEnvironment.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qs {

// The processes of one distributed run, joined through PyTorch's c10d: a TCPStore at rank 0's
// address (or torchrun's agent's) for the rendezvous, and a process group for the collectives,
// what torchrun, DDP and FSDP use: NCCL when the run computes on CUDA and this build has it (one
// GPU per local rank), Gloo otherwise. Torch-free header: run requests hold it.
class RankGroup {
public:
    // Joins the group `env` describes; every rank must call it. `device` is where this rank
    // computes (parseComputeOptions' spelling): "cuda:N" joins over NCCL on GPU N where this
    // build has NCCL, even a world of one (torchrun --nproc-per-node 1); otherwise Gloo, and a
    // world of one joins nothing. Throws qs::Error naming the master address and port when the
    // rendezvous fails or times out (a rank that never comes, an unreachable master, a port
    // another run holds), or naming what is missing when this build has neither backend.
    static std::shared_ptr<RankGroup> join(const LaunchEnvironment& env,
                                           std::chrono::seconds timeout,
                                           const std::string& device = "cpu");
    ~RankGroup();
    RankGroup(const RankGroup&) = delete;
    RankGroup& operator=(const RankGroup&) = delete;

    int rank() const { return m_env.rank; }
    int size() const { return m_env.worldSize; }

    // Element-wise sum over the ranks, in float64; every rank gets the result. Exact where at
    // most one rank holds a non-zero in each element (x + 0 is x), which is how the runs use it
    // to gather per-shard figures.
    std::vector<double> sum(const std::vector<double>& values);
    // The largest value over the ranks.
    double max(double value);
    // Element-wise minimum and maximum over the ranks: exact (a comparison rounds nothing).
    std::vector<double> min(const std::vector<double>& values);
    std::vector<double> max(const std::vector<double>& values);
    // Every rank's `n` values, rank after rank: `all` holds size() * n doubles.
    void allGather(const double* mine, size_t n, double* all);
    // Rank `root`'s `n` values into every rank's `data`.
    void broadcast(double* data, size_t n, int root);

    // Whether this build can join a group of more than one process (Gloo or NCCL).
    static bool available();
    // Whether ranks computing on `device` can: on the CPU they need Gloo; on CUDA, NCCL or Gloo.
    static bool availableOn(const std::string& device);
    // "gloo" or "nccl": what carries the collectives ("none" for a world of one on the CPU).
    std::string backend() const;

private:
    enum class Reduction { Sum, Min, Max };
    std::vector<double> reduce(const std::vector<double>& values, Reduction op);
    // Runs one collective; a failure of the transport becomes a qs::Error naming this rank.
    void collective(const char* what, const std::function<void()>& body);

    struct Impl;
    RankGroup(LaunchEnvironment env, std::unique_ptr<Impl> impl);

    LaunchEnvironment m_env;
    std::unique_ptr<Impl> m_impl;
};

} // namespace qs

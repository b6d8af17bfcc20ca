#pragma once

#include <map>
#include <string>

namespace qs {

// Where this process stands in a multi-process run, as its launcher said in the environment:
// torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Slurm's srun (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID; the master is MASTER_ADDR or the first host of the job's node
// list) or `quantscope-cli --nproc N` (which sets torchrun's variables). Without any of them: one
// process, rank 0 of 1.
struct LaunchEnvironment {
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 29500;
    std::string launcher = "none"; // "torchrun", "slurm" or "none"
    // torchrun's elastic agent already serves the rendezvous store at MASTER_ADDR:MASTER_PORT
    // (TORCHELASTIC_USE_AGENT_STORE=True): every rank, rank 0 included, joins it as a client,
    // under a key prefix per restart attempt (TORCHELASTIC_RESTART_COUNT).
    bool agentStore = false;
    int restartAttempt = 0;

    bool distributed() const { return worldSize > 1; }

    // The process's own environment.
    static LaunchEnvironment fromEnvironment();
    // `variables` instead of the environment (tests). Throws qs::Error naming the variable and
    // what is wrong with it (not a number, rank outside the world, no master host).
    static LaunchEnvironment fromVariables(const std::map<std::string, std::string>& variables);
};

// The first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03".
std::string firstSlurmHost(const std::string& nodeList);

} // namespace qs

#include "dist/LaunchEnvironment.h"

#include "util/Error.h"

#include <cstdlib>

extern char** environ;

namespace qs {

namespace {

int integerVariable(const std::map<std::string, std::string>& vars, const std::string& name,
                    int fallback, bool required) {
    const auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) {
        if (required)
            throw Error("environment", name, "is not set (the launcher sets it)");
        return fallback;
    }
    size_t used = 0;
    int value = 0;
    try {
        value = std::stoi(it->second, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != it->second.size() || value < 0)
        throw Error("environment", name,
                    "must be a non-negative whole number, not \"" + it->second + "\"");
    return value;
}

std::string textVariable(const std::map<std::string, std::string>& vars, const std::string& name) {
    const auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
}

} // namespace

std::string firstSlurmHost(const std::string& nodeList) {
    // A host is a prefix, optionally followed by a bracketed list of numbers and ranges; hosts
    // are separated by commas outside brackets.
    const size_t end = nodeList.find_first_of(",[");
    if (end == std::string::npos || nodeList[end] == ',')
        return nodeList.substr(0, end);
    const std::string prefix = nodeList.substr(0, end);
    const size_t close = nodeList.find(']', end);
    if (close == std::string::npos)
        throw Error("environment", "SLURM_JOB_NODELIST",
                    "has an unclosed '[' in \"" + nodeList + "\"");
    const std::string inside = nodeList.substr(end + 1, close - end - 1);
    const size_t stop = inside.find_first_of(",-");
    const std::string first = inside.substr(0, stop);
    if (first.empty())
        throw Error("environment", "SLURM_JOB_NODELIST",
                    "has an empty host range in \"" + nodeList + "\"");
    return prefix + first; // the range's own digits keep their zero padding
}

LaunchEnvironment LaunchEnvironment::fromVariables(const std::map<std::string, std::string>& vars) {
    LaunchEnvironment env;
    const bool torchrun = vars.count("WORLD_SIZE") && !textVariable(vars, "WORLD_SIZE").empty();
    const bool slurm = !torchrun && vars.count("SLURM_NTASKS") && vars.count("SLURM_PROCID");
    std::string sizeName = "WORLD_SIZE", rankName = "RANK";
    if (torchrun) {
        env.launcher = "torchrun";
        env.worldSize = integerVariable(vars, "WORLD_SIZE", 1, true);
        env.rank = integerVariable(vars, "RANK", 0, true);
        env.localRank = integerVariable(vars, "LOCAL_RANK", env.rank, false);
        const std::string addr = textVariable(vars, "MASTER_ADDR");
        if (env.worldSize > 1 && addr.empty())
            throw Error("environment", "MASTER_ADDR",
                        "is not set: the ranks need the address of rank 0");
        if (!addr.empty())
            env.masterAddr = addr;
        // torch.distributed honours the flag only for the agent's own address and port, which
        // the agent exports beside it: those are the MASTER_ADDR and MASTER_PORT read here.
        env.agentStore = textVariable(vars, "TORCHELASTIC_USE_AGENT_STORE") == "True" &&
                         !addr.empty() && !textVariable(vars, "MASTER_PORT").empty();
        env.restartAttempt = integerVariable(vars, "TORCHELASTIC_RESTART_COUNT", 0, false);
    } else if (slurm) {
        env.launcher = "slurm";
        sizeName = "SLURM_NTASKS";
        rankName = "SLURM_PROCID";
        env.worldSize = integerVariable(vars, "SLURM_NTASKS", 1, true);
        env.rank = integerVariable(vars, "SLURM_PROCID", 0, true);
        env.localRank = integerVariable(vars, "SLURM_LOCALID", 0, false);
        std::string addr = textVariable(vars, "MASTER_ADDR");
        if (addr.empty()) {
            std::string nodes = textVariable(vars, "SLURM_JOB_NODELIST");
            if (nodes.empty())
                nodes = textVariable(vars, "SLURM_NODELIST");
            if (env.worldSize > 1 && nodes.empty())
                throw Error("environment", "SLURM_JOB_NODELIST",
                            "is not set and neither is MASTER_ADDR: no host for rank 0");
            if (!nodes.empty())
                addr = firstSlurmHost(nodes);
        }
        if (!addr.empty())
            env.masterAddr = addr;
    } else {
        return env;
    }
    env.masterPort = integerVariable(vars, "MASTER_PORT", 29500, false);
    if (env.worldSize < 1)
        throw Error("environment", sizeName, "must be at least 1");
    if (env.rank >= env.worldSize)
        throw Error("environment", rankName,
                    "is " + std::to_string(env.rank) + ", outside a world of " +
                        std::to_string(env.worldSize) + " (" + sizeName + ")");
    if (env.masterPort < 1 || env.masterPort > 65535)
        throw Error("environment", "MASTER_PORT",
                    "must be a TCP port (1-65535), not " + std::to_string(env.masterPort));
    return env;
}

LaunchEnvironment LaunchEnvironment::fromEnvironment() {
    std::map<std::string, std::string> vars;
    for (char** e = environ; e && *e; ++e) {
        const std::string entry(*e);
        const size_t eq = entry.find('=');
        if (eq != std::string::npos)
            vars.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
    return fromVariables(vars);
}

} // namespace qs

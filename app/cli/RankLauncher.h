#pragma once

#include <QCommandLineParser>
#include <QStringList>

#include <nlohmann/json.hpp>

#include <optional>

namespace qs {
struct RunRequest;
}

namespace qs::cli {

// `quantscope-cli <command> ... --nproc N`: starts N copies of this command as the ranks of one
// distributed run on this machine, as torchrun --nproc-per-node would (torchrun's variables,
// loopback master, a free port), and waits for them. Rank 0's output is the command's; the
// others' progress is dropped and their errors print prefixed with their rank. When a rank
// fails the others are stopped and the exit status is the failed rank's. Returns nothing when
// `args` (the command and its options) has no --nproc.
std::optional<int> launchRanksIfAsked(const QStringList& args);

// The group a run joined, for --json output: {"world_size", "rank", "backend"} ("gloo" or
// "nccl"); null for a run in one process.
nlohmann::json distributedJson(const RunRequest& request);

// --dist-timeout, for the commands that split their work across ranks.
void addDistributedOptions(QCommandLineParser& parser);

// Launched as one rank of several (--nproc, torchrun, srun): joins the others into
// `request.ranks`. Returns this process's rank (0 when not distributed): rank 0 alone prints
// and writes.
int joinRanksIfLaunched(const QCommandLineParser& parser, RunRequest& request);

// Refuses (qs::cli::UsageError) a distributed launch of a command that does not split its work
// across ranks yet (only eval and quantize do): N copies of it would only repeat the same work
// and write the same files.
void refuseUnsplitCommandUnderLauncher(const QString& command);

} // namespace qs::cli

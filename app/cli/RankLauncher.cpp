#include "RankLauncher.h"

#include "CliCommon.h"

#include "dist/LaunchEnvironment.h"
#include "dist/RankGroup.h"
#include "run/RunRequest.h"

#include <QCoreApplication>
#include <QProcess>
#include <QProcessEnvironment>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <vector>

namespace qs::cli {

namespace {

// A TCP port nothing listens on now (the kernel's pick for a socket bound to port 0). Rank 0's
// store binds it a moment later; a race with another program is possible and then reported by
// the store as a port in use.
int freeLoopbackPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 29500;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = 29500;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
        port = ntohs(addr.sin_port);
    ::close(fd);
    return port;
}

} // namespace

std::optional<int> launchRanksIfAsked(const QStringList& args) {
    const int at = int(args.indexOf("--nproc"));
    if (at < 0)
        return std::nullopt;
    if (at + 1 >= args.size())
        throw UsageError{"--nproc needs a number of ranks"};
    bool ok = false;
    const int n = args[at + 1].toInt(&ok);
    if (!ok || n < 1 || n > 256)
        throw UsageError{"--nproc must be a number of ranks from 1 to 256, not '" +
                         args[at + 1].toStdString() + "'"};
    refuseUnsplitCommandUnderLauncher(args.value(0));
    if (n > 1 && !RankGroup::available())
        throw UsageError{"--nproc: this build has no process group (distributed runs need "
                         "Debian's LibTorch with libgloo-dev, or a CUDA LibTorch for NCCL)"};
    QStringList rest = args;
    rest.removeAt(at + 1);
    rest.removeAt(at);
    const int port = freeLoopbackPort();
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int r = 0; r < n; ++r) {
        auto p = std::make_unique<QProcess>();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("WORLD_SIZE", QString::number(n));
        env.insert("RANK", QString::number(r));
        env.insert("LOCAL_RANK", QString::number(r));
        env.insert("MASTER_ADDR", "127.0.0.1");
        env.insert("MASTER_PORT", QString::number(port));
        p->setProcessEnvironment(env);
        // Rank 0 speaks for the run; the others' errors still reach the user.
        p->setProcessChannelMode(r == 0 ? QProcess::ForwardedChannels
                                        : QProcess::ForwardedErrorChannel);
        if (r != 0)
            p->setStandardOutputFile(QProcess::nullDevice());
        p->start(QCoreApplication::applicationFilePath(), rest);
        ranks.push_back(std::move(p));
    }
    // Wait for the first rank to end; a failure stops the rest (they would wait on it until
    // their collective timed out).
    int failedRank = -1, failedCode = 0;
    std::vector<bool> done(size_t(n), false);
    for (int finished = 0; finished < n;) {
        for (int r = 0; r < n; ++r) {
            if (done[size_t(r)] || !ranks[size_t(r)]->waitForFinished(50))
                continue;
            done[size_t(r)] = true;
            ++finished;
            QProcess& p = *ranks[size_t(r)];
            const int code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : 128 + 9;
            if (code != 0 && failedRank < 0) {
                failedRank = r;
                failedCode = code;
                for (int o = 0; o < n; ++o)
                    if (!done[size_t(o)])
                        ranks[size_t(o)]->kill();
            }
        }
    }
    if (failedRank >= 0) {
        std::fprintf(stderr,
                     "quantscope-cli %s: error: rank %d of %d %s (exit %d); the other ranks "
                     "were stopped\n",
                     qPrintable(args.value(0)), failedRank, n,
                     ranks[size_t(failedRank)]->exitStatus() == QProcess::NormalExit ? "failed"
                                                                                     : "was killed",
                     failedCode);
        return failedCode == 0 ? kExitFailure : failedCode;
    }
    return 0;
}

nlohmann::json distributedJson(const RunRequest& request) {
    if (!request.ranks)
        return nullptr;
    return {{"world_size", request.ranks->size()},
            {"rank", request.ranks->rank()},
            {"backend", request.ranks->backend()}};
}

void addDistributedOptions(QCommandLineParser& parser) {
    parser.addOption({"dist-timeout",
                      "Seconds a rank of a distributed run waits for the others (joining, "
                      "gathering) before it gives up with an error (default 300).",
                      "SECONDS", "300"});
}

int joinRanksIfLaunched(const QCommandLineParser& parser, RunRequest& request) {
    const LaunchEnvironment launch = LaunchEnvironment::fromEnvironment();
    if (launch.launcher == "none")
        return 0;
    bool ok = false;
    const int timeout = parser.value("dist-timeout").toInt(&ok);
    if (!ok || timeout < 1)
        throw UsageError{"--dist-timeout must be a whole number of seconds, at least 1"};
    // One GPU per local rank, as under torch.distributed: --device cuda means this rank's. Local
    // rank 0 keeps the spelling ("cuda" is GPU 0 there), so that the recipe rank 0 writes names
    // the device as one process's does.
    if (request.device == "cuda" && launch.localRank > 0)
        request.device = "cuda:" + std::to_string(launch.localRank);
    auto group = RankGroup::join(launch, std::chrono::seconds(timeout), request.device);
    // A world of one on the CPU joins nothing and runs as one process.
    if (group->backend() != "none")
        request.ranks = std::move(group);
    return launch.rank;
}

void refuseUnsplitCommandUnderLauncher(const QString& command) {
    if (command == "eval" || command == "quantize" || command == "analyze")
        return;
    throw UsageError{"'" + command.toStdString() +
                     "' does not split its work across ranks yet (only eval, quantize and "
                     "analyze do): "
                     "run it in one process, without --nproc, torchrun or srun tasks"};
}

} // namespace qs::cli

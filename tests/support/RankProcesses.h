// Ranks of a distributed quantscope-cli run started by hand, with torchrun's variables (WORLD_SIZE,
// RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) on a loopback port: for tests that act on one rank
// of a run (kill it, stop it), which --nproc does not hand out.
#pragma once

#include "TestSupport.h"

#include <QProcess>
#include <QProcessEnvironment>
#include <QStringList>

namespace qs::test {

// Starts ranks[0 .. count) of `args` (rank r in ranks[r]) joining at 127.0.0.1:`port`; false
// when one did not start.
inline bool startRanks(QProcess* ranks, int count, int port, const QStringList& args) {
    for (int r = 0; r < count; ++r) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("WORLD_SIZE", QString::number(count));
        env.insert("RANK", QString::number(r));
        env.insert("LOCAL_RANK", QString::number(r));
        env.insert("MASTER_ADDR", "127.0.0.1");
        env.insert("MASTER_PORT", QString::number(port));
        ranks[r].setProcessEnvironment(env);
        ranks[r].start(binDir() + "/quantscope-cli", args);
        if (!ranks[r].waitForStarted())
            return false;
    }
    return true;
}

} // namespace qs::test

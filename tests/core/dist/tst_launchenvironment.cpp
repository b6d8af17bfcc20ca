// Where a process stands in a distributed run, read from torchrun's and Slurm's variables, and
// the plain-words refusals of a bad launch environment (the variable named).
#include "TestMain.h"

#include "dist/LaunchEnvironment.h"
#include "util/Error.h"

#include <QtTest>

using Vars = std::map<std::string, std::string>;

namespace {

// The qs::Error a launch environment is refused with, as "field: message".
QString refusal(const Vars& vars) {
    try {
        qs::LaunchEnvironment::fromVariables(vars);
    } catch (const qs::Error& e) {
        return QString::fromStdString(e.field() + ": " + e.what());
    }
    return {};
}

} // namespace

class TestLaunchEnvironment : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void noLauncherIsOneProcess() {
        const qs::LaunchEnvironment env = qs::LaunchEnvironment::fromVariables({{"HOME", "/x"}});
        QCOMPARE(env.worldSize, 1);
        QCOMPARE(env.rank, 0);
        QVERIFY(!env.distributed());
        QCOMPARE(QString::fromStdString(env.launcher), QString("none"));
    }

    void torchrun() {
        const qs::LaunchEnvironment env =
            qs::LaunchEnvironment::fromVariables({{"WORLD_SIZE", "4"},
                                                  {"RANK", "3"},
                                                  {"LOCAL_RANK", "1"},
                                                  {"MASTER_ADDR", "10.0.0.7"},
                                                  {"MASTER_PORT", "29611"}});
        QCOMPARE(env.worldSize, 4);
        QCOMPARE(env.rank, 3);
        QCOMPARE(env.localRank, 1);
        QCOMPARE(QString::fromStdString(env.masterAddr), QString("10.0.0.7"));
        QCOMPARE(env.masterPort, 29611);
        QVERIFY(env.distributed());
        QCOMPARE(QString::fromStdString(env.launcher), QString("torchrun"));
        QVERIFY(!env.agentStore); // a store of our own: rank 0 serves it
    }

    void torchrunsAgentServesTheStore() {
        Vars vars{{"WORLD_SIZE", "2"},
                  {"RANK", "0"},
                  {"MASTER_ADDR", "127.0.0.1"},
                  {"MASTER_PORT", "29400"},
                  {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                  {"TORCHELASTIC_RESTART_COUNT", "2"}};
        qs::LaunchEnvironment env = qs::LaunchEnvironment::fromVariables(vars);
        QVERIFY(env.agentStore);
        QCOMPARE(env.restartAttempt, 2);
        // Python's str(False), and an agent that exported no port, leave rank 0 serving.
        vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
        QVERIFY(!qs::LaunchEnvironment::fromVariables(vars).agentStore);
        vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
        vars.erase("MASTER_PORT");
        QVERIFY(!qs::LaunchEnvironment::fromVariables(vars).agentStore);
    }

    void slurmTakesTheFirstHostOfTheJob() {
        const qs::LaunchEnvironment env = qs::LaunchEnvironment::fromVariables(
            {{"SLURM_NTASKS", "8"},
             {"SLURM_PROCID", "5"},
             {"SLURM_LOCALID", "1"},
             {"SLURM_JOB_NODELIST", "gpu[007-010,12],login1"}});
        QCOMPARE(env.worldSize, 8);
        QCOMPARE(env.rank, 5);
        QCOMPARE(env.localRank, 1);
        QCOMPARE(QString::fromStdString(env.masterAddr), QString("gpu007"));
        QCOMPARE(env.masterPort, 29500); // torch.distributed's default
        QCOMPARE(QString::fromStdString(env.launcher), QString("slurm"));
        // MASTER_ADDR, when the job script sets it, wins over the node list.
        QCOMPARE(QString::fromStdString(
                     qs::LaunchEnvironment::fromVariables({{"SLURM_NTASKS", "2"},
                                                           {"SLURM_PROCID", "0"},
                                                           {"SLURM_JOB_NODELIST", "n[1-2]"},
                                                           {"MASTER_ADDR", "head"}})
                         .masterAddr),
                 QString("head"));
    }

    void slurmHostLists_data() {
        QTest::addColumn<QString>("list");
        QTest::addColumn<QString>("first");
        QTest::newRow("single") << "node1"
                                << "node1";
        QTest::newRow("plain list") << "a,b,c"
                                    << "a";
        QTest::newRow("range") << "n[03-05]"
                               << "n03";
        QTest::newRow("list in brackets") << "n[9,11-12]"
                                          << "n9";
    }
    void slurmHostLists() {
        QFETCH(QString, list);
        QFETCH(QString, first);
        QCOMPARE(QString::fromStdString(qs::firstSlurmHost(list.toStdString())), first);
    }

    void badEnvironmentsNameTheVariable_data() {
        QTest::addColumn<QStringList>("pairs");
        QTest::addColumn<QString>("named");
        QTest::newRow("rank outside the world")
            << QStringList{"WORLD_SIZE", "2", "RANK", "2", "MASTER_ADDR", "h"} << "RANK: ";
        QTest::newRow("rank not a number")
            << QStringList{"WORLD_SIZE", "2", "RANK", "one", "MASTER_ADDR", "h"} << "RANK: ";
        QTest::newRow("no rank") << QStringList{"WORLD_SIZE", "2", "MASTER_ADDR", "h"} << "RANK: ";
        QTest::newRow("no master")
            << QStringList{"WORLD_SIZE", "2", "RANK", "1"} << "MASTER_ADDR: ";
        QTest::newRow("port out of range")
            << QStringList{"WORLD_SIZE",  "2", "RANK",        "0",
                           "MASTER_ADDR", "h", "MASTER_PORT", "70000"}
            << "MASTER_PORT: ";
        QTest::newRow("slurm without a host")
            << QStringList{"SLURM_NTASKS", "2", "SLURM_PROCID", "0"} << "SLURM_JOB_NODELIST: ";
        QTest::newRow("slurm rank outside")
            << QStringList{"SLURM_NTASKS", "2", "SLURM_PROCID", "7", "MASTER_ADDR", "h"}
            << "SLURM_PROCID: ";
    }
    void badEnvironmentsNameTheVariable() {
        QFETCH(QStringList, pairs);
        QFETCH(QString, named);
        Vars vars;
        for (int i = 0; i + 1 < pairs.size(); i += 2)
            vars[pairs[i].toStdString()] = pairs[i + 1].toStdString();
        const QString why = refusal(vars);
        QVERIFY2(why.startsWith(named), qPrintable(why));
    }
};

QS_TEST_APPLESS_MAIN(TestLaunchEnvironment)
#include "tst_launchenvironment.moc"

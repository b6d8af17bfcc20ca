// qs::Job, what every Engine call returns: its signals arrive on the GUI thread, in order
// (started, progress, the call's result, finished last), only the job's own, and never before
// the caller could connect; jobs run one at a time in call order; a cancelled job ends with
// cancelled() and no result, a failing one with failed(message); the Engine deletes a job after
// its finished().
#include "TestMain.h"
#include "TestSupport.h"
#include "engine/Engine.h"

#include <QDir>
#include <QPointer>
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

namespace {

// The names of a job's signals in the order they arrived, across jobs when several share one
// recorder ("write:started", ...), and whether each arrived on the test's (GUI) thread.
class SignalLog {
public:
    void follow(qs::Job* job, const QString& tag, QObject* context) {
        auto add = [this, tag](const char* name) {
            m_events << tag + QLatin1Char(':') + QLatin1String(name);
            if (QThread::currentThread() != m_thread)
                m_offThread << tag + QLatin1Char(':') + QLatin1String(name);
        };
        QObject::connect(job, &qs::Job::started, context, [add] { add("started"); });
        QObject::connect(job, &qs::Job::progress, context, [add] { add("progress"); });
        QObject::connect(job, &qs::Job::modelOpened, context, [add] { add("modelOpened"); });
        QObject::connect(job, &qs::Job::syntheticModelWritten, context,
                         [add] { add("syntheticModelWritten"); });
        QObject::connect(job, &qs::Job::evaluated, context, [add] { add("evaluated"); });
        QObject::connect(job, &qs::Job::layerReports, context, [add] { add("layerReports"); });
        QObject::connect(job, &qs::Job::sensitivityRow, context, [add] { add("sensitivityRow"); });
        QObject::connect(job, &qs::Job::runFinished, context, [add] { add("runFinished"); });
        QObject::connect(job, &qs::Job::failed, context, [add] { add("failed"); });
        QObject::connect(job, &qs::Job::cancelled, context, [add] { add("cancelled"); });
        QObject::connect(job, &qs::Job::finished, context, [add] { add("finished"); });
    }
    // The events of one job, with consecutive progress signals counted as one (their number
    // depends on the throttle and the machine).
    QStringList of(const QString& tag) const {
        QStringList out;
        for (const QString& e : m_events)
            if (e.startsWith(tag + QLatin1Char(':'))) {
                const QString name = e.mid(tag.size() + 1);
                if (!(name == QLatin1String("progress") && out.value(out.size() - 1) == name))
                    out << name;
            }
        return out;
    }
    const QStringList& all() const { return m_events; }
    const QStringList& offThread() const { return m_offThread; }

private:
    QThread* m_thread = QThread::currentThread();
    QStringList m_events;
    QStringList m_offThread;
};

qs::SyntheticModelOptions smallModel(const QString& directory) {
    qs::SyntheticModelOptions options;
    options.outDir = directory.toStdString();
    options.hiddenSize = 64;
    options.intermediateSize = 128;
    options.numLayers = 2;
    options.numHeads = 4;
    options.numKvHeads = 2;
    options.seed = 1;
    return options;
}

} // namespace

class TestEngineJob : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Two jobs made back to back, connected to only after both calls returned: each sees its own
    // signals, all of them, in order, on the GUI thread, and the second starts after the first
    // has finished.
    void signalsArriveInOrderPerJob() {
        const QString dir =
            qs::test::tempDir(QStringLiteral("enginejob-order")) + QStringLiteral("/model");
        qs::Engine engine;
        qs::Job* write = engine.writeSyntheticModel(smallModel(dir));
        qs::Job* open = engine.openModel(dir);
        QVERIFY(write != open);
        QVERIFY(open->id() > write->id());
        QCOMPARE(write->title(), QStringLiteral("Write synthetic model"));
        QCOMPARE(open->title(), QStringLiteral("Open model"));
        SignalLog log;
        log.follow(write, QStringLiteral("write"), this);
        log.follow(open, QStringLiteral("open"), this);
        QSignalSpy opened(open, &qs::Job::modelOpened);
        QSignalSpy openFinished(open, &qs::Job::finished);
        QTRY_COMPARE_WITH_TIMEOUT(openFinished.count(), 1, 120000);

        QCOMPARE(log.of(QStringLiteral("write")),
                 (QStringList{"started", "progress", "syntheticModelWritten", "finished"}));
        QCOMPARE(log.of(QStringLiteral("open")),
                 (QStringList{"started", "progress", "modelOpened", "finished"}));
        // One job at a time, in call order.
        const int writeDone = log.all().indexOf(QStringLiteral("write:finished"));
        const int openStarted = log.all().indexOf(QStringLiteral("open:started"));
        QVERIFY2(writeDone >= 0 && writeDone < openStarted, qPrintable(log.all().join(' ')));
        QVERIFY2(log.offThread().isEmpty(), qPrintable(log.offThread().join(' ')));
        QCOMPARE(
            QDir::cleanPath(QString::fromStdString(opened[0][0].value<qs::ModelInfo>().directory)),
            QDir::cleanPath(dir));
    }

    // The Engine owns its jobs and deletes each once its finished() has been delivered.
    void finishedJobsAreDeleted() {
        qs::Engine engine;
        QPointer<qs::Job> job = engine.openModel(QStringLiteral("/nonexistent/quantscope-model"));
        QSignalSpy finished(job.data(), &qs::Job::finished);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QTRY_VERIFY(job.isNull());
        QVERIFY(!engine.isBusy());
    }

    // A job cancelled before it ran (the engine thread is busy with the job before it) ends
    // with cancelled() then finished(), without its result; the job before it is unaffected.
    void cancelEndsWithCancelled() {
        const QString base = qs::test::tempDir(QStringLiteral("enginejob-cancel"));
        qs::Engine engine;
        qs::Job* first = engine.writeSyntheticModel(smallModel(base + QStringLiteral("/a")));
        qs::Job* second = engine.writeSyntheticModel(smallModel(base + QStringLiteral("/b")));
        second->cancel();
        QVERIFY(second->isCancelRequested());
        SignalLog log;
        log.follow(first, QStringLiteral("first"), this);
        log.follow(second, QStringLiteral("second"), this);
        QSignalSpy secondFinished(second, &qs::Job::finished);
        QTRY_COMPARE_WITH_TIMEOUT(secondFinished.count(), 1, 120000);
        QCOMPARE(log.of(QStringLiteral("first")),
                 (QStringList{"started", "progress", "syntheticModelWritten", "finished"}));
        // Progress only if the engine thread got to it before cancel() (it has no time to).
        QStringList secondEvents = log.of(QStringLiteral("second"));
        secondEvents.removeAll(QStringLiteral("progress"));
        QCOMPARE(secondEvents, (QStringList{"started", "cancelled", "finished"}));
    }

    // Engine::cancelAll() reaches every job not finished yet: a queued job ends cancelled
    // without running, and the running one ends either cancelled or (if it got there first)
    // with its result, never both. How fast a running job stops is timing, not asserted here
    // (a loaded machine may finish the write before the cancel arrives).
    void cancelAllReachesEveryUnfinishedJob() {
        const QString base = qs::test::tempDir(QStringLiteral("enginejob-cancelall"));
        qs::SyntheticModelOptions options = smallModel(base + QStringLiteral("/a"));
        options.numLayers = 48; // ~430 tensors: usually still running when cancelAll() comes
        qs::Engine engine;
        qs::Job* running = engine.writeSyntheticModel(options);
        qs::Job* queued = engine.writeSyntheticModel(smallModel(base + QStringLiteral("/b")));
        SignalLog log;
        log.follow(running, QStringLiteral("running"), this);
        log.follow(queued, QStringLiteral("queued"), this);
        QSignalSpy finished(queued, &qs::Job::finished);
        engine.cancelAll();
        QVERIFY(queued->isCancelRequested());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 300000);
        QStringList queuedEvents = log.of(QStringLiteral("queued"));
        queuedEvents.removeAll(QStringLiteral("progress"));
        QCOMPARE(queuedEvents, (QStringList{"started", "cancelled", "finished"}));
        QStringList runningEvents = log.of(QStringLiteral("running"));
        runningEvents.removeAll(QStringLiteral("progress"));
        QCOMPARE(runningEvents.size(), 3);
        QCOMPARE(runningEvents.front(), QStringLiteral("started"));
        QVERIFY2(runningEvents[1] == QStringLiteral("cancelled") ||
                     runningEvents[1] == QStringLiteral("syntheticModelWritten"),
                 qPrintable(runningEvents.join(", ")));
        QCOMPARE(runningEvents.back(), QStringLiteral("finished"));
    }

    // A failing job emits failed() with the error's message, then finished(), and no result.
    void failureCarriesTheMessage() {
        qs::Engine engine;
        qs::Job* job = engine.evaluate(qs::EvalRequest{}); // no model has been opened
        SignalLog log;
        log.follow(job, QStringLiteral("eval"), this);
        QSignalSpy failed(job, &qs::Job::failed);
        QSignalSpy finished(job, &qs::Job::finished);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(failed.count(), 1);
        QVERIFY2(failed[0][0].toString().contains(QStringLiteral("no model is open")),
                 qPrintable(failed[0][0].toString()));
        QCOMPARE(log.of(QStringLiteral("eval")), (QStringList{"started", "failed", "finished"}));
    }
};

QS_TEST_MAIN(TestEngineJob)
#include "tst_enginejob.moc"

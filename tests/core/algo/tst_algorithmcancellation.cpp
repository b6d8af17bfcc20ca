// Cancellation inside an algorithm within one block: a run quantizing stories260K with GPTQ or
// AWQ is cancelled from another thread while the algorithm is working on block 0, and must stop
// there (a Cancelled outcome, no further progress, nothing written), not at the end of the block.
#include "StoriesRequest.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "algo/Gptq.h"
#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QDir>
#include <QtTest>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace qs;

namespace {

// The run on a worker thread and what its progress callback saw. The callback stops at the
// `stopAt`-th distinct message of the algorithm in block 0 and waits there until the test's
// thread has asked for cancellation (so the request certainly arrives while the algorithm is
// inside the block, whatever the machine's speed); from then on it answers "stop".
struct CancelledRun {
    std::vector<std::string> algorithmMessages; // distinct "block 0: <algo>: ..." messages
    std::vector<std::string> afterCancel;       // every message after the cancel request
    std::string outcome;                        // "cancelled", "finished" or the error
};

CancelledRun cancelInside(RunRequest req, const std::string& algorithm, size_t stopAt) {
    CancelledRun seen;
    std::mutex mutex;
    std::condition_variable changed;
    bool inside = false;
    std::atomic<bool> cancel{false};
    const std::string prefix = "block 0: " + algorithm + ": ";
    const PipelineProgress progress = [&](double, const std::string& what) {
        if (cancel) {
            seen.afterCancel.push_back(what);
            return false;
        }
        if (what.rfind(prefix, 0) != 0)
            return true;
        if (seen.algorithmMessages.empty() || seen.algorithmMessages.back() != what)
            seen.algorithmMessages.push_back(what);
        if (seen.algorithmMessages.size() < stopAt)
            return true;
        std::unique_lock<std::mutex> lock(mutex);
        inside = true;
        changed.notify_all();
        changed.wait(lock, [&] { return cancel.load(); });
        return false;
    };
    std::thread worker([&] {
        try {
            runQuantization(req, progress);
            seen.outcome = "finished";
        } catch (const Cancelled&) {
            seen.outcome = "cancelled";
        } catch (const std::exception& e) {
            seen.outcome = e.what();
        }
        std::lock_guard<std::mutex> lock(mutex);
        inside = true; // a run that never got there must not leave the test waiting
        changed.notify_all();
    });
    {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return inside; });
        cancel = true; // the request, from this thread
        changed.notify_all();
    }
    worker.join();
    return seen;
}

RunRequest storiesRequest(const std::string& scheme, const std::string& algorithm,
                          const QString& outDir) {
    RunRequest req =
        qs::test::storiesRequest(scheme, {"*down_proj", "*lm_head"}, // 172 inputs: no groups of 32
                                 {{algorithm, nlohmann::json::object()}}, {4, 128});
    req.outDir = outDir.toStdString();
    return req;
}

// Everything in `dir`, hidden entries included (an export is written to ".NAME.partial-..."
// beside its folder and renamed when complete).
QStringList entriesOf(const QString& dir) {
    return QDir(dir).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
}

// `parent`: the fresh folder the run was to write its export into (as parent/out).
void checkStoppedInside(const CancelledRun& run, const std::vector<std::string>& expected,
                        const QString& parent) {
    QCOMPARE(QString::fromStdString(run.outcome), QStringLiteral("cancelled"));
    // The run stopped at the call that saw the request: no further layer, grid point, pass or
    // block reported anything.
    QVERIFY2(run.afterCancel.empty(),
             run.afterCancel.empty() ? "" : run.afterCancel.front().c_str());
    QCOMPARE(run.algorithmMessages, expected);
    QVERIFY2(entriesOf(parent).isEmpty(), qPrintable(entriesOf(parent).join(", ")));
}

} // namespace

class TestAlgorithmCancellation : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::set_num_threads(2); }

    // GPTQ reports before each layer and each block of columns: cancelled when the second
    // layer of block 0 (k_proj) starts, it stops there, after q_proj and before k_proj's
    // Hessian.
    void gptqStopsBetweenLayers() {
        const QString parent = qs::test::tempDir("gptq-cancel");
        const QString out = parent + "/out";
        const CancelledRun run =
            cancelInside(storiesRequest("uint4_wo_32", "gptq", out), "gptq", 2);
        checkStoppedInside(run,
                           {"block 0: gptq: model.layers.0.self_attn.q_proj",
                            "block 0: gptq: model.layers.0.self_attn.k_proj"},
                           parent);
        // The same run left alone writes its export there (so the check above can fail).
        const QString whole = qs::test::tempDir("gptq-whole");
        runQuantization(storiesRequest("uint4_wo_32", "gptq", whole + "/out"), {});
        QCOMPARE(entriesOf(whole), QStringList{QStringLiteral("out")});
    }

    // Within one wide layer: the progress GPTQ calls before each block of columns is where a
    // cancelled run stops (qs::Cancelled, not an error), with the columns after it untouched.
    void gptqStopsBetweenColumnBlocks() {
        at::manual_seed(3);
        const at::Tensor w = at::randn({16, 256});
        const at::Tensor x = at::randn({512, 256});
        const at::Tensor h = algo::gptqHessian({x}, 256, "layer");
        algo::GptqOptions options;
        options.blockSize = 64;
        std::vector<double> calls;
        try {
            algo::gptqQuantize(w, h, quant::resolveScheme("uint4_wo_32").weight, options, "layer",
                               [&](double done) {
                                   calls.push_back(done);
                                   if (calls.size() == 2)
                                       throw Cancelled();
                               });
            QFAIL("GPTQ ignored the cancellation");
        } catch (const Cancelled&) {
        }
        QCOMPARE(calls, (std::vector<double>{0.0, 0.25})); // blocks of 64 of 256 columns
    }

    // AWQ reports before each grid point of its scale search (each one runs the measured
    // module over every calibration batch): cancelled at the third grid point of block 0's
    // first group, it stops there.
    void awqStopsBetweenGridPoints() {
        const QString parent = qs::test::tempDir("awq-cancel");
        const QString out = parent + "/out";
        const CancelledRun run = cancelInside(storiesRequest("uint4_wo_32", "awq", out), "awq", 3);
        checkStoppedInside(run,
                           {"block 0: awq: scale search model.layers.0.self_attn.q_proj (ratio 0)",
                            "block 0: awq: scale search model.layers.0.self_attn.q_proj (ratio "
                            "0.05)",
                            "block 0: awq: scale search model.layers.0.self_attn.q_proj (ratio "
                            "0.1)"},
                           parent);
    }
};

// The stories260K runs take a while on a loaded 2-core machine: Qt's per-function watchdog
// (300 s) is raised to the suite's ctest TIMEOUT (900 s). Nothing asserts a duration.
int main(int argc, char** argv) {
    qputenv("QTEST_FUNCTION_TIMEOUT", "900000");
    QCoreApplication app(argc, argv);
    TestAlgorithmCancellation t;
    return qs::test::runSuite(&t, argc, argv);
}
#include "tst_algorithmcancellation.moc"

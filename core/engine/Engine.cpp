#include "engine/Engine.h"

#include "engine/Runtime.h"
#include "io/GgufFolder.h"
#include "run/QuantizationRun.h"
#include "run/Run.h"
#include "util/Error.h"
#include "util/ErrorText.h"

#include <ATen/Context.h>
#include <c10/core/InferenceMode.h>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

namespace qs {

struct Engine::Private {
    QThread thread;
    QObject* worker = nullptr; // lives in `thread`; queued functors run there in call order
    std::atomic_int running{0};
    int nextJob = 1;
    QString modelDir; // touched on the engine thread only
};

Engine::Engine(QObject* parent) : QObject(parent), d(std::make_unique<Private>()) {
    qRegisterMetaType<qs::ModelInfo>();
    qRegisterMetaType<qs::PerplexityResult>();
    qRegisterMetaType<qs::RunOutcome>();
    qRegisterMetaType<qs::SensitivityRow>();
    qRegisterMetaType<qs::SchemeSearchResult>();
    qRegisterMetaType<std::vector<qs::LayerReport>>();
    qRegisterMetaType<qs::Job*>(); // jobSubmitted, and signals that hand a job on
    configureThreads(0);
    d->worker = new QObject;
    d->worker->moveToThread(&d->thread);
    connect(&d->thread, &QThread::finished, d->worker, &QObject::deleteLater);
    d->thread.setObjectName("quantscope-engine");
    d->thread.start();
}

Engine::~Engine() {
    cancelAll();
    d->thread.quit();
    d->thread.wait();
}

QString Engine::runtimeDescription() {
    return QString::fromStdString(runtimeSummary());
}

QStringList Engine::availableDevices() {
    QStringList devices{QStringLiteral("cpu")};
    if (at::hasCUDA())
        devices << QStringLiteral("cuda");
    return devices;
}

bool Engine::isBusy() const {
    return d->running.load() > 0;
}

// Jobs are children of the Engine until they are deleted after finished(), so the children are
// the jobs not finished yet (and this runs on the Engine's thread, as deletion does).
void Engine::cancelAll() {
    for (Job* job : findChildren<Job*>(QString(), Qt::FindDirectChildrenOnly))
        job->cancel();
}

namespace {

// Emits a signal of `job` on the job's own thread (the Engine's), queued behind everything posted
// to it before, so the receivers see the job's signals in the order the engine thread sent them
// and only once the code that made the job is back in its event loop, connected.
template <class Emit> void emitLater(Job* job, Emit&& emitSignal) {
    QMetaObject::invokeMethod(job, std::forward<Emit>(emitSignal), Qt::QueuedConnection);
}

// Progress reporting for one job: throttled to one signal per 50 ms so a fast loop cannot flood
// the GUI's event queue; returns false once the job is cancelled.
class ProgressReporter {
public:
    explicit ProgressReporter(Job* job) : m_job(job) { m_timer.start(); }
    bool operator()(double fraction, const std::string& message) {
        if (m_timer.elapsed() >= 50 || fraction >= 1.0) {
            m_timer.restart();
            emitLater(m_job, [job = m_job, fraction, text = QString::fromStdString(message)] {
                Q_EMIT job->progress(fraction, text);
            });
        }
        return !m_job->isCancelRequested();
    }

private:
    Job* m_job;
    QElapsedTimer m_timer;
};

} // namespace

Job* Engine::submit(const QString& title, std::function<void(Job*, const ProgressFn&)> work) {
    // Made and parented here, on the Engine's thread, where all its signals are emitted; the
    // engine thread only posts them (emitLater).
    auto* job = new Job(d->nextJob++, title, this);
    d->running.fetch_add(1);
    Q_EMIT jobSubmitted(job);
    QMetaObject::invokeMethod(
        d->worker,
        [d = d.get(), job, title, work = std::move(work)]() {
            emitLater(job, [job, title] { Q_EMIT job->started(title); });
            ProgressReporter reporter(job);
            const ProgressFn report = [&reporter](double f, const std::string& m) {
                return reporter(f, m);
            };
            try {
                if (job->isCancelRequested())
                    throw Cancelled();
                c10::InferenceMode inference; // thread-local: must be set on this thread
                work(job, report);
            } catch (const Cancelled&) {
                emitLater(job, [job] { Q_EMIT job->cancelled(); });
            } catch (const std::exception& e) {
                emitLater(job, [job, message = QString::fromStdString(errorText(e))] {
                    Q_EMIT job->failed(message);
                });
            }
            d->running.fetch_sub(1);
            // Last: after finished() the job goes. The engine thread does not touch the job
            // after posting this.
            emitLater(job, [job] {
                Q_EMIT job->finished();
                job->deleteLater();
            });
        },
        Qt::QueuedConnection);
    return job;
}

Job* Engine::openModel(const QString& directory) {
    return submit(tr("Open %1").arg(QFileInfo(directory).fileName()),
                  [this, directory](Job* job, const ProgressFn& report) {
                      // A GGUF file converts once into a cached checkpoint folder (minutes
                      // for a large model, hence here on the engine's thread).
                      const bool gguf = isGgufPath(directory.toStdString());
                      if (gguf)
                          report(0.0, "dequantizing " + directory.toStdString() + " to fp32");
                      const std::string folder = resolveModelFolder(directory.toStdString());
                      report(0.0, "reading headers of " + folder);
                      const ModelInfo info =
                          inspectModel(folder, gguf ? directory.toStdString() : std::string());
                      d->modelDir = QString::fromStdString(folder);
                      report(1.0, "opened " + directory.toStdString());
                      emitLater(job, [job, info] { Q_EMIT job->modelOpened(info); });
                  });
}

Job* Engine::writeSyntheticModel(const SyntheticModelOptions& options) {
    return submit(tr("Write synthetic model"), [options](Job* job, const ProgressFn& report) {
        qs::writeSyntheticModel(options, [&](int64_t done, int64_t total) {
            return report(double(done) / double(std::max<int64_t>(1, total)),
                          "writing tensor " + std::to_string(done) + " of " +
                              std::to_string(total));
        });
        emitLater(job, [job, directory = QString::fromStdString(options.outDir)] {
            Q_EMIT job->syntheticModelWritten(directory);
        });
    });
}

Job* Engine::evaluate(const EvalRequest& request) {
    return submit(tr("Evaluate perplexity"), [this, request](Job* job, const ProgressFn& report) {
        if (d->modelDir.isEmpty())
            throw Error("evaluate", "", "no model is open");
        const PerplexityResult r = evaluateModelOnText(d->modelDir.toStdString(), request, report);
        emitLater(job, [job, r] { Q_EMIT job->evaluated(r); });
    });
}

Job* Engine::run(const RunRequest& request) {
    return submit(QString::fromStdString(request.title()), [this, request](
                                                               Job* job, const ProgressFn& report) {
        if (d->modelDir.isEmpty())
            throw Error("run", "", "no model is open");
        RunRequest r = request;
        r.modelDir = d->modelDir.toStdString();
        if (r.analyze)
            r.onBlockReports = [job](int block, const std::vector<LayerReport>& layers) {
                emitLater(job, [job, block, layers] { Q_EMIT job->layerReports(block, layers); });
            };
        if (r.sensitivity)
            r.onSensitivityRow = [job](const SensitivityRow& row) {
                emitLater(job, [job, row] { Q_EMIT job->sensitivityRow(row); });
            };
        emitLater(job, [job, outcome = runJob(r, report)] { Q_EMIT job->runFinished(outcome); });
    });
}

Job* Engine::searchRecipe(const SchemeSearchRequest& request) {
    return submit(tr("Design recipe"), [this, request](Job* job, const ProgressFn& report) {
        if (d->modelDir.isEmpty())
            throw Error("recipe search", "", "no model is open");
        SchemeSearchRequest r = request;
        r.run.modelDir = d->modelDir.toStdString();
        emitLater(job, [job, result = runSchemeSearch(r, report)] {
            Q_EMIT job->recipeSearched(result);
        });
    });
}

} // namespace qs

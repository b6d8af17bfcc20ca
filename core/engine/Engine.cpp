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
#include <QMutex>
#include <QThread>

#include <atomic>
#include <functional>
#include <map>
#include <memory>

namespace qs {

struct Engine::Private {
    QThread thread;
    QObject* worker = nullptr; // lives in `thread`; queued functors run there in call order
    QMutex mutex;
    std::map<int, std::shared_ptr<std::atomic_bool>> cancelFlags;
    std::atomic_int running{0};
    int nextJob = 1;
    QString modelDir; // touched on the engine thread only
};

Engine::Engine(QObject* parent) : QObject(parent), d(std::make_unique<Private>()) {
    qRegisterMetaType<qs::ModelInfo>();
    qRegisterMetaType<qs::PerplexityResult>();
    qRegisterMetaType<qs::RunOutcome>();
    qRegisterMetaType<qs::SensitivityRow>();
    qRegisterMetaType<std::vector<qs::LayerReport>>();
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

void Engine::cancel(int job) {
    QMutexLocker lock(&d->mutex);
    auto it = d->cancelFlags.find(job);
    if (it != d->cancelFlags.end())
        it->second->store(true);
}

void Engine::cancelAll() {
    QMutexLocker lock(&d->mutex);
    for (auto& kv : d->cancelFlags)
        kv.second->store(true);
}

namespace {

// Progress reporting for one job: throttled to one signal per 50 ms so a fast loop cannot flood
// the GUI's event queue; returns false once the job is cancelled.
class ProgressReporter {
public:
    ProgressReporter(Engine* engine, int job, std::shared_ptr<std::atomic_bool> cancel)
        : m_engine(engine), m_job(job), m_cancel(std::move(cancel)) {
        m_timer.start();
    }
    bool operator()(double fraction, const std::string& message) {
        if (m_timer.elapsed() >= 50 || fraction >= 1.0) {
            m_timer.restart();
            Q_EMIT m_engine->progress(m_job, fraction, QString::fromStdString(message));
        }
        return !m_cancel->load();
    }

private:
    Engine* m_engine;
    int m_job;
    std::shared_ptr<std::atomic_bool> m_cancel;
    QElapsedTimer m_timer;
};

} // namespace

int Engine::submit(const QString& title, std::function<void(int, const ProgressFn&)> work) {
    Engine* engine = this;
    int job;
    auto flag = std::make_shared<std::atomic_bool>(false);
    {
        QMutexLocker lock(&d->mutex);
        job = d->nextJob++;
        d->cancelFlags[job] = flag;
    }
    d->running.fetch_add(1);
    QMetaObject::invokeMethod(
        d->worker,
        [engine, d = d.get(), job, title, flag, work = std::move(work)]() {
            Q_EMIT engine->jobStarted(job, title);
            ProgressReporter reporter(engine, job, flag);
            const ProgressFn report = [&reporter](double f, const std::string& m) {
                return reporter(f, m);
            };
            try {
                if (flag->load())
                    throw Cancelled();
                c10::InferenceMode inference; // thread-local: must be set on this thread
                work(job, report);
            } catch (const Cancelled&) {
                Q_EMIT engine->cancelled(job);
            } catch (const std::exception& e) {
                Q_EMIT engine->failed(job, QString::fromStdString(errorText(e)));
            }
            {
                QMutexLocker lock(&d->mutex);
                d->cancelFlags.erase(job);
            }
            d->running.fetch_sub(1);
            Q_EMIT engine->jobFinished(job);
        },
        Qt::QueuedConnection);
    return job;
}

int Engine::openModel(const QString& directory) {
    return submit(tr("Open %1").arg(QFileInfo(directory).fileName()),
                  [this, directory](int job, const ProgressFn& report) {
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
                      Q_EMIT modelOpened(job, info);
                  });
}

int Engine::writeSyntheticModel(const SyntheticModelOptions& options) {
    return submit(tr("Write synthetic model"), [this, options](int job, const ProgressFn& report) {
        qs::writeSyntheticModel(options, [&](int64_t done, int64_t total) {
            return report(double(done) / double(std::max<int64_t>(1, total)),
                          "writing tensor " + std::to_string(done) + " of " +
                              std::to_string(total));
        });
        Q_EMIT syntheticModelWritten(job, QString::fromStdString(options.outDir));
    });
}

int Engine::evaluate(const EvalRequest& request) {
    return submit(tr("Evaluate perplexity"), [this, request](int job, const ProgressFn& report) {
        if (d->modelDir.isEmpty())
            throw Error("evaluate", "", "no model is open");
        const PerplexityResult r = evaluateModelOnText(d->modelDir.toStdString(), request, report);
        Q_EMIT evaluated(job, r);
    });
}

int Engine::run(const RunRequest& request) {
    return submit(QString::fromStdString(request.title()), [this, request](
                                                               int job, const ProgressFn& report) {
        if (d->modelDir.isEmpty())
            throw Error("run", "", "no model is open");
        RunRequest r = request;
        r.modelDir = d->modelDir.toStdString();
        if (r.analyze)
            r.onBlockReports = [this, job](int block, const std::vector<LayerReport>& layers) {
                Q_EMIT layerReports(job, block, layers);
            };
        if (r.sensitivity)
            r.onSensitivityRow = [this, job](const SensitivityRow& row) {
                Q_EMIT sensitivityRow(job, row);
            };
        Q_EMIT runFinished(job, runJob(r, report));
    });
}

} // namespace qs

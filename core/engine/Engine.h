#pragma once

#include "engine/Job.h"
#include "eval/PerplexityResult.h"
#include "model/ModelInfo.h"
#include "run/RunRequest.h"
#include "run/SchemeSearch.h"
#include "synth/SyntheticModel.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <string>

namespace qs {

// The only way the GUI reaches the engine. Every call returns at once with a Job (engine/Job.h)
// whose signals carry the progress and the results: the work runs on the engine's own thread (one
// job at a time, in call order) and the signals are queued to the caller's objects as plain value
// types. The Engine owns its jobs and deletes each after its finished(). Torch never appears in
// this header.
class Engine : public QObject {
    Q_OBJECT
public:
    explicit Engine(QObject* parent = nullptr);
    ~Engine() override; // cancels running jobs and waits for the engine thread

    // Emits modelOpened(info).
    Job* openModel(const QString& directory);
    // Emits syntheticModelWritten(directory).
    Job* writeSyntheticModel(const SyntheticModelOptions& options);
    // Emits evaluated(result), on the model last opened.
    Job* evaluate(const EvalRequest& request);
    // A run (run/Run.h) on the model last opened (the request's modelDir is ignored). An
    // analysed run streams layerReports() block by block, a sensitivity study sensitivityRow();
    // all end with runFinished() (or failed / cancelled).
    Job* run(const RunRequest& request);
    // The recipe search (run/SchemeSearch.h) on the model last opened; emits recipeSearched().
    Job* searchRecipe(const SchemeSearchRequest& request);
    // Job::cancel() on every job not finished yet.
    void cancelAll();
    bool isBusy() const;

    // "LibTorch 1.13.1, BLAS: openblas, threads: 2, CUDA: no" for About boxes and --version.
    static QString runtimeDescription();
    // Devices a job can run on: "cpu", plus "cuda" when LibTorch has CUDA and sees a GPU.
    static QStringList availableDevices();

Q_SIGNALS:
    // Every job, as the call that makes it returns (before any of its signals): for observers of
    // all jobs, such as the status bar, which did not start them.
    void jobSubmitted(qs::Job* job);

private:
    using ProgressFn = std::function<bool(double, const std::string&)>;
    // Queues `work` on the engine thread with a throttled, cancellable progress function.
    Job* submit(const QString& title, std::function<void(Job*, const ProgressFn&)> work);

    struct Private;
    std::unique_ptr<Private> d;
};

} // namespace qs

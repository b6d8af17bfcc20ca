#pragma once

#include "eval/PerplexityResult.h"
#include "model/ModelInfo.h"
#include "run/RunRequest.h"
#include "synth/SyntheticModel.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <string>

namespace qs {

// The only way the GUI reaches the engine. Every call returns at once with a job id; the work runs
// on the engine's own thread (one job at a time, in call order) and results arrive as queued
// signals carrying plain value types. Torch never appears in this header.
class Engine : public QObject {
    Q_OBJECT
public:
    explicit Engine(QObject* parent = nullptr);
    ~Engine() override; // cancels running jobs and waits for the engine thread

    int openModel(const QString& directory);
    int writeSyntheticModel(const SyntheticModelOptions& options);
    int evaluate(const EvalRequest& request); // on the model last opened
    // A run (run/Run.h) on the model last opened (the request's modelDir is ignored). An
    // analysed run streams layerReports() block by block, a sensitivity study sensitivityRow();
    // all end with runFinished() (or failed / cancelled).
    int run(const RunRequest& request);
    // Asks the job to stop; it ends with cancelled(job) within one block of work.
    void cancel(int job);
    void cancelAll();
    bool isBusy() const;

    // "LibTorch 1.13.1, BLAS: openblas, threads: 2, CUDA: no" for About boxes and --version.
    static QString runtimeDescription();
    // Devices a job can run on: "cpu", plus "cuda" when LibTorch has CUDA and sees a GPU.
    static QStringList availableDevices();

Q_SIGNALS:
    void jobStarted(int job, const QString& title);
    void progress(int job, double fraction, const QString& message);
    void modelOpened(int job, const qs::ModelInfo& info);
    void syntheticModelWritten(int job, const QString& directory);
    void evaluated(int job, const qs::PerplexityResult& result);
    void layerReports(int job, int block, const std::vector<qs::LayerReport>& layers);
    void sensitivityRow(int job, const qs::SensitivityRow& row);
    void runFinished(int job, const qs::RunOutcome& summary);
    void failed(int job, const QString& message);
    void cancelled(int job);
    void jobFinished(int job);

private:
    using ProgressFn = std::function<bool(double, const std::string&)>;
    // Queues `work` on the engine thread with a throttled, cancellable progress function.
    int submit(const QString& title, std::function<void(int, const ProgressFn&)> work);

    struct Private;
    std::unique_ptr<Private> d;
};

} // namespace qs

Q_DECLARE_METATYPE(qs::ModelInfo)
Q_DECLARE_METATYPE(qs::PerplexityResult)
Q_DECLARE_METATYPE(qs::RunOutcome)
Q_DECLARE_METATYPE(qs::SensitivityRow)
Q_DECLARE_METATYPE(std::vector<qs::LayerReport>)

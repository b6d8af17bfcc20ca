#pragma once

#include "eval/PerplexityResult.h"
#include "model/ModelInfo.h"
#include "run/RunRequest.h"
#include "run/SchemeSearch.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <vector>

namespace qs {

// One piece of work handed to the Engine, as the code that asked for it sees it: whoever starts
// a job connects to the job's own signals, so no consumer has to tell its results from another
// job's. Torch-free (views hold jobs).
//
// Threading: the work runs on the engine's thread, which posts each signal to the job; the job
// emits it on its own thread (the Engine's, the GUI thread) from the event loop, in the order the
// work sent them and never inside the call that made the job, so connecting right after that call
// misses nothing. The Engine owns the job and deletes it (deleteLater) right after finished():
// do not delete it, and hold it in a QPointer if it is kept past that.
class Job : public QObject {
    Q_OBJECT
public:
    // Jobs are made by the Engine only (Engine::openModel, run, ...).
    Job(int id, const QString& title, QObject* parent);

    // Increasing per Engine, for logs and the status bar; results never need it.
    int id() const { return m_id; }
    // "Open stories260K", "Evaluate perplexity", "Analyze", ...
    QString title() const { return m_title; }

    // Asks the job to stop: it ends with cancelled() within one block of work (at once when it
    // has not started). Callable from any thread; a finished job ignores it.
    void cancel() { m_cancelRequested.store(true); }
    bool isCancelRequested() const { return m_cancelRequested.load(); }

Q_SIGNALS:
    // In this order: started, progress*, the result signals of the call (or, when it did not
    // complete, one of failed / cancelled), and finished last in every case.
    void started(const QString& title);
    void progress(double fraction, const QString& message);

    // Results, each emitted by one kind of call only.
    void modelOpened(const qs::ModelInfo& info);          // Engine::openModel
    void syntheticModelWritten(const QString& directory); // Engine::writeSyntheticModel
    void evaluated(const qs::PerplexityResult& result);   // Engine::evaluate
    void layerReports(int block, const std::vector<qs::LayerReport>& layers); // run, analyze
    void sensitivityRow(const qs::SensitivityRow& row);                       // run, sensitivity
    void runFinished(const qs::RunOutcome& outcome);                          // Engine::run
    void recipeSearched(const qs::SchemeSearchResult& result); // Engine::searchRecipe

    void failed(const QString& message);
    void cancelled();
    void finished();

private:
    const int m_id;
    const QString m_title;
    std::atomic_bool m_cancelRequested{false};
};

} // namespace qs

Q_DECLARE_METATYPE(qs::ModelInfo)
Q_DECLARE_METATYPE(qs::PerplexityResult)
Q_DECLARE_METATYPE(qs::RunOutcome)
Q_DECLARE_METATYPE(qs::SensitivityRow)
Q_DECLARE_METATYPE(qs::SchemeSearchResult)
Q_DECLARE_METATYPE(std::vector<qs::LayerReport>)

#pragma once

#include "analysis/LayerReport.h"
#include "eval/PerplexityResult.h"
#include "recipe/Recipe.h"
#include "run/RunRequest.h"

#include <QObject>
#include <QPointer>
#include <QString>

#include <optional>
#include <string>
#include <vector>

class QDockWidget;
class QStatusBar;
class QWidget;

namespace qs {

// The workbench's four runs (its Run menu and buttons); each sets the flags of one RunRequest.
enum class RunKind { Analyze, Quantize, Evaluate, Sensitivity };

class Engine;
class ExportDialog;
class Job;
class RecipeDocument;
class RunPanel;
class WorkbenchPage;

// The one recipe run allowed at a time: builds its RunRequest from the recipe and the evaluation
// panel's device and precision, starts it on the Engine and follows its Job, streaming layer
// reports into the workbench, the evaluation's figures into the evaluation panel (whose Evaluate
// it runs) and the other results into the run panel. A cancelled run puts back what it replaced.
// Kept out of MainWindow so the window only composes pages and menus.
class RunController : public QObject {
    Q_OBJECT
public:
    // `window` parents the export dialog; the status bar gets each run's final message.
    RunController(Engine* engine, RecipeDocument* recipe, WorkbenchPage* workbench,
                  RunPanel* runPanel, QDockWidget* runDock, QStatusBar* statusBar, QWidget* window);

    // The model runs go to (empty: none open). Results of the previous model are cleared.
    void setModelDirectory(const QString& directory);

    // False when no model is open or a run is going already. Quantize needs outDir; its
    // exportTargets (empty: the recipe's own) and the formats' options come from the export
    // dialog.
    bool startRun(RunKind kind, const QString& outDir = QString(),
                  const std::vector<std::string>& exportTargets = {},
                  const ExportOptions& exportOptions = {});
    bool isRunning() const { return !m_job.isNull(); }
    void cancelRun();
    // Quantize…: the export dialog (non-blocking); OK starts the Quantize run.
    ExportDialog* openExportDialog();

    // An Analyze run made since the model was opened: its recipe and its layer reports, kept so
    // that a later run can be compared with it (RunPanel's "Compare with:").
    struct RunRecord {
        int id = 0;
        QString label;      // "Run 2 · int8, 1 excluded · 18:25", in the run panel's list
        QString shortLabel; // "run 2", beside the values in the tree and the chart
        Recipe recipe;
        std::vector<LayerReport> reports;
    };
    const std::vector<RunRecord>& history() const { return m_history; }
    // Shows run `id` beside the current results (-1 or an unknown id: no comparison).
    void compareWith(int id);

Q_SIGNALS:
    // The run's job, as it is started (before any of its signals).
    void runStarted(qs::Job* job);
    void runFinished(const qs::RunOutcome& summary);
    void runFailed(const QString& message);
    void runCancelled();

private:
    void onRunFinished(const RunOutcome& summary);
    void onFailed(const QString& message);
    void onCancelled();

    Engine* m_engine;
    RecipeDocument* m_recipe;
    WorkbenchPage* m_workbench;
    RunPanel* m_runPanel;
    QDockWidget* m_runDock;
    QStatusBar* m_statusBar;
    QWidget* m_window;
    QString m_modelDirectory;

    QPointer<Job> m_job; // the run going, if any
    RunKind m_kind = RunKind::Analyze;
    // What the current run replaces, put back if it is cancelled.
    std::vector<LayerReport> m_reportsBeforeRun;
    std::string m_reportsRecipeHashBeforeRun;
    std::optional<PerplexityResult> m_lastFp, m_lastQuantized;
    std::optional<FidelityReport> m_lastFidelity;
    std::vector<RunRecord> m_history; // this model's Analyze runs, oldest first
    Recipe m_runRecipe;               // the recipe of the run going
    // layerRecipeHash of the document's recipe the run started from (m_runRecipe may add the export
    // targets): what the tree's marks are tied to.
    std::string m_runDocumentHash;
};

} // namespace qs

#pragma once

#include "RecentModelList.h"
#include "run/RunRequest.h"

#include <QElapsedTimer>
#include <QHash>
#include <QMainWindow>
#include <QStringList>

#include <memory>

class QCloseEvent;
class QDockWidget;
class QDragEnterEvent;
class QDropEvent;
class QMenu;
class QProgressBar;
class QStackedWidget;
class QToolButton;

namespace qs {

// The workbench's four runs (its Run menu and buttons); each sets the flags of one RunRequest.
enum class RunKind { Analyze, Quantize, Evaluate, Sensitivity };

class Engine;
class ExportDialog;
class JsonView;
struct ModelInfo;
struct PerplexityResult;
class RecipeDocument;
class RecipePanel;
class RunPanel;
class StartPage;
class WorkbenchPage;

// Composes the start page and the workbench page, the menus and the status bar, and routes every
// request to the one qs::Engine it owns. Engine results arrive as queued signals; nothing here
// waits on the engine.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    static constexpr int MaxRecentModels = 10;

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Starts opening a model folder; the workbench is shown when the engine has read it.
    void openModel(const QString& directory);
    // Opens the built-in demo model, writing it first when it is not there yet.
    void openDemoModel();
    // Where the demo model lives: AppLocalDataLocation/demo-model.
    static QString demoModelDirectory();

    // Default window size and dock sizes, ignoring the saved ones.
    void resetLayout();
    QStringList recentModels() const;

    StartPage* startPage() const { return m_startPage; }
    WorkbenchPage* workbenchPage() const { return m_workbench; }
    bool isWorkbenchShown() const;
    Engine* engine() const { return m_engine.get(); }
    RecipeDocument* recipeDocument() const { return m_recipe; }
    RecipePanel* recipePanel() const { return m_recipePanel; }
    JsonView* recipeJsonView() const { return m_jsonView; }
    RunPanel* runPanel() const { return m_runPanel; }
    QProgressBar* statusProgressBar() const { return m_statusProgress; }
    QDockWidget* recipeDock() const { return m_recipeDock; }
    QDockWidget* runDock() const { return m_runDock; }

    // Replaces the recipe with a recipe file (undoable); a bad file shows an error box with the
    // qs::Error message and returns false, leaving the recipe as it was.
    bool loadRecipe(const QString& path);
    bool saveRecipe(const QString& path);
    // Loads this recipe once the next model is shown (--recipe with MODEL_DIR).
    void loadRecipeAfterOpen(const QString& path) { m_recipeAfterOpen = path; }

    // Runs on the open model with the current recipe; false when no model is open or a run is
    // going already (one run at a time). Quantize needs outDir.
    // Quantize: exportTargets (recipe targets; empty: the recipe's own) and the formats' options
    // come from the export dialog.
    bool startRun(RunKind kind, const QString& outDir = QString(),
                  const std::vector<std::string>& exportTargets = {},
                  const ExportOptions& exportOptions = {});
    bool isRunning() const { return m_runJob >= 0; }
    void cancelRun();
    // Quantize…: the export dialog (non-blocking); OK starts the Quantize run.
    ExportDialog* openExportDialog();

Q_SIGNALS:
    // The workbench shows a freshly opened model.
    void modelShown(const QString& directory);
    // Opening a model (or writing the demo model) failed; the message was shown to the user.
    void modelOpenFailed(const QString& message);
    // A recipe run ended: finished (summary valid), failed or cancelled.
    void runFinished(const qs::RunOutcome& summary);
    void runFailed(const QString& message);
    void runCancelled();
    // loadRecipe failed; the message was shown to the user.
    void recipeLoadFailed(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createMenus();
    void createStatusBar();
    void connectEngine();
    void chooseModelFolder();
    void chooseGgufFile();
    void addRecentModel(const QString& directory);
    void setRecentModels(const QStringList& directories);
    void updateRecentMenu();
    void showError(const QString& title, const QString& message);
    void showAbout();
    void closeModel();
    void showWorkbench(bool show);
    void runEvaluation();
    void updateBusy();
    void createRecipeDocks();
    void createRecipeMenu();
    void chooseRecipeToOpen();
    void chooseRecipeToSave();
    void excludeLayer(const QString& layerName);
    void chooseLayerOverride(const QString& layerName);
    void onRecipeChanged();
    void onLayerReports(int job, int block, const std::vector<LayerReport>& layers);
    void onSensitivityRow(int job, const SensitivityRow& row);
    void onRunFinished(int job, const RunOutcome& summary);
    void placeRecipeDocks();
    void applyRecipeDockLayout();

    void onJobStarted(int job, const QString& title);
    void onProgress(int job, double fraction, const QString& message);
    void onModelOpened(int job, const ModelInfo& info);
    void onSyntheticModelWritten(int job, const QString& directory);
    void onEvaluated(int job, const PerplexityResult& result);
    void onFailed(int job, const QString& message);
    void onCancelled(int job);
    void onJobFinished(int job);

    std::unique_ptr<Engine> m_engine;
    QStackedWidget* m_pages;
    StartPage* m_startPage;
    WorkbenchPage* m_workbench;
    QMenu* m_recentMenu = nullptr;
    RecentModelList m_recent{MaxRecentModels};
    QProgressBar* m_statusProgress = nullptr; // percentage and time left of the latest job
    QElapsedTimer m_statusClock;
    QToolButton* m_statusCancel = nullptr;

    QHash<int, QString> m_jobTitles; // jobs started and not finished yet
    int m_openJob = -1;              // the latest openModel job; older results are ignored
    QString m_openingDirectory;
    int m_demoJob = -1; // writing the demo model
    int m_evalJob = -1;
    QString m_modelDirectory; // model shown in the workbench

    RecipeDocument* m_recipe;
    RecipePanel* m_recipePanel = nullptr;
    JsonView* m_jsonView = nullptr;
    RunPanel* m_runPanel = nullptr;
    QDockWidget* m_recipeDock = nullptr;
    QDockWidget* m_jsonDock = nullptr;
    QDockWidget* m_runDock = nullptr;
    bool m_recipeLayoutPending = true;
    int m_runJob = -1; // the one recipe run allowed at a time
    RunKind m_runKind = RunKind::Analyze;
    // What the current run replaces, put back if it is cancelled.
    std::vector<LayerReport> m_reportsBeforeRun;
    std::string m_reportsRecipeHashBeforeRun;
    std::optional<PerplexityResult> m_lastFp, m_lastQuantized;
    QString m_recipeAfterOpen;
    QString m_recipeFile; // last opened or saved, for the file dialogs
};

} // namespace qs

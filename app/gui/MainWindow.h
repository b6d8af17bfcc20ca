#pragma once

#include "RecentModelList.h"
#include "RecipeActions.h"
#include "RecipeDocks.h"
#include "RunController.h"
#include "run/RunRequest.h"

#include <QByteArray>
#include <QMainWindow>
#include <QPointer>
#include <QStringList>

#include <memory>

class QCloseEvent;
class QDockWidget;
class QDragEnterEvent;
class QDropEvent;
class QMenu;
class QProgressBar;
class QStackedWidget;

namespace qs {

class Engine;
class ExportDialog;
class RecipeSearchController;
class Job;
class JobStatusIndicator;
class JsonView;
struct ModelInfo;
class RecipeDocument;
class RecipePanel;
class RunPanel;
class StartPage;
class WorkbenchPage;

// Composes the start page and the workbench page, the menus and the status bar around the one
// qs::Engine it owns. It opens models itself, following each Job it starts; recipe runs
// (Evaluate included) are the RunController's, recipe files and layer edits the RecipeActions', the
// status bar's job progress the JobStatusIndicator's. Nothing here waits on the engine.
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
    // 1400x900, bounded by the available area of the window's screen.
    QSize defaultSize() const;
    // Whether the window fits (size and place) on one of the screens.
    bool fitsScreen() const;
    // What is wrong with the layout now (window larger than the screen, docks crushed, see
    // WorkbenchPage::layoutProblem); empty when nothing is. Such a layout is not saved.
    QString layoutProblem() const;
    QStringList recentModels() const;

    StartPage* startPage() const { return m_startPage; }
    WorkbenchPage* workbenchPage() const { return m_workbench; }
    bool isWorkbenchShown() const;
    Engine* engine() const { return m_engine.get(); }
    RecipeSearchController* recipeSearch() const { return m_search; }
    RecipeDocument* recipeDocument() const { return m_recipe; }
    RecipePanel* recipePanel() const { return m_docks->recipePanel(); }
    JsonView* recipeJsonView() const { return m_docks->jsonView(); }
    RunPanel* runPanel() const { return m_docks->runPanel(); }
    QProgressBar* statusProgressBar() const;
    QDockWidget* recipeDock() const { return m_docks->recipeDock(); }
    QDockWidget* runDock() const { return m_docks->runDock(); }
    RunController* runController() const { return m_runs; }

    // Replaces the recipe with a recipe file (undoable); a bad file shows an error box with the
    // qs::Error message and returns false, leaving the recipe as it was.
    bool loadRecipe(const QString& path) { return m_recipeActions->load(path); }
    bool saveRecipe(const QString& path) { return m_recipeActions->save(path); }
    // Loads this recipe once the next model is shown (--recipe with MODEL_DIR).
    void loadRecipeAfterOpen(const QString& path) { m_recipeAfterOpen = path; }

    // Runs on the open model with the current recipe; false when no model is open or a run is
    // going already (one run at a time). Quantize needs outDir.
    // Quantize: exportTargets (recipe targets; empty: the recipe's own) and the formats' options
    // come from the export dialog.
    bool startRun(RunKind kind, const QString& outDir = QString(),
                  const std::vector<std::string>& exportTargets = {},
                  const ExportOptions& exportOptions = {}) {
        return m_runs->startRun(kind, outDir, exportTargets, exportOptions);
    }
    bool isRunning() const { return m_runs->isRunning(); }
    void cancelRun() { m_runs->cancelRun(); }
    // Quantize…: the export dialog (non-blocking); OK starts the Quantize run.
    ExportDialog* openExportDialog() { return m_runs->openExportDialog(); }

Q_SIGNALS:
    // The workbench shows a freshly opened model.
    void modelShown(const QString& directory);
    // Opening a model (or writing the demo model) failed; the message was shown to the user.
    void modelOpenFailed(const QString& message);
    // A recipe run started (its job, before any of its signals) and ended: finished (summary
    // valid), failed or cancelled.
    void runStarted(qs::Job* job);
    void runFinished(const qs::RunOutcome& summary);
    void runFailed(const QString& message);
    void runCancelled();
    // loadRecipe failed; the message was shown to the user.
    void recipeLoadFailed(const QString& message);
    // The layout restored from the settings was broken (`problem`) and the default one applied.
    void layoutReset(const QString& problem);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createMenus();
    void chooseModelFolder();
    void chooseGgufFile();
    void addRecentModel(const QString& directory);
    void setRecentModels(const QStringList& directories);
    void updateRecentMenu();
    void showAbout();
    void closeModel();
    void showWorkbench(bool show);
    void updateStartPageBusy();
    void onRecipeChanged();
    void onModelOpened(const ModelInfo& info);
    void checkRestoredLayout();
    void askAboutUnsavedRecipe();

    std::unique_ptr<Engine> m_engine;
    QStackedWidget* m_pages;
    StartPage* m_startPage;
    WorkbenchPage* m_workbench;
    RecipeDocument* m_recipe;
    RecipeDocks* m_docks;
    JobStatusIndicator* m_jobStatus;
    RunController* m_runs;
    RecipeActions* m_recipeActions;
    RecipeSearchController* m_search;
    QMenu* m_recentMenu = nullptr;
    RecentModelList m_recent{MaxRecentModels};

    QPointer<Job> m_openJob; // the latest openModel job; older results are ignored
    QString m_openingDirectory;
    QPointer<Job> m_demoJob;  // writing the demo model
    QString m_modelDirectory; // model shown in the workbench
    QString m_modelKey;       // its identity for per-model settings: the folder or .gguf opened
    QString m_recipeAfterOpen;
    // The workbench's dock state from the settings, until the page is first shown.
    QByteArray m_savedWorkbenchState;
    // The dock state came from the settings: checked when the workbench is first shown.
    bool m_checkRestoredLayout = false;
    bool m_closeConfirmed = false; // the user chose to quit without saving the recipe
};

} // namespace qs

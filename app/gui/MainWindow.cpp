#include "MainWindow.h"

#include "DisplayFormat.h"
#include "ErrorBox.h"
#include "EvalPanel.h"
#include "JobStatusIndicator.h"
#include "JsonView.h"
#include "ModelComputeSettings.h"
#include "RecipeDefaults.h"
#include "RecipeDocument.h"
#include "RecipePanel.h"
#include "RecipeSearchController.h"
#include "RunPanel.h"
#include "StartPage.h"
#include "WorkbenchPage.h"
#include "engine/Engine.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLayout>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QScreen>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTimer>
#include <QUndoStack>

#include <algorithm>
#include <utility>

namespace qs {

namespace {

const char* const GeometryKey = "window/geometry";
const char* const WindowStateKey = "window/state";
const char* const WorkbenchStateKey = "workbench/state";
const char* const RecipeFileKey = "recipe/lastFile";
constexpr int StateVersion = 1;
constexpr int StatusMessageMs = 8000;

// A dropped folder (or a file in it) names the model to open; a dropped .gguf file is the model.
QString droppedModelDirectory(const QMimeData* mime) {
    if (!mime || !mime->hasUrls() || mime->urls().size() != 1)
        return {};
    const QUrl url = mime->urls().constFirst();
    if (!url.isLocalFile())
        return {};
    const QFileInfo info(url.toLocalFile());
    if (info.isFile() && info.suffix().compare(QLatin1String("gguf"), Qt::CaseInsensitive) == 0)
        return info.absoluteFilePath();
    return info.isDir() ? info.absoluteFilePath() : info.isFile() ? info.absolutePath() : QString();
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), m_engine(std::make_unique<Engine>()), m_pages(new QStackedWidget(this)),
      m_startPage(new StartPage(m_pages)), m_workbench(new WorkbenchPage(m_pages)),
      m_recipe(new RecipeDocument(this)), m_docks(new RecipeDocks(m_recipe, m_workbench)),
      m_jobStatus(new JobStatusIndicator(m_engine.get(), statusBar())),
      m_runs(new RunController(m_engine.get(), m_recipe, m_workbench, m_docks->runPanel(),
                               m_docks->runDock(), statusBar(), this)),
      m_recipeActions(new RecipeActions(m_recipe, statusBar(), this)),
      m_search(new RecipeSearchController(m_engine.get(), m_recipe, m_workbench, this)) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(tr("Quantscope"));
    setAcceptDrops(true);
    m_pages->addWidget(m_startPage);
    m_pages->addWidget(m_workbench);
    setCentralWidget(m_pages);
    createMenus();

    // Every failed job gets an error box, whoever started it.
    connect(m_jobStatus, &JobStatusIndicator::jobFailed, this,
            [this](const QString& title, const QString& message) {
                showErrorBox(this, tr("%1 failed").arg(title), message);
            });
    connect(m_runs, &RunController::runStarted, this, &MainWindow::runStarted);
    connect(m_runs, &RunController::runFinished, this, &MainWindow::runFinished);
    connect(m_runs, &RunController::runFailed, this, &MainWindow::runFailed);
    connect(m_runs, &RunController::runCancelled, this, &MainWindow::runCancelled);

    connect(m_startPage, &StartPage::openFolderRequested, this, &MainWindow::chooseModelFolder);
    connect(m_startPage, &StartPage::openDemoRequested, this, &MainWindow::openDemoModel);
    connect(m_startPage, &StartPage::openRecentRequested, this, &MainWindow::openModel);
    m_startPage->setFooterText(Engine::runtimeDescription());

    EvalPanel* eval = m_workbench->evalPanel();
    eval->setDevices(Engine::availableDevices());
    // Its text and windows are the recipe's; its Evaluate is a run (RunController).
    eval->setDocument(m_recipe);
    // The user's device and precision belong to the model shown: they come back with it.
    connect(eval, &EvalPanel::computeChosen, this,
            [this](const QString& device, const QString& dtype) {
                if (!m_modelKey.isEmpty())
                    ModelComputeSettings::save(m_modelKey, {device, dtype});
            });

    connect(m_recipe, &RecipeDocument::recipeChanged, this, &MainWindow::onRecipeChanged);
    connect(m_workbench, &WorkbenchPage::excludeLayerRequested, m_recipeActions,
            &RecipeActions::excludeLayer);
    connect(m_workbench, &WorkbenchPage::overrideLayerRequested, m_recipeActions,
            &RecipeActions::chooseLayerOverride);
    connect(m_recipeActions, &RecipeActions::loadFailed, this, &MainWindow::recipeLoadFailed);
    onRecipeChanged();

    QSettings settings;
    m_recipeActions->setLastFile(settings.value(QLatin1String(RecipeFileKey)).toString());
    setRecentModels(m_recent.entries());
    // A saved layout is only as good as the screen it was saved on: a geometry larger than this
    // screen gets the default size, and the dock states saved with it are dropped (sized for
    // that window). Docks restored crushed are caught once the workbench is shown
    // (checkRestoredLayout).
    if (restoreGeometry(settings.value(QLatin1String(GeometryKey)).toByteArray()) && fitsScreen()) {
        restoreState(settings.value(QLatin1String(WindowStateKey)).toByteArray(), StateVersion);
        // Restored when the workbench is first shown, at its real size (showWorkbench).
        m_savedWorkbenchState = settings.value(QLatin1String(WorkbenchStateKey)).toByteArray();
        if (!m_savedWorkbenchState.isEmpty())
            m_docks->setLayoutPending(false);
    } else {
        resize(defaultSize());
    }
    if (m_docks->isLayoutPending())
        m_workbench->resetLayout(size());
    statusBar()->showMessage(tr("Ready"));
}

MainWindow::~MainWindow() {
    // Stop the engine (and with it its jobs) before the widgets their queued results would
    // reach go away.
    m_engine.reset();
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open Model…"), this, &MainWindow::chooseModelFolder);
    open->setShortcut(QKeySequence::Open);
    file->addAction(tr("Open &GGUF File…"), this, &MainWindow::chooseGgufFile);
    file->addAction(tr("Open &Demo Model"), this, &MainWindow::openDemoModel);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    QAction* close = file->addAction(tr("&Close Model"), this, &MainWindow::closeModel);
    close->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(m_workbench->summaryDock()->toggleViewAction());
    view->addAction(m_workbench->evalDock()->toggleViewAction());
    view->addAction(m_docks->recipeDock()->toggleViewAction());
    view->addAction(m_docks->jsonDock()->toggleViewAction());
    view->addAction(m_docks->runDock()->toggleViewAction());
    view->addAction(m_search->dock()->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("&Reset Layout"), this, &MainWindow::resetLayout);

    QMenu* recipe = m_recipeActions->addMenu(menuBar());
    // The proposed defaults for the open model (scheme, calibration text), as one undo step.
    auto* fresh = new QAction(tr("&New Recipe"), recipe);
    connect(fresh, &QAction::triggered, this, [this] {
        m_recipe->setRecipe(RecipeDefaults::propose(Recipe{}, m_modelDirectory), tr("new recipe"));
    });
    recipe->insertAction(recipe->actions().value(0), fresh);
    recipe->addSeparator();
    recipe->addAction(tr("&Design Recipe…"), m_search, &RecipeSearchController::showDock);
    recipe->addAction(tr("&Quantize and Export…"), m_runs, &RunController::openExportDialog);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* about = help->addAction(tr("&About Quantscope"), this, &MainWindow::showAbout);
    about->setMenuRole(QAction::AboutRole);
}

QProgressBar* MainWindow::statusProgressBar() const {
    return m_jobStatus->progressBar();
}

QString MainWindow::demoModelDirectory() {
    return QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
           QLatin1String("/demo-model");
}

void MainWindow::openModel(const QString& directory) {
    if (directory.trimmed().isEmpty())
        return;
    m_openingDirectory = RecentModelList::normalized(directory);
    // A later open supersedes an earlier one still going: its results are no longer wanted.
    if (m_openJob)
        disconnect(m_openJob, nullptr, this, nullptr);
    Job* job = m_engine->openModel(m_openingDirectory);
    m_openJob = job;
    connect(job, &Job::modelOpened, this, &MainWindow::onModelOpened);
    connect(job, &Job::failed, this, [this](const QString& message) {
        m_openJob = nullptr;
        updateStartPageBusy();
        Q_EMIT modelOpenFailed(message);
    });
    connect(job, &Job::cancelled, this, [this] {
        m_openJob = nullptr;
        updateStartPageBusy();
    });
    statusBar()->showMessage(tr("Opening %1…").arg(QDir::toNativeSeparators(m_openingDirectory)));
    updateStartPageBusy();
}

void MainWindow::openDemoModel() {
    const QString directory = demoModelDirectory();
    // Its calibration text first (a few KB), so the recipe proposed on opening names it.
    QString calibrationError;
    if (RecipeDefaults::ensureDemoCalibration(directory, &calibrationError).isEmpty())
        statusBar()->showMessage(tr("The demo's calibration text: %1").arg(calibrationError));
    if (QFileInfo::exists(directory + QLatin1String("/config.json"))) {
        openModel(directory);
        return;
    }
    if (m_demoJob)
        return; // already being written; it opens when done
    if (!QDir().mkpath(directory)) {
        showErrorBox(this, tr("Open Demo Model"),
                     tr("Cannot create the folder %1.").arg(QDir::toNativeSeparators(directory)));
        Q_EMIT modelOpenFailed(tr("cannot create %1").arg(directory));
        return;
    }
    SyntheticModelOptions options;
    options.arch = "llama";
    options.hiddenSize = 256;
    options.numLayers = 4;
    options.seed = 1;
    options.outDir = directory.toStdString();
    Job* job = m_engine->writeSyntheticModel(options);
    m_demoJob = job;
    connect(job, &Job::syntheticModelWritten, this, [this](const QString& written) {
        m_demoJob = nullptr;
        openModel(written.isEmpty() ? demoModelDirectory() : written);
    });
    connect(job, &Job::failed, this, [this](const QString& message) {
        m_demoJob = nullptr;
        updateStartPageBusy();
        Q_EMIT modelOpenFailed(message);
    });
    connect(job, &Job::cancelled, this, [this] {
        m_demoJob = nullptr;
        updateStartPageBusy();
    });
    statusBar()->showMessage(
        tr("Writing the demo model to %1…").arg(QDir::toNativeSeparators(directory)));
    updateStartPageBusy();
}

void MainWindow::chooseModelFolder() {
    QString start =
        m_modelDirectory.isEmpty() ? QDir::homePath() : QFileInfo(m_modelDirectory).absolutePath();
    auto* dialog = new QFileDialog(this, tr("Open Model Folder"), start);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setFileMode(QFileDialog::Directory);
    dialog->setOption(QFileDialog::ShowDirsOnly);
    connect(dialog, &QFileDialog::fileSelected, this, &MainWindow::openModel);
    dialog->open(); // window-modal, but the event loop (and the engine's results) keep running
}

void MainWindow::chooseGgufFile() { // the engine dequantizes it once into a cached folder
    const QString start =
        m_modelDirectory.isEmpty() ? QDir::homePath() : QFileInfo(m_modelDirectory).absolutePath();
    auto* dialog = new QFileDialog(this, tr("Open GGUF File"), start,
                                   tr("GGUF models (*.gguf);;All files (*)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setFileMode(QFileDialog::ExistingFile);
    connect(dialog, &QFileDialog::fileSelected, this, &MainWindow::openModel);
    dialog->open();
}

void MainWindow::closeModel() {
    m_runs->cancelRun();
    m_search->reset();
    m_modelDirectory.clear();
    m_modelKey.clear();
    m_workbench->clear();
    m_docks->recipePanel()->clearModel();
    m_runs->setModelDirectory(QString());
    setWindowTitle(tr("Quantscope"));
    showWorkbench(false);
}

void MainWindow::showWorkbench(bool show) {
    m_pages->setCurrentWidget(show ? static_cast<QWidget*>(m_workbench) : m_startPage);
    if (!show || !m_workbench->isVisible())
        return;
    if (m_docks->isLayoutPending()) {
        m_savedWorkbenchState.clear();
        m_docks->applyLayout(size());
    } else if (!m_savedWorkbenchState.isEmpty()) {
        // Restored into the page hidden behind the start page, the docks came out at other
        // sizes than saved (a 380 px chart at 135 px); restored now, at the page's real size.
        if (m_workbench->restoreState(std::exchange(m_savedWorkbenchState, QByteArray()),
                                      StateVersion)) {
            m_checkRestoredLayout = true;
            // After the page's layout pass: the docks have their restored sizes then.
            QTimer::singleShot(0, this, &MainWindow::checkRestoredLayout);
        } else {
            m_docks->applyLayout(size());
        }
    }
}

bool MainWindow::isWorkbenchShown() const {
    return m_pages->currentWidget() == m_workbench;
}

QSize MainWindow::defaultSize() const {
    // 1400x900, or the whole screen where it is smaller (1366x768): never larger than it.
    const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
    return s ? QSize(1400, 900).boundedTo(s->availableGeometry().size()) : QSize(1400, 900);
}

bool MainWindow::fitsScreen() const {
    const QRect frame = geometry();
    const QList<QScreen*> screens = QGuiApplication::screens();
    return screens.isEmpty() ||
           std::any_of(screens.cbegin(), screens.cend(), [&frame](const QScreen* s) {
               const QRect available = s->availableGeometry();
               return frame.width() <= available.width() && frame.height() <= available.height() &&
                      available.intersects(frame);
           });
}

QString MainWindow::layoutProblem() const {
    if (!fitsScreen())
        return tr("the window is %1x%2 px, larger than the screen")
            .arg(geometry().width())
            .arg(geometry().height());
    return isWorkbenchShown() && m_workbench->isVisible() ? m_workbench->layoutProblem()
                                                          : QString();
}

void MainWindow::checkRestoredLayout() {
    if (!m_checkRestoredLayout || !isWorkbenchShown() || !m_workbench->isVisible())
        return;
    m_checkRestoredLayout = false;
    m_workbench->layout()->activate(); // the restored dock sizes, laid out now
    const QString problem = m_workbench->layoutProblem();
    if (problem.isEmpty())
        return;
    m_docks->applyLayout(size());
    statusBar()->showMessage(
        tr("The saved layout did not fit (%1): the default layout is back.").arg(problem),
        StatusMessageMs);
    Q_EMIT layoutReset(problem);
}

void MainWindow::resetLayout() {
    if (!isMaximized() && !isFullScreen())
        resize(defaultSize());
    m_docks->setLayoutPending(true);
    m_savedWorkbenchState.clear();
    if (m_workbench->isVisible())
        m_docks->applyLayout(size()); // sizes the page's docks too
    else
        m_workbench->resetLayout(size());
}

QStringList MainWindow::recentModels() const {
    return m_recent.entries();
}

void MainWindow::addRecentModel(const QString& directory) {
    setRecentModels(m_recent.add(directory));
}

void MainWindow::setRecentModels(const QStringList& directories) {
    m_startPage->setRecentModels(m_recent.set(directories));
    updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = recentModels();
    for (const QString& directory : recent) {
        QAction* action = m_recentMenu->addAction(QDir::toNativeSeparators(directory));
        action->setEnabled(QFileInfo::exists(directory)); // a folder, or a .gguf file
        connect(action, &QAction::triggered, this, [this, directory] { openModel(directory); });
    }
    if (!recent.isEmpty())
        m_recentMenu->addSeparator();
    QAction* clear =
        m_recentMenu->addAction(tr("Clear Recent"), this, [this] { setRecentModels({}); });
    clear->setEnabled(!recent.isEmpty());
}

void MainWindow::showAbout() {
    auto* box = new QMessageBox(QMessageBox::NoIcon, tr("About Quantscope"), QString(),
                                QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("aboutBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextFormat(Qt::RichText);
    // The application icon when main() set one (resources/quantscope.qrc); tests run without.
    if (!QApplication::windowIcon().isNull())
        box->setIconPixmap(QApplication::windowIcon().pixmap(64, 64));
    box->setText(tr("<h3>Quantscope %1</h3>"
                    "<p>Post-training quantization workbench for large language models.</p>"
                    "<p>Qt %2 (built with %3)<br>%4</p>")
                     .arg(QCoreApplication::applicationVersion(), QString::fromLatin1(qVersion()),
                          QStringLiteral(QT_VERSION_STR),
                          Engine::runtimeDescription().toHtmlEscaped()));
    box->open();
}

void MainWindow::onRecipeChanged() {
    const Recipe& recipe = m_recipe->recipe();
    m_workbench->setRecipe(recipe);
    m_docks->jsonView()->setRecipe(recipe);
}

void MainWindow::updateStartPageBusy() {
    m_startPage->setBusy(m_openJob || m_demoJob);
}

void MainWindow::onModelOpened(const ModelInfo& info) {
    m_openJob = nullptr;
    m_modelDirectory =
        info.directory.empty() ? m_openingDirectory : QString::fromStdString(info.directory);
    // Results belong to the model that made them: another model starts without any.
    m_workbench->clearLayerReports();
    m_workbench->evalPanel()->clearResult();
    m_search->reset();
    m_runs->setModelDirectory(m_modelDirectory);
    m_workbench->setModelInfo(info);
    m_workbench->setRecipe(m_recipe->recipe());
    m_docks->recipePanel()->setModelInfo(info);
    showWorkbench(true);
    // A GGUF file is remembered and titled as itself, not as its cache folder.
    const QString opened =
        info.sourceFile.empty() ? m_modelDirectory : QString::fromStdString(info.sourceFile);
    addRecentModel(opened);
    // Its saved device and precision, else the defaults (the first device offered, float32); a
    // device the engine no longer offers falls back to the first without a word.
    m_modelKey = opened;
    const ModelCompute compute = ModelComputeSettings::load(m_modelKey);
    m_workbench->evalPanel()->setCompute(compute.device, compute.dtype);
    setWindowTitle(tr("%1 — Quantscope").arg(QFileInfo(opened).fileName()));
    statusBar()->showMessage(tr("Opened %1: %2, %3 parameters")
                                 .arg(QDir::toNativeSeparators(opened),
                                      QString::fromStdString(info.architecture),
                                      display::compactCount(info.totalParameters)),
                             StatusMessageMs);
    updateStartPageBusy();
    if (!m_recipeAfterOpen.isEmpty()) {
        loadRecipe(std::exchange(m_recipeAfterOpen, QString()));
    } else if (RecipeDefaults::isUntouched(m_recipe->recipe())) {
        // Nothing chosen yet: a scheme and a calibration text, so Analyze works at once.
        const Recipe proposed = RecipeDefaults::propose(m_recipe->recipe(), m_modelDirectory);
        m_recipe->startFrom(proposed);
        statusBar()->showMessage(
            proposed.calibration.dataPath.empty()
                ? tr("Proposed the %1 scheme; choose a calibration text in the Recipe panel "
                     "before Analyze")
                      .arg(QLatin1String(RecipeDefaults::DefaultScheme))
                : tr("Proposed the %1 scheme, calibrating on %2")
                      .arg(QLatin1String(RecipeDefaults::DefaultScheme),
                           QDir::toNativeSeparators(
                               QString::fromStdString(proposed.calibration.dataPath))),
            StatusMessageMs);
    } else {
        // Said, not silent: the recipe designed for the previous model applies to this one.
        statusBar()->showMessage(
            tr("Opened %1 with the recipe designed so far (Recipe > New Recipe starts afresh)")
                .arg(QFileInfo(opened).fileName()),
            StatusMessageMs);
    }
    Q_EMIT modelShown(m_modelDirectory);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // Recipe edits since it was opened, saved or proposed: asked about, not lost without a word.
    if (!m_closeConfirmed && !m_recipe->undoStack()->isClean()) {
        event->ignore();
        askAboutUnsavedRecipe();
        return;
    }
    QSettings settings;
    // A broken layout is not kept: the next start gets the default one instead.
    const QString problem = layoutProblem();
    if (problem.isEmpty()) {
        settings.setValue(QLatin1String(GeometryKey), saveGeometry());
        settings.setValue(QLatin1String(WindowStateKey), saveState(StateVersion));
        // Never shown (closed from the start page): the saved state stays as it was.
        settings.setValue(QLatin1String(WorkbenchStateKey),
                          m_savedWorkbenchState.isEmpty() ? m_workbench->saveState(StateVersion)
                                                          : m_savedWorkbenchState);
    } else {
        for (const char* key : {GeometryKey, WindowStateKey, WorkbenchStateKey})
            settings.remove(QLatin1String(key));
    }
    settings.setValue(QLatin1String(RecipeFileKey), m_recipeActions->lastFile());
    m_engine->cancelAll();
    event->accept();
}

void MainWindow::askAboutUnsavedRecipe() {
    if (findChild<QMessageBox*>(QStringLiteral("unsavedRecipeBox")))
        return; // already asking
    auto* box =
        new QMessageBox(QMessageBox::Question, tr("Quit Quantscope"),
                        tr("The recipe has changes that are not saved."),
                        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
    box->setObjectName(QStringLiteral("unsavedRecipeBox"));
    box->setInformativeText(tr("Save them to a recipe file before quitting?"));
    box->setDefaultButton(QMessageBox::Save);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [this, box] {
        const QMessageBox::StandardButton answer = box->standardButton(box->clickedButton());
        if (answer == QMessageBox::Discard) {
            m_closeConfirmed = true;
            close();
        } else if (answer == QMessageBox::Save) {
            m_recipeActions->chooseFileToSave(); // quit again once saved
        }
    });
    box->open();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!droppedModelDirectory(event->mimeData()).isEmpty())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QString directory = droppedModelDirectory(event->mimeData());
    if (directory.isEmpty())
        return;
    event->acceptProposedAction();
    openModel(directory);
}

} // namespace qs

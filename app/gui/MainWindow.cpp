#include "MainWindow.h"
#include "LayerTreeModel.h"

#include "DisplayFormat.h"
#include "EvalPanel.h"
#include "ExportDialog.h"
#include "GuiFieldHint.h"
#include "JsonView.h"
#include "LayerTreePanel.h"
#include "RecipeDocument.h"
#include "RecipePanel.h"
#include "RunPanel.h"
#include "StartPage.h"
#include "WorkbenchPage.h"
#include "engine/Engine.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "recipe/Provenance.h"
#include "util/Error.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTimer>
#include <QToolButton>
#include <QUndoStack>

#include <utility>

namespace qs {

namespace {

const char* const GeometryKey = "window/geometry";
const char* const WindowStateKey = "window/state";
const char* const WorkbenchStateKey = "workbench/state";
const char* const EvalDataPathKey = "eval/dataPath";
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
      m_recipe(new RecipeDocument(this)) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(tr("Quantscope"));
    setAcceptDrops(true);
    m_pages->addWidget(m_startPage);
    m_pages->addWidget(m_workbench);
    setCentralWidget(m_pages);

    createRecipeDocks();
    createMenus();
    createStatusBar();
    connectEngine();

    connect(m_startPage, &StartPage::openFolderRequested, this, &MainWindow::chooseModelFolder);
    connect(m_startPage, &StartPage::openDemoRequested, this, &MainWindow::openDemoModel);
    connect(m_startPage, &StartPage::openRecentRequested, this, &MainWindow::openModel);
    m_startPage->setFooterText(Engine::runtimeDescription());

    EvalPanel* eval = m_workbench->evalPanel();
    eval->setDevices(Engine::availableDevices());
    connect(eval, &EvalPanel::runRequested, this, &MainWindow::runEvaluation);
    connect(eval, &EvalPanel::cancelRequested, this, [this] {
        if (m_evalJob >= 0)
            m_engine->cancel(m_evalJob);
    });

    connect(m_recipe, &RecipeDocument::recipeChanged, this, &MainWindow::onRecipeChanged);
    connect(m_workbench, &WorkbenchPage::excludeLayerRequested, this, &MainWindow::excludeLayer);
    connect(m_workbench, &WorkbenchPage::overrideLayerRequested, this,
            &MainWindow::chooseLayerOverride);
    connect(m_runPanel, &RunPanel::analyzeRequested, this, [this] { startRun(RunKind::Analyze); });
    connect(m_runPanel, &RunPanel::quantizeRequested, this, &MainWindow::openExportDialog);
    connect(m_runPanel, &RunPanel::evaluateRequested, this,
            [this] { startRun(RunKind::Evaluate); });
    connect(m_runPanel, &RunPanel::sensitivityRequested, this,
            [this] { startRun(RunKind::Sensitivity); });
    connect(m_runPanel, &RunPanel::cancelRequested, this, &MainWindow::cancelRun);
    onRecipeChanged();

    QSettings settings;
    m_recipeFile = settings.value(QLatin1String(RecipeFileKey)).toString();
    setRecentModels(m_recent.entries());
    eval->setDataPath(settings.value(QLatin1String(EvalDataPathKey)).toString());
    if (!restoreGeometry(settings.value(QLatin1String(GeometryKey)).toByteArray()))
        resize(1400, 900);
    restoreState(settings.value(QLatin1String(WindowStateKey)).toByteArray(), StateVersion);
    if (m_workbench->restoreState(settings.value(QLatin1String(WorkbenchStateKey)).toByteArray(),
                                  StateVersion))
        m_recipeLayoutPending = false;
    else
        m_workbench->resetLayout(size());
    statusBar()->showMessage(tr("Ready"));
}

MainWindow::~MainWindow() {
    // Stop the engine before the widgets its queued results would reach go away.
    disconnect(m_engine.get(), nullptr, this, nullptr);
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
    view->addAction(m_recipeDock->toggleViewAction());
    view->addAction(m_jsonDock->toggleViewAction());
    view->addAction(m_runDock->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("&Reset Layout"), this, &MainWindow::resetLayout);

    createRecipeMenu();

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* about = help->addAction(tr("&About Quantscope"), this, &MainWindow::showAbout);
    about->setMenuRole(QAction::AboutRole);
}

void MainWindow::createStatusBar() {
    m_statusProgress = new QProgressBar(this);
    m_statusProgress->setRange(0, 1000);
    m_statusProgress->setMinimumWidth(220);
    m_statusProgress->setTextVisible(true);
    m_statusProgress->setFormat(QStringLiteral("%p%"));
    m_statusProgress->hide();
    m_statusCancel = new QToolButton(this);
    m_statusCancel->setText(tr("Cancel"));
    m_statusCancel->setToolTip(tr("Cancel the running and queued jobs"));
    m_statusCancel->setAutoRaise(true);
    m_statusCancel->hide();
    connect(m_statusCancel, &QToolButton::clicked, this, [this] { m_engine->cancelAll(); });
    statusBar()->addPermanentWidget(m_statusProgress);
    statusBar()->addPermanentWidget(m_statusCancel);
}

void MainWindow::connectEngine() {
    Engine* e = m_engine.get();
    connect(e, &Engine::jobStarted, this, &MainWindow::onJobStarted);
    connect(e, &Engine::progress, this, &MainWindow::onProgress);
    connect(e, &Engine::modelOpened, this, &MainWindow::onModelOpened);
    connect(e, &Engine::syntheticModelWritten, this, &MainWindow::onSyntheticModelWritten);
    connect(e, &Engine::evaluated, this, &MainWindow::onEvaluated);
    connect(e, &Engine::failed, this, &MainWindow::onFailed);
    connect(e, &Engine::cancelled, this, &MainWindow::onCancelled);
    connect(e, &Engine::jobFinished, this, &MainWindow::onJobFinished);
    connect(e, &Engine::layerReports, this, &MainWindow::onLayerReports);
    connect(e, &Engine::sensitivityRow, this, &MainWindow::onSensitivityRow);
    connect(e, &Engine::runFinished, this, &MainWindow::onRunFinished);
}

QString MainWindow::demoModelDirectory() {
    return QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
           QLatin1String("/demo-model");
}

void MainWindow::openModel(const QString& directory) {
    if (directory.trimmed().isEmpty())
        return;
    m_openingDirectory = RecentModelList::normalized(directory);
    m_openJob = m_engine->openModel(m_openingDirectory);
    statusBar()->showMessage(tr("Opening %1…").arg(QDir::toNativeSeparators(m_openingDirectory)));
    updateBusy();
}

void MainWindow::openDemoModel() {
    const QString directory = demoModelDirectory();
    if (QFileInfo::exists(directory + QLatin1String("/config.json"))) {
        openModel(directory);
        return;
    }
    if (m_demoJob >= 0)
        return; // already being written; it opens when done
    if (!QDir().mkpath(directory)) {
        showError(tr("Open Demo Model"),
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
    m_demoJob = m_engine->writeSyntheticModel(options);
    statusBar()->showMessage(
        tr("Writing the demo model to %1…").arg(QDir::toNativeSeparators(directory)));
    updateBusy();
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
    if (m_evalJob >= 0)
        m_engine->cancel(m_evalJob);
    cancelRun();
    m_modelDirectory.clear();
    m_workbench->clear();
    m_recipePanel->clearModel();
    m_runPanel->setModelLoaded(false);
    setWindowTitle(tr("Quantscope"));
    showWorkbench(false);
}

void MainWindow::showWorkbench(bool show) {
    m_pages->setCurrentWidget(show ? static_cast<QWidget*>(m_workbench) : m_startPage);
    if (show && m_recipeLayoutPending && m_workbench->isVisible())
        applyRecipeDockLayout();
}

bool MainWindow::isWorkbenchShown() const {
    return m_pages->currentWidget() == m_workbench;
}

void MainWindow::resetLayout() {
    if (!isMaximized() && !isFullScreen())
        resize(1400, 900);
    m_recipeLayoutPending = true;
    if (m_workbench->isVisible())
        applyRecipeDockLayout(); // sizes the page's docks too
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

// Non-blocking: the box is window-modal but opened with open(), so jobs keep reporting.
void MainWindow::showError(const QString& title, const QString& rawMessage) {
    const QString message = withGuiField(rawMessage);
    auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("errorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->open();
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

void MainWindow::runEvaluation() {
    if (m_evalJob >= 0 || m_modelDirectory.isEmpty())
        return;
    EvalPanel* eval = m_workbench->evalPanel();
    QSettings().setValue(QLatin1String(EvalDataPathKey), eval->dataPath());
    eval->setRunning(true);
    m_evalJob = m_engine->evaluate(eval->request());
    statusBar()->showMessage(tr("Evaluating %1…").arg(QFileInfo(eval->dataPath()).fileName()));
    updateBusy();
}

// The recipe editor, its JSON and the run panel are docks of the workbench page, so they go
// away with it on the start page; the page is a QMainWindow, its dock API is public. They are
// tabs beside the page's own right-hand docks (recipe with the model summary, runs with the
// evaluation), which leaves the layer tree the width its metric columns need.
void MainWindow::createRecipeDocks() {
    m_recipePanel = new RecipePanel(m_recipe, m_workbench);
    m_jsonView = new JsonView(m_workbench);
    m_runPanel = new RunPanel(m_workbench);
    m_recipeDock = new QDockWidget(tr("Recipe"), m_workbench);
    m_recipeDock->setObjectName(QStringLiteral("recipeDock"));
    m_recipeDock->setWidget(m_recipePanel);
    m_jsonDock = new QDockWidget(tr("Recipe JSON"), m_workbench);
    m_jsonDock->setObjectName(QStringLiteral("recipeJsonDock"));
    m_jsonDock->setWidget(m_jsonView);
    m_runDock = new QDockWidget(tr("Runs"), m_workbench);
    m_runDock->setObjectName(QStringLiteral("runDock"));
    m_runDock->setWidget(m_runPanel);
    for (QDockWidget* dock : {m_recipeDock, m_jsonDock, m_runDock})
        dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                          QDockWidget::DockWidgetFloatable);
    placeRecipeDocks();
}

void MainWindow::placeRecipeDocks() {
    for (QDockWidget* dock : {m_recipeDock, m_jsonDock, m_runDock}) {
        dock->setFloating(false);
        m_workbench->addDockWidget(Qt::RightDockWidgetArea, dock);
    }
    m_workbench->tabifyDockWidget(m_workbench->summaryDock(), m_recipeDock);
    m_workbench->tabifyDockWidget(m_recipeDock, m_jsonDock);
    m_workbench->tabifyDockWidget(m_workbench->evalDock(), m_runDock);
    m_recipeDock->raise();
    m_runDock->raise();
}

void MainWindow::applyRecipeDockLayout() {
    m_recipeLayoutPending = false;
    placeRecipeDocks();
    for (QDockWidget* dock : {m_recipeDock, m_jsonDock, m_runDock})
        dock->show();
    m_recipeDock->raise();
    m_runDock->raise();
    // Tabifying moved the page's docks about: let the page size them again, then give the
    // recipe tabs more of the right-hand column than the runs (the recipe scrolls, but its
    // pattern preview should be in view).
    m_workbench->resetLayout(size());
    // After the page has laid out the new tab groups; sized now, the split would not stick.
    QTimer::singleShot(0, this, [this] {
        m_workbench->resizeDocks({m_recipeDock, m_runDock}, {550, 450}, Qt::Vertical);
    });
}

void MainWindow::createRecipeMenu() {
    QMenu* recipe = menuBar()->addMenu(tr("&Recipe"));
    recipe->addAction(tr("&Open Recipe…"), this, &MainWindow::chooseRecipeToOpen);
    QAction* save =
        recipe->addAction(tr("&Save Recipe As…"), this, &MainWindow::chooseRecipeToSave);
    save->setShortcut(QKeySequence::SaveAs);
    recipe->addSeparator();
    QAction* undo = m_recipe->undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Z));
    QAction* redo = m_recipe->undoStack()->createRedoAction(this, tr("&Redo"));
    redo->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));
    recipe->addAction(undo);
    recipe->addAction(redo);
    recipe->addSeparator();
    recipe->addAction(tr("&Quantize and Export…"), this, &MainWindow::openExportDialog);
}

bool MainWindow::loadRecipe(const QString& path) {
    try {
        m_recipe->load(path);
    } catch (const std::exception& e) {
        showError(tr("Open Recipe"), QString::fromUtf8(e.what()));
        Q_EMIT recipeLoadFailed(QString::fromUtf8(e.what()));
        return false;
    }
    m_recipeFile = QFileInfo(path).absoluteFilePath();
    statusBar()->showMessage(tr("Recipe %1 opened").arg(QDir::toNativeSeparators(path)),
                             StatusMessageMs);
    return true;
}

bool MainWindow::saveRecipe(const QString& path) {
    try {
        m_recipe->save(path);
    } catch (const std::exception& e) {
        showError(tr("Save Recipe"), QString::fromUtf8(e.what()));
        return false;
    }
    m_recipeFile = QFileInfo(path).absoluteFilePath();
    statusBar()->showMessage(tr("Recipe saved to %1").arg(QDir::toNativeSeparators(path)),
                             StatusMessageMs);
    return true;
}

void MainWindow::chooseRecipeToOpen() {
    auto* dialog = new QFileDialog(this, tr("Open Recipe"), QFileInfo(m_recipeFile).absolutePath(),
                                   tr("Recipes (*.json);;All files (*)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setFileMode(QFileDialog::ExistingFile);
    connect(dialog, &QFileDialog::fileSelected, this, &MainWindow::loadRecipe);
    dialog->open();
}

void MainWindow::chooseRecipeToSave() {
    auto* dialog = new QFileDialog(this, tr("Save Recipe As"), m_recipeFile,
                                   tr("Recipes (*.json);;All files (*)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setAcceptMode(QFileDialog::AcceptSave);
    dialog->setDefaultSuffix(QStringLiteral("json"));
    connect(dialog, &QFileDialog::fileSelected, this, &MainWindow::saveRecipe);
    dialog->open();
}

void MainWindow::excludeLayer(const QString& layerName) {
    try {
        m_recipe->excludeLayer(layerName);
    } catch (const std::exception& e) {
        showError(tr("Exclude Layer"), QString::fromUtf8(e.what()));
    }
}

void MainWindow::chooseLayerOverride(const QString& layerName) {
    QStringList schemes;
    for (const quant::SchemeName& s : quant::schemeNames())
        if (!s.legacy)
            schemes << QString::fromStdString(s.name);
    auto* dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("overrideDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Override Scheme"));
    dialog->setLabelText(tr("Scheme for %1:").arg(layerName));
    dialog->setComboBoxItems(schemes);
    dialog->setComboBoxEditable(false);
    const std::optional<quant::QuantScheme> current =
        m_recipe->recipe().schemeFor(layerName.toStdString(), layerKindOf(layerName.toStdString()));
    if (current && !current->name.empty())
        dialog->setTextValue(QString::fromStdString(current->name));
    connect(dialog, &QInputDialog::textValueSelected, this,
            [this, layerName](const QString& scheme) {
                try {
                    m_recipe->addOverride(RecipeDocument::exactLayerPattern(layerName), scheme);
                } catch (const std::exception& e) {
                    showError(tr("Override Scheme"), QString::fromUtf8(e.what()));
                }
            });
    dialog->open();
}

void MainWindow::onRecipeChanged() {
    const Recipe& recipe = m_recipe->recipe();
    m_workbench->setRecipe(recipe);
    m_jsonView->setRecipe(recipe);
}

bool MainWindow::startRun(RunKind kind, const QString& outDir,
                          const std::vector<std::string>& exportTargets,
                          const ExportOptions& exportOptions) {
    if (m_runJob >= 0 || m_modelDirectory.isEmpty())
        return false;
    RunRequest request;
    request.analyze = kind == RunKind::Analyze;
    request.evaluate = request.evaluateFullPrecision = kind == RunKind::Evaluate;
    request.sensitivity = kind == RunKind::Sensitivity;
    request.recipe = m_recipe->recipe();
    if (kind == RunKind::Quantize)
        request.outDir = outDir.toStdString();
    if (!exportTargets.empty())
        request.recipe.exportTargets = exportTargets;
    request.exportOptions = exportOptions;
    const EvalRequest eval = m_workbench->evalPanel()->request();
    request.device = eval.device;
    // The evaluation text of the recipe, else the one chosen in the evaluation panel.
    if (request.recipe.evaluation.dataPath.empty() && !eval.evaluation.dataPath.empty())
        request.recipe.evaluation = eval.evaluation;
    QString title;
    switch (kind) {
    case RunKind::Analyze:
        m_reportsBeforeRun.clear();
        for (const LayerReport* r : m_workbench->layerTreeModel()->reports())
            m_reportsBeforeRun.push_back(*r);
        m_reportsRecipeHashBeforeRun = m_workbench->layerTreeModel()->reportsRecipeHash();
        m_workbench->clearLayerReports();
        // The reports that stream in belong to this recipe; editing it later marks them stale.
        m_workbench->layerTreeModel()->setReportsRecipeHash(recipeHash(request.recipe));
        title = tr("Analyzing");
        break;
    case RunKind::Quantize:
        title = tr("Quantizing to %1").arg(QDir::toNativeSeparators(outDir));
        break;
    case RunKind::Evaluate:
        m_runPanel->showPerplexities(std::nullopt, std::nullopt);
        title = tr("Evaluating");
        break;
    case RunKind::Sensitivity:
        m_runPanel->clearSensitivity();
        title = tr("Measuring sensitivity");
        break;
    }
    m_runKind = kind;
    m_runJob = m_engine->run(request);
    m_runPanel->setRunning(title);
    m_runDock->raise();
    updateBusy();
    return true;
}

void MainWindow::cancelRun() {
    if (m_runJob >= 0)
        m_engine->cancel(m_runJob);
}

ExportDialog* MainWindow::openExportDialog() {
    if (m_modelDirectory.isEmpty() || m_runJob >= 0)
        return nullptr;
    auto* dialog = new ExportDialog(m_modelDirectory, m_recipe->recipe(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        startRun(RunKind::Quantize, dialog->outputDirectory(), dialog->exportTargets(),
                 dialog->exportOptions());
    });
    dialog->open();
    return dialog;
}

void MainWindow::onLayerReports(int job, int /*block*/, const std::vector<LayerReport>& layers) {
    if (job == m_runJob)
        m_workbench->addLayerReports(layers);
}

void MainWindow::onSensitivityRow(int job, const SensitivityRow& row) {
    if (job != m_runJob)
        return;
    m_runPanel->addSensitivityRow(row);
    m_workbench->setSensitivity(row);
}

void MainWindow::onRunFinished(int job, const RunOutcome& summary) {
    if (job != m_runJob)
        return;
    m_runJob = -1;
    QString status;
    switch (m_runKind) {
    case RunKind::Analyze:
        status = tr("Analysis done");
        break;
    case RunKind::Quantize:
        status = tr("Quantized model written to %1")
                     .arg(QDir::toNativeSeparators(QString::fromStdString(summary.outDir)));
        break;
    case RunKind::Evaluate:
        m_lastFp = summary.fullPrecision;
        m_lastQuantized = summary.perplexity;
        m_runPanel->showPerplexities(summary.fullPrecision, summary.perplexity);
        status = tr("Evaluation done");
        break;
    case RunKind::Sensitivity:
        if (summary.sensitivity)
            m_runPanel->showSensitivityTotals(summary.sensitivity->fpPerplexity,
                                              summary.sensitivity->fullPerplexity);
        status = tr("Sensitivity done");
        break;
    }
    if (!summary.skipped.empty())
        status += tr("; %n unfit layer(s) left unquantized", nullptr,
                     static_cast<int>(summary.skipped.size()));
    for (const std::string& w : summary.warnings)
        status += QStringLiteral("\n") + tr("Warning: %1").arg(QString::fromStdString(w));
    m_runPanel->setIdle(status);
    statusBar()->showMessage(status, StatusMessageMs);
    updateBusy();
    Q_EMIT runFinished(summary);
}

void MainWindow::updateBusy() {
    const bool busy = !m_jobTitles.isEmpty();
    m_statusProgress->setVisible(busy);
    m_statusCancel->setVisible(busy);
    if (!busy)
        m_statusProgress->setValue(0);
    m_startPage->setBusy(m_openJob >= 0 || m_demoJob >= 0);
}

void MainWindow::onJobStarted(int job, const QString& title) {
    m_jobTitles.insert(job, title);
    statusBar()->showMessage(title + QStringLiteral("…"));
    m_statusProgress->setValue(0);
    m_statusProgress->setFormat(QStringLiteral("%p%"));
    m_statusClock.start();
    updateBusy();
}

void MainWindow::onProgress(int job, double fraction, const QString& message) {
    const QString title = m_jobTitles.value(job);
    statusBar()->showMessage(title.isEmpty()     ? message
                             : message.isEmpty() ? title
                                                 : title + QStringLiteral(": ") + message);
    if (fraction >= 0.0) {
        m_statusProgress->setValue(static_cast<int>(qBound(0.0, fraction, 1.0) * 1000.0 + 0.5));
        const QString left = RunPanel::remainingText(
            fraction, m_statusClock.isValid() ? m_statusClock.elapsed() / 1000.0 : 0.0);
        m_statusProgress->setFormat(left.isEmpty() ? QStringLiteral("%p%")
                                                   : QStringLiteral("%p%, ") + left);
    }
    if (job == m_evalJob)
        m_workbench->evalPanel()->setProgress(fraction, message);
    if (job == m_runJob)
        m_runPanel->setProgress(fraction, message);
}

void MainWindow::onModelOpened(int job, const ModelInfo& info) {
    if (job != m_openJob)
        return; // superseded by a later open
    m_openJob = -1;
    m_modelDirectory =
        info.directory.empty() ? m_openingDirectory : QString::fromStdString(info.directory);
    // Results belong to the model that made them: another model starts without any.
    m_workbench->clearLayerReports();
    m_workbench->evalPanel()->clearResult();
    m_runPanel->clearSensitivity();
    m_runPanel->showPerplexities(std::nullopt, std::nullopt);
    m_reportsBeforeRun.clear();
    m_lastFp.reset();
    m_lastQuantized.reset();
    m_workbench->setModelInfo(info);
    m_workbench->setRecipe(m_recipe->recipe());
    m_recipePanel->setModelInfo(info);
    m_runPanel->setModelLoaded(true);
    showWorkbench(true);
    // A GGUF file is remembered and titled as itself, not as its cache folder.
    const QString opened =
        info.sourceFile.empty() ? m_modelDirectory : QString::fromStdString(info.sourceFile);
    addRecentModel(opened);
    setWindowTitle(tr("%1 — Quantscope").arg(QFileInfo(opened).fileName()));
    statusBar()->showMessage(tr("Opened %1: %2, %3 parameters")
                                 .arg(QDir::toNativeSeparators(opened),
                                      QString::fromStdString(info.architecture),
                                      display::compactCount(info.totalParameters)),
                             StatusMessageMs);
    updateBusy();
    if (!m_recipeAfterOpen.isEmpty())
        loadRecipe(std::exchange(m_recipeAfterOpen, QString()));
    Q_EMIT modelShown(m_modelDirectory);
}

void MainWindow::onSyntheticModelWritten(int job, const QString& directory) {
    if (job != m_demoJob)
        return;
    m_demoJob = -1;
    openModel(directory.isEmpty() ? demoModelDirectory() : directory);
}

void MainWindow::onEvaluated(int job, const PerplexityResult& result) {
    if (job != m_evalJob)
        return;
    m_evalJob = -1;
    m_workbench->evalPanel()->showResult(result);
    statusBar()->showMessage(tr("Perplexity %1 over %2 windows")
                                 .arg(QString::number(result.perplexity, 'f', 4))
                                 .arg(result.windows),
                             StatusMessageMs);
}

void MainWindow::onFailed(int job, const QString& message) {
    const QString title = m_jobTitles.value(job, tr("Job"));
    if (job == m_openJob || job == m_demoJob) {
        if (job == m_openJob)
            m_openJob = -1;
        else
            m_demoJob = -1;
        Q_EMIT modelOpenFailed(message);
    }
    if (job == m_evalJob) {
        m_evalJob = -1;
        m_workbench->evalPanel()->showFailure(message);
    }
    if (job == m_runJob) {
        m_runJob = -1;
        m_runPanel->setIdle(tr("Failed: %1").arg(message));
        Q_EMIT runFailed(message);
    }
    updateBusy();
    statusBar()->showMessage(tr("%1 failed").arg(title), StatusMessageMs);
    showError(tr("%1 failed").arg(title), message);
}

void MainWindow::onCancelled(int job) {
    const QString title = m_jobTitles.value(job, tr("Job"));
    if (job == m_openJob)
        m_openJob = -1;
    if (job == m_demoJob)
        m_demoJob = -1;
    if (job == m_evalJob) {
        m_evalJob = -1;
        m_workbench->evalPanel()->showCancelled();
    }
    if (job == m_runJob) {
        m_runJob = -1;
        // A cancelled run leaves the previous results in place.
        if (m_runKind == RunKind::Analyze) {
            m_workbench->clearLayerReports();
            m_workbench->layerTreeModel()->setReportsRecipeHash(m_reportsRecipeHashBeforeRun);
            m_workbench->addLayerReports(std::exchange(m_reportsBeforeRun, {}));
        } else if (m_runKind == RunKind::Evaluate) {
            m_runPanel->showPerplexities(m_lastFp, m_lastQuantized);
        }
        m_runPanel->setIdle(tr("Cancelled"));
        Q_EMIT runCancelled();
    }
    updateBusy();
    statusBar()->showMessage(tr("%1 cancelled").arg(title), StatusMessageMs);
}

void MainWindow::onJobFinished(int job) {
    m_jobTitles.remove(job);
    updateBusy();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QLatin1String(GeometryKey), saveGeometry());
    settings.setValue(QLatin1String(WindowStateKey), saveState(StateVersion));
    settings.setValue(QLatin1String(WorkbenchStateKey), m_workbench->saveState(StateVersion));
    settings.setValue(QLatin1String(EvalDataPathKey), m_workbench->evalPanel()->dataPath());
    settings.setValue(QLatin1String(RecipeFileKey), m_recipeFile);
    m_engine->cancelAll();
    event->accept();
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

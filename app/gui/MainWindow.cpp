#include "MainWindow.h"

#include "DisplayFormat.h"
#include "EvalPanel.h"
#include "LayerTreePanel.h"
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

namespace qs {

namespace {

const char* const RecentModelsKey = "recentModels";
const char* const GeometryKey = "window/geometry";
const char* const WindowStateKey = "window/state";
const char* const WorkbenchStateKey = "workbench/state";
const char* const EvalDataPathKey = "eval/dataPath";
constexpr int StateVersion = 1;
constexpr int StatusMessageMs = 8000;

QString normalizedDirectory(const QString& directory) {
    return QDir::cleanPath(QFileInfo(directory).absoluteFilePath());
}

// A folder dropped on the window (or a file inside it) names the model to open.
QString droppedModelDirectory(const QMimeData* mime) {
    if (!mime || !mime->hasUrls() || mime->urls().size() != 1)
        return {};
    const QUrl url = mime->urls().constFirst();
    if (!url.isLocalFile())
        return {};
    const QFileInfo info(url.toLocalFile());
    return info.isDir() ? info.absoluteFilePath() : info.isFile() ? info.absolutePath() : QString();
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), m_engine(std::make_unique<Engine>()), m_pages(new QStackedWidget(this)),
      m_startPage(new StartPage(m_pages)), m_workbench(new WorkbenchPage(m_pages)) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(tr("Quantscope"));
    setAcceptDrops(true);
    m_pages->addWidget(m_startPage);
    m_pages->addWidget(m_workbench);
    setCentralWidget(m_pages);

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

    QSettings settings;
    setRecentModels(settings.value(QLatin1String(RecentModelsKey)).toStringList());
    eval->setDataPath(settings.value(QLatin1String(EvalDataPathKey)).toString());
    if (!restoreGeometry(settings.value(QLatin1String(GeometryKey)).toByteArray()))
        resize(1400, 900);
    restoreState(settings.value(QLatin1String(WindowStateKey)).toByteArray(), StateVersion);
    if (!m_workbench->restoreState(settings.value(QLatin1String(WorkbenchStateKey)).toByteArray(),
                                   StateVersion))
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
    view->addSeparator();
    view->addAction(tr("&Reset Layout"), this, &MainWindow::resetLayout);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* about = help->addAction(tr("&About Quantscope"), this, &MainWindow::showAbout);
    about->setMenuRole(QAction::AboutRole);
}

void MainWindow::createStatusBar() {
    m_statusProgress = new QProgressBar(this);
    m_statusProgress->setRange(0, 1000);
    m_statusProgress->setMaximumWidth(220);
    m_statusProgress->setTextVisible(false);
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
}

QString MainWindow::demoModelDirectory() {
    return QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
           QLatin1String("/demo-model");
}

void MainWindow::openModel(const QString& directory) {
    if (directory.trimmed().isEmpty())
        return;
    m_openingDirectory = normalizedDirectory(directory);
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

void MainWindow::closeModel() {
    if (m_evalJob >= 0)
        m_engine->cancel(m_evalJob);
    m_modelDirectory.clear();
    m_workbench->clear();
    setWindowTitle(tr("Quantscope"));
    showWorkbench(false);
}

void MainWindow::showWorkbench(bool show) {
    m_pages->setCurrentWidget(show ? static_cast<QWidget*>(m_workbench) : m_startPage);
}

bool MainWindow::isWorkbenchShown() const {
    return m_pages->currentWidget() == m_workbench;
}

void MainWindow::resetLayout() {
    if (!isMaximized() && !isFullScreen())
        resize(1400, 900);
    m_workbench->resetLayout(size());
}

QStringList MainWindow::recentModels() const {
    return QSettings().value(QLatin1String(RecentModelsKey)).toStringList();
}

void MainWindow::addRecentModel(const QString& directory) {
    QStringList recent = recentModels();
    const QString normalized = normalizedDirectory(directory);
    recent.removeAll(normalized);
    recent.prepend(normalized);
    while (recent.size() > MaxRecentModels)
        recent.removeLast();
    setRecentModels(recent);
}

void MainWindow::setRecentModels(const QStringList& directories) {
    QStringList recent = directories.mid(0, MaxRecentModels);
    QSettings().setValue(QLatin1String(RecentModelsKey), recent);
    m_startPage->setRecentModels(recent);
    updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = recentModels();
    for (const QString& directory : recent) {
        QAction* action = m_recentMenu->addAction(QDir::toNativeSeparators(directory));
        action->setEnabled(QFileInfo(directory).isDir());
        connect(action, &QAction::triggered, this, [this, directory] { openModel(directory); });
    }
    if (!recent.isEmpty())
        m_recentMenu->addSeparator();
    QAction* clear =
        m_recentMenu->addAction(tr("Clear Recent"), this, [this] { setRecentModels({}); });
    clear->setEnabled(!recent.isEmpty());
}

// Non-blocking: the box is window-modal but opened with open(), so jobs keep reporting.
void MainWindow::showError(const QString& title, const QString& message) {
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
    updateBusy();
}

void MainWindow::onProgress(int job, double fraction, const QString& message) {
    const QString title = m_jobTitles.value(job);
    statusBar()->showMessage(title.isEmpty()     ? message
                             : message.isEmpty() ? title
                                                 : title + QStringLiteral(": ") + message);
    if (fraction >= 0.0)
        m_statusProgress->setValue(static_cast<int>(qBound(0.0, fraction, 1.0) * 1000.0 + 0.5));
    if (job == m_evalJob)
        m_workbench->evalPanel()->setProgress(fraction, message);
}

void MainWindow::onModelOpened(int job, const ModelInfo& info) {
    if (job != m_openJob)
        return; // superseded by a later open
    m_openJob = -1;
    m_modelDirectory =
        info.directory.empty() ? m_openingDirectory : QString::fromStdString(info.directory);
    m_workbench->setModelInfo(info);
    showWorkbench(true);
    addRecentModel(m_modelDirectory);
    setWindowTitle(tr("%1 — Quantscope").arg(QFileInfo(m_modelDirectory).fileName()));
    statusBar()->showMessage(tr("Opened %1: %2, %3 parameters")
                                 .arg(QDir::toNativeSeparators(m_modelDirectory),
                                      QString::fromStdString(info.architecture),
                                      display::compactCount(info.totalParameters)),
                             StatusMessageMs);
    updateBusy();
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

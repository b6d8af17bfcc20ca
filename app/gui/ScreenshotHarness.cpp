#include "ScreenshotHarness.h"

#include "FrontierView.h"
#include "MainWindow.h"
#include "RecipePanel.h"
#include "RecipeSearchController.h"
#include "WorkbenchPage.h"
#include "engine/Engine.h"
#include "engine/Job.h"
#include "util/AtomicFile.h"

#include <QBuffer>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QPixmap>
#include <QTimer>

#include <cstdio>

namespace qs {

namespace {

// Gives up when no model is shown after this long (a stuck job must not hang a script).
constexpr int ScreenshotTimeoutMs = 300000;
// Lets the page just shown lay out and paint once before it is grabbed.
constexpr int ScreenshotSettleMs = 500;

bool savePng(const QPixmap& pixmap, const QString& path, QString* error) {
    const QString dir = QFileInfo(path).absolutePath();
    if (!QDir().mkpath(dir)) {
        *error = QStringLiteral("cannot create %1").arg(dir);
        return false;
    }
    // Encoded in memory, then written through the checked temporary-name-and-rename path
    // (QSaveFile committed empty files on a full disk, see util/AtomicFile).
    QBuffer buffer;
    if (!buffer.open(QIODevice::WriteOnly) || !pixmap.save(&buffer, "PNG")) {
        *error = QStringLiteral("cannot encode the screenshot as PNG");
        return false;
    }
    try {
        writeFileAtomically(QFile::encodeName(path).toStdString(), buffer.data().toStdString());
    } catch (const std::exception& e) {
        *error = QString::fromUtf8(e.what());
        return false;
    }
    return true;
}

} // namespace

ScreenshotHarness::ScreenshotHarness(QCommandLineParser& parser)
    : m_parser(parser),
      m_screenshotOption(
          QStringLiteral("screenshot"),
          QStringLiteral("Save a PNG of the window to FILE and quit: once the model is shown with "
                         "MODEL_DIR or --demo (exit status 1 when it cannot be opened), else the "
                         "start page. Uses the default 1400x900 layout; for docs and tests."),
          QStringLiteral("FILE")),
      m_analyzeOption(
          QStringLiteral("analyze"),
          QStringLiteral("With --screenshot: run Analyze with the recipe once the model is shown "
                         "and take the picture when it has finished.")),
      m_evaluateOption(QStringLiteral("evaluate"),
                       QStringLiteral("With --screenshot: run Evaluate with the recipe (after "
                                      "--analyze when both are given) before the picture.")),
      m_sensitivityOption(QStringLiteral("sensitivity"),
                          QStringLiteral("With --screenshot: run Sensitivity with the recipe "
                                         "(after the other runs given) before the picture.")),
      m_designOption(QStringLiteral("design"),
                     QStringLiteral("With --screenshot: run the recipe search (Design Recipe "
                                    "dock, its default candidates) at this many bits per weight "
                                    "after the other runs, and show its frontier."),
                     QStringLiteral("BITS")),
      m_selectOption(
          QStringLiteral("select"),
          QStringLiteral("With --screenshot: select this layer before the picture is taken."),
          QStringLiteral("LAYER")),
      m_patternOption(
          QStringLiteral("pattern"),
          QStringLiteral("With --screenshot: type this pattern into the recipe's pattern editor."),
          QStringLiteral("PATTERN")),
      m_grabOption(
          QStringLiteral("grab"),
          QStringLiteral("With --screenshot: what to save, \"window\" (default), \"recipe\" "
                         "(the recipe panel only), \"runs\" (the runs panel only), \"evaluation\" "
                         "(the evaluation panel only) or \"detail\" (the layer detail only) or "
                         "\"design\" (the Design Recipe dock)."),
          QStringLiteral("PART"), QStringLiteral("window")) {
    parser.addOption(m_screenshotOption);
    parser.addOption(m_analyzeOption);
    parser.addOption(m_evaluateOption);
    parser.addOption(m_sensitivityOption);
    parser.addOption(m_designOption);
    parser.addOption(m_selectOption);
    parser.addOption(m_patternOption);
    parser.addOption(m_grabOption);
}

bool ScreenshotHarness::isEnabled() const {
    return !m_parser.value(m_screenshotOption).isEmpty();
}

QString ScreenshotHarness::usageError(bool opensModel) const {
    if (m_parser.isSet(m_screenshotOption) && !isEnabled())
        return QStringLiteral("--screenshot needs a file name");
    for (const QCommandLineOption* o :
         {&m_analyzeOption, &m_evaluateOption, &m_sensitivityOption, &m_designOption,
          &m_selectOption, &m_patternOption, &m_grabOption})
        if (m_parser.isSet(*o) && !isEnabled())
            return QStringLiteral("--%1 goes with --screenshot").arg(o->names().constFirst());
    const QString grab = m_parser.value(m_grabOption);
    if (grab != QLatin1String("window") && grab != QLatin1String("recipe") &&
        grab != QLatin1String("runs") && grab != QLatin1String("evaluation") &&
        grab != QLatin1String("detail") && grab != QLatin1String("design"))
        return QStringLiteral(
                   "--grab takes window, recipe, runs, evaluation, detail or design, not %1")
            .arg(grab);
    bool bitsOk = true;
    if (m_parser.isSet(m_designOption) &&
        (m_parser.value(m_designOption).toDouble(&bitsOk) <= 0.0 || !bitsOk))
        return QStringLiteral("--design takes a positive number of bits per weight");
    for (const QCommandLineOption* o :
         {&m_analyzeOption, &m_evaluateOption, &m_sensitivityOption, &m_designOption})
        if (m_parser.isSet(*o) && !opensModel)
            return QStringLiteral("--%1 needs MODEL_DIR or --demo").arg(o->names().constFirst());
    return {};
}

void ScreenshotHarness::arm(MainWindow& window, bool opensModel) {
    m_window = &window;
    window.resetLayout();
    if (m_parser.isSet(m_analyzeOption))
        m_runs.push_back(RunKind::Analyze);
    if (m_parser.isSet(m_evaluateOption))
        m_runs.push_back(RunKind::Evaluate);
    if (m_parser.isSet(m_sensitivityOption))
        m_runs.push_back(RunKind::Sensitivity);
    m_designPending = m_parser.isSet(m_designOption);
    if (m_designPending) {
        FrontierView* view = window.recipeSearch()->view();
        connect(view, &FrontierView::resultShown, this, &ScreenshotHarness::shootSoon);
        connect(m_window->engine(), &Engine::jobSubmitted, this, [](Job* job) {
            connect(job, &Job::failed, job, [](const QString& message) {
                quitWithError(QStringLiteral("a job failed: %1").arg(message));
            });
        });
    }
    if (opensModel && (!m_runs.empty() || m_designPending)) {
        connect(&window, &MainWindow::modelShown, this, &ScreenshotHarness::startNextRun);
        connect(&window, &MainWindow::runFinished, this, &ScreenshotHarness::startNextRun);
        connect(&window, &MainWindow::runFailed, this, [](const QString& message) {
            quitWithError(QStringLiteral("run failed: %1").arg(message));
        });
    } else if (opensModel) {
        connect(&window, &MainWindow::modelShown, this, &ScreenshotHarness::shootSoon);
    } else {
        QTimer::singleShot(0, this, &ScreenshotHarness::shootSoon);
    }
    connect(&window, &MainWindow::modelOpenFailed, this, &ScreenshotHarness::quitWithError);
    connect(&window, &MainWindow::recipeLoadFailed, this, &ScreenshotHarness::quitWithError);
    QTimer::singleShot(ScreenshotTimeoutMs, this, [] {
        quitWithError(
            QStringLiteral("no model shown after %1 s, giving up").arg(ScreenshotTimeoutMs / 1000));
    });
}

void ScreenshotHarness::startNextRun() {
    if (m_runs.empty()) {
        if (m_designPending) {
            m_designPending = false;
            RecipeSearchController* search = m_window->recipeSearch();
            search->view()->setBudget(false, m_parser.value(m_designOption).toDouble());
            search->showDock();
            search->startSearch();
        } else if (m_runStarted) {
            shootSoon();
        }
        return;
    }
    const RunKind kind = m_runs.front();
    m_runs.erase(m_runs.begin());
    m_runStarted = true;
    if (!m_window->startRun(kind))
        quitWithError(QStringLiteral("cannot start the run"));
}

void ScreenshotHarness::shootSoon() {
    const QString layer = m_parser.value(m_selectOption);
    const QString pattern = m_parser.value(m_patternOption);
    const QString grab = m_parser.value(m_grabOption);
    if (!layer.isEmpty())
        m_window->workbenchPage()->selectLayer(layer);
    if (!pattern.isEmpty())
        m_window->recipePanel()->patternEdit()->setText(pattern);
    // A part alone, at a size that shows it whole (the layer detail's plots: all three rows of
    // them).
    QDockWidget* part =
        grab == QLatin1String("recipe")       ? m_window->recipeDock()
        : grab == QLatin1String("runs")       ? m_window->runDock()
        : grab == QLatin1String("evaluation") ? m_window->workbenchPage()->evalDock()
        : grab == QLatin1String("detail")
            ? m_window->workbenchPage()->findChild<QDockWidget*>(QStringLiteral("layerDetailDock"))
        : grab == QLatin1String("design") ? m_window->recipeSearch()->dock()
                                          : nullptr;
    if (part) {
        part->setFloating(true);
        part->resize(grab == QLatin1String("detail")       ? QSize(1200, 860)
                     : grab == QLatin1String("design")     ? QSize(900, 560)
                     : grab == QLatin1String("evaluation") ? QSize(480, 400)
                                                           : QSize(560, 1000));
        part->show();
        part->raise();
    }
    QTimer::singleShot(ScreenshotSettleMs, this, [this, part] { save(part); });
}

void ScreenshotHarness::save(QDockWidget* part) {
    const QString file = m_parser.value(m_screenshotOption);
    QString error;
    const QPixmap picture = part ? part->grab() : m_window->grab();
    if (!savePng(picture, file, &error)) {
        quitWithError(QStringLiteral("cannot write %1: %2").arg(file, error));
        return;
    }
    std::printf("%s\n", qPrintable(QDir::toNativeSeparators(file)));
    QCoreApplication::exit(0);
}

void ScreenshotHarness::quitWithError(const QString& message) {
    std::fprintf(stderr, "quantscope: %s\n", qPrintable(message));
    QCoreApplication::exit(1);
}

} // namespace qs

// quantscope: the GUI. Parses the command line, shows the main window and, for --screenshot, saves
// a picture of it once the model (or the start page) is shown, optionally after an analysis run:
// scripts/screenshots.sh uses it.
#include "MainWindow.h"
#include "RecipePanel.h"
#include "WorkbenchPage.h"
#include "util/AtomicFile.h"

#include <QApplication>
#include <QBuffer>
#include <QCommandLineParser>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QIcon>
#include <QLineEdit>
#include <QPixmap>
#include <QTimer>

#include <cstdio>

namespace {

// Gives up when no model is shown after this long (a stuck job must not hang a script).
constexpr int ScreenshotTimeoutMs = 300000;
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
        qs::writeFileAtomically(QFile::encodeName(path).toStdString(), buffer.data().toStdString());
    } catch (const std::exception& e) {
        *error = QString::fromUtf8(e.what());
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Quantscope"));
    QApplication::setApplicationName(QStringLiteral("quantscope"));
    QApplication::setApplicationDisplayName(QStringLiteral("Quantscope"));
    QApplication::setApplicationVersion(QStringLiteral(QS_VERSION));
    // The desktop entry's icon, embedded (resources/quantscope.qrc) for the window and About box;
    // Wayland compositors find the installed one by the desktop file name.
    QIcon icon;
    for (int size : {32, 64, 128, 256})
        icon.addFile(QStringLiteral(":/quantscope/icon-%1.png").arg(size));
    QApplication::setWindowIcon(icon);
    QGuiApplication::setDesktopFileName(QStringLiteral("quantscope"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Quantscope: post-training quantization workbench for LLMs.\n"
                       "Without arguments the start page is shown."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("MODEL_DIR"),
                                 QStringLiteral("Hugging Face model folder to open "
                                                "(config.json + *.safetensors)."),
                                 QStringLiteral("[MODEL_DIR]"));
    const QCommandLineOption demoOption(
        QStringLiteral("demo"),
        QStringLiteral("Open the built-in demo model (a small random Llama, written to the "
                       "application data folder on first use)."));
    const QCommandLineOption screenshotOption(
        QStringLiteral("screenshot"),
        QStringLiteral("Save a PNG of the window to FILE and quit: once the model is shown with "
                       "MODEL_DIR or --demo (exit status 1 when it cannot be opened), else the "
                       "start page. Uses the default 1400x900 layout; for docs and tests."),
        QStringLiteral("FILE"));
    const QCommandLineOption recipeOption(
        QStringLiteral("recipe"),
        QStringLiteral("Recipe file (quantscope-recipe JSON) to load, after the model when one "
                       "is opened."),
        QStringLiteral("FILE"));
    const QCommandLineOption analyzeOption(
        QStringLiteral("analyze"),
        QStringLiteral("With --screenshot: run Analyze with the recipe once the model is shown "
                       "and take the picture when it has finished."));
    const QCommandLineOption selectOption(
        QStringLiteral("select"),
        QStringLiteral("With --screenshot: select this layer before the picture is taken."),
        QStringLiteral("LAYER"));
    const QCommandLineOption patternOption(
        QStringLiteral("pattern"),
        QStringLiteral("With --screenshot: type this pattern into the recipe's pattern editor."),
        QStringLiteral("PATTERN"));
    const QCommandLineOption grabOption(
        QStringLiteral("grab"),
        QStringLiteral("With --screenshot: what to save, \"window\" (default), \"recipe\" "
                       "(the recipe panel only) or \"detail\" (the layer detail only)."),
        QStringLiteral("PART"), QStringLiteral("window"));
    parser.addOption(demoOption);
    parser.addOption(recipeOption);
    parser.addOption(screenshotOption);
    parser.addOption(analyzeOption);
    parser.addOption(selectOption);
    parser.addOption(patternOption);
    parser.addOption(grabOption);
    parser.process(app);

    const QStringList positional = parser.positionalArguments();
    const bool demo = parser.isSet(demoOption);
    const QString screenshot = parser.value(screenshotOption);
    auto fail = [](const QString& message) {
        std::fprintf(stderr, "quantscope: %s\n", qPrintable(message));
        return 2;
    };
    if (positional.size() > 1)
        return fail(QStringLiteral("at most one MODEL_DIR, got %1").arg(positional.size()));
    if (demo && !positional.isEmpty())
        return fail(QStringLiteral("give MODEL_DIR or --demo, not both"));
    if (parser.isSet(screenshotOption) && screenshot.isEmpty())
        return fail(QStringLiteral("--screenshot needs a file name"));
    const QString recipe = parser.value(recipeOption);
    if (parser.isSet(recipeOption) && recipe.isEmpty())
        return fail(QStringLiteral("--recipe needs a file name"));
    const bool analyze = parser.isSet(analyzeOption);
    const QString grab = parser.value(grabOption);
    for (const QCommandLineOption* o : {&analyzeOption, &selectOption, &patternOption, &grabOption})
        if (parser.isSet(*o) && screenshot.isEmpty())
            return fail(QStringLiteral("--%1 goes with --screenshot").arg(o->names().constFirst()));
    if (grab != QLatin1String("window") && grab != QLatin1String("recipe") &&
        grab != QLatin1String("detail"))
        return fail(QStringLiteral("--grab takes window, recipe or detail, not %1").arg(grab));
    if (analyze && !demo && positional.isEmpty())
        return fail(QStringLiteral("--analyze needs MODEL_DIR or --demo"));

    qs::MainWindow window;
    const bool opensModel = demo || !positional.isEmpty();
    if (!screenshot.isEmpty()) {
        window.resetLayout();
        // Lets the page just shown lay out and paint once before it is grabbed.
        const QString layer = parser.value(selectOption);
        const QString pattern = parser.value(patternOption);
        auto shootSoon = [&window, screenshot, layer, pattern, grab] {
            if (!layer.isEmpty())
                window.workbenchPage()->selectLayer(layer);
            if (!pattern.isEmpty())
                window.recipePanel()->patternEdit()->setText(pattern);
            // A part alone, at a size that shows it whole (the layer detail's plots: all three
            // rows of them).
            QDockWidget* part = grab == QLatin1String("recipe") ? window.recipeDock()
                                : grab == QLatin1String("detail")
                                    ? window.workbenchPage()->findChild<QDockWidget*>(
                                          QStringLiteral("layerDetailDock"))
                                    : nullptr;
            if (part) {
                part->setFloating(true);
                part->resize(grab == QLatin1String("recipe") ? QSize(460, 1000) : QSize(1200, 860));
                part->show();
            }
            QTimer::singleShot(ScreenshotSettleMs, &window, [&window, screenshot, part] {
                QString error;
                const QPixmap picture = part ? part->grab() : window.grab();
                if (!savePng(picture, screenshot, &error)) {
                    std::fprintf(stderr, "quantscope: cannot write %s: %s\n",
                                 qPrintable(screenshot), qPrintable(error));
                    QCoreApplication::exit(1);
                    return;
                }
                std::printf("%s\n", qPrintable(QDir::toNativeSeparators(screenshot)));
                QCoreApplication::exit(0);
            });
        };
        if (opensModel && analyze) {
            QObject::connect(&window, &qs::MainWindow::modelShown, &window, [&window] {
                if (!window.startRun(qs::RunKind::Analyze)) {
                    std::fprintf(stderr, "quantscope: cannot start the analysis\n");
                    QCoreApplication::exit(1);
                }
            });
            QObject::connect(&window, &qs::MainWindow::runFinished, &window, shootSoon);
            auto runFailed = [](const QString& message) {
                std::fprintf(stderr, "quantscope: analysis failed: %s\n", qPrintable(message));
                QCoreApplication::exit(1);
            };
            QObject::connect(&window, &qs::MainWindow::runFailed, &window, runFailed);
        } else if (opensModel) {
            QObject::connect(&window, &qs::MainWindow::modelShown, &window, shootSoon);
        } else
            QTimer::singleShot(0, &window, shootSoon);
        QObject::connect(&window, &qs::MainWindow::modelOpenFailed, &window,
                         [](const QString& message) {
                             std::fprintf(stderr, "quantscope: %s\n", qPrintable(message));
                             QCoreApplication::exit(1);
                         });
        QObject::connect(&window, &qs::MainWindow::recipeLoadFailed, &window,
                         [](const QString& message) {
                             std::fprintf(stderr, "quantscope: %s\n", qPrintable(message));
                             QCoreApplication::exit(1);
                         });
        QTimer::singleShot(ScreenshotTimeoutMs, &window, [] {
            std::fprintf(stderr, "quantscope: no model shown after %d s, giving up\n",
                         ScreenshotTimeoutMs / 1000);
            QCoreApplication::exit(1);
        });
    }
    window.show();
    if (!recipe.isEmpty()) {
        if (opensModel)
            window.loadRecipeAfterOpen(recipe);
        else if (!window.loadRecipe(recipe) && !screenshot.isEmpty())
            return 1;
    }
    if (demo)
        window.openDemoModel();
    else if (!positional.isEmpty())
        window.openModel(positional.constFirst());
    return app.exec();
}

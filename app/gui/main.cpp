// quantscope: the GUI. Parses the command line and shows the main window; --screenshot and its
// companions are the ScreenshotHarness's (scripts/screenshots.sh uses them).
#include "MainWindow.h"
#include "ScreenshotHarness.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>

#include <cstdio>
#include <memory>

namespace {

// --help and --version print and exit without a window: they must work without a display (over
// ssh, in CI), where constructing QApplication aborts. QCommandLineParser::process() exits on
// them before anything else is read.
bool onlyPrints(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        if (a == "--") // what follows is a positional argument
            return false;
        if (a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" ||
            a == "--version")
            return true;
    }
    return false;
}

} // namespace

int main(int argc, char** argv) {
    std::unique_ptr<QCoreApplication> application;
    if (onlyPrints(argc, argv))
        application = std::make_unique<QCoreApplication>(argc, argv);
    else
        application = std::make_unique<QApplication>(argc, argv);
    QCoreApplication& app = *application;
    QCoreApplication::setOrganizationName(QStringLiteral("Quantscope"));
    QCoreApplication::setApplicationName(QStringLiteral("quantscope"));
    QCoreApplication::setApplicationVersion(QStringLiteral(QS_VERSION));
    if (qobject_cast<QApplication*>(&app))
        QApplication::setApplicationDisplayName(QStringLiteral("Quantscope"));
    // The desktop entry's icon, embedded (resources/quantscope.qrc) for the window and About box;
    // Wayland compositors find the installed one by the desktop file name.
    if (qobject_cast<QApplication*>(&app)) {
        Q_INIT_RESOURCE(quantscope); // in quantscope_app, a static library
        QIcon icon;
        for (int size : {32, 64, 128, 256})
            icon.addFile(QStringLiteral(":/quantscope/icon-%1.png").arg(size));
        QApplication::setWindowIcon(icon);
        QGuiApplication::setDesktopFileName(QStringLiteral("quantscope"));
    }

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
    const QCommandLineOption recipeOption(
        QStringLiteral("recipe"),
        QStringLiteral("Recipe file (quantscope-recipe JSON) to load, after the model when one "
                       "is opened."),
        QStringLiteral("FILE"));
    parser.addOption(demoOption);
    parser.addOption(recipeOption);
    qs::ScreenshotHarness screenshot(parser);
    parser.process(app);

    const QStringList positional = parser.positionalArguments();
    const bool demo = parser.isSet(demoOption);
    const bool opensModel = demo || !positional.isEmpty();
    const QString recipe = parser.value(recipeOption);
    QString error;
    if (positional.size() > 1)
        error = QStringLiteral("at most one MODEL_DIR, got %1").arg(positional.size());
    else if (demo && !positional.isEmpty())
        error = QStringLiteral("give MODEL_DIR or --demo, not both");
    else if (parser.isSet(recipeOption) && recipe.isEmpty())
        error = QStringLiteral("--recipe needs a file name");
    else
        error = screenshot.usageError(opensModel);
    if (!error.isEmpty()) {
        std::fprintf(stderr, "quantscope: %s\n", qPrintable(error));
        return 2;
    }

    qs::MainWindow window;
    if (screenshot.isEnabled())
        screenshot.arm(window, opensModel);
    window.show();
    if (!recipe.isEmpty()) {
        if (opensModel)
            window.loadRecipeAfterOpen(recipe);
        else if (!window.loadRecipe(recipe) && screenshot.isEnabled())
            return 1;
    }
    if (demo)
        window.openDemoModel();
    else if (!positional.isEmpty())
        window.openModel(positional.constFirst());
    return app.exec();
}

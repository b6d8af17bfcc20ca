#pragma once

#include "RunController.h"

#include <QCommandLineOption>
#include <QObject>
#include <QString>

#include <vector>

class QCommandLineParser;
class QDockWidget;

namespace qs {

class MainWindow;

// --screenshot and its companions (--analyze, --evaluate, --sensitivity, --select, --pattern,
// --grab): saves a PNG of the main window (or of one of its docks) once the model, or the start
// page, is shown, optionally after those runs (in that order), and quits. For docs
// (scripts/screenshots.sh) and tests; kept out of main() so the GUI's entry point only parses the
// command line and opens the window.
class ScreenshotHarness : public QObject {
    Q_OBJECT
public:
    // Adds the options to `parser` (after the ones main() adds, so --help keeps its order).
    explicit ScreenshotHarness(QCommandLineParser& parser);

    // After parser.process(): the usage error of these options, empty when there is none.
    // `opensModel`: MODEL_DIR or --demo was given.
    QString usageError(bool opensModel) const;
    // --screenshot FILE was given.
    bool isEnabled() const;

    // Sets the window up for the picture and arranges for it to be taken, then the application
    // to quit (exit status 0, or 1 with a message on stderr when the model, the recipe, the
    // analysis or the file fails, or after a time-out). Call before the window opens anything.
    void arm(MainWindow& window, bool opensModel);

private:
    void shootSoon();
    void startNextRun();
    void save(QDockWidget* part);
    static void quitWithError(const QString& message);

    QCommandLineParser& m_parser;
    const QCommandLineOption m_screenshotOption;
    const QCommandLineOption m_analyzeOption;
    const QCommandLineOption m_evaluateOption;
    const QCommandLineOption m_sensitivityOption;
    const QCommandLineOption m_designOption;
    const QCommandLineOption m_selectOption;
    const QCommandLineOption m_patternOption;
    const QCommandLineOption m_grabOption;
    MainWindow* m_window = nullptr;
    std::vector<RunKind> m_runs; // still to start, in order
    bool m_runStarted = false;
    bool m_designPending = false; // --design: the search still to start
};

} // namespace qs

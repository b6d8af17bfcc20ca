#pragma once

#include "analysis/Sensitivity.h"

#include <QElapsedTimer>
#include <QWidget>

#include <optional>
#include <string>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;
class QTimer;

namespace qs {

class RunSensitivityModel;

// Starts recipe runs (Analyze, Quantize…, Sensitivity) and shows the one in progress, whichever
// started it (Evaluate is the evaluation panel's): progress bar, elapsed time and an ETA
// extrapolated from the progress fraction, Cancel. Shows the sensitivity rows and the runs to
// compare with. The panel only asks; the owner runs the job and reports back.
class RunPanel : public QWidget {
    Q_OBJECT
public:
    explicit RunPanel(QWidget* parent = nullptr);

    void setModelLoaded(bool loaded);
    // A run started (title shown) or ended; buttons are disabled while one runs.
    void setRunning(const QString& title);
    void setIdle(const QString& status);
    bool isRunning() const { return m_running; }
    void setProgress(double fraction, const QString& message);

    void clearSensitivity();
    void addSensitivityRow(const SensitivityRow& row);
    void showSensitivityTotals(const SensitivityResult& result);
    // Where the sensitivity rows are (being) computed, shown above them; clearSensitivity clears
    // it.
    void setSensitivityCompute(const std::string& device, const std::string& dtype);

    // The runs made since the model was opened that can be compared with ("Compare with:"):
    // `id` is what compareRequested gives back; clearRuns leaves only "no comparison".
    void addRun(int id, const QString& label);
    void clearRuns();
    // The run chosen to compare with, -1 for none.
    int comparedRun() const;
    void setComparedRun(int id);

    // "1:05" / "12 s": how elapsed and remaining times are shown.
    static QString formatDuration(double seconds);
    // "about 1:05 left" at the average rate so far; empty before 2% and at the end.
    static QString remainingText(double fraction, double elapsedSeconds);

    QPushButton* analyzeButton() const { return m_analyze; }
    QPushButton* quantizeButton() const { return m_quantize; }
    QPushButton* sensitivityButton() const { return m_sensitivity; }
    QPushButton* cancelButton() const { return m_cancel; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* timeLabel() const { return m_time; }
    QComboBox* compareCombo() const { return m_compare; }
    // "Computed on cpu · float32": the device and precision of the sensitivity rows.
    QLabel* sensitivityComputeLabel() const { return m_sensitivityCompute; }
    RunSensitivityModel* sensitivityModel() const { return m_sensitivityModel; }
    QTableView* sensitivityView() const { return m_sensitivityView; }

Q_SIGNALS:
    void analyzeRequested();
    void quantizeRequested();
    void sensitivityRequested();
    void cancelRequested();
    // The user chose a run to compare with (-1: none).
    void compareRequested(int id);

private:
    void updateButtons();
    void updateTime();
    // The status label's text, cut to a few lines (display::statusLines), the whole in a tooltip.
    void setStatus(const QString& text);

    QPushButton* m_analyze;
    QPushButton* m_quantize;
    QPushButton* m_sensitivity;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_status;
    QLabel* m_time;
    QComboBox* m_compare;
    QLabel* m_sensitivityCompute;
    QLabel* m_sensitivityTotals;
    RunSensitivityModel* m_sensitivityModel;
    QTableView* m_sensitivityView;
    QTimer* m_clock;
    QElapsedTimer m_elapsed;
    double m_fraction = 0.0;
    bool m_modelLoaded = false;
    bool m_running = false;
};

} // namespace qs

#pragma once

#include "eval/PerplexityResult.h"

#include <QStringList>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace qs {

// Perplexity evaluation of the open model (docs/evaluation.md protocol): the text file, window
// length, window count, device and precision go in; tokens, windows, perplexity, mean NLL and
// throughput come out. The panel only asks (runRequested/cancelRequested); the owner runs the
// job and reports back through setRunning/setProgress/showResult/showFailure.
class EvalPanel : public QWidget {
    Q_OBJECT
public:
    explicit EvalPanel(QWidget* parent = nullptr);

    // Devices the engine offers, e.g. {"cpu"} or {"cpu", "cuda"}; the first is selected.
    void setDevices(const QStringList& devices);
    // Selects a device and a precision, e.g. the ones saved for a model: a device the engine no
    // longer offers falls back to the first offered, an unknown precision to float32, silently.
    // Emits no computeChosen (that one is the user's).
    void setCompute(const QString& device, const QString& dtype);
    QString device() const;
    QString dtype() const;
    void setModelLoaded(bool loaded);
    void setDataPath(const QString& path);
    QString dataPath() const;
    EvalRequest request() const;

    void setRunning(bool running);
    bool isRunning() const { return m_running; }
    void setProgress(double fraction, const QString& message);
    void showResult(const PerplexityResult& result);
    void showFailure(const QString& message);
    void showCancelled();
    void clearResult();

    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const { return m_cancel; }
    QSpinBox* seqLenBox() const { return m_seqLen; }
    QSpinBox* maxWindowsBox() const { return m_maxWindows; }
    QComboBox* deviceBox() const { return m_device; }
    QComboBox* dtypeBox() const { return m_dtype; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* statusLabel() const { return m_status; }
    // Result labels: "tokens", "windows", "perplexity", "meanNll", "tokensPerSecond", "compute"
    // (device and precision of the result, "cpu · float32").
    QLabel* resultLabel(const QString& name) const;

Q_SIGNALS:
    void runRequested(const qs::EvalRequest& request);
    void cancelRequested();
    // The user picked a device or a precision (not emitted by setDevices or setCompute).
    void computeChosen(const QString& device, const QString& dtype);

private:
    void chooseDataFile();
    void updateButtons();

    QLineEdit* m_data;
    QPushButton* m_browse;
    QSpinBox* m_seqLen;
    QSpinBox* m_maxWindows;
    QComboBox* m_device;
    QComboBox* m_dtype;
    QPushButton* m_run;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_status;
    QLabel* m_tokens;
    QLabel* m_windows;
    QLabel* m_perplexity;
    QLabel* m_meanNll;
    QLabel* m_tokensPerSecond;
    QLabel* m_compute;
    bool m_modelLoaded = false;
    bool m_running = false;
};

} // namespace qs

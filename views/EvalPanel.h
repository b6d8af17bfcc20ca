#pragma once

#include "eval/FidelityReport.h"
#include "eval/PerplexityResult.h"
#include "recipe/Recipe.h"

#include <QPointer>
#include <QStringList>
#include <QWidget>

#include <optional>

class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSpinBox;

namespace qs {

class RecipeDocument;

// The one place to evaluate (docs/evaluation.md protocol): the recipe's evaluation text, window
// length and window count are set here (edits of the recipe, undoable as any other), Evaluate
// computes the perplexity of the unquantized and the quantized model on those windows, and the
// result shows both, their difference and the quantized model's fidelity to the unquantized one
// (mean KL divergence, top-1 agreement), with the device and precision that computed them. The
// device and precision boxes set where every run of the workbench computes. The panel only asks
// (evaluateRequested/cancelRequested); the owner runs the job and reports back.
class EvalPanel : public QWidget {
    Q_OBJECT
public:
    explicit EvalPanel(QWidget* parent = nullptr);

    // The recipe whose evaluation settings the fields edit and follow; none: they edit nothing.
    void setDocument(RecipeDocument* document);

    // Devices the engine offers, e.g. {"cpu"} or {"cpu", "cuda"}; the first is selected.
    void setDevices(const QStringList& devices);
    // Selects a device and a precision, e.g. the ones saved for a model: a device the engine no
    // longer offers falls back to the first offered, an unknown precision to float32, silently.
    // Emits no computeChosen (that one is the user's).
    void setCompute(const QString& device, const QString& dtype);
    QString device() const;
    QString dtype() const;
    void setModelLoaded(bool loaded);
    // The evaluation text as the field shows it (the recipe's once it follows one).
    QString dataPath() const;

    // Another run of the workbench is going: Evaluate waits for it (one run at a time).
    void setBusy(bool busy);
    // The evaluation started (the old figures are cleared) or ended.
    void setRunning(bool running);
    bool isRunning() const { return m_running; }
    void setProgress(double fraction, const QString& message);
    // The evaluation's figures: perplexities and, when the run measured it, the fidelity, with
    // the windows and the device and precision that computed them (the results' own). Ends the
    // evaluation, and scrolls the figures into view.
    void showPerplexities(const std::optional<PerplexityResult>& fp,
                          const std::optional<PerplexityResult>& quantized,
                          const std::optional<FidelityReport>& fidelity = std::nullopt);
    void showFailure(const QString& message);
    void showCancelled();
    void clearResult();

    QPushButton* evaluateButton() const { return m_evaluate; }
    QPushButton* cancelButton() const { return m_cancel; }
    QLineEdit* dataEdit() const { return m_data; }
    QSpinBox* seqLenBox() const { return m_seqLen; }
    QSpinBox* maxWindowsBox() const { return m_maxWindows; }
    QComboBox* deviceBox() const { return m_device; }
    QComboBox* dtypeBox() const { return m_dtype; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* statusLabel() const { return m_status; }
    QGroupBox* resultGroup() const { return m_result; }
    QScrollArea* scrollArea() const { return m_scroll; }
    QLabel* fpPerplexityLabel() const { return m_fpPpl; }
    QLabel* quantizedPerplexityLabel() const { return m_quantPpl; }
    // Quantized minus unquantized perplexity, absolute and relative.
    QLabel* perplexityDifferenceLabel() const { return m_pplDelta; }
    QLabel* klLabel() const { return m_kl; }
    QLabel* sameTopLabel() const { return m_sameTop; }
    // "44 × 256 tokens": the windows the figures were computed on.
    QLabel* windowsLabel() const { return m_windows; }
    // "cpu · float32": the device and precision of the figures shown.
    QLabel* perplexityComputeLabel() const { return m_compute; }

Q_SIGNALS:
    void evaluateRequested();
    void cancelRequested();
    // The user picked a device or a precision (not emitted by setDevices or setCompute).
    void computeChosen(const QString& device, const QString& dtype);

private:
    void followRecipe(const Recipe& recipe);
    // Runs one edit of the recipe; a refused one is said in the status line and the fields go
    // back to what the recipe says.
    template <typename Edit> void edit(Edit&& editFn);
    void chooseDataFile();
    void updateButtons();

    QPointer<RecipeDocument> m_document;
    QLineEdit* m_data;
    QPushButton* m_browse;
    QSpinBox* m_seqLen;
    QSpinBox* m_maxWindows;
    QComboBox* m_device;
    QComboBox* m_dtype;
    QPushButton* m_evaluate;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_status;
    QGroupBox* m_result;
    QLabel* m_fpPpl;
    QLabel* m_quantPpl;
    QLabel* m_pplDelta;
    QLabel* m_kl;
    QLabel* m_sameTop;
    QLabel* m_windows;
    QLabel* m_compute;
    QScrollArea* m_scroll;
    bool m_modelLoaded = false;
    bool m_busy = false;
    bool m_running = false;
};

} // namespace qs

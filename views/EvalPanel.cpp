#include "EvalPanel.h"

#include "DisplayFormat.h"
#include "LimitedSpinBox.h"
#include "RecipeDocument.h"
#include "WheelGuard.h"

#include "util/Error.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

namespace qs {

namespace {

QLabel* makeResultLabel(QWidget* parent) {
    auto* label = new QLabel(QStringLiteral("–"), parent);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return label;
}

QString perplexityText(const std::optional<PerplexityResult>& r) {
    return r ? QString::number(r->perplexity, 'f', 4) : QStringLiteral("–");
}

} // namespace

EvalPanel::EvalPanel(QWidget* parent)
    : QWidget(parent), m_data(new QLineEdit(this)), m_browse(new QPushButton(tr("Browse…"), this)),
      m_seqLen(new QSpinBox(this)), m_maxWindows(new QSpinBox(this)), m_device(new QComboBox(this)),
      m_dtype(new QComboBox(this)), m_evaluate(new QPushButton(tr("Evaluate"), this)),
      m_cancel(new QPushButton(tr("Cancel"), this)), m_progress(new QProgressBar(this)),
      m_status(new QLabel(this)), m_result(new QGroupBox(tr("Perplexity and fidelity"), this)),
      m_fpPpl(makeResultLabel(this)), m_quantPpl(makeResultLabel(this)),
      m_pplDelta(makeResultLabel(this)), m_kl(makeResultLabel(this)),
      m_sameTop(makeResultLabel(this)), m_windows(makeResultLabel(this)),
      m_compute(makeResultLabel(this)), m_scroll(new QScrollArea(this)) {
    setObjectName(QStringLiteral("evalPanel"));
    m_evaluate->setObjectName(QStringLiteral("evaluate"));
    m_fpPpl->setObjectName(QStringLiteral("unquantizedPerplexity"));
    m_quantPpl->setObjectName(QStringLiteral("quantizedPerplexity"));
    m_pplDelta->setObjectName(QStringLiteral("perplexityDifference"));
    m_kl->setObjectName(QStringLiteral("klDivergence"));
    m_sameTop->setObjectName(QStringLiteral("sameTopToken"));
    m_data->setObjectName(QStringLiteral("evaluationData"));
    m_data->setPlaceholderText(tr("UTF-8 text file, e.g. wikitext2-test.txt"));
    m_data->setClearButtonEnabled(true);
    m_data->setToolTip(tr("The recipe's evaluation text: Evaluate and Sensitivity score it"));
    // The recipe changes once the user is done with the field, not with every letter.
    connect(m_data, &QLineEdit::editingFinished, this, [this] {
        if (m_document && m_data->text().trimmed() !=
                              QString::fromStdString(m_document->recipe().evaluation.dataPath))
            edit([this] { m_document->setEvaluationData(m_data->text().trimmed()); });
    });
    connect(m_data, &QLineEdit::textChanged, this, &EvalPanel::updateButtons);
    connect(m_browse, &QPushButton::clicked, this, &EvalPanel::chooseDataFile);

    applyFieldLimit(m_seqLen, limits::evaluationSeqLen, tr("model context"));
    m_seqLen->setSingleStep(128);
    m_seqLen->setKeyboardTracking(false); // one edit per value entered, not per digit
    m_seqLen->setToolTip(tr("Tokens per window; model context = 512 or the model's maximum "
                            "positions if smaller"));
    connect(m_seqLen, &QSpinBox::valueChanged, this, [this](int v) {
        if (m_document)
            edit([this, v] { m_document->setEvaluationSeqLen(v); });
    });
    applyFieldLimit(m_maxWindows, limits::evaluationMaxWindows, tr("all"));
    m_maxWindows->setKeyboardTracking(false);
    m_maxWindows->setToolTip(tr("Evaluate only the first N windows of the text"));
    connect(m_maxWindows, &QSpinBox::valueChanged, this, [this](int v) {
        if (m_document)
            edit([this, v] { m_document->setEvaluationMaxWindows(v); });
    });

    m_dtype->addItems(
        {QStringLiteral("float32"), QStringLiteral("bfloat16"), QStringLiteral("float16")});
    m_device->setToolTip(tr("Where every run of the workbench computes"));
    m_dtype->setToolTip(tr("Precision of every run's forward passes"));
    setDevices({QStringLiteral("cpu")});
    // activated, not currentIndexChanged: only the user's choice is remembered for the model,
    // never a selection restored or refilled by code.
    for (QComboBox* box : {m_device, m_dtype})
        connect(box, &QComboBox::activated, this,
                [this] { Q_EMIT computeChosen(device(), dtype()); });

    // Compact rows: at 1366x768 the Evaluation tab has about 300 px, and the figures should be
    // in view under the settings without scrolling.
    auto* dataRow = new QHBoxLayout;
    dataRow->addWidget(m_data, 1);
    dataRow->addWidget(m_browse);
    auto* windowsRow = new QHBoxLayout;
    windowsRow->addWidget(m_maxWindows, 1);
    windowsRow->addWidget(new QLabel(tr("×"), this));
    windowsRow->addWidget(m_seqLen, 1);
    windowsRow->addWidget(new QLabel(tr("tokens"), this));
    // Evaluate and Cancel beside the compute: one row less.
    auto* computeRow = new QHBoxLayout;
    computeRow->addWidget(m_device, 1);
    computeRow->addWidget(m_dtype, 1);
    computeRow->addWidget(m_cancel);
    computeRow->addWidget(m_evaluate);
    auto* settings = new QFormLayout;
    settings->addRow(tr("Text:"), dataRow);
    settings->addRow(tr("Windows:"), windowsRow);
    settings->addRow(tr("Compute:"), computeRow);

    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_evaluate->setDefault(true);
    m_evaluate->setToolTip(tr("Perplexity of the unquantized and the quantized model on the "
                              "evaluation text, and how far the quantized one strays from it"));
    connect(m_evaluate, &QPushButton::clicked, this, &EvalPanel::evaluateRequested);
    connect(m_cancel, &QPushButton::clicked, this, &EvalPanel::cancelRequested);
    m_status->setWordWrap(true);

    auto* resultForm = new QFormLayout(m_result);
    // "Unquantized", not "fp32": the model computes in the precision chosen, named below.
    resultForm->addRow(tr("Unquantized:"), m_fpPpl);
    resultForm->addRow(tr("Quantized:"), m_quantPpl);
    resultForm->addRow(tr("Difference:"), m_pplDelta);
    resultForm->addRow(tr("KL divergence:"), m_kl);
    resultForm->addRow(tr("Same top token:"), m_sameTop);
    // The windows and the compute on one row ("4 × 128 tokens · cpu · float32").
    auto* onRow = new QHBoxLayout;
    onRow->addStretch(1);
    onRow->addWidget(m_windows);
    onRow->addWidget(new QLabel(QStringLiteral("·"), m_result));
    onRow->addWidget(m_compute);
    resultForm->addRow(tr("Computed on:"), onRow);
    m_kl->setToolTip(tr("Mean KL(unquantized ‖ quantized) over the scored tokens, as llama.cpp's "
                        "--kl-divergence computes it"));
    m_sameTop->setToolTip(tr("Share of scored tokens whose most likely next token is the same in "
                             "both models"));
    QFont emphasis = m_pplDelta->font();
    emphasis.setBold(true);
    m_pplDelta->setFont(emphasis);

    // Scrollable, so the panel never sets a minimum height on the dock column it sits in
    // (it shares a tab group with the run panel).
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->addLayout(settings);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addWidget(m_result);
    layout->addStretch(1);
    m_scroll->setWidget(content);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_scroll);
    WheelGuard::install(content);

    updateButtons();
}

void EvalPanel::setDocument(RecipeDocument* document) {
    if (m_document)
        disconnect(m_document, nullptr, this, nullptr);
    m_document = document;
    if (!document)
        return;
    connect(document, &RecipeDocument::recipeChanged, this,
            [this] { followRecipe(m_document->recipe()); });
    followRecipe(document->recipe());
}

void EvalPanel::followRecipe(const Recipe& recipe) {
    const QSignalBlocker data(m_data), seqLen(m_seqLen), windows(m_maxWindows);
    const QString path = QString::fromStdString(recipe.evaluation.dataPath);
    if (m_data->text() != path)
        m_data->setText(path);
    m_seqLen->setValue(static_cast<int>(recipe.evaluation.seqLen));
    m_maxWindows->setValue(static_cast<int>(recipe.evaluation.maxWindows));
    updateButtons(); // textChanged was blocked
}

template <typename Edit> void EvalPanel::edit(Edit&& editFn) {
    try {
        editFn();
    } catch (const Error& e) {
        const QString text = QString::fromStdString(e.what());
        m_status->setText(display::statusLines(text));
        m_status->setToolTip(text);
        followRecipe(m_document->recipe()); // the fields back to what the recipe says
    }
}

void EvalPanel::setDevices(const QStringList& devices) {
    const QString current = m_device->currentText();
    m_device->clear();
    m_device->addItems(devices);
    const int keep = m_device->findText(current);
    m_device->setCurrentIndex(keep >= 0 ? keep : 0);
    updateButtons();
}

void EvalPanel::setCompute(const QString& device, const QString& dtype) {
    const int deviceIndex = m_device->findText(device);
    m_device->setCurrentIndex(deviceIndex >= 0 ? deviceIndex : 0);
    const int dtypeIndex = m_dtype->findText(dtype);
    m_dtype->setCurrentIndex(dtypeIndex >= 0 ? dtypeIndex : 0); // float32 first
}

QString EvalPanel::device() const {
    return m_device->currentText();
}

QString EvalPanel::dtype() const {
    return m_dtype->currentText();
}

void EvalPanel::setModelLoaded(bool loaded) {
    m_modelLoaded = loaded;
    if (!loaded)
        clearResult();
    updateButtons();
}

QString EvalPanel::dataPath() const {
    return m_data->text().trimmed();
}

void EvalPanel::setBusy(bool busy) {
    m_busy = busy;
    updateButtons();
}

void EvalPanel::setRunning(bool running) {
    m_running = running;
    if (running) {
        clearResult();
        m_progress->setValue(0);
        m_status->setText(tr("Starting…"));
    }
    updateButtons();
}

void EvalPanel::setProgress(double fraction, const QString& message) {
    if (fraction >= 0.0)
        m_progress->setValue(static_cast<int>(qBound(0.0, fraction, 1.0) * 1000.0 + 0.5));
    if (!message.isEmpty()) {
        m_status->setText(display::statusLines(message));
        m_status->setToolTip(QString());
    }
}

void EvalPanel::showPerplexities(const std::optional<PerplexityResult>& fp,
                                 const std::optional<PerplexityResult>& quantized,
                                 const std::optional<FidelityReport>& fidelity) {
    m_running = false;
    m_fpPpl->setText(perplexityText(fp));
    m_quantPpl->setText(perplexityText(quantized));
    m_quantPpl->setToolTip(QString());
    // One run computes both figures; either names its device, precision and windows.
    const std::optional<PerplexityResult>& any = quantized ? quantized : fp;
    const QString compute = any ? display::compute(any->device, any->dtype) : QString();
    m_compute->setText(compute.isEmpty() ? QStringLiteral("–") : compute);
    m_windows->setText(
        any && any->windows > 0
            ? tr("%1 × %2 tokens").arg(display::count(any->windows), display::count(any->seqLen))
            : QStringLiteral("–"));
    m_pplDelta->setText(QStringLiteral("–"));
    if (fp && quantized && fp->perplexity > 0.0) {
        const double delta = quantized->perplexity - fp->perplexity;
        m_pplDelta->setText(QStringLiteral("%1%2 (%1%3 %)")
                                .arg(delta >= 0.0 ? QStringLiteral("+") : QString(),
                                     QString::number(delta, 'f', 4),
                                     QString::number(100.0 * delta / fp->perplexity, 'f', 2)));
        m_quantPpl->setToolTip(tr("%1% above the unquantized model")
                                   .arg(QString::number(100.0 * delta / fp->perplexity, 'f', 2)));
    }
    if (fidelity) {
        m_kl->setText(
            QStringLiteral("%1 ± %2").arg(QString::number(fidelity->klMean.value, 'f', 6),
                                          QString::number(fidelity->klMean.error, 'f', 6)));
        m_sameTop->setText(QStringLiteral("%1 ± %2 %")
                               .arg(QString::number(100.0 * fidelity->sameTop.value, 'f', 2),
                                    QString::number(100.0 * fidelity->sameTop.error, 'f', 2)));
    } else {
        m_kl->setText(QStringLiteral("–"));
        m_sameTop->setText(QStringLiteral("–"));
    }
    if (fp || quantized) {
        m_progress->setValue(m_progress->maximum());
        m_status->clear();
        m_status->setToolTip(QString());
        // A short dock (1366x768) may have scrolled the figures out of view: they come back.
        m_scroll->ensureWidgetVisible(m_result, 0, 0);
    }
    updateButtons();
}

void EvalPanel::showFailure(const QString& message) {
    m_running = false;
    m_progress->setValue(0);
    // Cut to a few lines: a wrapped label as tall as a long refusal would raise the dock's, and
    // the window's, minimum height.
    const QString text = tr("Failed: %1").arg(message);
    m_status->setText(display::statusLines(text));
    m_status->setToolTip(text);
    updateButtons();
}

void EvalPanel::showCancelled() {
    m_running = false;
    m_progress->setValue(0);
    m_status->setText(tr("Cancelled."));
    m_status->setToolTip(QString());
    updateButtons();
}

void EvalPanel::clearResult() {
    for (QLabel* label : {m_fpPpl, m_quantPpl, m_pplDelta, m_kl, m_sameTop, m_windows, m_compute})
        label->setText(QStringLiteral("–"));
    m_quantPpl->setToolTip(QString());
    m_status->clear();
    m_status->setToolTip(QString());
}

// A window-modal dialog opened with open(): the event loop keeps running, nothing waits on it.
void EvalPanel::chooseDataFile() {
    auto* dialog =
        new QFileDialog(this, tr("Choose evaluation text"), QFileInfo(dataPath()).absolutePath(),
                        tr("Text files (*.txt);;All files (*)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setFileMode(QFileDialog::ExistingFile);
    connect(dialog, &QFileDialog::fileSelected, this, [this](const QString& path) {
        m_data->setText(path);
        if (m_document)
            edit([this, path] { m_document->setEvaluationData(path); });
    });
    dialog->open();
}

void EvalPanel::updateButtons() {
    m_evaluate->setEnabled(m_modelLoaded && !m_busy && !m_running && !dataPath().isEmpty());
    m_cancel->setEnabled(m_running);
    // Only while it can do something: idle, its width went to the settings (at 1280x720
    // logical px, 2560x1440 at a device pixel ratio of 2, the row scrolled sideways).
    m_cancel->setVisible(m_running);
    m_progress->setVisible(m_running); // an empty bar beside idle settings reads as a text field
    for (QWidget* w :
         std::initializer_list<QWidget*>{m_data, m_browse, m_seqLen, m_maxWindows, m_dtype})
        w->setEnabled(!m_running);
    m_device->setEnabled(!m_running && m_device->count() > 1);
}

} // namespace qs

#include "EvalPanel.h"

#include "LimitedSpinBox.h"
#include "WheelGuard.h"

#include "DisplayFormat.h"

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

} // namespace

EvalPanel::EvalPanel(QWidget* parent)
    : QWidget(parent), m_data(new QLineEdit(this)), m_browse(new QPushButton(tr("Browse…"), this)),
      m_seqLen(new QSpinBox(this)), m_maxWindows(new QSpinBox(this)), m_device(new QComboBox(this)),
      m_dtype(new QComboBox(this)), m_run(new QPushButton(tr("Run"), this)),
      m_cancel(new QPushButton(tr("Cancel"), this)), m_progress(new QProgressBar(this)),
      m_status(new QLabel(this)), m_tokens(makeResultLabel(this)), m_windows(makeResultLabel(this)),
      m_perplexity(makeResultLabel(this)), m_meanNll(makeResultLabel(this)),
      m_tokensPerSecond(makeResultLabel(this)), m_compute(makeResultLabel(this)) {
    m_data->setPlaceholderText(tr("UTF-8 text file, e.g. wikitext2-test.txt"));
    m_data->setClearButtonEnabled(true);
    connect(m_data, &QLineEdit::textChanged, this, &EvalPanel::updateButtons);
    connect(m_browse, &QPushButton::clicked, this, &EvalPanel::chooseDataFile);

    applyFieldLimit(m_seqLen, limits::evaluationSeqLen);
    m_seqLen->setSingleStep(128);
    m_seqLen->setSpecialValueText(tr("auto (≤ 512)"));
    m_seqLen->setToolTip(tr("Tokens per window; auto = 512 or the model's maximum positions if "
                            "smaller"));
    applyFieldLimit(m_maxWindows, limits::evaluationMaxWindows, tr("all"));
    m_maxWindows->setToolTip(tr("Evaluate only the first N windows of the text"));
    m_dtype->addItems(
        {QStringLiteral("float32"), QStringLiteral("bfloat16"), QStringLiteral("float16")});
    m_dtype->setToolTip(tr("Precision of the forward pass"));
    setDevices({QStringLiteral("cpu")});
    // activated, not currentIndexChanged: only the user's choice is remembered for the model,
    // never a selection restored or refilled by code.
    for (QComboBox* box : {m_device, m_dtype})
        connect(box, &QComboBox::activated, this,
                [this] { Q_EMIT computeChosen(device(), dtype()); });

    auto* dataRow = new QHBoxLayout;
    dataRow->addWidget(m_data, 1);
    dataRow->addWidget(m_browse);
    auto* settings = new QFormLayout;
    settings->addRow(tr("Text:"), dataRow);
    settings->addRow(tr("Sequence length:"), m_seqLen);
    settings->addRow(tr("Max windows:"), m_maxWindows);
    settings->addRow(tr("Device:"), m_device);
    settings->addRow(tr("Precision:"), m_dtype);

    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_run);
    m_run->setDefault(true);
    connect(m_run, &QPushButton::clicked, this, [this] { Q_EMIT runRequested(request()); });
    connect(m_cancel, &QPushButton::clicked, this, &EvalPanel::cancelRequested);

    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_status->setWordWrap(true);

    auto* results = new QGroupBox(tr("Result"), this);
    auto* resultForm = new QFormLayout(results);
    resultForm->addRow(tr("Tokens:"), m_tokens);
    resultForm->addRow(tr("Windows:"), m_windows);
    resultForm->addRow(tr("Perplexity:"), m_perplexity);
    resultForm->addRow(tr("Mean NLL:"), m_meanNll);
    resultForm->addRow(tr("Tokens/s:"), m_tokensPerSecond);
    resultForm->addRow(tr("Computed on:"), m_compute);
    QFont emphasis = m_perplexity->font();
    emphasis.setBold(true);
    m_perplexity->setFont(emphasis);

    // Scrollable, so the panel never sets a minimum height on the dock column it sits in
    // (it shares a tab group with the run panel).
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->addLayout(settings);
    layout->addLayout(buttons);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addWidget(results);
    layout->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll);
    WheelGuard::install(content);

    updateButtons();
}

void EvalPanel::setDevices(const QStringList& devices) {
    const QString current = m_device->currentText();
    m_device->clear();
    m_device->addItems(devices);
    const int keep = m_device->findText(current);
    m_device->setCurrentIndex(keep >= 0 ? keep : 0);
    m_device->setEnabled(devices.size() > 1);
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

void EvalPanel::setDataPath(const QString& path) {
    m_data->setText(path);
}

QString EvalPanel::dataPath() const {
    return m_data->text().trimmed();
}

EvalRequest EvalPanel::request() const {
    EvalRequest r;
    r.evaluation.dataPath = dataPath().toStdString();
    r.evaluation.seqLen = m_seqLen->value();
    r.evaluation.maxWindows = m_maxWindows->value();
    r.device = device().toStdString();
    r.dtype = dtype().toStdString();
    return r;
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
    if (!message.isEmpty())
        m_status->setText(message);
}

void EvalPanel::showResult(const PerplexityResult& result) {
    m_tokens->setText(display::count(result.tokens));
    m_windows->setText(
        tr("%1 × %2 tokens").arg(display::count(result.windows), display::count(result.seqLen)));
    m_perplexity->setText(QString::number(result.perplexity, 'f', 4));
    m_meanNll->setText(QString::number(result.meanNll, 'f', 5));
    m_tokensPerSecond->setText(display::count(static_cast<int64_t>(result.tokensPerSecond + 0.5)));
    m_compute->setText(display::compute(result.device, result.dtype));
    m_progress->setValue(m_progress->maximum());
    m_status->setText(tr("Done in %1 s on %2 (%3).")
                          .arg(QString::number(result.seconds, 'f', 2),
                               QString::fromStdString(result.device),
                               QString::fromStdString(result.dtype)));
    m_running = false;
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
    updateButtons();
}

void EvalPanel::clearResult() {
    for (QLabel* label :
         {m_tokens, m_windows, m_perplexity, m_meanNll, m_tokensPerSecond, m_compute})
        label->setText(QStringLiteral("–"));
    m_status->clear();
}

QLabel* EvalPanel::resultLabel(const QString& name) const {
    if (name == QLatin1String("tokens"))
        return m_tokens;
    if (name == QLatin1String("windows"))
        return m_windows;
    if (name == QLatin1String("perplexity"))
        return m_perplexity;
    if (name == QLatin1String("meanNll"))
        return m_meanNll;
    if (name == QLatin1String("tokensPerSecond"))
        return m_tokensPerSecond;
    if (name == QLatin1String("compute"))
        return m_compute;
    return nullptr;
}

// A window-modal dialog opened with open(): the event loop keeps running, nothing waits on it.
void EvalPanel::chooseDataFile() {
    auto* dialog =
        new QFileDialog(this, tr("Choose evaluation text"), QFileInfo(dataPath()).absolutePath(),
                        tr("Text files (*.txt);;All files (*)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setFileMode(QFileDialog::ExistingFile);
    connect(dialog, &QFileDialog::fileSelected, this, &EvalPanel::setDataPath);
    dialog->open();
}

void EvalPanel::updateButtons() {
    m_run->setEnabled(m_modelLoaded && !m_running && !dataPath().isEmpty());
    m_cancel->setEnabled(m_running);
    m_progress->setVisible(m_running); // an empty bar beside idle settings reads as a text field
    for (QWidget* w :
         std::initializer_list<QWidget*>{m_data, m_browse, m_seqLen, m_maxWindows, m_dtype})
        w->setEnabled(!m_running);
    m_device->setEnabled(!m_running && m_device->count() > 1);
}

} // namespace qs

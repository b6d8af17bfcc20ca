#include "RunPanel.h"

#include "DisplayFormat.h"
#include "RunSensitivityModel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <cmath>

namespace qs {

namespace {

QLabel* makeValueLabel(QWidget* parent) {
    auto* label = new QLabel(QStringLiteral("–"), parent);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return label;
}

QString perplexityText(const std::optional<PerplexityResult>& r) {
    return r ? QString::number(r->perplexity, 'f', 4) : QStringLiteral("–");
}

} // namespace

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent), m_analyze(new QPushButton(tr("Analyze"), this)),
      m_quantize(new QPushButton(tr("Quantize…"), this)),
      m_evaluate(new QPushButton(tr("Evaluate"), this)),
      m_sensitivity(new QPushButton(tr("Sensitivity"), this)),
      m_cancel(new QPushButton(tr("Cancel"), this)), m_progress(new QProgressBar(this)),
      m_status(new QLabel(this)), m_time(new QLabel(this)), m_fpPpl(makeValueLabel(this)),
      m_quantPpl(makeValueLabel(this)), m_kl(makeValueLabel(this)), m_sameTop(makeValueLabel(this)),
      m_pplDelta(makeValueLabel(this)), m_compare(new QComboBox(this)),
      m_perplexityCompute(makeValueLabel(this)), m_sensitivityCompute(new QLabel(this)),
      m_sensitivityTotals(new QLabel(this)), m_sensitivityModel(new RunSensitivityModel(this)),
      m_sensitivityView(new QTableView(this)), m_clock(new QTimer(this)) {
    setObjectName(QStringLiteral("runPanel"));
    m_analyze->setToolTip(tr("Per-layer errors and activation statistics on the calibration "
                             "data, streamed into the layer tree block by block"));
    m_quantize->setToolTip(tr("Write a fake-quantized checkpoint and the recipe to a folder"));
    m_evaluate->setToolTip(tr("Perplexity of the full-precision and the quantized model on the "
                              "recipe's evaluation text"));
    m_sensitivity->setToolTip(tr("Perplexity with each layer quantized alone, and with all but "
                                 "each layer quantized"));
    connect(m_analyze, &QPushButton::clicked, this, &RunPanel::analyzeRequested);
    connect(m_quantize, &QPushButton::clicked, this, &RunPanel::quantizeRequested);
    connect(m_evaluate, &QPushButton::clicked, this, &RunPanel::evaluateRequested);
    connect(m_sensitivity, &QPushButton::clicked, this, &RunPanel::sensitivityRequested);
    connect(m_cancel, &QPushButton::clicked, this, &RunPanel::cancelRequested);

    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p%"));
    m_status->setWordWrap(true);
    m_status->setText(tr("Idle"));
    m_clock->setInterval(500);
    connect(m_clock, &QTimer::timeout, this, &RunPanel::updateTime);

    auto* buttons = new QGridLayout;
    buttons->addWidget(m_analyze, 0, 0);
    buttons->addWidget(m_quantize, 0, 1);
    buttons->addWidget(m_evaluate, 1, 0);
    buttons->addWidget(m_sensitivity, 1, 1);
    // Runs made since the model was opened: the tree and the depth chart show the one chosen
    // here beside the current results.
    m_compare->setObjectName(QStringLiteral("compareWithRun"));
    m_compare->setToolTip(tr("Show another Analyze run of this model beside the current results: "
                             "Δ in the layer tree, dashed curves in the depth chart"));
    m_compare->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_compare->setMinimumContentsLength(16);
    clearRuns();
    connect(m_compare, &QComboBox::activated, this,
            [this] { Q_EMIT compareRequested(comparedRun()); });
    auto* compareRow = new QHBoxLayout;
    compareRow->addWidget(new QLabel(tr("Compare with:"), this));
    compareRow->addWidget(m_compare, 1);
    auto* progressRow = new QHBoxLayout;
    progressRow->addWidget(m_progress, 1);
    progressRow->addWidget(m_cancel);

    auto* perplexity = new QGroupBox(tr("Perplexity and fidelity"), this);
    auto* pplForm = new QFormLayout(perplexity);
    // "Unquantized", not "fp32": the model computes in the precision chosen, named below.
    pplForm->addRow(tr("Unquantized:"), m_fpPpl);
    pplForm->addRow(tr("Quantized:"), m_quantPpl);
    pplForm->addRow(tr("Difference:"), m_pplDelta);
    pplForm->addRow(tr("KL divergence:"), m_kl);
    pplForm->addRow(tr("Same top token:"), m_sameTop);
    pplForm->addRow(tr("Computed on:"), m_perplexityCompute);
    m_kl->setToolTip(tr("Mean KL(unquantized ‖ quantized) over the scored tokens, as llama.cpp's "
                        "--kl-divergence computes it"));
    m_sameTop->setToolTip(tr("Share of scored tokens whose most likely next token is the same in "
                             "both models"));

    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(m_sensitivityModel);
    proxy->setSortRole(Qt::EditRole);
    m_sensitivityView->setObjectName(QStringLiteral("sensitivityView"));
    m_sensitivityView->setModel(proxy);
    m_sensitivityView->setSortingEnabled(true);
    m_sensitivityView->verticalHeader()->hide();
    // Names on one line (elided in the middle, where layer names differ), the numbers sized to
    // their headers; a narrow dock scrolls sideways instead of wrapping names into three rows.
    m_sensitivityView->setWordWrap(false);
    m_sensitivityView->setTextElideMode(Qt::ElideMiddle);
    m_sensitivityView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_sensitivityView->horizontalHeader()->setSectionResizeMode(RunSensitivityModel::LayerColumn,
                                                                QHeaderView::Interactive);
    m_sensitivityView->horizontalHeader()->resizeSection(RunSensitivityModel::LayerColumn, 200);
    m_sensitivityView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_sensitivityTotals->setWordWrap(true);
    auto* sensitivity = new QGroupBox(tr("Sensitivity"), this);
    auto* sensLayout = new QVBoxLayout(sensitivity);
    sensLayout->addWidget(m_sensitivityCompute);
    sensLayout->addWidget(m_sensitivityTotals);
    sensLayout->addWidget(m_sensitivityView, 1);

    // The buttons, the progress bar and the times stay put while a run runs; the results below
    // scroll, so the panel never sets a minimum height on the window it docks into.
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    // The status and the run to compare with scroll with the results: outside the scroll, every
    // fixed row adds to the minimum height the dock sets on the window (at 1366x768 it stood
    // taller than the screen), and a squeezed wrapped status was cut at both ends.
    layout->addWidget(m_status);
    layout->addLayout(compareRow);
    layout->addWidget(perplexity);
    layout->addWidget(sensitivity, 1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(this);
    outer->addLayout(buttons);
    outer->addLayout(progressRow);
    outer->addWidget(m_time);
    outer->addWidget(scroll, 1);
    updateButtons();
}

void RunPanel::setModelLoaded(bool loaded) {
    m_modelLoaded = loaded;
    updateButtons();
}

void RunPanel::setRunning(const QString& title) {
    m_running = true;
    m_fraction = 0.0;
    m_progress->setValue(0);
    setStatus(title + QStringLiteral("…"));
    m_elapsed.start();
    m_clock->start();
    updateTime();
    updateButtons();
}

void RunPanel::setIdle(const QString& status) {
    m_running = false;
    m_clock->stop();
    if (m_elapsed.isValid())
        m_time->setText(tr("Took %1").arg(formatDuration(m_elapsed.elapsed() / 1000.0)));
    m_elapsed.invalidate();
    setStatus(status);
    updateButtons();
}

void RunPanel::setStatus(const QString& text) {
    const QString shown = display::statusLines(text);
    m_status->setText(shown);
    m_status->setToolTip(shown == text ? QString() : text);
}

void RunPanel::setProgress(double fraction, const QString& message) {
    if (fraction >= 0.0) {
        m_fraction = std::min(1.0, fraction);
        m_progress->setValue(static_cast<int>(m_fraction * 1000.0 + 0.5));
    }
    if (!message.isEmpty())
        setStatus(message);
    updateTime();
}

void RunPanel::updateTime() {
    if (!m_running || !m_elapsed.isValid())
        return;
    const double elapsed = m_elapsed.elapsed() / 1000.0;
    QString text = tr("Elapsed %1").arg(formatDuration(elapsed));
    const QString left = remainingText(m_fraction, elapsed);
    if (!left.isEmpty())
        text += QStringLiteral(", ") + left;
    m_time->setText(text);
}

QString RunPanel::remainingText(double fraction, double elapsedSeconds) {
    // A straight-line extrapolation; too early a fraction only gives noise.
    if (fraction < 0.02 || fraction >= 1.0)
        return {};
    return tr("about %1 left").arg(formatDuration(elapsedSeconds * (1.0 - fraction) / fraction));
}

QString RunPanel::formatDuration(double seconds) {
    const auto s = static_cast<qint64>(std::llround(std::max(0.0, seconds)));
    if (s < 60)
        return tr("%1 s").arg(s);
    if (s < 3600)
        return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2:%3")
        .arg(s / 3600)
        .arg((s / 60) % 60, 2, 10, QLatin1Char('0'))
        .arg(s % 60, 2, 10, QLatin1Char('0'));
}

void RunPanel::showPerplexities(const std::optional<PerplexityResult>& fp,
                                const std::optional<PerplexityResult>& quantized,
                                const std::optional<FidelityReport>& fidelity) {
    m_fpPpl->setText(perplexityText(fp));
    m_quantPpl->setText(perplexityText(quantized));
    // One run computes both figures; either names its device and precision.
    const std::optional<PerplexityResult>& any = quantized ? quantized : fp;
    const QString compute = any ? display::compute(any->device, any->dtype) : QString();
    m_perplexityCompute->setText(compute.isEmpty() ? QStringLiteral("–") : compute);
    m_pplDelta->setText(QStringLiteral("–"));
    if (fp && quantized && fp->perplexity > 0.0) {
        const double delta = quantized->perplexity - fp->perplexity;
        m_pplDelta->setText(QStringLiteral("%1%2 (%1%3 %)")
                                .arg(delta >= 0.0 ? QStringLiteral("+") : QString(),
                                     QString::number(delta, 'f', 4),
                                     QString::number(100.0 * delta / fp->perplexity, 'f', 2)));
    }
    if (fp && quantized && fp->perplexity > 0.0)
        m_quantPpl->setToolTip(
            tr("%1% above the unquantized model")
                .arg(QString::number(100.0 * (quantized->perplexity / fp->perplexity - 1.0), 'f',
                                     2)));
    if (!fidelity) {
        m_kl->setText(QStringLiteral("–"));
        m_sameTop->setText(QStringLiteral("–"));
        return;
    }
    m_kl->setText(QStringLiteral("%1 ± %2").arg(QString::number(fidelity->klMean.value, 'f', 6),
                                                QString::number(fidelity->klMean.error, 'f', 6)));
    m_sameTop->setText(QStringLiteral("%1 ± %2 %")
                           .arg(QString::number(100.0 * fidelity->sameTop.value, 'f', 2),
                                QString::number(100.0 * fidelity->sameTop.error, 'f', 2)));
}

void RunPanel::addRun(int id, const QString& label) {
    m_compare->addItem(label, id);
}

void RunPanel::clearRuns() {
    m_compare->clear();
    m_compare->addItem(tr("no other run"), -1);
}

int RunPanel::comparedRun() const {
    return m_compare->currentData().isValid() ? m_compare->currentData().toInt() : -1;
}

void RunPanel::setComparedRun(int id) {
    const int i = m_compare->findData(id);
    m_compare->setCurrentIndex(i < 0 ? 0 : i);
    Q_EMIT compareRequested(comparedRun());
}

void RunPanel::clearSensitivity() {
    m_sensitivityModel->clear();
    m_sensitivityTotals->clear();
    m_sensitivityCompute->clear();
}

void RunPanel::setSensitivityCompute(const std::string& device, const std::string& dtype) {
    const QString compute = display::compute(device, dtype);
    m_sensitivityCompute->setText(compute.isEmpty() ? QString()
                                                    : tr("Computed on %1").arg(compute));
}

void RunPanel::addSensitivityRow(const SensitivityRow& row) {
    m_sensitivityModel->addRow(row);
}

void RunPanel::showSensitivityTotals(const SensitivityResult& result) {
    // The Δ column fills now; the costliest layer first, where the eye starts.
    m_sensitivityModel->setFullPrecisionPerplexity(result.fpPerplexity);
    m_sensitivityView->sortByColumn(RunSensitivityModel::DeltaAloneColumn, Qt::DescendingOrder);
    m_sensitivityTotals->setText(
        tr("Perplexity: unquantized %1, whole recipe %2; whole recipe against unquantized: KL %3, "
           "same top token %4 %")
            .arg(QString::number(result.fpPerplexity, 'f', 4),
                 QString::number(result.fullPerplexity, 'f', 4),
                 QString::number(result.fullKl, 'f', 6),
                 QString::number(100.0 * result.fullSameTop, 'f', 2)));
}

void RunPanel::updateButtons() {
    const bool canStart = m_modelLoaded && !m_running;
    for (QPushButton* b : {m_analyze, m_quantize, m_evaluate, m_sensitivity})
        b->setEnabled(canStart);
    m_cancel->setEnabled(m_running);
}

} // namespace qs

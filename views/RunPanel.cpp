#include "RunPanel.h"

#include "DisplayFormat.h"
#include "RunSensitivityModel.h"

#include <QComboBox>
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

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent), m_analyze(new QPushButton(tr("Analyze"), this)),
      m_quantize(new QPushButton(tr("Quantize…"), this)),
      m_sensitivity(new QPushButton(tr("Sensitivity"), this)),
      m_cancel(new QPushButton(tr("Cancel"), this)), m_progress(new QProgressBar(this)),
      m_status(new QLabel(this)), m_time(new QLabel(this)), m_compare(new QComboBox(this)),
      m_sensitivityCompute(new QLabel(this)), m_sensitivityTotals(new QLabel(this)),
      m_sensitivityModel(new RunSensitivityModel(this)), m_sensitivityView(new QTableView(this)),
      m_clock(new QTimer(this)) {
    setObjectName(QStringLiteral("runPanel"));
    m_analyze->setToolTip(tr("Per-layer errors and activation statistics on the calibration "
                             "data, streamed into the layer tree block by block"));
    m_quantize->setToolTip(tr("Write a fake-quantized checkpoint and the recipe to a folder"));
    m_sensitivity->setToolTip(tr("Perplexity with each layer quantized alone, and with all but "
                                 "each layer quantized"));
    connect(m_analyze, &QPushButton::clicked, this, &RunPanel::analyzeRequested);
    connect(m_quantize, &QPushButton::clicked, this, &RunPanel::quantizeRequested);
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
    buttons->addWidget(m_sensitivity, 0, 2);
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
    for (QPushButton* b : {m_analyze, m_quantize, m_sensitivity})
        b->setEnabled(canStart);
    m_cancel->setEnabled(m_running);
}

} // namespace qs

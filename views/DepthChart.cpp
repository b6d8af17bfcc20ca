#include "DepthChart.h"

#include "LayerTreeModel.h"
#include "PlotWidget.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>

namespace qs {

namespace {

// The metric box's items: the y axis's short label.
constexpr int AxisLabelRole = Qt::UserRole + 1;

// Tableau 10: distinct enough for the seven projections of a Llama block.
QColor kindColour(int i) {
    static const QColor palette[] = {
        {31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
        {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
    return palette[i % 10];
}

} // namespace

DepthChart::DepthChart(QWidget* parent)
    : QWidget(parent), m_metric(new QComboBox(this)), m_plot(new PlotWidget(this)),
      m_stale(new QLabel(this)) {
    m_stale->setObjectName(QStringLiteral("staleLabel"));
    m_stale->setText(tr("Stale: computed under an older recipe; run Analyze again"));
    m_stale->setStyleSheet(QStringLiteral("color: #b00020"));
    m_stale->hide();
    // The metric's name is in the box right above the chart; the y axis takes a short label
    // (the long one was cut in a short dock: at 2560x1440 with a device pixel ratio of 2 the
    // axis is about 130 px tall).
    struct Metric {
        int column;
        const char* name;
        const char* axis;
    };
    const Metric metrics[] = {
        {LayerTreeModel::OutputSqnrAccumulatedColumn, QT_TR_NOOP("Output SQNR, accumulated (dB)"),
         QT_TR_NOOP("SQNR (dB)")},
        {LayerTreeModel::OutputSqnrLocalColumn, QT_TR_NOOP("Output SQNR, local (dB)"),
         QT_TR_NOOP("SQNR (dB)")},
        {LayerTreeModel::WeightSqnrColumn, QT_TR_NOOP("Weight SQNR (dB)"), QT_TR_NOOP("SQNR (dB)")},
        {LayerTreeModel::OutlierScoreColumn, QT_TR_NOOP("Outlier score"), QT_TR_NOOP("score")},
        {LayerTreeModel::InputAbsmaxColumn, QT_TR_NOOP("Input absmax"), QT_TR_NOOP("absmax")},
        {LayerTreeModel::KlProxyColumn, QT_TR_NOOP("KL proxy (after Analyze)"),
         QT_TR_NOOP("KL proxy")},
        {LayerTreeModel::KlAloneColumn, QT_TR_NOOP("KL, layer alone (Sensitivity)"),
         QT_TR_NOOP("KL")},
    };
    for (const Metric& m : metrics) {
        m_metric->addItem(tr(m.name), m.column);
        m_metric->setItemData(m_metric->count() - 1, tr(m.axis), AxisLabelRole);
    }
    connect(m_metric, &QComboBox::currentIndexChanged, this, [this] { refresh(); });

    m_plot->setAxisLabels(tr("Block"), m_metric->currentData(AxisLabelRole).toString());
    m_plot->setIntegerX(true);
    m_plot->setLegendVisible(true);
    m_plot->onPointClicked([this](int series, int point) {
        const QString layer = layerAt(series, point);
        if (!layer.isEmpty())
            Q_EMIT layerClicked(layer);
    });

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Metric:"), this));
    top->addWidget(m_metric);
    top->addWidget(m_stale);
    top->addStretch(1);
    // The chart keeps the height its axes and legend need (PlotWidget::readableHeight) and
    // scrolls in a dock made shorter, rather than raising the window's minimum height.
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(m_plot);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setMinimumHeight(40);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(scroll, 1);
    refresh();
}

void DepthChart::setSource(const LayerTreeModel* model) {
    if (m_source)
        disconnect(m_source, nullptr, this, nullptr);
    m_source = model;
    if (m_source)
        connect(m_source, &LayerTreeModel::resultsStaleChanged, this, [this] { refresh(); });
    refresh();
}

int DepthChart::metricColumn() const {
    return m_metric->currentData().toInt();
}

void DepthChart::setMetricColumn(int column) {
    const int i = m_metric->findData(column);
    if (i >= 0)
        m_metric->setCurrentIndex(i);
}

void DepthChart::setSelectedLayer(const QString& layerName) {
    if (layerName == m_selected)
        return;
    m_selected = layerName;
    refresh();
}

QString DepthChart::layerAt(int series, int point) const {
    if (series < 0 || series >= static_cast<int>(m_names.size()))
        return {};
    const std::vector<QString>& names = m_names[size_t(series)];
    return point >= 0 && point < static_cast<int>(names.size()) ? names[size_t(point)] : QString();
}

void DepthChart::refresh() {
    m_stale->setVisible(m_source && m_source->resultsStale());
    m_plot->clear();
    m_names.clear();
    const int column = metricColumn();
    m_plot->setAxisLabels(tr("Block"), m_metric->currentData(AxisLabelRole).toString());
    // The absmax spans orders of magnitude between blocks: a log axis keeps the small ones legible.
    m_plot->setLogY(column == LayerTreeModel::InputAbsmaxColumn);

    struct KindSeries {
        int firstSeen = 0;
        QVector<double> x, y;
        std::vector<QString> names;
    };
    std::map<std::string, KindSeries> byKind;
    int skippedInfinite = 0;
    double selX = 0, selY = 0;
    bool selectedShown = false;
    if (m_source) {
        for (const LayerReport* r : m_source->reports()) {
            if (r->block < 0)
                continue;
            const double v = LayerTreeModel::metricOf(*r, column);
            if (std::isnan(v))
                continue;
            if (std::isinf(v)) {
                ++skippedInfinite;
                continue;
            }
            auto [it, inserted] = byKind.try_emplace(r->kind);
            if (inserted)
                it->second.firstSeen = static_cast<int>(byKind.size());
            it->second.x.push_back(r->block);
            it->second.y.push_back(v);
            it->second.names.push_back(QString::fromStdString(r->name));
            if (QString::fromStdString(r->name) == m_selected) {
                selX = r->block;
                selY = v;
                selectedShown = true;
            }
        }
    }
    // The compared run (LayerTreeModel::setComparison), per kind as well.
    std::map<std::string, KindSeries> compared;
    if (m_source && m_source->isComparing()) {
        for (const LayerReport* r : m_source->comparisonReports()) {
            const double v = LayerTreeModel::metricOf(*r, column);
            if (r->block < 0 || !std::isfinite(v))
                continue;
            KindSeries& k = compared[r->kind];
            k.x.push_back(r->block);
            k.y.push_back(v);
            k.names.push_back(QString::fromStdString(r->name));
        }
    }
    std::vector<std::pair<int, std::string>> order;
    for (const auto& [kind, s] : byKind)
        order.emplace_back(s.firstSeen, kind);
    std::sort(order.begin(), order.end());
    for (const auto& [kind, s] : compared) // kinds only the compared run has go last
        if (!byKind.count(kind))
            order.emplace_back(static_cast<int>(order.size()) + 1, kind);
    for (size_t i = 0; i < order.size(); ++i) {
        KindSeries& s = byKind[order[i].second];
        if (s.x.isEmpty())
            continue;
        m_plot->addLineSeries(QString::fromStdString(order[i].second), s.x, s.y,
                              kindColour(static_cast<int>(i)), true);
        m_names.push_back(std::move(s.names));
    }
    // Dashed, in the kind's colour: the same projection in the other run, one glance apart.
    for (size_t i = 0; i < order.size(); ++i) {
        const auto it = compared.find(order[i].second);
        if (it == compared.end())
            continue;
        m_plot->addLineSeries(
            tr("%1 (%2)").arg(QString::fromStdString(it->first), m_source->comparisonLabel()),
            it->second.x, it->second.y, kindColour(static_cast<int>(i)), false, Qt::DashLine);
        m_names.push_back(std::move(it->second.names));
    }
    if (selectedShown) {
        m_plot->addScatter(tr("selected"), {selX}, {selY}, QColor(0, 0, 0), 11.0);
        m_names.emplace_back(); // the highlight selects nothing
    }
    if (byKind.empty() && compared.empty())
        m_plot->setNote(tr("Run Analyze to see the metrics along the depth of the model"));
    else if (skippedInfinite > 0)
        m_plot->setNote(tr("%n point(s) with an exact (infinite SQNR) result not drawn", nullptr,
                           skippedInfinite));
    m_plot->rescaleAndReplot();
}

} // namespace qs

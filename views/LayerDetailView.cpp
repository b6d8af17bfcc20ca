#include "LayerDetailView.h"

#include "DisplayFormat.h"
#include "PlotWidget.h"

#include "quant/TypeTraits.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qs {

namespace {

const QColor kBefore(31, 119, 180);
const QColor kAfter(255, 127, 14);
const QColor kBand(120, 150, 200);
const QColor kAbsmax(214, 39, 40);
const QColor kPercentile(44, 160, 44);

QVector<double> toVector(const std::vector<float>& v) {
    return QVector<double>(v.begin(), v.end());
}

QVector<double> indices(size_t n) {
    QVector<double> x(static_cast<int>(n));
    for (size_t i = 0; i < n; ++i)
        x[static_cast<int>(i)] = static_cast<double>(i);
    return x;
}

} // namespace

LayerDetailView::LayerDetailView(QWidget* parent)
    : QWidget(parent), m_header(new QLabel(this)), m_stale(new QLabel(this)),
      m_log(new QCheckBox(tr("Log scale (|x|)"), this)), m_channels(new PlotWidget(this)),
      m_tokens(new PlotWidget(this)), m_activations(new PlotWidget(this)),
      m_weights(new PlotWidget(this)), m_inputRanges(new PlotWidget(this)),
      m_weightRanges(new PlotWidget(this)) {
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_header->setWordWrap(true);
    m_log->setToolTip(tr("Show the channel absmax and percentile on a logarithmic axis (the "
                         "signed min/max band has no logarithm and is hidden)"));
    connect(m_log, &QCheckBox::toggled, this, [this] {
        drawChannels();
        drawRanges();
    });

    m_channels->setTitle(tr("Input range per channel"));
    m_channels->setAxisLabels(tr("Input channel"), tr("Activation"));
    m_channels->setLegendVisible(true);
    m_tokens->setTitle(tr("Per-token absmax (first sample)"));
    m_tokens->setAxisLabels(tr("Token position"), tr("max |x| over channels"));
    m_activations->setTitle(tr("Input activations"));
    m_activations->setAxisLabels(tr("Value"), tr("Count"));
    m_activations->setLegendVisible(true);
    m_weights->setTitle(tr("Weight"));
    m_weights->setAxisLabels(tr("Value"), tr("Count"));
    m_weights->setLegendVisible(true);
    m_inputRanges->setAxisLabels(tr("Input channel"), tr("max |x|"));
    m_inputRanges->setLegendVisible(true);
    m_weightRanges->setAxisLabels(tr("Input channel"), tr("max |w| over outputs"));
    m_weightRanges->setLegendVisible(true);

    m_stale->setObjectName(QStringLiteral("staleLabel"));
    m_stale->setText(tr("Stale: computed under an older recipe; run Analyze again"));
    m_stale->setStyleSheet(QStringLiteral("color: #b00020"));
    m_stale->hide();
    auto* top = new QHBoxLayout;
    top->addWidget(m_header, 1);
    top->addWidget(m_stale);
    top->addWidget(m_log);
    // The four plots scroll rather than push the window's minimum height up when the dock is
    // made small.
    auto* plots = new QWidget;
    auto* grid = new QGridLayout(plots);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(m_channels, 0, 0);
    grid->addWidget(m_tokens, 0, 1);
    grid->addWidget(m_activations, 1, 0);
    grid->addWidget(m_weights, 1, 1);
    grid->addWidget(m_inputRanges, 2, 0);
    grid->addWidget(m_weightRanges, 2, 1);
    // Both columns alike: left to their size hints, a long plot title took the wider one.
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(plots);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setMinimumHeight(60);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(scroll, 1);
    clear();
}

bool LayerDetailView::isLogScale() const {
    return m_log->isChecked();
}

void LayerDetailView::setStale(bool stale) {
    m_stale->setVisible(stale);
}

void LayerDetailView::setLogScale(bool log) {
    m_log->setChecked(log);
}

void LayerDetailView::clear(const QString& message) {
    m_layer.clear();
    m_report.reset();
    m_header->setText(message.isEmpty() ? tr("Select a linear layer after Analyze to see its "
                                             "activations and weights.")
                                        : message);
    for (PlotWidget* p : {m_channels, m_tokens, m_activations, m_weights}) {
        p->clear();
        p->rescaleAndReplot();
    }
    drawRanges();
}

LayerDetailView::Grid LayerDetailView::weightGrid(const Histogram& weight,
                                                  const std::optional<quant::QuantScheme>& scheme) {
    Grid g;
    if (!scheme) {
        g.note = tr("not quantized: no grid");
        return g;
    }
    const quant::QuantSpec& spec = scheme->weight;
    const quant::TypeTraits& t = quant::traits(spec.dtype);
    if (!quant::isInteger(spec.dtype)) {
        g.note = tr("%1: non-uniform grid, not drawn").arg(QString::fromLatin1(t.name));
        return g;
    }
    if (spec.granularity != quant::Granularity::PerTensor) {
        g.note = tr("%1 %2: grid varies per channel/group")
                     .arg(QString::fromLatin1(t.name),
                          QString::fromStdString(quant::granularityName(spec.granularity)));
        return g;
    }
    if (!spec.symmetric || scheme->weightPreStage ||
        (spec.scaleType != quant::ScaleType::Float &&
         spec.scaleType != quant::ScaleType::Float32)) {
        g.note = tr("%1: grid depends on the zero point or scale rounding, not drawn")
                     .arg(QString::fromLatin1(t.name));
        return g;
    }
    if (weight.counts.empty() || !(weight.hi > weight.lo)) {
        g.note = tr("no weight histogram");
        return g;
    }
    // The histogram spans exactly [min, max] of the weight, so its absmax is the observer's.
    const double absmax = std::max(std::abs(weight.lo), std::abs(weight.hi));
    g.scale = absmax / ((t.qmax - t.qmin) / 2.0);
    if (!(g.scale > 0)) {
        g.note = tr("zero weight: no grid");
        return g;
    }
    const double levels = t.qmax - t.qmin + 1;
    g.levelStep = std::max(1, static_cast<int>(std::ceil(levels / 64.0)));
    for (double q = t.qmin; q <= t.qmax; q += 1.0) {
        if (static_cast<long long>(q) % g.levelStep != 0)
            continue;
        const double x = q * g.scale;
        if (x >= weight.lo - 1e-12 * absmax && x <= weight.hi + 1e-12 * absmax)
            g.lines.push_back(x);
    }
    g.note = g.levelStep == 1
                 ? tr("%1 grid, s = %2").arg(QString::fromLatin1(t.name)).arg(g.scale, 0, 'g', 4)
                 : tr("%1 grid, s = %2 (every %3th level drawn)")
                       .arg(QString::fromLatin1(t.name))
                       .arg(g.scale, 0, 'g', 4)
                       .arg(g.levelStep);
    return g;
}

QString LayerDetailView::headerText() const {
    return m_header->text();
}

void LayerDetailView::setLayer(const LayerReport& report,
                               const std::optional<quant::QuantScheme>& scheme) {
    m_report = report;
    m_layer = QString::fromStdString(report.name);
    QString header =
        QStringLiteral("<b>%1</b> &nbsp; %2 &nbsp; %3")
            .arg(m_layer.toHtmlEscaped(), display::shape(report.shape),
                 report.quantized ? QString::fromStdString(report.scheme).toHtmlEscaped()
                                  : tr("not quantized"));
    if (!report.note.empty())
        header += QStringLiteral(" (%1)").arg(QString::fromStdString(report.note).toHtmlEscaped());
    if (!report.transforms.empty()) {
        QStringList names;
        for (const std::string& t : report.transforms)
            names << QString::fromStdString(t);
        header += QStringLiteral(" &nbsp; ") + names.join(QStringLiteral(" → ")).toHtmlEscaped();
    }
    // What the algorithm bought over rounding the layer to nearest (same inputs).
    if (report.outputLocal.valid && report.outputLocalRoundToNearest.valid)
        header += tr(": local output SQNR %1 dB, rounding to nearest %2 dB")
                      .arg(report.outputLocal.sqnrDb, 0, 'f', 2)
                      .arg(report.outputLocalRoundToNearest.sqnrDb, 0, 'f', 2);
    header += tr(" &nbsp; %n token(s) observed", nullptr, static_cast<int>(report.input.tokens));
    m_header->setText(header);

    drawChannels();
    drawRanges();

    m_tokens->clear();
    if (report.input.tokenAbsmax.empty())
        m_tokens->setNote(tr("no per-token data"));
    else
        m_tokens->addLineSeries(tr("absmax"), indices(report.input.tokenAbsmax.size()),
                                toVector(report.input.tokenAbsmax), kAbsmax);
    m_tokens->rescaleAndReplot();

    m_activations->clear();
    const Histogram& in = report.input.histogram;
    if (!in.counts.empty())
        m_activations->addHistogram(tr("fp input"), in.lo, in.hi, in.counts, kBefore);
    const Histogram& inQ = report.input.quantizedHistogram;
    if (!inQ.counts.empty())
        m_activations->addHistogram(tr("after input quantizer"), inQ.lo, inQ.hi, inQ.counts,
                                    kAfter);
    else if (!in.counts.empty())
        m_activations->setNote(tr("no input quantizer"));
    else
        m_activations->setNote(tr("no activation histogram"));
    m_activations->rescaleAndReplot();

    m_weights->clear();
    const Histogram& w = report.weightHistogram;
    if (!w.counts.empty())
        m_weights->addHistogram(tr("fp weight"), w.lo, w.hi, w.counts, kBefore);
    const Histogram& wQ = report.weightQuantizedHistogram;
    if (!wQ.counts.empty() && report.quantized)
        m_weights->addHistogram(tr("quantized weight"), wQ.lo, wQ.hi, wQ.counts, kAfter);
    const Grid grid = weightGrid(w, report.quantized ? scheme : std::nullopt);
    m_weights->addVerticalLines(grid.lines, QColor(60, 60, 60, 70));
    m_weights->setNote(grid.note);
    m_weights->rescaleAndReplot();
}

void LayerDetailView::drawChannels() {
    m_channels->clear();
    if (!m_report) {
        m_channels->rescaleAndReplot();
        return;
    }
    const ChannelStatistics& s = m_report->input;
    const bool log = isLogScale();
    m_channels->setLogY(log);
    m_channels->setAxisLabels(tr("Input channel"), log ? tr("|x|") : tr("Activation"));
    const QVector<double> x = indices(s.absmax.size());
    if (!log && s.min.size() == s.absmax.size() && s.max.size() == s.absmax.size())
        m_channels->setBand(tr("min/max"), x, toVector(s.min), toVector(s.max), kBand);
    if (!s.absmax.empty())
        m_channels->addLineSeries(tr("absmax"), x, toVector(s.absmax), kAbsmax);
    if (s.percentile.size() == s.absmax.size() && !s.percentile.empty())
        m_channels->addLineSeries(tr("p%1 |x|").arg(s.percentileLevel), x, toVector(s.percentile),
                                  kPercentile);
    if (s.absmax.empty())
        m_channels->setNote(tr("no channel statistics"));
    m_channels->rescaleAndReplot();
}

void LayerDetailView::drawRanges() {
    const bool show = m_report && m_report->ranges.valid();
    m_inputRanges->setVisible(show);
    m_weightRanges->setVisible(show);
    m_inputRanges->clear();
    m_weightRanges->clear();
    if (!show)
        return;
    // SmoothQuant divides input channel j by s_j and multiplies the weight's column j by s_j: the
    // outlier channels of the inputs come down, those columns of the weight go up. A rotation
    // spreads every channel over all of them (before and after are different bases there).
    const TransformRanges& r = m_report->ranges;
    const QString transform = QString::fromStdString(r.transform);
    const QString before = tr("before %1").arg(transform);
    const bool log = isLogScale();
    const auto draw = [&](PlotWidget* plot, const QString& title, const std::vector<float>& was,
                          const std::vector<float>& now) {
        plot->setTitle(title);
        plot->setLogY(log);
        if (!was.empty())
            plot->addLineSeries(before, indices(was.size()), toVector(was), kBefore);
        if (!now.empty())
            plot->addLineSeries(tr("after"), indices(now.size()), toVector(now), kAfter);
        if (was.empty() || now.empty())
            plot->setNote(tr("no ranges on one side of the transform"));
        plot->rescaleAndReplot();
    };
    draw(m_inputRanges, tr("Input absmax per channel, %1").arg(transform), r.inputAbsmaxBefore,
         m_report->input.absmax);
    draw(m_weightRanges, tr("Weight absmax per input channel, %1").arg(transform),
         r.weightAbsmaxBefore, r.weightAbsmaxAfter);
}

} // namespace qs

#include "PlotWidget.h"

#include <qcustomplot.h>

#include <QHash>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <numeric>

namespace qs {

struct PlotWidget::Private {
    // Which series a plottable draws, and for each of its (x-sorted) data points the position of
    // that point in the data the caller passed in.
    struct Link {
        int series = -1;
        std::vector<int> order;
    };
    QHash<QCPAbstractPlottable*, Link> links;
    QCPTextElement* title = nullptr;
    QCPTextElement* note = nullptr;     // a row of its own above the axes, only while there is one
    QCPLayoutGrid* legendRow = nullptr; // the legend and a stretchable cell beside it
};

namespace {

// Points sorted by x (stable), dropping those a log axis cannot show.
std::vector<int> sortedPoints(const QVector<double>& x, const QVector<double>& y, bool logY) {
    std::vector<int> order;
    const int n = static_cast<int>(std::min(x.size(), y.size()));
    for (int i = 0; i < n; ++i) {
        if (std::isnan(x[i]) || std::isnan(y[i]) || (logY && !(y[i] > 0)))
            continue;
        order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return x[a] < x[b]; });
    return order;
}

} // namespace

PlotWidget::PlotWidget(QWidget* parent)
    : QWidget(parent), m_plot(new QCustomPlot(this)), d(std::make_unique<Private>()) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    // The legend goes below the axes, in rows of series: inside the axis rect it covered the
    // data (issue 28), wherever it was anchored.
    auto* legendRow = d->legendRow = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(m_plot->plotLayout()->rowCount(), 0, legendRow);
    m_plot->plotLayout()->setRowStretchFactor(m_plot->plotLayout()->rowCount() - 1, 0.001);
    legendRow->setMargins(QMargins(4, 0, 4, 2));
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    legendRow->addElement(0, 0, m_plot->legend);
    // QCustomPlot caps a layout column at the least of its elements' maximum widths, and an
    // empty legend's is a few pixels: without a stretchable cell beside it, an empty plot's
    // axes were squeezed to its title's width (issue 28). The cell takes only what the legend
    // leaves.
    legendRow->addElement(0, 1, new QCPLayoutElement(m_plot));
    legendRow->setColumnStretchFactor(0, 1.0);
    legendRow->setColumnStretchFactor(1, 0.001);
    m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setRowSpacing(0);
    m_plot->legend->setColumnSpacing(6);
    m_plot->legend->setVisible(false);
    QFont legendFont = font();
    legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
    m_plot->legend->setFont(legendFont);
    m_plot->setMinimumWidth(120);
    updateReadableHeight();
    // After QCustomPlot has laid out its elements and before it draws: the axes' sizes are the
    // ones the ticks will be drawn at.
    connect(m_plot, &QCustomPlot::afterLayout, this, &PlotWidget::fitTicksToSize);
    connect(m_plot, &QCustomPlot::plottableClick, this,
            [this](QCPAbstractPlottable* plottable, int dataIndex, QMouseEvent*) {
                const auto it = d->links.constFind(plottable);
                if (it == d->links.constEnd() || dataIndex < 0 ||
                    dataIndex >= static_cast<int>(it->order.size()))
                    return;
                // Deferred: the handler may rebuild this plot, which must not happen while
                // QCustomPlot is still inside its mouse event for the clicked plottable.
                const int series = it->series, point = it->order[size_t(dataIndex)];
                QTimer::singleShot(0, this, [this, series, point] { clickPoint(series, point); });
            });
}

PlotWidget::~PlotWidget() = default;

void PlotWidget::clear() {
    m_plot->clearPlottables();
    m_plot->clearItems();
    d->links.clear();
    m_series.clear();
    m_verticalLines = 0;
    setNote({});
}

void PlotWidget::setTitle(const QString& title) {
    m_title = title;
    if (!d->title) {
        m_plot->plotLayout()->insertRow(0);
        d->title = new QCPTextElement(m_plot, title, QFont(font().family(), -1, QFont::Bold));
        m_plot->plotLayout()->addElement(0, 0, d->title);
    }
    d->title->setText(title);
    updateReadableHeight();
}

void PlotWidget::setAxisLabels(const QString& x, const QString& y) {
    m_plot->xAxis->setLabel(x);
    m_plot->yAxis->setLabel(y);
}

void PlotWidget::setLegendVisible(bool visible) {
    m_legendWanted = visible;
    m_plot->legend->setVisible(visible && m_plot->legend->itemCount() > 0);
}

bool PlotWidget::isLegendShown() const {
    return m_plot->legend->visible();
}

void PlotWidget::setLogY(bool logY) {
    m_logY = logY;
    m_plot->yAxis->setScaleType(logY ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (logY)
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    else
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
}

void PlotWidget::setIntegerX(bool integer) {
    if (integer) {
        QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        m_plot->xAxis->setTicker(ticker);
    } else {
        m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    }
}

int PlotWidget::addSeries(Series series) {
    m_series.push_back(std::move(series));
    return static_cast<int>(m_series.size()) - 1;
}

int PlotWidget::addLineSeries(const QString& name, const QVector<double>& x,
                              const QVector<double>& y, const QColor& colour, bool markers,
                              Qt::PenStyle style) {
    const int id = addSeries({SeriesType::Line, name, x, y, {}});
    const std::vector<int> order = sortedPoints(x, y, m_logY);
    QVector<double> xs, ys;
    for (int i : order) {
        xs.push_back(x[i]);
        ys.push_back(y[i]);
    }
    QCPGraph* graph = m_plot->addGraph();
    graph->setName(name);
    graph->setPen(QPen(colour, 1.5, style));
    if (markers)
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, colour, colour, 6));
    graph->setData(xs, ys, true);
    d->links.insert(graph, {id, order});
    return id;
}

int PlotWidget::addScatter(const QString& name, const QVector<double>& x, const QVector<double>& y,
                           const QColor& colour, double size) {
    const int id = addSeries({SeriesType::Scatter, name, x, y, {}});
    const std::vector<int> order = sortedPoints(x, y, m_logY);
    QVector<double> xs, ys;
    for (int i : order) {
        xs.push_back(x[i]);
        ys.push_back(y[i]);
    }
    QCPGraph* graph = m_plot->addGraph();
    graph->setName(name);
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, size));
    graph->setData(xs, ys, true);
    d->links.insert(graph, {id, order});
    return id;
}

int PlotWidget::setBand(const QString& name, const QVector<double>& x, const QVector<double>& lower,
                        const QVector<double>& upper, const QColor& colour) {
    const int id = addSeries({SeriesType::Band, name, x, lower, upper});
    QColor edge = colour;
    edge.setAlpha(140);
    QColor fill = colour;
    fill.setAlpha(60);
    QCPGraph* low = m_plot->addGraph();
    low->setPen(QPen(edge, 1));
    low->setData(x, lower, true);
    low->removeFromLegend();
    QCPGraph* high = m_plot->addGraph();
    high->setName(name);
    high->setPen(QPen(edge, 1));
    high->setBrush(fill);
    high->setChannelFillGraph(low);
    high->setData(x, upper, true);
    return id;
}

int PlotWidget::addHistogram(const QString& name, double lo, double hi,
                             const std::vector<int64_t>& counts, const QColor& colour) {
    Series s{SeriesType::Bars, name, {}, {}, {}};
    const int bins = static_cast<int>(counts.size());
    const double width = bins > 0 ? (hi - lo) / bins : 1.0;
    for (int i = 0; i < bins; ++i) {
        s.x.push_back(lo + (i + 0.5) * width);
        s.y.push_back(static_cast<double>(counts[size_t(i)]));
    }
    auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    bars->setName(name);
    bars->setWidth(width);
    QColor fill = colour;
    fill.setAlpha(110);
    bars->setBrush(fill);
    bars->setPen(Qt::NoPen);
    if (m_logY) {
        // Empty bins have no logarithm: leave them out.
        QVector<double> xs, ys;
        for (int i = 0; i < bins; ++i)
            if (s.y[i] > 0) {
                xs.push_back(s.x[i]);
                ys.push_back(s.y[i]);
            }
        bars->setData(xs, ys, true);
    } else {
        bars->setData(s.x, s.y, true);
    }
    return addSeries(std::move(s));
}

void PlotWidget::addVerticalLines(const QVector<double>& x, const QColor& colour) {
    for (double v : x) {
        auto* line = new QCPItemStraightLine(m_plot);
        line->point1->setCoords(v, 0.0);
        line->point2->setCoords(v, 1.0);
        line->setPen(QPen(colour, 0));
        line->setClipToAxisRect(true);
        ++m_verticalLines;
    }
}

void PlotWidget::setNote(const QString& text) {
    m_note = text;
    QCPLayoutGrid* layout = m_plot->plotLayout();
    if (text.isEmpty()) {
        if (d->note) { // the axes get its row back
            layout->remove(d->note);
            layout->simplify();
            d->note = nullptr;
            updateReadableHeight();
        }
        return;
    }
    if (!d->note) {
        // Above the axes, below the title: inside the axis rect a note sat over the data in
        // its corner (issue 28), whatever the data.
        const int row = d->title ? 1 : 0;
        layout->insertRow(row);
        QFont small = font();
        small.setPointSizeF(small.pointSizeF() * 0.9);
        d->note = new QCPTextElement(m_plot, text, small);
        d->note->setTextColor(QColor(90, 90, 90));
        d->note->setMargins(QMargins(4, 2, 4, 0));
        layout->addElement(row, 0, d->note);
    }
    wrapNoteToWidth();
}

void PlotWidget::wrapNoteToWidth() {
    if (!d->note)
        return;
    // QCustomPlot draws a text element on one line, cut to its cell: a note wider than the plot
    // read "cs" in the empty depth chart (issue 28). Words go on as many lines as the width
    // needs.
    const QFontMetrics metrics(d->note->font());
    const int room = std::max(40, m_plot->width() - 8); // the note's margins
    QStringList lines;
    QString line;
    for (const QString& word : m_note.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
        if (!line.isEmpty() && metrics.horizontalAdvance(longer) > room) {
            lines << line;
            line = word;
        } else {
            line = longer;
        }
    }
    lines << line;
    const QString wrapped = lines.join(QLatin1Char('\n'));
    if (d->note->text() != wrapped)
        d->note->setText(wrapped);
    updateReadableHeight();
}

int PlotWidget::legendColumns() const {
    return m_plot->legend->wrap();
}

void PlotWidget::fitLegendToWidth() {
    QCPLegend* legend = m_plot->legend;
    int widest = 1;
    for (int i = 0; i < legend->itemCount(); ++i) // cells of the grid: some may be empty
        if (const QCPAbstractLegendItem* item = legend->item(i))
            widest = std::max(widest, item->minimumOuterSizeHint().width());
    // What the entries get: the plot's width less the legend row's margins, the spacing before
    // its stretchable cell and the legend's own margins (without the last two, four entries
    // were put in a row a few pixels too narrow and cut: "k_pro").
    const QMargins rowMargins = d->legendRow->margins(), legendMargins = legend->margins();
    const int room = m_plot->width() - rowMargins.left() - rowMargins.right() -
                     d->legendRow->columnSpacing() - legendMargins.left() - legendMargins.right();
    // An empty legend gets one column: QCustomPlot's layout counts a hidden legend's columns
    // too, and one per pixel squeezed an empty plot's axes into a strip (issue 28).
    const int columns =
        legend->itemCount() == 0
            ? 1
            : std::max(1, (room + legend->columnSpacing()) / (widest + legend->columnSpacing()));
    if (columns != legend->wrap()) {
        legend->setWrap(columns);
        legend->setFillOrder(QCPLegend::foColumnsFirst, true); // re-flow the entries
    }
    updateReadableHeight();
}

int PlotWidget::readableHeight() const {
    // In lines of the widget's font (logical pixels: the same at any device pixel ratio).
    const int line = fontMetrics().height();
    int height = 0;
    // (through the base: QCPTextElement makes its override protected)
    for (const QCPLayoutElement* text :
         {static_cast<QCPLayoutElement*>(d->title), static_cast<QCPLayoutElement*>(d->note)})
        if (text)
            height += text->minimumOuterSizeHint().height();
    // The axes: a margin above, the plot area with room for three or four tick labels on y, the x
    // tick labels and the x axis label under it.
    height += line / 2 + 7 * line + 2 * line + 12;
    const QCPLegend* legend = m_plot->legend;
    if (legend->visible() && legend->itemCount() > 0) {
        int rowHeight = 0;
        for (int i = 0; i < legend->itemCount(); ++i)
            if (const QCPAbstractLegendItem* item = legend->item(i))
                rowHeight = std::max(rowHeight, item->minimumOuterSizeHint().height());
        const int columns = std::max(1, legend->wrap());
        const int rows = (legend->itemCount() + columns - 1) / columns;
        height += rows * (rowHeight + legend->rowSpacing()) + 4; // the legend row's margins
    }
    return height;
}

void PlotWidget::updateReadableHeight() {
    const int height = readableHeight();
    if (m_plot->minimumHeight() != height)
        m_plot->setMinimumHeight(height);
}

void PlotWidget::fitTicksToSize() {
    // QCustomPlot's default asks for five ticks whatever the size: in a short plot the y labels
    // ran into one another ("400000300000...").
    const int line = fontMetrics().height();
    const int yTicks = std::clamp(m_plot->axisRect()->height() / (2 * line), 2, 5);
    const int xTicks =
        std::clamp(m_plot->axisRect()->width() / (6 * fontMetrics().averageCharWidth()), 2, 6);
    if (m_plot->yAxis->ticker()->tickCount() != yTicks)
        m_plot->yAxis->ticker()->setTickCount(yTicks);
    if (m_plot->xAxis->ticker()->tickCount() != xTicks)
        m_plot->xAxis->ticker()->setTickCount(xTicks);
}

void PlotWidget::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitLegendToWidth();
    wrapNoteToWidth();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void PlotWidget::rescaleAndReplot() {
    // An empty plot shows no legend: an empty legend box is a stray frame over the note.
    m_plot->legend->setVisible(m_legendWanted && m_plot->legend->itemCount() > 0);
    fitLegendToWidth(); // and the height the legend's rows need
    if (m_series.empty() && m_verticalLines == 0) {
        // Nothing drawn: the axes start over instead of keeping the last data's ranges (a plot
        // emptied for another model showed the previous model's axes).
        m_plot->xAxis->setRange(0, 1);
        m_plot->yAxis->setRange(m_logY ? QCPRange(1, 10) : QCPRange(0, 1));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    m_plot->rescaleAxes();
    // A little room around the data so points on the edge stay clickable and visible.
    QCPRange x = m_plot->xAxis->range();
    const double xPad = x.size() > 0 ? x.size() * 0.03 : 0.5;
    m_plot->xAxis->setRange(x.lower - xPad, x.upper + xPad);
    if (m_logY) {
        m_plot->yAxis->scaleRange(1.15);
    } else {
        QCPRange y = m_plot->yAxis->range();
        const double yPad = y.size() > 0 ? y.size() * 0.05 : 0.5;
        m_plot->yAxis->setRange(y.lower - yPad, y.upper + yPad);
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void PlotWidget::clickPoint(int series, int point) {
    if (series < 0 || series >= seriesCount() || point < 0 ||
        point >= m_series[size_t(series)].x.size())
        return;
    if (m_clickHandler)
        m_clickHandler(series, point);
}

} // namespace qs

#pragma once

#include <QColor>
#include <QString>
#include <QVector>
#include <QWidget>

#include <functional>
#include <memory>
#include <vector>

class QCustomPlot;

namespace qs {

// The one place that knows QCustomPlot (as PlotJuggler hides its plot library): every chart in
// the views builds its content through this small API, so the plot library can be swapped and
// tests can read back what was drawn without looking at pixels.
class PlotWidget : public QWidget {
    Q_OBJECT
public:
    enum class SeriesType { Line, Scatter, Band, Bars };
    struct Series {
        SeriesType type = SeriesType::Line;
        QString name;
        QVector<double> x, y;  // Band: y = lower edge; Bars: x = bin centres, y = counts
        QVector<double> upper; // Band only
    };
    // Called with the series id and the point's position in the data that was passed in.
    using PointClickHandler = std::function<void(int series, int point)>;

    explicit PlotWidget(QWidget* parent = nullptr);
    ~PlotWidget() override;

    // Removes every series, line and note (axis labels, title and log mode stay).
    void clear();
    void setTitle(const QString& title);
    void setAxisLabels(const QString& x, const QString& y);
    // The legend, shown only while some series is in it.
    void setLegendVisible(bool visible);
    bool isLegendShown() const;
    // Logarithmic y axis; values <= 0 are not drawn in log mode.
    void setLogY(bool logY);
    bool isLogY() const { return m_logY; }
    // Integer ticks on the x axis (block indices, channels).
    void setIntegerX(bool integer);

    // Each add* returns the series id (its position in series()).
    // `style`: Qt::DashLine for a series drawn for comparison (another run's values).
    int addLineSeries(const QString& name, const QVector<double>& x, const QVector<double>& y,
                      const QColor& colour, bool markers = false,
                      Qt::PenStyle style = Qt::SolidLine);
    int addScatter(const QString& name, const QVector<double>& x, const QVector<double>& y,
                   const QColor& colour, double size = 6.0);
    // A filled band between lower and upper over x.
    int setBand(const QString& name, const QVector<double>& x, const QVector<double>& lower,
                const QVector<double>& upper, const QColor& colour);
    // Histogram bars: counts[i] over the i-th of counts.size() equal bins of [lo, hi].
    int addHistogram(const QString& name, double lo, double hi, const std::vector<int64_t>& counts,
                     const QColor& colour);
    // Thin vertical lines at the given x positions (a quantization grid).
    void addVerticalLines(const QVector<double>& x, const QColor& colour);
    // A line of text above the axes, never over the data (empty: none, and no room taken).
    void setNote(const QString& text);

    // Fits the axes to the data and redraws.
    void rescaleAndReplot();

    void onPointClicked(PointClickHandler handler) { m_clickHandler = std::move(handler); }
    // What a mouse click on that point does; public for keyboard navigation and tests.
    void clickPoint(int series, int point);

    const std::vector<Series>& series() const { return m_series; }
    int seriesCount() const { return static_cast<int>(m_series.size()); }
    int verticalLineCount() const { return m_verticalLines; }
    QString note() const { return m_note; }
    QString title() const { return m_title; }

    // Legend entries per row below the axes: as many as the plot's width fits whole.
    int legendColumns() const;
    // The least height at which the title, the note, the axes with room for a few ticks and
    // every legend row (at the plot's width now) are drawn whole: the widget asks for no less,
    // so a short dock scrolls its plots instead of cutting their legends and stacking their tick
    // labels (issue 28, the layer detail at 2560x1440 with a device pixel ratio of 2).
    int readableHeight() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Private;
    int addSeries(Series series);
    void fitLegendToWidth();
    // The note's words on as many lines as the plot's width needs.
    void wrapNoteToWidth();
    // Sets the minimum height to readableHeight().
    void updateReadableHeight();
    // As many ticks as the axes' size shows without their labels touching.
    void fitTicksToSize();

    QCustomPlot* m_plot;
    std::unique_ptr<Private> d;
    std::vector<Series> m_series;
    PointClickHandler m_clickHandler;
    int m_verticalLines = 0;
    QString m_note;
    QString m_title;
    bool m_logY = false;
    bool m_legendWanted = false; // setLegendVisible; shown only when something is in it
};

} // namespace qs

// PlotWidget's legend and note: the legend below the axes, in as many entries per row as the
// plot's width fits whole, the note above them; neither over the data (issue 28: legends and
// notes inside the axis rect covered the curves).
#include "PlotWidget.h"
#include "TestMain.h"

#include <qcustomplot.h>

#include <QScrollArea>
#include <QtTest>

namespace {

// Eight named series, as the depth chart draws them.
void addEightSeries(qs::PlotWidget& plot) {
    const QStringList names = {"q_proj",    "k_proj",  "v_proj",    "o_proj",
                               "gate_proj", "up_proj", "down_proj", "selected"};
    for (int i = 0; i < names.size(); ++i)
        plot.addLineSeries(names[i], {0, 1, 2, 3}, {double(i), double(i + 1), 2, 1},
                           QColor::fromHsv(40 * i, 200, 200), true);
    plot.setLegendVisible(true);
    plot.rescaleAndReplot();
}

} // namespace

class TestPlotWidget : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void legendSitsBelowTheAxesAndFitsTheWidth_data() {
        QTest::addColumn<int>("width");
        QTest::newRow("narrow") << 260;
        QTest::newRow("wide") << 900;
    }
    void legendSitsBelowTheAxesAndFitsTheWidth() {
        QFETCH(int, width);
        qs::PlotWidget plot;
        plot.resize(width, 320);
        plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plot));
        addEightSeries(plot);
        auto* custom = plot.findChild<QCustomPlot*>();
        QVERIFY(custom);
        custom->replot(); // lays the elements out now
        QVERIFY(plot.isLegendShown());
        const QRect legend = custom->legend->outerRect();
        const QRect axes = custom->axisRect()->outerRect();
        QVERIFY2(!legend.intersects(custom->axisRect()->rect()),
                 qPrintable(QStringLiteral("legend %1,%2 %3x%4 over the axes")
                                .arg(legend.x())
                                .arg(legend.y())
                                .arg(legend.width())
                                .arg(legend.height())));
        QVERIFY(legend.top() >= axes.bottom());
        // Every entry whole: the rows are no wider than the plot.
        QVERIFY2(legend.width() <= custom->width(),
                 qPrintable(QStringLiteral("legend %1 px wide in a %2 px plot")
                                .arg(legend.width())
                                .arg(custom->width())));
        // The wide plot puts more entries in a row than the narrow one, and never one per row
        // where two fit.
        if (width >= 900)
            QVERIFY(plot.legendColumns() >= 4);
        else
            QVERIFY(plot.legendColumns() >= 2 && plot.legendColumns() < 8);
    }

    // At every width, each legend entry gets the width its marker and name need: at 1366x768
    // the depth chart's four entries were laid out in one row that was a few pixels too narrow,
    // and read "k_pro", "v_pro" (the room did not count the legend's own margins).
    void everyLegendEntryIsWholeAtAnyWidth() {
        qs::PlotWidget plot;
        plot.resize(200, 320);
        plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plot));
        const QStringList names = {"q_proj", "k_proj", "v_proj", "o_proj"};
        for (int i = 0; i < names.size(); ++i)
            plot.addLineSeries(names[i], {0, 1, 2}, {double(i), 1, 2}, Qt::blue, true);
        plot.setLegendVisible(true);
        plot.rescaleAndReplot();
        auto* custom = plot.findChild<QCustomPlot*>();
        for (int width = 160; width <= 700; width += 3) {
            plot.resize(width, 320);
            QCoreApplication::sendPostedEvents();
            custom->replot();
            for (int i = 0; i < custom->legend->itemCount(); ++i) {
                const QCPAbstractLegendItem* item = custom->legend->item(i);
                if (!item)
                    continue;
                QVERIFY2(item->outerRect().width() >= item->minimumOuterSizeHint().width() &&
                             item->outerRect().right() <= custom->width(),
                         qPrintable(QStringLiteral("width %1: entry %2 gets %3 of %4 px, ends at "
                                                   "%5")
                                        .arg(width)
                                        .arg(i)
                                        .arg(item->outerRect().width())
                                        .arg(item->minimumOuterSizeHint().width())
                                        .arg(item->outerRect().right())));
            }
        }
    }

    void anEmptiedPlotStartsItsAxesOver() {
        qs::PlotWidget plot;
        plot.addLineSeries("wide", {0, 500}, {-40, 900}, Qt::red);
        plot.rescaleAndReplot();
        auto* custom = plot.findChild<QCustomPlot*>();
        QVERIFY(custom->xAxis->range().upper >= 500);
        // Emptied (another model opened): not the last data's ranges.
        plot.clear();
        plot.setNote("Run Analyze to see the metrics");
        plot.rescaleAndReplot();
        QCOMPARE(custom->xAxis->range(), QCPRange(0, 1));
        QCOMPARE(custom->yAxis->range(), QCPRange(0, 1));
    }

    // A note ("no input quantizer" beside a histogram) sits in a row above the axes, never over
    // the data; without one the axes get the row back.
    void noteSitsAboveTheAxes() {
        qs::PlotWidget plot;
        plot.resize(400, 300);
        plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plot));
        plot.setTitle("Activations");
        addEightSeries(plot);
        auto* custom = plot.findChild<QCustomPlot*>();
        custom->replot();
        const int axesHeight = custom->axisRect()->rect().height();
        const int rows = custom->plotLayout()->rowCount();
        plot.setNote("no input quantizer");
        custom->replot();
        QCPTextElement* note = nullptr;
        for (int i = 0; i < custom->plotLayout()->elementCount(); ++i)
            if (auto* t = qobject_cast<QCPTextElement*>(custom->plotLayout()->elementAt(i)))
                if (t->text() == "no input quantizer")
                    note = t;
        QVERIFY(note);
        QVERIFY(!note->outerRect().intersects(custom->axisRect()->rect()));
        QVERIFY(note->outerRect().bottom() <= custom->axisRect()->outerRect().top());
        QCOMPARE(custom->plotLayout()->rowCount(), rows + 1);
        // Title first, then the note.
        QCOMPARE(qobject_cast<QCPTextElement*>(custom->plotLayout()->element(0, 0))->text(),
                 QString("Activations"));
        plot.setNote({});
        custom->replot();
        QCOMPARE(custom->plotLayout()->rowCount(), rows);
        QCOMPARE(custom->axisRect()->rect().height(), axesHeight);
        // clear() takes it too.
        plot.setNote("again");
        plot.clear();
        QCOMPARE(custom->plotLayout()->rowCount(), rows);
        QVERIFY(plot.note().isEmpty());
    }

    // Issue 28: in a short scroll area (the layer detail's, at 2560x1440 with a device pixel
    // ratio of 2: about 150 logical px a plot) the plots were squeezed until QCustomPlot cut
    // their legends and stacked their tick labels. A plot keeps the height its title, note, axes
    // and legend rows need, and the area scrolls; the legend is whole, the axes have room, and
    // the y tick labels do not run into one another.
    void aShortAreaScrollsRatherThanCutTheLegend() {
        QScrollArea area;
        area.setWidgetResizable(true);
        auto* plot = new qs::PlotWidget;
        plot->setTitle("Input activations");
        plot->setAxisLabels("Value", "Count");
        plot->setNote("int8 grid, s = 0.002441 (every 4th level drawn)");
        area.setWidget(plot);
        area.resize(320, 140);
        area.show();
        QVERIFY(QTest::qWaitForWindowExposed(&area));
        addEightSeries(*plot);
        auto* custom = plot->findChild<QCustomPlot*>();
        QCoreApplication::sendPostedEvents(); // the layout requests: the area's sizes now
        custom->replot();
        const int line = plot->fontMetrics().height();
        const QRect legend = custom->legend->outerRect();
        QVERIFY2(legend.bottom() <= custom->height() && legend.top() >= 0,
                 qPrintable(QStringLiteral("legend rows %1..%2 in a %3 px plot")
                                .arg(legend.top())
                                .arg(legend.bottom())
                                .arg(custom->height())));
        for (int i = 0; i < custom->legend->itemCount(); ++i) // cells may be empty
            if (const QCPAbstractLegendItem* item = custom->legend->item(i))
                QVERIFY(item->outerRect().bottom() <= custom->height());
        const int axes = custom->axisRect()->height();
        QVERIFY2(axes >= 3 * line, qPrintable(QStringLiteral("axes %1 px tall").arg(axes)));
        const int ticks = custom->yAxis->tickVector().size();
        QVERIFY2(ticks * line <= axes + line,
                 qPrintable(QStringLiteral("%1 y ticks in %2 px").arg(ticks).arg(axes)));
        // Taller than the area: the area scrolls.
        QVERIFY(plot->height() >= plot->readableHeight());
        QVERIFY(plot->height() > area.viewport()->height());
    }

    // Issue 28: before Analyze the empty depth chart drew its axes in a strip 50 px wide with
    // the ticks "1 0" and its note cut to "cs", and the layer detail's empty plots squeezed
    // theirs: an empty legend asked for one column per pixel it could fill, and the hidden legend
    // still claimed that width in QCustomPlot's layout; a note wider than the plot claimed its
    // width too. An empty plot's axes take the plot's width, and its note wraps to fit.
    void anEmptyPlotKeepsItsWidthAndWrapsItsNote_data() {
        QTest::addColumn<int>("width");
        QTest::newRow("narrow") << 300;
        QTest::newRow("wide") << 700;
    }
    void anEmptyPlotKeepsItsWidthAndWrapsItsNote() {
        QFETCH(int, width);
        qs::PlotWidget plot;
        plot.setTitle("Depth chart");
        plot.setAxisLabels("Block", "SQNR (dB)");
        plot.setLegendVisible(true);
        plot.resize(width, 400);
        plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plot));
        const QString note = "Run Analyze to see the metrics along the depth of the model";
        plot.setNote(note);
        plot.rescaleAndReplot();
        auto* custom = plot.findChild<QCustomPlot*>();
        QCoreApplication::sendPostedEvents();
        custom->replot();
        // The y axis' tick labels and label take the left margin (a few characters and a
        // line); the rest of the width is the axes'.
        const int margins =
            10 * plot.fontMetrics().averageCharWidth() + 3 * plot.fontMetrics().height();
        QVERIFY2(custom->axisRect()->rect().width() >= custom->width() - margins,
                 qPrintable(QStringLiteral("axes %1 px wide in a %2 px plot")
                                .arg(custom->axisRect()->rect().width())
                                .arg(custom->width())));
        QCPTextElement* shown = nullptr;
        for (int i = 0; i < custom->plotLayout()->elementCount(); ++i)
            if (auto* t = qobject_cast<QCPTextElement*>(custom->plotLayout()->elementAt(i)))
                if (t->text().simplified() == note)
                    shown = t;
        QVERIFY2(shown, "the note's words, in order, are drawn");
        QFontMetrics metrics(shown->font());
        for (const QString& line : shown->text().split('\n'))
            QVERIFY2(metrics.horizontalAdvance(line) <= custom->width(),
                     qPrintable(QStringLiteral("note line '%1' is %2 px in a %3 px plot")
                                    .arg(line)
                                    .arg(metrics.horizontalAdvance(line))
                                    .arg(custom->width())));
        QCOMPARE(plot.note(), note); // the caller's text, unwrapped
    }

    void anEmptyPlotShowsNoLegend() {
        qs::PlotWidget plot;
        plot.setLegendVisible(true);
        plot.rescaleAndReplot();
        QVERIFY(!plot.isLegendShown());
    }
};

QS_TEST_MAIN(TestPlotWidget)
#include "tst_plotwidget.moc"

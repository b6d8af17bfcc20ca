#pragma once

#include "analysis/LayerReport.h"
#include "quant/QuantScheme.h"

#include <QString>
#include <QVector>
#include <QWidget>

#include <optional>

class QCheckBox;
class QLabel;

namespace qs {

class PlotWidget;

// What the analysis saw in one linear layer: its input's range per channel (min/max band,
// absmax, a percentile; log toggle), the per-token absmax of the first calibration sample, and
// the activation and weight histograms before and after quantization with the weight's
// quantization grid where one grid holds for the whole tensor; after a range-moving transform
// (SmoothQuant, AutoSmoothQuant, rotation), the input's and the weight's absmax per input
// channel before and after it.
class LayerDetailView : public QWidget {
    Q_OBJECT
public:
    // The quantization grid drawn over a weight histogram, or why none is drawn.
    struct Grid {
        QVector<double> lines; // x positions (q * s), those inside the histogram's range
        double scale = 0.0;
        int levelStep = 1; // every levelStep-th level is drawn (fine grids would hide the bars)
        QString note;
    };

    explicit LayerDetailView(QWidget* parent = nullptr);

    // `scheme` is the scheme the report was made with (for the grid); nullopt when unknown.
    void setLayer(const LayerReport& report, const std::optional<quant::QuantScheme>& scheme);
    void clear(const QString& message = {});
    QString layerName() const { return m_layer; }
    // The line above the plots: name, shape, scheme or why the layer is not quantized.
    QString headerText() const;

    void setLogScale(bool log);
    bool isLogScale() const;
    // Marks the plots as computed under an older recipe than the one now edited.
    void setStale(bool stale);
    QLabel* staleLabel() const { return m_stale; }

    // Per-tensor symmetric integer weights have one grid, q * s with s = absmax / ((qmax - qmin)
    // / 2) (the scale IntKernels computes); anything else says why no grid is drawn.
    static Grid weightGrid(const Histogram& weight,
                           const std::optional<quant::QuantScheme>& scheme);

    PlotWidget* channelPlot() const { return m_channels; }
    PlotWidget* tokenPlot() const { return m_tokens; }
    PlotWidget* activationHistogram() const { return m_activations; }
    PlotWidget* weightHistogram() const { return m_weights; }
    // Shown only for a layer whose report has ranges before a transform (LayerReport::ranges).
    PlotWidget* inputRangesPlot() const { return m_inputRanges; }
    PlotWidget* weightRangesPlot() const { return m_weightRanges; }
    QCheckBox* logScaleBox() const { return m_log; }

private:
    void drawChannels();
    void drawRanges();

    QLabel* m_header;
    QLabel* m_stale;
    QCheckBox* m_log;
    PlotWidget* m_channels;
    PlotWidget* m_tokens;
    PlotWidget* m_activations;
    PlotWidget* m_weights;
    PlotWidget* m_inputRanges;
    PlotWidget* m_weightRanges;
    QString m_layer;
    std::optional<LayerReport> m_report;
};

} // namespace qs

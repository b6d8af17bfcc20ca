#pragma once

#include <QString>
#include <QWidget>

#include <vector>

class QComboBox;
class QLabel;

namespace qs {

class LayerTreeModel;
class PlotWidget;

// A metric of the analysis against the decoder block index, one series per linear kind
// (q_proj, k_proj, ..., fc1, fc2): where along the depth the error grows and which projection
// carries it. Clicking a point selects that layer (layerClicked).
class DepthChart : public QWidget {
    Q_OBJECT
public:
    explicit DepthChart(QWidget* parent = nullptr);

    // The model whose reports are drawn; refresh() redraws from it.
    void setSource(const LayerTreeModel* model);
    void refresh();
    // Marks a layer on the chart (empty: none).
    void setSelectedLayer(const QString& layerName);

    // The LayerTreeModel metric column shown.
    int metricColumn() const;
    void setMetricColumn(int column);
    QComboBox* metricCombo() const { return m_metric; }
    PlotWidget* plot() const { return m_plot; }
    // Shown while the source's results were computed under an older recipe.
    QLabel* staleLabel() const { return m_stale; }
    // The layer behind a point of a series, empty when none (the highlight series has none).
    QString layerAt(int series, int point) const;

Q_SIGNALS:
    void layerClicked(const QString& layerName);

private:
    const LayerTreeModel* m_source = nullptr;
    QComboBox* m_metric;
    PlotWidget* m_plot;
    QLabel* m_stale;
    QString m_selected;
    std::vector<std::vector<QString>> m_names; // per series: layer per point
};

} // namespace qs

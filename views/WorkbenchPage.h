#pragma once

#include "analysis/LayerReport.h"
#include "analysis/Sensitivity.h"
#include "model/ModelInfo.h"
#include "quant/QuantScheme.h"
#include "recipe/Recipe.h"

#include <QMainWindow>

#include <optional>
#include <vector>

class QAbstractItemModel;
class QDockWidget;

namespace qs {

class DepthChart;
class EvalPanel;
class LayerDetailView;
class LayerTreeModel;
class LayerTreePanel;
class ModelSummaryView;

// The page shown once a model is open: the layer tree (recipe and analysis metrics per layer) in
// the centre, the model summary and the evaluation panel in docks to the right, the depth chart
// and the selected layer's detail in docks below. A QMainWindow embedded as a plain widget, so
// its docks belong to the page and disappear with it when the start page is shown.
class WorkbenchPage : public QMainWindow {
    Q_OBJECT
public:
    explicit WorkbenchPage(QWidget* parent = nullptr);

    void setModelInfo(const ModelInfo& info);
    void setModel(const ModelInfo& info) { setModelInfo(info); }
    void clear();
    // Dock sizes for a window of the given size: tree about two thirds, docks one third. Applied
    // when the page is next shown if it is hidden now (hidden docks cannot be sized).
    void resetLayout(const QSize& windowSize);
    // What is wrong with the docks as they are laid out now (empty when nothing is): a docked
    // dock crushed below a width (left and right) or height (top and bottom) it can be read at,
    // the layer tree squeezed likewise, a floating dock off every screen. A saved state restored
    // into a window of another size can come out like that; the caller then resets the layout.
    // Meaningful once the page is shown and laid out.
    QString layoutProblem() const;

    // The Scheme and Excluded columns follow the recipe.
    void setRecipe(const Recipe& recipe);
    void clearLayerReports();
    // Analyze streams these per block; rows update as they arrive.
    void addLayerReports(const std::vector<LayerReport>& layers);
    void setSensitivity(const SensitivityRow& row);
    // Another run's layer reports beside this one's: delta in the tree, dashed curves in the depth
    // chart (LayerTreeModel::setComparison); empty `reports` ends the comparison.
    void setComparison(const std::vector<LayerReport>& reports, const QString& label);

    // Full name of the current tree row, empty when none.
    QString selectedLayer() const;
    // Selects the row in the tree (which shows it in the depth chart and the detail view).
    void selectLayer(const QString& name);
    // The tree's source model and a layer's value in a LayerTreeModel column: the raw double
    // for metric columns (invalid when absent), the scheme text, the excluded flag.
    QAbstractItemModel* treeModel() const;
    LayerTreeModel* layerTreeModel() const;
    QVariant layerValue(const QString& layer, int column) const;

    LayerTreePanel* layerTree() const { return m_layerTree; }
    ModelSummaryView* summary() const { return m_summary; }
    EvalPanel* evalPanel() const { return m_evalPanel; }
    DepthChart* depthChart() const { return m_depthChart; }
    LayerDetailView* layerDetail() const { return m_layerDetail; }
    QDockWidget* summaryDock() const { return m_summaryDock; }
    QDockWidget* evalDock() const { return m_evalDock; }
    QDockWidget* depthDock() const { return m_depthDock; }
    QDockWidget* detailDock() const { return m_detailDock; }

Q_SIGNALS:
    void excludeLayerRequested(const QString& layerName);
    void overrideLayerRequested(const QString& layerName);
    void layerSelected(const QString& layerName);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void applyLayout(const QSize& windowSize);
    void showLayerDetail(const QString& name);
    // The scheme a report was made with: the recipe's when it still gives the same scheme name,
    // else the registry scheme of that name; nullopt for unquantized layers and custom schemes.
    std::optional<quant::QuantScheme> schemeOfReport(const LayerReport& report) const;

    QSize m_pendingLayout; // invalid when none is pending
    LayerTreePanel* m_layerTree;
    ModelSummaryView* m_summary;
    EvalPanel* m_evalPanel;
    DepthChart* m_depthChart;
    LayerDetailView* m_layerDetail;
    QDockWidget* m_summaryDock;
    QDockWidget* m_evalDock;
    QDockWidget* m_depthDock;
    QDockWidget* m_detailDock;
};

} // namespace qs

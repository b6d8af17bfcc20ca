#pragma once

#include "model/ModelInfo.h"

#include <QMainWindow>

class QDockWidget;

namespace qs {

class EvalPanel;
class LayerTreePanel;
class ModelSummaryView;

// The page shown once a model is open: the layer tree in the centre, the model summary and the
// evaluation panel in docks beside it. A QMainWindow embedded as a plain widget, so its docks
// belong to the page and disappear with it when the start page is shown.
class WorkbenchPage : public QMainWindow {
    Q_OBJECT
public:
    explicit WorkbenchPage(QWidget* parent = nullptr);

    void setModelInfo(const ModelInfo& info);
    void clear();
    // Dock sizes for a window of the given size: tree about two thirds, docks one third. Applied
    // when the page is next shown if it is hidden now (hidden docks cannot be sized).
    void resetLayout(const QSize& windowSize);

    LayerTreePanel* layerTree() const { return m_layerTree; }
    ModelSummaryView* summary() const { return m_summary; }
    EvalPanel* evalPanel() const { return m_evalPanel; }
    QDockWidget* summaryDock() const { return m_summaryDock; }
    QDockWidget* evalDock() const { return m_evalDock; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void applyLayout(const QSize& windowSize);

    QSize m_pendingLayout; // invalid when none is pending
    LayerTreePanel* m_layerTree;
    ModelSummaryView* m_summary;
    EvalPanel* m_evalPanel;
    QDockWidget* m_summaryDock;
    QDockWidget* m_evalDock;
};

} // namespace qs

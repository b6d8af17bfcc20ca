#include "WorkbenchPage.h"

#include "EvalPanel.h"
#include "LayerTreePanel.h"
#include "ModelSummaryView.h"

#include <QDockWidget>
#include <QShowEvent>

namespace qs {

WorkbenchPage::WorkbenchPage(QWidget* parent)
    : QMainWindow(parent), m_layerTree(new LayerTreePanel(this)),
      m_summary(new ModelSummaryView(this)), m_evalPanel(new EvalPanel(this)),
      m_summaryDock(new QDockWidget(tr("Model"), this)),
      m_evalDock(new QDockWidget(tr("Evaluation"), this)) {
    setWindowFlags(Qt::Widget); // a page inside the main window, not a window of its own
    setDockOptions(AnimatedDocks | AllowTabbedDocks);
    setCentralWidget(m_layerTree);

    // Object names make saveState()/restoreState() find the docks again.
    m_summaryDock->setObjectName(QStringLiteral("modelSummaryDock"));
    m_summaryDock->setWidget(m_summary);
    m_summaryDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable);
    m_evalDock->setObjectName(QStringLiteral("evaluationDock"));
    m_evalDock->setWidget(m_evalPanel);
    m_evalDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::RightDockWidgetArea, m_summaryDock);
    addDockWidget(Qt::RightDockWidgetArea, m_evalDock);
    splitDockWidget(m_summaryDock, m_evalDock, Qt::Vertical);
}

void WorkbenchPage::setModelInfo(const ModelInfo& info) {
    m_summary->setModelInfo(info);
    m_layerTree->setTree(info.tree);
    m_evalPanel->setModelLoaded(true);
}

void WorkbenchPage::clear() {
    m_summary->clear();
    m_layerTree->clear();
    m_evalPanel->setModelLoaded(false);
}

void WorkbenchPage::resetLayout(const QSize& windowSize) {
    if (isVisible())
        applyLayout(windowSize);
    else
        m_pendingLayout = windowSize;
}

void WorkbenchPage::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (m_pendingLayout.isValid()) {
        applyLayout(m_pendingLayout);
        m_pendingLayout = QSize();
    }
}

void WorkbenchPage::applyLayout(const QSize& windowSize) {
    m_summaryDock->show();
    m_evalDock->show();
    if (dockWidgetArea(m_summaryDock) != Qt::RightDockWidgetArea ||
        dockWidgetArea(m_evalDock) != Qt::RightDockWidgetArea || m_summaryDock->isFloating() ||
        m_evalDock->isFloating()) {
        m_summaryDock->setFloating(false);
        m_evalDock->setFloating(false);
        addDockWidget(Qt::RightDockWidgetArea, m_summaryDock);
        addDockWidget(Qt::RightDockWidgetArea, m_evalDock);
        splitDockWidget(m_summaryDock, m_evalDock, Qt::Vertical);
    }
    const int dockWidth = qMax(360, windowSize.width() * 3 / 10);
    resizeDocks({m_summaryDock}, {dockWidth}, Qt::Horizontal);
    const int height = qMax(400, windowSize.height());
    resizeDocks({m_summaryDock, m_evalDock}, {height * 9 / 20, height * 11 / 20}, Qt::Vertical);
}

} // namespace qs

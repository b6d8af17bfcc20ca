#include "WorkbenchPage.h"

#include "DepthChart.h"
#include "EvalPanel.h"
#include "LayerDetailView.h"
#include "LayerTreeModel.h"
#include "LayerTreePanel.h"
#include "ModelSummaryView.h"

#include "quant/SchemeRegistry.h"

#include <QDockWidget>
#include <QGuiApplication>
#include <QScreen>
#include <QShowEvent>

#include <algorithm>
#include <exception>

namespace qs {

namespace {

QDockWidget* makeDock(const QString& title, const QString& objectName, QWidget* content,
                      QWidget* parent) {
    auto* dock = new QDockWidget(title, parent);
    // Object names make saveState()/restoreState() find the docks again.
    dock->setObjectName(objectName);
    dock->setWidget(content);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable);
    return dock;
}

} // namespace

WorkbenchPage::WorkbenchPage(QWidget* parent)
    : QMainWindow(parent), m_layerTree(new LayerTreePanel(this)),
      m_summary(new ModelSummaryView(this)), m_evalPanel(new EvalPanel(this)),
      m_depthChart(new DepthChart(this)), m_layerDetail(new LayerDetailView(this)),
      m_summaryDock(makeDock(tr("Model"), QStringLiteral("modelSummaryDock"), m_summary, this)),
      m_evalDock(makeDock(tr("Evaluation"), QStringLiteral("evaluationDock"), m_evalPanel, this)),
      m_depthDock(
          makeDock(tr("Depth chart"), QStringLiteral("depthChartDock"), m_depthChart, this)),
      m_detailDock(
          makeDock(tr("Layer detail"), QStringLiteral("layerDetailDock"), m_layerDetail, this)) {
    setWindowFlags(Qt::Widget); // a page inside the main window, not a window of its own
    setDockOptions(AnimatedDocks | AllowTabbedDocks);
    // The right-hand column (model, recipe, evaluation, runs) runs the full height, the charts
    // below the tree only: with the charts across the whole width the recipe and the runs shared
    // what was left above them, a few rows each at 1366x768 (issue 28).
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    setCentralWidget(m_layerTree);
    addDockWidget(Qt::RightDockWidgetArea, m_summaryDock);
    addDockWidget(Qt::RightDockWidgetArea, m_evalDock);
    splitDockWidget(m_summaryDock, m_evalDock, Qt::Vertical);
    addDockWidget(Qt::BottomDockWidgetArea, m_depthDock);
    addDockWidget(Qt::BottomDockWidgetArea, m_detailDock);
    splitDockWidget(m_depthDock, m_detailDock, Qt::Horizontal);

    m_depthChart->setSource(m_layerTree->model());
    connect(m_layerTree->model(), &LayerTreeModel::resultsStaleChanged, m_layerDetail,
            &LayerDetailView::setStale);
    connect(m_depthChart, &DepthChart::layerClicked, this, &WorkbenchPage::selectLayer);
    connect(m_layerTree, &LayerTreePanel::currentModuleChanged, this, [this](const QString& name) {
        showLayerDetail(name);
        m_depthChart->setSelectedLayer(name);
        Q_EMIT layerSelected(name);
    });
    connect(m_layerTree, &LayerTreePanel::excludeLayerRequested, this,
            &WorkbenchPage::excludeLayerRequested);
    connect(m_layerTree, &LayerTreePanel::overrideLayerRequested, this,
            &WorkbenchPage::overrideLayerRequested);
}

void WorkbenchPage::setModelInfo(const ModelInfo& info) {
    m_summary->setModelInfo(info);
    m_layerTree->model()->setStoredSchemes(info.stored);
    m_layerTree->setTree(info.tree);
    m_evalPanel->setModelLoaded(true);
    m_depthChart->refresh();
    showLayerDetail(selectedLayer());
}

void WorkbenchPage::clear() {
    m_summary->clear();
    m_layerTree->clear();
    m_layerTree->model()->setStoredSchemes({});
    m_layerTree->model()->clearLayerReports();
    m_evalPanel->setModelLoaded(false);
    m_depthChart->refresh();
    m_layerDetail->clear();
}

void WorkbenchPage::setRecipe(const Recipe& recipe) {
    m_layerTree->model()->setRecipe(recipe);
}

void WorkbenchPage::clearLayerReports() {
    m_layerTree->model()->clearLayerReports();
    m_depthChart->refresh();
    showLayerDetail(selectedLayer());
}

void WorkbenchPage::addLayerReports(const std::vector<LayerReport>& layers) {
    m_layerTree->model()->addLayerReports(layers);
    m_depthChart->refresh();
    const QString selected = selectedLayer();
    for (const LayerReport& r : layers) {
        if (QString::fromStdString(r.name) == selected) {
            showLayerDetail(selected);
            break;
        }
    }
}

void WorkbenchPage::setSensitivity(const SensitivityRow& row) {
    m_layerTree->model()->setSensitivity(row);
}

void WorkbenchPage::setComparison(const std::vector<LayerReport>& reports, const QString& label) {
    m_layerTree->model()->setComparison(reports, label);
    m_depthChart->refresh();
}

QString WorkbenchPage::selectedLayer() const {
    return m_layerTree->currentModule();
}

void WorkbenchPage::selectLayer(const QString& name) {
    m_layerTree->selectModule(name);
}

QAbstractItemModel* WorkbenchPage::treeModel() const {
    return m_layerTree->model();
}

LayerTreeModel* WorkbenchPage::layerTreeModel() const {
    return m_layerTree->model();
}

QVariant WorkbenchPage::layerValue(const QString& layer, int column) const {
    return m_layerTree->model()->layerValue(layer, column);
}

std::optional<quant::QuantScheme> WorkbenchPage::schemeOfReport(const LayerReport& r) const {
    // The report carries the scheme it was made with: no label is turned back into a scheme.
    return r.quantized ? r.quantScheme : std::nullopt;
}

void WorkbenchPage::showLayerDetail(const QString& name) {
    const LayerReport* report = m_layerTree->model()->report(name);
    if (report)
        m_layerDetail->setLayer(*report, schemeOfReport(*report));
    else if (name.isEmpty())
        m_layerDetail->clear();
    else
        m_layerDetail->clear(
            tr("%1: no analysis yet (select a linear layer after Analyze).").arg(name));
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
    const QList<QDockWidget*> docks = {m_summaryDock, m_evalDock, m_depthDock, m_detailDock};
    for (QDockWidget* dock : docks)
        dock->show();
    if (dockWidgetArea(m_summaryDock) != Qt::RightDockWidgetArea ||
        dockWidgetArea(m_evalDock) != Qt::RightDockWidgetArea ||
        dockWidgetArea(m_depthDock) != Qt::BottomDockWidgetArea ||
        dockWidgetArea(m_detailDock) != Qt::BottomDockWidgetArea ||
        std::any_of(docks.begin(), docks.end(), [](QDockWidget* d) { return d->isFloating(); })) {
        for (QDockWidget* dock : docks)
            dock->setFloating(false);
        addDockWidget(Qt::RightDockWidgetArea, m_summaryDock);
        addDockWidget(Qt::RightDockWidgetArea, m_evalDock);
        splitDockWidget(m_summaryDock, m_evalDock, Qt::Vertical);
        addDockWidget(Qt::BottomDockWidgetArea, m_depthDock);
        addDockWidget(Qt::BottomDockWidgetArea, m_detailDock);
        splitDockWidget(m_depthDock, m_detailDock, Qt::Horizontal);
    }
    const int dockWidth = qMax(360, windowSize.width() * 3 / 10);
    resizeDocks({m_summaryDock}, {dockWidth}, Qt::Horizontal);
    const int height = qMax(400, windowSize.height());
    resizeDocks({m_summaryDock, m_evalDock}, {height * 9 / 20, height * 11 / 20}, Qt::Vertical);
    // The charts get most of the lower half: the detail's four plots need the room.
    resizeDocks({m_depthDock}, {height * 9 / 20}, Qt::Vertical);
    // The charts share what the right-hand column leaves; the detail's four plots take two
    // thirds.
    const int width = qMax(800, windowSize.width()) - dockWidth;
    resizeDocks({m_depthDock, m_detailDock}, {width / 3, width * 2 / 3}, Qt::Horizontal);
}

QString WorkbenchPage::layoutProblem() const {
    // Readable sizes: a right-hand dock narrower than about 260 px cuts its tab titles ("M…")
    // and its forms; bounded by a share of the page, so a window the user made small on purpose
    // is not "broken" for docks the default layout would give the same size.
    const int minDockWidth = qMin(260, width() / 5);
    const int minDockHeight = qMin(150, height() / 6);
    if (centralWidget()->width() < qMin(300, width() / 4) ||
        centralWidget()->height() < qMin(200, height() / 5))
        return tr("the layer tree is %1x%2 px")
            .arg(centralWidget()->width())
            .arg(centralWidget()->height());
    for (QDockWidget* dock : findChildren<QDockWidget*>(QString(), Qt::FindDirectChildrenOnly)) {
        // Closed, or a tab behind another (kept "visible" but moved out of the page's view):
        // its size is its group's.
        if (!dock->isVisible() || (!dock->isFloating() && dock->visibleRegion().isEmpty()))
            continue;
        if (dock->isFloating()) {
            const bool onScreen =
                std::any_of(QGuiApplication::screens().cbegin(), QGuiApplication::screens().cend(),
                            [dock](const QScreen* s) {
                                return s->availableGeometry().intersects(dock->frameGeometry());
                            });
            if (!onScreen)
                return tr("the %1 dock floats off the screen").arg(dock->windowTitle());
            continue;
        }
        const Qt::DockWidgetArea area = dockWidgetArea(dock);
        const bool side = area == Qt::LeftDockWidgetArea || area == Qt::RightDockWidgetArea;
        if (side ? dock->width() < minDockWidth : dock->height() < minDockHeight)
            return tr("the %1 dock is %2 px %3")
                .arg(dock->windowTitle())
                .arg(side ? dock->width() : dock->height())
                .arg(side ? tr("wide") : tr("tall"));
    }
    return {};
}

} // namespace qs

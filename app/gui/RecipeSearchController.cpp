#include "RecipeSearchController.h"

#include "ErrorBox.h"
#include "EvalPanel.h"
#include "FrontierView.h"
#include "LayerTreeModel.h"
#include "RecipeDocument.h"
#include "WorkbenchPage.h"
#include "engine/Engine.h"
#include "util/Error.h"

#include <QDockWidget>
#include <QScrollArea>

namespace qs {

RecipeSearchController::RecipeSearchController(Engine* engine, RecipeDocument* recipe,
                                               WorkbenchPage* workbench, QWidget* window)
    : QObject(workbench), m_engine(engine), m_recipe(recipe), m_workbench(workbench),
      m_window(window), m_view(new FrontierView(workbench)),
      m_dock(new QDockWidget(tr("Design Recipe"), workbench)) {
    m_dock->setObjectName(QStringLiteral("recipeSearchDock"));
    // Scrolled rather than squeezed: the dock shares the bottom area with the depth chart and
    // must not raise the window's minimum height (the layout the window restores holds).
    auto* scroll = new QScrollArea(m_dock);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(m_view);
    m_dock->setWidget(scroll);
    m_dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                        QDockWidget::DockWidgetFloatable);
    m_workbench->addDockWidget(Qt::BottomDockWidgetArea, m_dock);
    m_workbench->tabifyDockWidget(m_workbench->depthDock(), m_dock);
    m_workbench->depthDock()->raise();

    connect(m_view, &FrontierView::searchRequested, this, &RecipeSearchController::startSearch);
    connect(m_view, &FrontierView::pointSelected, this, [this](const Recipe& proposed) {
        m_workbench->layerTreeModel()->setProposedRecipe(proposed);
    });
    connect(m_view, &FrontierView::applyRequested, this,
            [this](const Recipe& recipe, const QString& description) {
                m_workbench->layerTreeModel()->setProposedRecipe(std::nullopt);
                try {
                    m_recipe->setRecipe(recipe, description);
                } catch (const Error& e) {
                    showErrorBox(m_window, tr("Apply designed recipe"),
                                 QString::fromUtf8(e.what()));
                }
            });
}

void RecipeSearchController::showDock() {
    m_dock->show();
    m_dock->raise();
}

void RecipeSearchController::reset() {
    if (m_job) {
        disconnect(m_job, nullptr, this, nullptr);
        m_job->cancel();
        m_job = nullptr;
    }
    m_view->setBusy(false);
    m_view->clear();
    m_workbench->layerTreeModel()->setProposedRecipe(std::nullopt);
}

void RecipeSearchController::startSearch() {
    if (m_job)
        return;
    SchemeSearchRequest request;
    try {
        request = m_view->request();
    } catch (const Error& e) {
        showErrorBox(m_window, tr("Design recipe"), QString::fromUtf8(e.what()));
        return;
    }
    // The recipe being designed, its schemes left to the search (which weighs no KV cache).
    Recipe base = m_recipe->recipe();
    base.global.reset();
    base.layerOverrides.clear();
    base.layerTypeOverrides.clear();
    base.kvCache.reset();
    // As every run: the device and precision of the evaluation panel (whose text and windows
    // are the recipe's).
    const EvalPanel* eval = m_workbench->evalPanel();
    request.run.recipe = base;
    request.run.device = eval->device().toStdString();
    request.run.dtype = eval->dtype().toStdString();
    m_job = m_engine->searchRecipe(request);
    m_view->setBusy(true);
    connect(m_job, &Job::recipeSearched, this, [this, base](const SchemeSearchResult& result) {
        m_view->setResult(result, base);
        showDock();
    });
    connect(m_job, &Job::finished, this, [this] {
        m_job = nullptr;
        m_view->setBusy(false);
    });
}

} // namespace qs

#include "RecipeDocks.h"

#include "JsonView.h"
#include "RecipePanel.h"
#include "RunPanel.h"
#include "WorkbenchPage.h"

#include <QDockWidget>
#include <QTimer>

namespace qs {

RecipeDocks::RecipeDocks(RecipeDocument* recipe, WorkbenchPage* workbench)
    : QObject(workbench), m_workbench(workbench), m_recipePanel(new RecipePanel(recipe, workbench)),
      m_jsonView(new JsonView(workbench)), m_runPanel(new RunPanel(workbench)),
      m_recipeDock(new QDockWidget(tr("Recipe"), workbench)),
      m_jsonDock(new QDockWidget(tr("Recipe JSON"), workbench)),
      m_runDock(new QDockWidget(tr("Runs"), workbench)) {
    m_recipeDock->setObjectName(QStringLiteral("recipeDock"));
    m_recipeDock->setWidget(m_recipePanel);
    m_jsonDock->setObjectName(QStringLiteral("recipeJsonDock"));
    m_jsonDock->setWidget(m_jsonView);
    m_runDock->setObjectName(QStringLiteral("runDock"));
    m_runDock->setWidget(m_runPanel);
    for (QDockWidget* dock : {m_recipeDock, m_jsonDock, m_runDock})
        dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                          QDockWidget::DockWidgetFloatable);
    place();
}

void RecipeDocks::place() {
    for (QDockWidget* dock : {m_recipeDock, m_jsonDock, m_runDock}) {
        dock->setFloating(false);
        m_workbench->addDockWidget(Qt::RightDockWidgetArea, dock);
    }
    m_workbench->tabifyDockWidget(m_workbench->summaryDock(), m_recipeDock);
    m_workbench->tabifyDockWidget(m_recipeDock, m_jsonDock);
    m_workbench->tabifyDockWidget(m_workbench->evalDock(), m_runDock);
    m_recipeDock->raise();
    m_runDock->raise();
}

void RecipeDocks::applyLayout(const QSize& windowSize) {
    m_layoutPending = false;
    place();
    for (QDockWidget* dock : {m_recipeDock, m_jsonDock, m_runDock})
        dock->show();
    m_recipeDock->raise();
    m_runDock->raise();
    // Tabifying moved the page's docks about: let the page size them again, then share the
    // right-hand column between the recipe tabs and the evaluation and runs tabs about evenly
    // (the recipe scrolls, its pattern preview should be in view; the evaluation's settings and
    // figures should be in view together at 1366x768).
    m_workbench->resetLayout(windowSize);
    // After the page has laid out the new tab groups; sized now, the split would not stick.
    QTimer::singleShot(0, this, [this] {
        m_workbench->resizeDocks({m_recipeDock, m_runDock}, {520, 480}, Qt::Vertical);
    });
}

} // namespace qs

#pragma once

#include <QObject>

class QDockWidget;

namespace qs {

class JsonView;
class RecipeDocument;
class RecipePanel;
class RunPanel;
class WorkbenchPage;

// The recipe editor, its JSON and the run panel as docks of the workbench page, so they go away
// with it on the start page (the page is a QMainWindow, its dock API is public). They are tabs
// beside the page's own right-hand docks (recipe with the model summary, runs with the
// evaluation), which leaves the layer tree the width its metric columns need.
class RecipeDocks : public QObject {
    Q_OBJECT
public:
    RecipeDocks(RecipeDocument* recipe, WorkbenchPage* workbench);

    RecipePanel* recipePanel() const { return m_recipePanel; }
    JsonView* jsonView() const { return m_jsonView; }
    RunPanel* runPanel() const { return m_runPanel; }
    QDockWidget* recipeDock() const { return m_recipeDock; }
    QDockWidget* jsonDock() const { return m_jsonDock; }
    QDockWidget* runDock() const { return m_runDock; }

    // Docks back in their tabs, shown, and the right-hand column split between recipe and runs.
    // Needs the page visible: a hidden page has no sizes to split (see isLayoutPending()).
    void applyLayout(const QSize& windowSize);
    // The default layout is still to be applied the next time the page is shown (no saved
    // state, or Reset Layout while the start page was shown).
    bool isLayoutPending() const { return m_layoutPending; }
    void setLayoutPending(bool pending) { m_layoutPending = pending; }

private:
    void place();

    WorkbenchPage* m_workbench;
    RecipePanel* m_recipePanel;
    JsonView* m_jsonView;
    RunPanel* m_runPanel;
    QDockWidget* m_recipeDock;
    QDockWidget* m_jsonDock;
    QDockWidget* m_runDock;
    bool m_layoutPending = true;
};

} // namespace qs

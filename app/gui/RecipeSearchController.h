#pragma once

#include <QObject>

class QDockWidget;
class QWidget;

namespace qs {

class Engine;
class FrontierView;
class Job;
class RecipeDocument;
class WorkbenchPage;

// The recipe search in the workbench: the "Design Recipe" dock (FrontierView) beside the depth
// chart, the search run in the engine over the recipe being designed (its calibration and
// evaluation data, algorithms and exclusions; its schemes and KV cache left to the search), the
// selected frontier point previewed in the layer tree, and Apply as one undoable recipe edit.
class RecipeSearchController : public QObject {
    Q_OBJECT
public:
    RecipeSearchController(Engine* engine, RecipeDocument* recipe, WorkbenchPage* workbench,
                           QWidget* window);

    QDockWidget* dock() const { return m_dock; }
    FrontierView* view() const { return m_view; }
    // Shows and raises the dock (Recipe > Design Recipe…).
    void showDock();
    // A model was opened or closed: earlier results no longer apply.
    void reset();
    void startSearch();

private:
    Engine* m_engine;
    RecipeDocument* m_recipe;
    WorkbenchPage* m_workbench;
    QWidget* m_window;
    FrontierView* m_view;
    QDockWidget* m_dock;
    Job* m_job = nullptr;
};

} // namespace qs

#pragma once

#include <QObject>
#include <QString>

class QMenu;
class QMenuBar;
class QStatusBar;
class QWidget;

namespace qs {

class RecipeDocument;

// What the user does to the recipe outside the recipe panel: the Recipe menu's file and undo
// actions (recipe files opened and saved, the last one remembered for the file dialogs) and the
// layer tree's Exclude / Override Scheme requests. Failures are shown in error boxes over the
// window; successes in the status bar.
class RecipeActions : public QObject {
    Q_OBJECT
public:
    RecipeActions(RecipeDocument* recipe, QStatusBar* statusBar, QWidget* window);

    // Adds the Recipe menu (Open, Save As, Undo, Redo) to `bar`; the caller may add more.
    QMenu* addMenu(QMenuBar* bar);

    // Replaces the recipe with a recipe file (undoable); a bad file shows an error box with the
    // qs::Error message, emits loadFailed and returns false, leaving the recipe as it was.
    bool load(const QString& path);
    bool save(const QString& path);
    // The recipe file last opened or saved (absolute), where the file dialogs start.
    QString lastFile() const { return m_lastFile; }
    void setLastFile(const QString& path) { m_lastFile = path; }

    void excludeLayer(const QString& layerName);
    // A dialog with the scheme names; choosing one adds an override for exactly this layer.
    void chooseLayerOverride(const QString& layerName);
    // Save Recipe As…: the file dialog (non-blocking).
    void chooseFileToSave();

Q_SIGNALS:
    void loadFailed(const QString& message);

private:
    void chooseFileToOpen();

    RecipeDocument* m_recipe;
    QStatusBar* m_statusBar;
    QWidget* m_window;
    QString m_lastFile;
};

} // namespace qs

#include "RecipeActions.h"

#include "ErrorBox.h"
#include "RecipeDocument.h"
#include "SchemeDialog.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>
#include <QUndoStack>

#include <optional>

namespace qs {

namespace {
constexpr int StatusMessageMs = 8000;
} // namespace

RecipeActions::RecipeActions(RecipeDocument* recipe, QStatusBar* statusBar, QWidget* window)
    : QObject(window), m_recipe(recipe), m_statusBar(statusBar), m_window(window) {}

QMenu* RecipeActions::addMenu(QMenuBar* bar) {
    QMenu* menu = bar->addMenu(tr("&Recipe"));
    menu->addAction(tr("&Open Recipe…"), this, &RecipeActions::chooseFileToOpen);
    QAction* save = menu->addAction(tr("&Save Recipe As…"), this, &RecipeActions::chooseFileToSave);
    save->setShortcut(QKeySequence::SaveAs);
    menu->addSeparator();
    QAction* undo = m_recipe->undoStack()->createUndoAction(m_window, tr("&Undo"));
    undo->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Z));
    QAction* redo = m_recipe->undoStack()->createRedoAction(m_window, tr("&Redo"));
    redo->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));
    menu->addAction(undo);
    menu->addAction(redo);
    return menu;
}

bool RecipeActions::load(const QString& path) {
    try {
        m_recipe->load(path);
    } catch (const std::exception& e) {
        showErrorBox(m_window, tr("Open Recipe"), QString::fromUtf8(e.what()));
        Q_EMIT loadFailed(QString::fromUtf8(e.what()));
        return false;
    }
    m_lastFile = QFileInfo(path).absoluteFilePath();
    m_recipe->undoStack()->setClean(); // as on disk: quitting has nothing to ask
    m_statusBar->showMessage(tr("Recipe %1 opened").arg(QDir::toNativeSeparators(path)),
                             StatusMessageMs);
    return true;
}

bool RecipeActions::save(const QString& path) {
    try {
        m_recipe->save(path);
    } catch (const std::exception& e) {
        showErrorBox(m_window, tr("Save Recipe"), QString::fromUtf8(e.what()));
        return false;
    }
    m_lastFile = QFileInfo(path).absoluteFilePath();
    m_recipe->undoStack()->setClean();
    m_statusBar->showMessage(tr("Recipe saved to %1").arg(QDir::toNativeSeparators(path)),
                             StatusMessageMs);
    return true;
}

void RecipeActions::chooseFileToOpen() {
    auto* dialog =
        new QFileDialog(m_window, tr("Open Recipe"), QFileInfo(m_lastFile).absolutePath(),
                        tr("Recipes (*.json);;All files (*)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setFileMode(QFileDialog::ExistingFile);
    connect(dialog, &QFileDialog::fileSelected, this, &RecipeActions::load);
    dialog->open();
}

void RecipeActions::chooseFileToSave() {
    auto* dialog = new QFileDialog(m_window, tr("Save Recipe As"), m_lastFile,
                                   tr("Recipes (*.json);;All files (*)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setAcceptMode(QFileDialog::AcceptSave);
    dialog->setDefaultSuffix(QStringLiteral("json"));
    connect(dialog, &QFileDialog::fileSelected, this, &RecipeActions::save);
    dialog->open();
}

void RecipeActions::excludeLayer(const QString& layerName) {
    try {
        m_recipe->excludeLayer(layerName);
    } catch (const std::exception& e) {
        showErrorBox(m_window, tr("Exclude Layer"), QString::fromUtf8(e.what()));
    }
}

void RecipeActions::chooseLayerOverride(const QString& layerName) {
    // Every registry name (Quark's older ones too), each with its description: SchemeDialog.
    auto* dialog = new SchemeDialog(layerName, m_window);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    const std::optional<quant::QuantScheme> current =
        m_recipe->recipe().schemeFor(layerName.toStdString(), layerKindOf(layerName.toStdString()));
    if (current && !current->name.empty())
        dialog->setScheme(QString::fromStdString(current->name),
                          current->weight.granularity == quant::Granularity::PerGroup
                              ? int(current->weight.groupSize)
                              : 0);
    connect(dialog, &SchemeDialog::schemeChosen, this,
            [this, layerName](const QString& scheme, int groupSize) {
                try {
                    m_recipe->addOverride(RecipeDocument::exactLayerPattern(layerName), scheme,
                                          groupSize);
                } catch (const std::exception& e) {
                    showErrorBox(m_window, tr("Override Scheme"), QString::fromUtf8(e.what()));
                }
            });
    dialog->open();
}

} // namespace qs

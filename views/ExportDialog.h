#pragma once

#include "recipe/Recipe.h"

#include <QDialog>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace qs {

// Quantize… : where the quantized model goes and in which format. Only the fake-quantized
// Hugging Face checkpoint has an exporter today; the other formats are listed, disabled. The
// recipe is always written beside the weights (quantscope_recipe.json). "Copy headless command"
// saves the recipe to a file of its own and copies the quantscope-cli line that replays the run.
class ExportDialog : public QDialog {
    Q_OBJECT
public:
    explicit ExportDialog(const QString& modelDirectory, const Recipe& recipe,
                          QWidget* parent = nullptr);

    QString outputDirectory() const;
    void setOutputDirectory(const QString& directory);
    // Where Copy headless command saves the recipe: "<output dir>.recipe.json" unless chosen.
    QString recipePath() const;
    void setRecipePath(const QString& path);
    // quantscope-cli quantize '<model>' --recipe '<recipe>' --out '<dir>'
    QString headlessCommand() const;
    // Saves the recipe to recipePath() and puts headlessCommand() on the clipboard; false (and
    // the reason shown in the dialog) when the recipe cannot be written.
    bool copyHeadlessCommand();

    // POSIX shell single quoting: 'it'\''s'.
    static QString shellQuote(const QString& text);

    QListWidget* formatList() const { return m_formats; }
    QPushButton* copyButton() const { return m_copy; }
    QLabel* statusLabel() const { return m_status; }
    QDialogButtonBox* buttonBox() const { return m_buttons; }

private:
    void chooseDirectory();
    void updateState();

    QString m_modelDirectory;
    Recipe m_recipe;
    QLineEdit* m_outDir;
    QLineEdit* m_recipePath;
    bool m_recipePathChosen = false;
    QListWidget* m_formats;
    QPushButton* m_copy;
    QLabel* m_status;
    QDialogButtonBox* m_buttons;
};

} // namespace qs

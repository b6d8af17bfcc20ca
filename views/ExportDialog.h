#pragma once

#include "export/ExportFormat.h"
#include "recipe/Recipe.h"

#include <QDialog>

#include <string>
#include <vector>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace qs {

// Quantize… : where the quantized model goes and in which formats (core/export/ExportFormat.h:
// the ones this build writes are checkable, the others disabled with the reason; several go to
// <output>/<format>), with the GGUF weight type. The chosen formats become the recipe's
// export_targets, so the recipe written beside the weights (quantscope_recipe.json) and the one
// "Copy headless command" saves replay the same export.
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
    // The device and precision the GUI's run will use (the evaluation panel's); the command
    // names them, so it computes what the run computes. Unset: the CLI's defaults.
    void setCompute(const QString& device, const QString& dtype);
    // quantscope-cli quantize '<model>' --recipe '<recipe>' --out '<dir>'
    //   [--device D --dtype T] [--gguf-type T]
    QString headlessCommand() const;
    // The checked formats as recipe export targets ("hf_fake", "quark", "gguf", ...).
    std::vector<std::string> exportTargets() const;
    void setExportTargets(const std::vector<std::string>& targets);
    QString ggufType() const;
    // The chosen formats' own options (the GGUF weight type when GGUF is checked): what the
    // run passes to the exporters (RunRequest::exportOptions).
    ExportOptions exportOptions() const;
    // The dialog's recipe with exportTargets() in it: what a run and the saved recipe use.
    Recipe recipeToWrite() const;
    // Saves the recipe to recipePath() and puts headlessCommand() on the clipboard; false (and
    // the reason shown in the dialog) when the recipe cannot be written.
    bool copyHeadlessCommand();

    // POSIX shell single quoting: 'it'\''s'.
    static QString shellQuote(const QString& text);

    QListWidget* formatList() const { return m_formats; }
    QComboBox* ggufTypeBox() const { return m_ggufType; }
    QPushButton* copyButton() const { return m_copy; }
    QLabel* statusLabel() const { return m_status; }
    // Shown while a format that keeps only the weights' quantization (fake-quantized, GGUF) is
    // checked and the recipe quantizes activations: those files compute otherwise than the run.
    QLabel* activationWarning() const { return m_activationWarning; }
    QDialogButtonBox* buttonBox() const { return m_buttons; }

private:
    void chooseDirectory();
    void updateState();

    QString m_modelDirectory;
    Recipe m_recipe;
    QString m_device;
    QString m_dtype;
    QLineEdit* m_outDir;
    QLineEdit* m_recipePath;
    bool m_recipePathChosen = false;
    QListWidget* m_formats;
    QComboBox* m_ggufType;
    QPushButton* m_copy;
    QLabel* m_status;
    QLabel* m_activationWarning;
    QDialogButtonBox* m_buttons;
};

} // namespace qs

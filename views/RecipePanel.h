#pragma once

#include "model/ModelInfo.h"
#include "recipe/Recipe.h"

#include <QStringList>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QListView;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableView;

namespace qs {

class AlgorithmPanel;
class RecipeDocument;
class RecipeExclusionsModel;
class RecipeOverridesModel;

// Edits the recipe of a RecipeDocument: global scheme, per-pattern overrides and exclusions
// (one pattern editor with a live preview of the open model's linears it matches), per-kind
// overrides, KV cache, unfit policy, calibration data, and the algorithms with their parameters
// (AlgorithmPanel). The evaluation text and windows are the evaluation panel's (EvalPanel).
// Every change is a RecipeDocument edit (undoable); the panel follows recipeChanged.
class RecipePanel : public QWidget {
    Q_OBJECT
public:
    explicit RecipePanel(RecipeDocument* document, QWidget* parent = nullptr);

    void setModelInfo(const ModelInfo& info);
    void clearModel();

    // The linears of the open model that `pattern` matches, in model order (the live preview);
    // empty for an invalid pattern.
    QStringList matchingLayers(const QString& pattern) const;

    QComboBox* globalSchemeBox() const { return m_global; }
    // The global scheme's group size: enabled when its name takes one (Quark's per-group names);
    // otherwise it shows the group size the name fixes, or nothing for a scheme not per group.
    QSpinBox* groupSizeBox() const { return m_groupSize; }
    QComboBox* kvCacheBox() const { return m_kvCache; }
    QComboBox* unfitPolicyBox() const { return m_unfit; }
    QLineEdit* patternEdit() const { return m_pattern; }
    QListWidget* previewList() const { return m_preview; }
    QLabel* previewLabel() const { return m_previewLabel; }
    QComboBox* overrideSchemeBox() const { return m_overrideScheme; }
    QPushButton* addOverrideButton() const { return m_addOverride; }
    QPushButton* excludeButton() const { return m_exclude; }
    QTableView* overridesView() const { return m_overridesView; }
    QListView* exclusionsView() const { return m_exclusionsView; }
    RecipeOverridesModel* overridesModel() const { return m_overrides; }
    RecipeExclusionsModel* exclusionsModel() const { return m_exclusions; }
    QLineEdit* calibrationDataEdit() const { return m_calibData; }
    QSpinBox* calibrationSamplesBox() const { return m_calibSamples; }
    QComboBox* calibrationModeBox() const { return m_calibMode; }
    QSpinBox* calibrationSeqLenBox() const { return m_calibSeqLen; }
    QLabel* messageLabel() const { return m_message; }
    AlgorithmPanel* algorithmPanel() const { return m_algorithms; }

    // Fills a combo box with "none", the current scheme names, then the older Quark names, from
    // the scheme registry (quant::schemeNames()): each item's data is its name, its tooltip and
    // status tip the one-line description.
    static void fillSchemeBox(QComboBox* box);

private:
    QWidget* createSchemeGroup();
    QWidget* createPatternGroup();
    QWidget* createDataGroup();
    void followRecipe(const Recipe& recipe);
    void updateGroupSizeBox(const Recipe& recipe);
    // The group size box's value for a name that takes one, else 0.
    int groupSizeFor(const QString& schemeName) const;
    void updatePreview();
    // Runs one document edit, showing a qs::Error's message instead of throwing.
    template <typename Edit> void edit(Edit&& editFn);
    QString chooseTextFile(const QString& title, const QString& current);

    RecipeDocument* m_document;
    QStringList m_linears;
    QComboBox* m_global;
    QSpinBox* m_groupSize;
    QComboBox* m_kvCache;
    QComboBox* m_unfit;
    QLineEdit* m_pattern;
    QLabel* m_previewLabel;
    QListWidget* m_preview;
    QComboBox* m_overrideScheme;
    QPushButton* m_addOverride;
    QPushButton* m_exclude;
    QTableView* m_overridesView;
    QListView* m_exclusionsView;
    RecipeOverridesModel* m_overrides;
    RecipeExclusionsModel* m_exclusions;
    QComboBox* m_typeKind;
    QComboBox* m_typeScheme;
    QLabel* m_typeOverrides;
    QLineEdit* m_calibData;
    QSpinBox* m_calibSamples;
    QSpinBox* m_calibSeqLen;
    QSpinBox* m_calibSeed;
    QComboBox* m_calibMode;
    QLabel* m_message;
    AlgorithmPanel* m_algorithms;
};

} // namespace qs

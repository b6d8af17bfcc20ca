#pragma once

#include "recipe/Recipe.h"

#include <QObject>
#include <QString>

class QUndoStack;

namespace qs {

// The recipe being designed, with undo/redo. Every edit goes through one of the setters below,
// each of which pushes a QUndoCommand holding the recipe before and after, so undo restores the
// recipe exactly (toOrderedJson() identical). Edits that leave the recipe unchanged push nothing.
// Bad input (an unknown scheme name, an invalid pattern) throws qs::Error and changes nothing.
class RecipeDocument : public QObject {
    Q_OBJECT
public:
    // The name the GUI uses for "no quantization" in scheme choosers.
    static const QString NoScheme;

    explicit RecipeDocument(QObject* parent = nullptr);
    ~RecipeDocument() override;

    const Recipe& recipe() const { return m_recipe; }
    QUndoStack* undoStack() const { return m_undo; }

    // Replaces the whole recipe (Open Recipe…, --recipe); undoable like any edit.
    void setRecipe(const Recipe& recipe, const QString& text);
    // The recipe a freshly opened model starts from (proposed defaults): not an edit, so there
    // is nothing to undo back to and the undo stack starts clean.
    void startFrom(const Recipe& recipe);
    void load(const QString& path); // throws qs::Error; the recipe is unchanged then
    void save(const QString& path) const;

    // "none" (NoScheme) or a registry name; `groupSize` for a name that takes one (Quark's
    // per-group names, quant::SchemeName::takesGroupSize), 0 = its default (128).
    void setGlobalScheme(const QString& name, int groupSize = 0);
    // The global scheme's group size; qs::Error when the global scheme's name takes none.
    void setGlobalGroupSize(int groupSize);
    void addOverride(const QString& pattern, const QString& scheme, int groupSize = 0);
    void editOverride(int index, const QString& pattern, const QString& scheme);
    void removeOverride(int index);
    void addExclusion(const QString& pattern);
    void removeExclusion(int index);
    // Excludes exactly one layer (its name with fnmatch metacharacters escaped).
    void excludeLayer(const QString& layerName);
    // Scheme for every linear of one kind ("down_proj"); NoScheme removes the override.
    void setLayerTypeOverride(const QString& kind, const QString& scheme);
    void setKvCacheFp8(bool fp8);
    void setCalibrationData(const QString& path);
    void setCalibrationSamples(qint64 samples);
    void setCalibrationSeqLen(qint64 seqLen);
    void setCalibrationSeed(quint64 seed);
    // "float" or "sequential" (Recipe.h CalibrationMode); qs::Error for anything else.
    void setCalibrationMode(const QString& mode);
    void setEvaluationData(const QString& path);
    void setEvaluationSeqLen(qint64 seqLen);
    void setEvaluationMaxWindows(qint64 maxWindows);
    void setUnfitPolicy(const QString& policy);
    // Adds the algorithm (with Quark's defaults: no parameters) at its place in Quark's order of
    // application, or removes it with its parameters. qs::Error for unknown names.
    void setAlgorithmEnabled(const QString& name, bool enabled);
    // One parameter of an enabled algorithm, as typed: empty removes it (Quark's default
    // applies); true/false, numbers and strings by the parameter's kind; lists and objects as
    // JSON. qs::Error naming the field when the text does not parse or the value is invalid.
    void setAlgorithmParameter(const QString& name, const QString& parameter, const QString& text);
    // The text setAlgorithmParameter would take for the recipe's value (empty when unset).
    QString algorithmParameterText(const QString& name, const QString& parameter) const;

    // The scheme's registry name, or a short summary for a custom (Quark-imported) scheme.
    static QString schemeLabel(const std::optional<quant::QuantScheme>& scheme);
    // An fnmatch pattern matching exactly `layerName`: [, ? and * are escaped as [[], [?], [*].
    static QString exactLayerPattern(const QString& layerName);

Q_SIGNALS:
    void recipeChanged(const qs::Recipe& recipe);

private:
    friend class RecipeEditCommand;
    // Pushes an edit from m_recipe to `after`; consecutive edits with the same non-negative
    // mergeId (typing in a spin box) merge into one undo step.
    void push(const Recipe& after, const QString& text, int mergeId = -1);
    void apply(const Recipe& recipe);

    Recipe m_recipe;
    QUndoStack* m_undo;
};

} // namespace qs

Q_DECLARE_METATYPE(qs::Recipe)

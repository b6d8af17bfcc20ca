#include "RecipeDocument.h"

#include "quant/SchemeRegistry.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/LayerPattern.h"
#include "recipe/SchemeJson.h"
#include "util/Error.h"

#include <QUndoCommand>
#include <QUndoStack>

#include <algorithm>

namespace qs {

const QString RecipeDocument::NoScheme = QStringLiteral("none");

namespace {

enum MergeId {
    MergeCalibrationSamples = 1,
    MergeCalibrationSeqLen,
    MergeCalibrationSeed,
    MergeCalibrationData,
    MergeEvaluationData,
    MergeEvaluationSeqLen,
    MergeEvaluationMaxWindows,
    MergeGroupSize,
    MergeAlgorithmParameter, // + the parameter's hash, so typing in one field is one step
};

// A name, with the group size when it takes one (0: its default); a group size for a name that
// takes none is ignored only when it is 0.
std::optional<quant::QuantScheme> schemeOrNone(const QString& name, int groupSize = 0) {
    if (name.isEmpty() || name == RecipeDocument::NoScheme)
        return std::nullopt;
    const quant::QuantScheme scheme = quant::resolveScheme(name.toStdString());
    if (groupSize == 0)
        return scheme;
    if (auto sized = withGroupSize(scheme, groupSize, "recipe", "group_size"))
        return sized;
    return quant::resolveScheme(name.toStdString(), groupSize); // says why not
}

quant::QuantScheme requiredScheme(const QString& name, int groupSize = 0) {
    std::optional<quant::QuantScheme> scheme = schemeOrNone(name, groupSize);
    if (!scheme)
        throw Error("recipe", "scheme", "an override needs a scheme");
    return *scheme;
}

std::string checkedPattern(const QString& pattern, const char* field) {
    const std::string p = pattern.trimmed().toStdString();
    validateLayerPattern(p, "recipe", field);
    return p;
}

const AlgorithmInfo& algorithmInfo(const std::string& name) {
    for (const AlgorithmInfo& info : algorithmCatalog())
        if (info.name == name)
            return info;
    throw Error("recipe", "algorithms", "unknown algorithm '" + name + "'");
}

const AlgorithmParameterInfo& parameterInfo(const AlgorithmInfo& algorithm,
                                            const std::string& name) {
    for (const AlgorithmParameterInfo& p : algorithm.parameters)
        if (p.name == name)
            return p;
    throw Error("recipe", algorithm.name + "." + name, "unknown parameter");
}

// The JSON value a typed parameter text stands for (the kind decides how it is read).
nlohmann::json parameterValue(const AlgorithmParameterInfo& p, const std::string& text,
                              const std::string& field) {
    using Kind = AlgorithmParamKind;
    if (text == "null")
        return nullptr;
    switch (p.kind) {
    case Kind::String:
        return text;
    case Kind::Bool:
        if (text == "true" || text == "false")
            return text == "true";
        throw Error("recipe", field, "expected true or false, got '" + text + "'");
    default:
        break;
    }
    nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded())
        throw Error("recipe", field, "'" + text + "' is not " + p.type);
    return value;
}

int algorithmStage(const std::string& name) {
    return algorithmInfo(name).stage;
}

} // namespace

// One recipe edit: the whole recipe before and after (recipes are small), so undo is exact.
class RecipeEditCommand : public QUndoCommand {
public:
    RecipeEditCommand(RecipeDocument* document, Recipe before, Recipe after, const QString& text,
                      int mergeId)
        : QUndoCommand(text), m_document(document), m_before(std::move(before)),
          m_after(std::move(after)), m_mergeId(mergeId) {}

    void undo() override { m_document->apply(m_before); }
    void redo() override { m_document->apply(m_after); }
    int id() const override { return m_mergeId; }
    bool mergeWith(const QUndoCommand* other) override {
        if (other->id() != id() || id() < 0)
            return false;
        m_after = static_cast<const RecipeEditCommand*>(other)->m_after;
        setObsolete(m_after.toOrderedJson() == m_before.toOrderedJson());
        return true;
    }

private:
    RecipeDocument* m_document;
    Recipe m_before;
    Recipe m_after;
    int m_mergeId;
};

RecipeDocument::RecipeDocument(QObject* parent) : QObject(parent), m_undo(new QUndoStack(this)) {
    qRegisterMetaType<qs::Recipe>();
}

RecipeDocument::~RecipeDocument() = default;

void RecipeDocument::push(const Recipe& after, const QString& text, int mergeId) {
    // Compared as written (JSON), not by Recipe::operator==, which treats schemes with the same
    // numerics as equal even when their names differ.
    if (after.toOrderedJson() == m_recipe.toOrderedJson())
        return;
    after.validate("recipe");
    m_undo->push(new RecipeEditCommand(this, m_recipe, after, text, mergeId));
}

void RecipeDocument::apply(const Recipe& recipe) {
    m_recipe = recipe;
    Q_EMIT recipeChanged(m_recipe);
}

void RecipeDocument::setRecipe(const Recipe& recipe, const QString& text) {
    recipe.validate("recipe");
    push(recipe, text);
}

void RecipeDocument::startFrom(const Recipe& recipe) {
    recipe.validate("recipe");
    m_undo->clear();
    apply(recipe);
}

void RecipeDocument::load(const QString& path) {
    const Recipe loaded = Recipe::load(path.toStdString());
    push(loaded, tr("open recipe %1").arg(path));
}

void RecipeDocument::save(const QString& path) const {
    m_recipe.save(path.toStdString());
}

void RecipeDocument::setGlobalScheme(const QString& name, int groupSize) {
    Recipe r = m_recipe;
    r.global = schemeOrNone(name, groupSize);
    push(r,
         tr("global scheme %1").arg(r.global ? QString::fromStdString(r.global->label()) : name));
}

void RecipeDocument::setGlobalGroupSize(int groupSize) {
    if (!m_recipe.global)
        throw Error("recipe", "global.group_size", "no global scheme to take a group size");
    std::optional<quant::QuantScheme> sized =
        withGroupSize(*m_recipe.global, groupSize, "recipe", "global.group_size");
    if (!sized)
        throw Error("recipe", "global.group_size",
                    "scheme '" + m_recipe.global->label() +
                        "' takes no group size (Quark's per-group names do, e.g. "
                        "w_uint4_per_group_asym)");
    Recipe r = m_recipe;
    r.global = std::move(sized);
    push(r, tr("group size %1").arg(groupSize), MergeGroupSize);
}

void RecipeDocument::addOverride(const QString& pattern, const QString& scheme, int groupSize) {
    Recipe r = m_recipe;
    r.layerOverrides.push_back(
        {checkedPattern(pattern, "layer_overrides"), requiredScheme(scheme, groupSize)});
    push(r, tr("override %1 → %2")
                .arg(pattern.trimmed(),
                     QString::fromStdString(r.layerOverrides.back().scheme.label())));
}

void RecipeDocument::editOverride(int index, const QString& pattern, const QString& scheme) {
    if (index < 0 || index >= static_cast<int>(m_recipe.layerOverrides.size()))
        return;
    Recipe r = m_recipe;
    r.layerOverrides[static_cast<size_t>(index)] = {checkedPattern(pattern, "layer_overrides"),
                                                    requiredScheme(scheme)};
    push(r, tr("edit override %1 → %2").arg(pattern.trimmed(), scheme));
}

void RecipeDocument::removeOverride(int index) {
    if (index < 0 || index >= static_cast<int>(m_recipe.layerOverrides.size()))
        return;
    Recipe r = m_recipe;
    const QString pattern = QString::fromStdString(r.layerOverrides[size_t(index)].pattern);
    r.layerOverrides.erase(r.layerOverrides.begin() + index);
    push(r, tr("remove override %1").arg(pattern));
}

void RecipeDocument::addExclusion(const QString& pattern) {
    const std::string p = checkedPattern(pattern, "exclude");
    if (std::find(m_recipe.exclude.begin(), m_recipe.exclude.end(), p) != m_recipe.exclude.end())
        return; // already excluded
    Recipe r = m_recipe;
    r.exclude.push_back(p);
    push(r, tr("exclude %1").arg(QString::fromStdString(p)));
}

void RecipeDocument::removeExclusion(int index) {
    if (index < 0 || index >= static_cast<int>(m_recipe.exclude.size()))
        return;
    Recipe r = m_recipe;
    const QString pattern = QString::fromStdString(r.exclude[size_t(index)]);
    r.exclude.erase(r.exclude.begin() + index);
    push(r, tr("remove exclusion %1").arg(pattern));
}

void RecipeDocument::excludeLayer(const QString& layerName) {
    addExclusion(exactLayerPattern(layerName));
}

void RecipeDocument::setLayerTypeOverride(const QString& kind, const QString& scheme) {
    const std::string k = kind.trimmed().toStdString();
    if (k.empty())
        throw Error("recipe", "layer_type_overrides", "no layer kind given");
    Recipe r = m_recipe;
    if (const std::optional<quant::QuantScheme> s = schemeOrNone(scheme))
        r.layerTypeOverrides[k] = *s;
    else
        r.layerTypeOverrides.erase(k);
    push(r, tr("%1 layers → %2").arg(kind.trimmed(), scheme));
}

void RecipeDocument::setKvCacheFp8(bool fp8) {
    Recipe r = m_recipe;
    r.kvCache = fp8 ? std::optional<quant::QuantSpec>(fp8KvCacheSpec()) : std::nullopt;
    push(r, fp8 ? tr("KV cache fp8") : tr("KV cache unquantized"));
}

void RecipeDocument::setCalibrationData(const QString& path) {
    Recipe r = m_recipe;
    r.calibration.dataPath = path.toStdString();
    push(r, tr("calibration data"), MergeCalibrationData);
}

void RecipeDocument::setCalibrationSamples(qint64 samples) {
    Recipe r = m_recipe;
    r.calibration.numSamples = samples;
    r.validate("recipe");
    push(r, tr("calibration samples %1").arg(samples), MergeCalibrationSamples);
}

void RecipeDocument::setCalibrationSeqLen(qint64 seqLen) {
    Recipe r = m_recipe;
    r.calibration.seqLen = seqLen;
    r.validate("recipe");
    push(r, tr("calibration sequence length %1").arg(seqLen), MergeCalibrationSeqLen);
}

void RecipeDocument::setCalibrationSeed(quint64 seed) {
    Recipe r = m_recipe;
    r.calibration.seed = seed;
    push(r, tr("calibration seed %1").arg(seed), MergeCalibrationSeed);
}

void RecipeDocument::setCalibrationMode(const QString& mode) {
    const auto parsed = calibrationModeFromName(mode.toStdString());
    if (!parsed)
        throw Error("recipe", "calibration.mode",
                    "unknown calibration mode '" + mode.toStdString() + "' (float or sequential)");
    Recipe r = m_recipe;
    r.calibration.mode = *parsed;
    push(r, tr("calibration mode %1").arg(mode));
}

void RecipeDocument::setEvaluationData(const QString& path) {
    Recipe r = m_recipe;
    r.evaluation.dataPath = path.toStdString();
    push(r, tr("evaluation data"), MergeEvaluationData);
}

void RecipeDocument::setEvaluationSeqLen(qint64 seqLen) {
    Recipe r = m_recipe;
    r.evaluation.seqLen = seqLen;
    r.validate("recipe");
    push(r, tr("evaluation sequence length %1").arg(seqLen), MergeEvaluationSeqLen);
}

void RecipeDocument::setEvaluationMaxWindows(qint64 maxWindows) {
    Recipe r = m_recipe;
    r.evaluation.maxWindows = maxWindows;
    r.validate("recipe");
    push(r, tr("evaluation windows %1").arg(maxWindows), MergeEvaluationMaxWindows);
}

void RecipeDocument::setUnfitPolicy(const QString& policy) {
    Recipe r = m_recipe;
    r.unfitPolicy = policy.toStdString();
    r.validate("recipe");
    push(r, tr("unfit policy %1").arg(policy));
}

QString RecipeDocument::schemeLabel(const std::optional<quant::QuantScheme>& scheme) {
    if (!scheme)
        return NoScheme;
    return QString::fromStdString(scheme->label());
}

QString RecipeDocument::exactLayerPattern(const QString& layerName) {
    return QString::fromStdString(qs::exactLayerPattern(layerName.toStdString()));
}

void RecipeDocument::setAlgorithmEnabled(const QString& name, bool enabled) {
    const std::string n = name.toStdString();
    const AlgorithmInfo& info = algorithmInfo(n);
    Recipe r = m_recipe;
    auto& list = r.algorithms;
    const auto found =
        std::find_if(list.begin(), list.end(), [&](const AlgorithmSpec& a) { return a.name == n; });
    if (enabled && found == list.end()) {
        const auto later = std::find_if(list.begin(), list.end(), [&](const AlgorithmSpec& a) {
            return algorithmStage(a.name) > info.stage;
        });
        list.insert(later, AlgorithmSpec{n, nlohmann::json::object()});
    } else if (!enabled && found != list.end()) {
        list.erase(found);
    }
    push(r, enabled ? tr("enable %1").arg(name) : tr("disable %1").arg(name));
}

void RecipeDocument::setAlgorithmParameter(const QString& name, const QString& parameter,
                                           const QString& text) {
    const std::string n = name.toStdString();
    const std::string key = parameter.toStdString();
    const AlgorithmParameterInfo& info = parameterInfo(algorithmInfo(n), key);
    Recipe r = m_recipe;
    const auto found = std::find_if(r.algorithms.begin(), r.algorithms.end(),
                                    [&](const AlgorithmSpec& a) { return a.name == n; });
    if (found == r.algorithms.end())
        throw Error("recipe", n + "." + key, n + " is not enabled");
    const std::string field = n + "." + key;
    const std::string value = text.trimmed().toStdString();
    nlohmann::json params = found->params;
    if (value.empty())
        params.erase(key);
    else
        params[key] = parameterValue(info, value, field);
    validateAlgorithmParams(n, params, "recipe", n);
    found->params = std::move(params);
    push(r, tr("%1 %2").arg(name, parameter),
         MergeAlgorithmParameter + int(qHash(name + parameter) & 0xffff));
}

QString RecipeDocument::algorithmParameterText(const QString& name,
                                               const QString& parameter) const {
    for (const AlgorithmSpec& a : m_recipe.algorithms) {
        if (a.name != name.toStdString())
            continue;
        const auto it = a.params.find(parameter.toStdString());
        if (it == a.params.end())
            return {};
        return QString::fromStdString(it->is_string() ? it->get<std::string>() : it->dump());
    }
    return {};
}

} // namespace qs

#include "LayerTreeModel.h"

#include "recipe/LayerPattern.h"
#include "recipe/Provenance.h"

#include <QBrush>
#include <QSet>

#include <algorithm>
#include <cmath>
#include <limits>

namespace qs {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double sqnrOf(const ErrorMetrics& m) {
    return m.valid ? m.sqnrDb : kNaN;
}

const QString kDash = QStringLiteral("\u2014");

} // namespace

LayerTreeModel::LayerTreeModel(QObject* parent) : ModuleTreeModel(parent) {}

bool LayerTreeModel::higherIsBetter(int column) {
    return column == WeightSqnrColumn || column == OutputSqnrLocalColumn ||
           column == AlgorithmGainColumn || column == OutputSqnrAccumulatedColumn;
}

bool LayerTreeModel::isQuantizableKind(const std::string& nodeKind) {
    // The engine quantizes the linears of the decoder blocks only; lm_head ("head") stays in
    // full precision whatever the recipe's global scheme says.
    return nodeKind == "linear";
}

double LayerTreeModel::metricOf(const LayerReport& r, int column) {
    switch (column) {
    case WeightSqnrColumn:
        return sqnrOf(r.weight);
    case OutputSqnrLocalColumn:
        return sqnrOf(r.outputLocal);
    case AlgorithmGainColumn:
        return r.outputLocal.valid && r.outputLocalRoundToNearest.valid
                   ? sqnrOf(r.outputLocal) - sqnrOf(r.outputLocalRoundToNearest)
                   : kNaN;
    case OutputSqnrAccumulatedColumn:
        return sqnrOf(r.outputAccumulated);
    case InputAbsmaxColumn:
        return r.input.tokens > 0 ? r.inputAbsmax : kNaN;
    case OutlierScoreColumn:
        return r.input.tokens > 0 ? r.outlierScore : kNaN;
    case MeanRelativeErrorColumn:
        return r.outputLocal.valid ? r.outputLocal.meanRelative : kNaN;
    case KlProxyColumn:
        return r.outputLocal.valid ? r.klProxy : kNaN;
    default:
        return kNaN;
    }
}

void LayerTreeModel::treeReset() {
    Values none;
    none.fill(kNaN);
    m_values.assign(entries().size(), none);
    m_heat.assign(entries().size(), Heat{});
    m_leafCount.assign(entries().size(), 0);
    m_ranges = {};
    // Reports of a previous model do not belong to the new tree; keep those that match by name
    // (reopening the same model keeps the analysis).
    std::vector<int> leaves;
    for (const QString& name : m_reportOrder) {
        const int e = entryOf(name);
        if (e < 0)
            continue;
        const LayerReport& r = m_reports[name];
        for (int m = 0; m < kMetricCount; ++m)
            m_values[size_t(e)][size_t(m)] = metricOf(r, kFirstMetricColumn + m);
        leaves.push_back(e);
    }
    // Inside a reset no dataChanged may be sent: valuesChanged only computes when resetting.
    m_resetting = true;
    valuesChanged(leaves);
    m_resetting = false;
}

std::string LayerTreeModel::layerRecipeHash(const Recipe& recipe) {
    Recipe r = recipe;
    r.evaluation = EvaluationSpec{};
    return recipeHash(r);
}

void LayerTreeModel::setRecipe(const Recipe& recipe) {
    m_recipe = recipe;
    m_recipeHash = layerRecipeHash(m_recipe); // once per edit: both marks below compare it
    m_hasRecipe = true;
    m_showsUnfitSkipped = !m_unfitSkipped.isEmpty() && m_recipeHash == m_unfitRecipeHash;
    announceColumns(SchemeColumn, ExcludedColumn, {Qt::DisplayRole, Qt::ToolTipRole, SortRole});
    updateStale();
}

void LayerTreeModel::setUnfitSkipped(const std::vector<std::string>& layers,
                                     const std::string& underRecipe) {
    m_unfitSkipped.clear();
    for (const std::string& entry : layers) {
        const size_t colon = entry.find(": ");
        m_unfitSkipped.insert(QString::fromStdString(entry.substr(0, colon)),
                              colon == std::string::npos
                                  ? QString()
                                  : QString::fromStdString(entry.substr(colon + 2)));
    }
    m_unfitRecipeHash = underRecipe;
    m_showsUnfitSkipped = !m_unfitSkipped.isEmpty() && m_hasRecipe && m_recipeHash == underRecipe;
    announceColumns(SchemeColumn, SchemeColumn, {Qt::DisplayRole, Qt::ToolTipRole, SortRole});
}

bool LayerTreeModel::isUnfitSkipped(const QString& layer) const {
    return m_showsUnfitSkipped && m_unfitSkipped.contains(layer);
}

void LayerTreeModel::setStoredSchemes(const StoredSchemes& stored) {
    m_stored = stored;
    announceColumns(SchemeColumn, SchemeColumn, {Qt::DisplayRole, Qt::ToolTipRole, SortRole});
}

void LayerTreeModel::setReportsRecipeHash(const std::string& hash) {
    m_reportsRecipeHash = hash;
    updateStale();
}

void LayerTreeModel::updateStale() {
    const bool stale = !m_reports.isEmpty() && m_hasRecipe && !m_reportsRecipeHash.empty() &&
                       m_recipeHash != m_reportsRecipeHash;
    if (stale == m_stale)
        return;
    m_stale = stale;
    announceColumns(kFirstMetricColumn, kFirstMetricColumn + kMetricCount - 1,
                    {Qt::ForegroundRole, Qt::BackgroundRole, Qt::ToolTipRole});
    Q_EMIT headerDataChanged(Qt::Horizontal, kFirstMetricColumn,
                             kFirstMetricColumn + kMetricCount - 1);
    Q_EMIT resultsStaleChanged(m_stale);
}

void LayerTreeModel::setComparison(const std::vector<LayerReport>& reports, const QString& label) {
    m_compared.clear();
    m_comparedOrder.clear();
    for (const LayerReport& r : reports) {
        const QString name = QString::fromStdString(r.name);
        if (!m_compared.contains(name))
            m_comparedOrder.push_back(name);
        m_compared.insert(name, r);
    }
    m_comparedLabel = reports.empty() ? QString() : label;
    announceColumns(kFirstMetricColumn, kFirstMetricColumn + kMetricCount - 1,
                    {Qt::DisplayRole, Qt::ToolTipRole, DeltaRole});
    Q_EMIT headerDataChanged(Qt::Horizontal, kFirstMetricColumn,
                             kFirstMetricColumn + kMetricCount - 1);
}

std::vector<const LayerReport*> LayerTreeModel::comparisonReports() const {
    std::vector<const LayerReport*> out;
    for (const QString& name : m_comparedOrder)
        out.push_back(&m_compared.find(name).value());
    return out;
}

double LayerTreeModel::comparedValue(int e, int column) const {
    const Entry& entry = entries()[size_t(e)];
    if (m_compared.isEmpty() || !entry.children.empty())
        return kNaN; // inner rows show the worst layer below, which may differ between runs
    const auto it = m_compared.find(entry.fullName);
    return it == m_compared.end() ? kNaN : metricOf(it.value(), column);
}

void LayerTreeModel::clearLayerReports() {
    m_reports.clear();
    m_reportOrder.clear();
    std::vector<int> leaves;
    for (size_t e = 0; e < m_values.size(); ++e) {
        // The sensitivity columns stay: they come from another run.
        bool kept = false;
        for (size_t m = 0; m < size_t(kMetricCount); ++m)
            if (m < size_t(kAnalysisMetricCount))
                m_values[e][m] = kNaN;
            else
                kept = kept || !std::isnan(m_values[e][m]);
        if (entries()[e].children.empty() && kept)
            leaves.push_back(static_cast<int>(e));
    }
    m_resetting = true; // every row changes: one announcement below instead of one per row
    valuesChanged(leaves);
    m_resetting = false;
    announceColumns(kFirstMetricColumn, kFirstMetricColumn + kMetricCount - 1, {});
    updateStale();
}

void LayerTreeModel::addLayerReports(const std::vector<LayerReport>& layers) {
    std::vector<int> leaves;
    for (const LayerReport& r : layers) {
        const QString name = QString::fromStdString(r.name);
        if (!m_reports.contains(name))
            m_reportOrder.push_back(name);
        m_reports.insert(name, r);
        const int e = entryOf(name);
        if (e < 0)
            continue; // a layer the tree does not show (kept for the detail view)
        for (int m = 0; m < kAnalysisMetricCount; ++m) // all but the sensitivity
            m_values[size_t(e)][size_t(m)] = metricOf(r, kFirstMetricColumn + m);
        leaves.push_back(e);
    }
    valuesChanged(leaves);
    updateStale();
}

void LayerTreeModel::setSensitivity(const SensitivityRow& row) {
    const int e = entryOf(QString::fromStdString(row.layer));
    if (e < 0)
        return;
    m_values[size_t(e)][SensitivityColumn - kFirstMetricColumn] = row.alonePerplexity;
    m_values[size_t(e)][KlAloneColumn - kFirstMetricColumn] = row.aloneKl;
    valuesChanged({e});
}

void LayerTreeModel::valuesChanged(const std::vector<int>& leaves) {
    const std::vector<Entry>& all = entries();
    // Ancestors have smaller entry numbers than their descendants (depth-first order), so
    // visiting the touched entries from the highest number down finishes children first.
    QSet<int> touchedSet;
    for (int e : leaves) {
        for (int a = e; a >= 0; a = all[size_t(a)].parent)
            touchedSet.insert(a);
    }
    std::vector<int> touched(touchedSet.begin(), touchedSet.end());
    std::sort(touched.begin(), touched.end(), std::greater<int>());
    for (int e : touched) {
        const Entry& entry = all[size_t(e)];
        if (entry.children.empty()) {
            bool any = false;
            for (double v : m_values[size_t(e)])
                any = any || !std::isnan(v);
            m_leafCount[size_t(e)] = any ? 1 : 0;
            continue;
        }
        Values worst;
        worst.fill(kNaN);
        int count = 0;
        for (int c : entry.children) {
            count += m_leafCount[size_t(c)];
            for (int m = 0; m < kMetricCount; ++m) {
                const double v = m_values[size_t(c)][size_t(m)];
                double& w = worst[size_t(m)];
                if (std::isnan(v))
                    continue;
                if (std::isnan(w))
                    w = v;
                else
                    w = higherIsBetter(kFirstMetricColumn + m) ? std::min(w, v) : std::max(w, v);
            }
        }
        m_values[size_t(e)] = worst;
        m_leafCount[size_t(e)] = count;
    }

    // Column ranges over the reported layers themselves (finite values only: +inf SQNR is
    // "no error", shown as the best colour without stretching the scale).
    std::array<Range, kMetricCount> ranges{};
    for (size_t e = 0; e < all.size(); ++e) {
        if (!all[e].children.empty())
            continue;
        for (int m = 0; m < kMetricCount; ++m) {
            const double v = m_values[e][size_t(m)];
            if (!std::isfinite(v))
                continue;
            Range& r = ranges[size_t(m)];
            r.lo = r.valid ? std::min(r.lo, v) : v;
            r.hi = r.valid ? std::max(r.hi, v) : v;
            r.valid = true;
        }
    }
    const bool rangesMoved = ranges != m_ranges;
    m_ranges = ranges;
    if (rangesMoved) {
        for (size_t e = 0; e < all.size(); ++e)
            recomputeHeat(static_cast<int>(e));
    } else {
        for (int e : touched)
            recomputeHeat(e);
    }
    if (m_resetting)
        return;
    const int first = kFirstMetricColumn, last = kFirstMetricColumn + kMetricCount - 1;
    for (int e : touched)
        Q_EMIT dataChanged(indexOfEntry(e, first), indexOfEntry(e, last));
    if (rangesMoved)
        announceColumns(first, last, {Qt::BackgroundRole});
}

QColor LayerTreeModel::heatColour(int metric, double value) const {
    const Range& r = m_ranges[size_t(metric)];
    if (std::isnan(value) || !r.valid || r.hi <= r.lo)
        return {};
    double t = std::isinf(value) ? (value > 0 ? 1.0 : 0.0) : (value - r.lo) / (r.hi - r.lo);
    t = std::clamp(t, 0.0, 1.0);
    const double goodness = higherIsBetter(kFirstMetricColumn + metric) ? t : 1.0 - t;
    // Hue 0 (red) to 120 (green), pale enough for black text to stay readable.
    return QColor::fromHsv(static_cast<int>(std::lround(goodness * 120.0)), 110, 255);
}

void LayerTreeModel::recomputeHeat(int e) {
    for (int m = 0; m < kMetricCount; ++m)
        m_heat[size_t(e)][size_t(m)] = heatColour(m, m_values[size_t(e)][size_t(m)]);
}

// dataChanged for the given columns of every row, one signal per parent.
void LayerTreeModel::announceColumns(int first, int last, const QList<int>& roles) {
    const std::vector<Entry>& all = entries();
    auto announce = [&](const std::vector<int>& rows) {
        if (rows.empty())
            return;
        Q_EMIT dataChanged(indexOfEntry(rows.front(), first), indexOfEntry(rows.back(), last),
                           roles);
    };
    announce(topLevelEntries());
    for (const Entry& e : all)
        announce(e.children);
}

const LayerReport* LayerTreeModel::report(const QString& layerName) const {
    const auto it = m_reports.constFind(layerName);
    return it == m_reports.constEnd() ? nullptr : &*it;
}

std::vector<const LayerReport*> LayerTreeModel::reports() const {
    std::vector<const LayerReport*> out;
    out.reserve(m_reportOrder.size());
    for (const QString& name : m_reportOrder)
        out.push_back(&m_reports.find(name).value());
    return out;
}

const std::string* LayerTreeModel::storedScheme(int e) const {
    const auto it = m_stored.layers.find(entries()[size_t(e)].fullName.toStdString());
    return it == m_stored.layers.end() ? nullptr : &it->second;
}

namespace {

QString schemeLabel(const Recipe& recipe, const std::string& layer, const std::string& kind) {
    const auto scheme = recipe.schemeFor(layer, kind);
    if (!scheme)
        return recipe.isExcluded(layer) ? LayerTreeModel::tr("none (excluded)")
                                        : LayerTreeModel::tr("none");
    return QString::fromStdString(scheme->label());
}

} // namespace

QString LayerTreeModel::schemeText(int e) const {
    const Entry& entry = entries()[size_t(e)];
    if (const std::string* stored = storedScheme(e); stored && showsStoredSchemes())
        return tr("%1 (stored)").arg(QString::fromStdString(*stored));
    if (!isQuantizableKind(entry.node->kind) || !m_hasRecipe)
        return kDash;
    const std::string layer = entry.fullName.toStdString();
    const std::string kind = layerKindOf(layer);
    QString current = schemeLabel(m_recipe, layer, kind);
    if (isUnfitSkipped(entry.fullName))
        current = tr("unfit, not %1").arg(current);
    if (m_proposed && m_proposed->schemeFor(layer, kind) != m_recipe.schemeFor(layer, kind))
        return tr("%1 \u2192 %2").arg(current, schemeLabel(*m_proposed, layer, kind));
    return current;
}

bool LayerTreeModel::proposalChanges(int e) const {
    const Entry& entry = entries()[size_t(e)];
    if (!m_proposed || !m_hasRecipe || !isQuantizableKind(entry.node->kind))
        return false;
    const std::string layer = entry.fullName.toStdString();
    const std::string kind = layerKindOf(layer);
    return m_proposed->schemeFor(layer, kind) != m_recipe.schemeFor(layer, kind);
}

void LayerTreeModel::setProposedRecipe(const std::optional<Recipe>& proposed) {
    m_proposed = proposed;
    announceColumns(SchemeColumn, SchemeColumn,
                    {Qt::DisplayRole, Qt::ToolTipRole, SortRole, Qt::BackgroundRole});
}

int LayerTreeModel::proposedChangeCount() const {
    int n = 0;
    for (size_t e = 0; e < entries().size(); ++e)
        n += proposalChanges(int(e)) ? 1 : 0;
    return n;
}

QString LayerTreeModel::schemeToolTip(int e) const {
    const QString name = entries()[size_t(e)].fullName;
    const std::string* stored = storedScheme(e);
    if (isUnfitSkipped(name))
        return tr("%1\nThe last run left this layer unquantized: its shape does not fit the "
                  "scheme (unfit layers: skip). %2")
            .arg(name, m_unfitSkipped.value(name));
    if (!stored)
        return name;
    const QString what = *stored == StoredSchemes::kStoredFloat
                             ? tr("kept in float")
                             : tr("stored as %1").arg(QString::fromStdString(*stored));
    return tr("%1\n%2 in the checkpoint (%3).\n%4")
        .arg(name, what, QString::fromStdString(m_stored.format),
             showsStoredSchemes() ? tr("A run uses the stored weights and scales as they are.")
                                  : tr("The recipe quantizes the dequantized weights again."));
}

QString LayerTreeModel::metricText(int column, double value) const {
    if (std::isnan(value))
        return {};
    if (std::isinf(value))
        return value > 0 ? QStringLiteral("\u221e") : QStringLiteral("-\u221e");
    switch (column) {
    case WeightSqnrColumn:
    case OutputSqnrLocalColumn:
    case AlgorithmGainColumn:
    case OutputSqnrAccumulatedColumn:
    case OutlierScoreColumn:
        return QString::number(value, 'f', 2);
    case SensitivityColumn:
        return QString::number(value, 'f', 3);
    case KlProxyColumn:
    case KlAloneColumn:
        return QString::number(value, 'e', 2);
    default:
        return QString::number(value, 'g', 4);
    }
}

QVariant LayerTreeModel::layerValue(const QString& layerName, int column) const {
    const int e = entryOf(layerName);
    if (e < 0)
        return {};
    if (isMetricColumn(column)) {
        const double v = m_values[size_t(e)][size_t(column - kFirstMetricColumn)];
        return std::isnan(v) ? QVariant() : QVariant(v);
    }
    if (column == SchemeColumn)
        return schemeText(e);
    if (column == ExcludedColumn)
        return m_hasRecipe && m_recipe.isExcluded(layerName.toStdString());
    return data(indexOfEntry(e, column), Qt::DisplayRole);
}

int LayerTreeModel::columnCount(const QModelIndex&) const {
    return LayerColumnCount;
}

QVariant LayerTreeModel::data(const QModelIndex& index, int role) const {
    const int e = entryNumber(index);
    if (e < 0)
        return {};
    const int column = index.column();
    if (column < ModuleTreeModel::ColumnCount)
        return role == ValueRole ? QVariant() : ModuleTreeModel::data(index, role);
    const Entry& entry = entries()[size_t(e)];
    const bool quantizable = isQuantizableKind(entry.node->kind);
    if (column == SchemeColumn || column == ExcludedColumn) {
        const bool excluded =
            quantizable && m_hasRecipe && m_recipe.isExcluded(entry.fullName.toStdString());
        switch (role) {
        case Qt::DisplayRole:
            if (column == SchemeColumn)
                return schemeText(e);
            return excluded ? QStringLiteral("\u2713") : QString();
        case SortRole:
            return column == SchemeColumn ? QVariant(schemeText(e)) : QVariant(excluded ? 1 : 0);
        case Qt::TextAlignmentRole:
            return column == ExcludedColumn ? QVariant::fromValue(Qt::Alignment(Qt::AlignCenter))
                                            : QVariant();
        case Qt::BackgroundRole:
            // A proposed scheme change (the recipe search's frontier point), in the colour of
            // the frontier plot's selected marker.
            return column == SchemeColumn && proposalChanges(e)
                       ? QVariant(QColor(0xff, 0x7f, 0x0e, 90))
                       : QVariant();
        case Qt::ToolTipRole:
            return column == SchemeColumn ? schemeToolTip(e) : entry.fullName;
        case FullNameRole:
        case KindRole:
        case ParametersRole:
        case BlockIndexRole:
            return ModuleTreeModel::data(index, role);
        default:
            return {};
        }
    }
    const int metric = column - kFirstMetricColumn;
    const double value = m_values[size_t(e)][size_t(metric)];
    const double before = comparedValue(e, column);
    const double delta = value - before; // NaN unless both runs report the layer
    switch (role) {
    case Qt::DisplayRole:
        if (!std::isfinite(delta))
            return metricText(column, value);
        return tr("%1 (Δ %2%3)")
            .arg(metricText(column, value), delta > 0 ? QStringLiteral("+") : QString(),
                 metricText(column, delta));
    case DeltaRole:
        return delta;
    case ValueRole:
    case SortRole:
        return value;
    case Qt::BackgroundRole: {
        const QColor& c = m_heat[size_t(e)][size_t(metric)];
        return c.isValid() && !m_stale ? QVariant(QBrush(c)) : QVariant();
    }
    case Qt::ForegroundRole:
        if (m_stale && !std::isnan(value))
            return QBrush(Qt::gray); // computed under an older recipe
        // Heat colours are light: keep the text dark on them whatever the palette.
        return m_heat[size_t(e)][size_t(metric)].isValid() ? QVariant(QBrush(Qt::black))
                                                           : QVariant();
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    case Qt::ToolTipRole: {
        QString tip =
            !entry.children.empty() && m_leafCount[size_t(e)] > 0
                ? tr("Worst of %n reported layer(s) below", nullptr, m_leafCount[size_t(e)])
                : entry.fullName;
        if (m_stale && !std::isnan(value))
            tip += QStringLiteral("\n") +
                   tr("Stale: computed under an older recipe; run Analyze again");
        if (!std::isnan(before))
            tip += QStringLiteral("\n") +
                   tr("This run: %1; %2: %3")
                       .arg(metricText(column, value), m_comparedLabel, metricText(column, before));
        return tip;
    }
    case FullNameRole:
    case KindRole:
    case ParametersRole:
    case BlockIndexRole:
        return ModuleTreeModel::data(index, role);
    default:
        return {};
    }
}

QVariant LayerTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < ModuleTreeModel::ColumnCount ||
        section >= LayerColumnCount)
        return ModuleTreeModel::headerData(section, orientation, role);
    static const char* const titles[] = {QT_TR_NOOP("Scheme"),
                                         QT_TR_NOOP("Excluded"),
                                         QT_TR_NOOP("Weight SQNR (dB)"),
                                         QT_TR_NOOP("Output SQNR local (dB)"),
                                         QT_TR_NOOP("Output SQNR accum. (dB)"),
                                         QT_TR_NOOP("Input absmax"),
                                         QT_TR_NOOP("Outlier score"),
                                         QT_TR_NOOP("Mean rel. error"),
                                         QT_TR_NOOP("Gain vs RTN (dB)"),
                                         QT_TR_NOOP("KL proxy"),
                                         QT_TR_NOOP("Sensitivity (alone ppl)"),
                                         QT_TR_NOOP("KL alone")};
    static const char* const tips[] = {
        QT_TR_NOOP("The scheme the recipe gives this layer (Recipe::schemeFor)"),
        QT_TR_NOOP("Whether an exclude pattern of the recipe matches this layer"),
        QT_TR_NOOP("SQNR of the quantized weight against the original"),
        QT_TR_NOOP("SQNR of the quantized layer's output on full-precision inputs"),
        QT_TR_NOOP("SQNR of the quantized model's output here against the fp model's"),
        QT_TR_NOOP("Largest |x| of the layer's input on the calibration data"),
        QT_TR_NOOP("Max channel absmax / median channel absmax of the input"),
        QT_TR_NOOP("mean(|a - r| / (|r| + eps)) of the local output"),
        QT_TR_NOOP("Layers an algorithm chose the rounding of (GPTQ's codes, AWQ's scales "
                   "and clips): local output SQNR minus what rounding the layer as it was "
                   "before the algorithm to nearest gives on the same inputs; negative: the "
                   "algorithm made this layer worse"),
        QT_TR_NOOP("Estimate of the layer's share of the model's KL divergence, known after "
                   "Analyze: its local output error energy per token over the energy per token "
                   "of its block's full-precision input (docs/fidelity.md gives its measured "
                   "rank correlation with KL alone)"),
        QT_TR_NOOP("Perplexity with only this layer quantized"),
        QT_TR_NOOP("Mean KL(fp32 ‖ only this layer quantized) on the evaluation windows "
                   "(Sensitivity)")};
    const int i = section - ModuleTreeModel::ColumnCount;
    const bool staleColumn = m_stale && isMetricColumn(section);
    if (role == Qt::DisplayRole)
        return staleColumn ? tr("%1 (stale)").arg(tr(titles[i])) : tr(titles[i]);
    if (role == Qt::ToolTipRole)
        return tr(tips[i]) +
               (isMetricColumn(section) ? tr("; blocks show the worst value of their layers")
                                        : QString()) +
               (isMetricColumn(section) && isComparing()
                    ? tr("; Δ: this run minus %1").arg(m_comparedLabel)
                    : QString());
    if (role == Qt::TextAlignmentRole && isMetricColumn(section))
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    return {};
}

} // namespace qs

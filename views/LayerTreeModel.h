#pragma once

#include "ModuleTreeModel.h"

#include "analysis/LayerReport.h"
#include "analysis/Sensitivity.h"
#include "model/ModelInfo.h"
#include "recipe/Recipe.h"

#include <QColor>
#include <QHash>

#include <array>
#include <optional>
#include <vector>

namespace qs {

// The module tree with the recipe and the analysis laid over it: the scheme each linear gets,
// whether it is excluded, and the per-layer metrics of LayerReport, streamed in block by block.
// Inner nodes (blocks, attention, MLP) show the worst value of the layers below them, so a
// collapsed tree still points at the bad block. Cells of metric columns carry a heat colour
// scaled over all reported layers (red = worst, green = best), computed once per update.
class LayerTreeModel : public ModuleTreeModel {
    Q_OBJECT
public:
    enum LayerColumn {
        SchemeColumn = ModuleTreeModel::ColumnCount,
        ExcludedColumn,
        WeightSqnrColumn, // first metric column
        OutputSqnrLocalColumn,
        OutputSqnrAccumulatedColumn,
        InputAbsmaxColumn,
        OutlierScoreColumn,
        MeanRelativeErrorColumn,
        AlgorithmGainColumn, // local output SQNR minus rounding to nearest's (GPTQ's, AWQ's layers)
        KlProxyColumn,       // the analysis' estimate of the layer's share of the KL (klProxy)
        SensitivityColumn,   // first sensitivity column: perplexity, this layer alone quantized
        KlAloneColumn,       // last metric column: mean KL, this layer alone quantized
        LayerColumnCount
    };
    static constexpr int kFirstMetricColumn = WeightSqnrColumn;
    static constexpr int kMetricCount = KlAloneColumn - WeightSqnrColumn + 1;
    // Metric columns before SensitivityColumn come from the analysis, the rest from a
    // sensitivity study (which an analysis leaves in place).
    static constexpr int kAnalysisMetricCount = SensitivityColumn - WeightSqnrColumn;
    enum LayerRole {
        // double: the metric as reported, NaN when absent (also the SortRole of metric columns).
        ValueRole = ModuleTreeModel::SortRole + 1,
        // double: metric columns of a reported layer while comparing, this run's value minus the
        // compared run's; NaN where either has none.
        DeltaRole,
    };

    explicit LayerTreeModel(QObject* parent = nullptr);

    void setRecipe(const Recipe& recipe);
    const Recipe& recipe() const { return m_recipe; }
    // A recipe proposed but not applied (a point of the recipe search's frontier): the scheme
    // column shows "current → proposed" on the layers whose scheme it changes, highlighted.
    // nullopt: none.
    void setProposedRecipe(const std::optional<Recipe>& proposed);
    bool hasProposedRecipe() const { return m_proposed.has_value(); }
    // Quantizable layers whose scheme the proposed recipe changes.
    int proposedChangeCount() const;
    // The quantization the opened checkpoint stores (ModelInfo::stored). While the recipe
    // quantizes nothing, the scheme column shows it, marked "(stored)": a run then uses the
    // stored weights and scales as they are. A recipe that quantizes takes the column back (it
    // quantizes the dequantized weights again); the tooltip keeps naming what is stored.
    void setStoredSchemes(const StoredSchemes& stored);
    const StoredSchemes& storedSchemes() const { return m_stored; }
    bool showsStoredSchemes() const {
        return !m_stored.empty() && !(m_hasRecipe && m_recipe.quantizesAnything());
    }
    // The recipe as the layers' figures depend on it: its recipeHash (recipe/Provenance.h)
    // without the evaluation spec, which Evaluate and Sensitivity read and no layer's figures or
    // scheme depend on (entering the evaluation text after Analyze leaves its results current).
    static std::string layerRecipeHash(const Recipe& recipe);
    // The recipe the shown reports were computed under (layerRecipeHash). While reports are
    // shown and setRecipe gives another recipe, the results are stale: metric cells are greyed
    // without heat, their tooltips and the headers say so, resultsStaleChanged fires.
    void setReportsRecipeHash(const std::string& hash);
    const std::string& reportsRecipeHash() const { return m_reportsRecipeHash; }
    bool resultsStale() const { return m_stale; }
    // The layers a run under the recipe `underRecipe` (layerRecipeHash) left unquantized because
    // their shape does not fit their scheme (unfit_policy "skip"), as RunOutcome::skipped gives
    // them ("layer: reason"). While the recipe is that one, the scheme column says so after the
    // scheme, which the layer did not get, and its tooltip gives the reason. An empty list clears.
    void setUnfitSkipped(const std::vector<std::string>& layers, const std::string& underRecipe);
    bool isUnfitSkipped(const QString& layer) const;
    bool hasRecipe() const { return m_hasRecipe; }

    void clearLayerReports();
    // Updates only the rows of these layers and their ancestors (plus the heat colours of every
    // row when a column's range moved).
    void addLayerReports(const std::vector<LayerReport>& layers);
    void setSensitivity(const SensitivityRow& row);

    // Another run's reports to compare with ("Run 1: Analyze int8"): metric cells of a layer
    // both runs report show the difference (this run minus that one) after the value, their
    // tooltips both values, DeltaRole the number. An empty `reports` ends the comparison.
    void setComparison(const std::vector<LayerReport>& reports, const QString& label);
    bool isComparing() const { return !m_compared.isEmpty(); }
    const QString& comparisonLabel() const { return m_comparedLabel; }
    // The compared run's reports, in its order.
    std::vector<const LayerReport*> comparisonReports() const;

    // The report of a layer, nullptr before its block arrived.
    const LayerReport* report(const QString& layerName) const;
    // Reports in model order (the order they arrived).
    std::vector<const LayerReport*> reports() const;
    int reportCount() const { return static_cast<int>(m_reportOrder.size()); }

    // Metric columns: the raw double, invalid QVariant when absent. Scheme: the name shown;
    // Excluded: bool; other columns: the displayed text. Invalid for an unknown layer.
    QVariant layerValue(const QString& layerName, int column) const;
    // The number behind a metric column of a report (NaN where the report has none). Sensitivity
    // is not part of the report and gives NaN.
    static double metricOf(const LayerReport& report, int column);
    static bool isMetricColumn(int column) {
        return column >= kFirstMetricColumn && column < kFirstMetricColumn + kMetricCount;
    }
    // SQNR columns: higher is better; absmax, outlier score, error and perplexity: lower is.
    static bool higherIsBetter(int column);
    // Whether a node is a layer the engine quantizes by the recipe (kind "linear").
    static bool isQuantizableKind(const std::string& nodeKind);

    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

Q_SIGNALS:
    void resultsStaleChanged(bool stale);

protected:
    void treeReset() override;

private:
    using Values = std::array<double, kMetricCount>;
    using Heat = std::array<QColor, kMetricCount>;
    struct Range {
        double lo = 0.0, hi = 0.0;
        bool valid = false;
        bool operator==(const Range& o) const {
            return valid == o.valid && (!valid || (lo == o.lo && hi == o.hi));
        }
    };

    // Recomputes the worst-of-children values of the ancestors of `leaves`, the ranges and the
    // heat colours, then announces the changed rows.
    void valuesChanged(const std::vector<int>& leaves);
    QColor heatColour(int metric, double value) const;
    void recomputeHeat(int entryNumber);
    void announceColumns(int first, int last, const QList<int>& roles);
    QString schemeText(int entryNumber) const;
    bool proposalChanges(int entryNumber) const; // the proposed recipe changes its scheme
    QString schemeToolTip(int entryNumber) const;
    // The stored scheme of a layer, nullptr when the checkpoint stores none for it.
    const std::string* storedScheme(int entryNumber) const;
    QString metricText(int column, double value) const;

    void updateStale();

    Recipe m_recipe;
    bool m_hasRecipe = false;
    std::optional<Recipe> m_proposed;
    QHash<QString, QString> m_unfitSkipped; // setUnfitSkipped: layer -> reason
    std::string m_recipeHash;               // layerRecipeHash(m_recipe), kept with it
    std::string m_unfitRecipeHash;          // the recipe they were skipped under
    bool m_showsUnfitSkipped = false;       // that recipe is the current one
    StoredSchemes m_stored;
    std::string m_reportsRecipeHash;
    bool m_stale = false;
    bool m_resetting = false; // computing inside a reset or a bulk change: no per-row signals
    // The compared run's value of a metric column for a leaf entry, NaN when none.
    double comparedValue(int entryNumber, int column) const;

    QHash<QString, LayerReport> m_compared; // the run compared with, by layer name
    std::vector<QString> m_comparedOrder;
    QString m_comparedLabel;
    QHash<QString, LayerReport> m_reports;
    std::vector<QString> m_reportOrder;
    std::vector<Values> m_values; // per entry; NaN = absent
    std::vector<Heat> m_heat;     // per entry; invalid colour = none
    std::vector<int> m_leafCount; // per entry: reported layers at or below it
    std::array<Range, kMetricCount> m_ranges;
};

} // namespace qs

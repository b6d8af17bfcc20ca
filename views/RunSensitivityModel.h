#pragma once

#include "analysis/Sensitivity.h"

#include <QAbstractTableModel>

namespace qs {

// Sensitivity rows as they stream in: layer, perplexity with only this layer quantized and with
// everything but this layer quantized, and the same rows' fidelity to the full-precision model
// (mean KL divergence, top-1 agreement), and what quantizing the layer alone costs over the
// unquantized perplexity (Δ). Sortable through a proxy (EditRole is the number).
class RunSensitivityModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        LayerColumn,
        DeltaAloneColumn, // PPL alone minus the unquantized perplexity, once the totals are in
        AloneColumn,
        AllButColumn,
        KlAloneColumn,
        SameTopAloneColumn,
        KlAllButColumn,
        ColumnCount
    };

    explicit RunSensitivityModel(QObject* parent = nullptr);

    void clear();
    void addRow(const SensitivityRow& row);
    // The unquantized perplexity of the same windows (SensitivityResult::fpPerplexity, known
    // when the run ends): the Δ column shows each layer's cost against it. clear() forgets it.
    void setFullPrecisionPerplexity(double perplexity);
    const std::vector<SensitivityRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    std::vector<SensitivityRow> m_rows;
    double m_fpPerplexity;
};

} // namespace qs

#pragma once

#include "analysis/Sensitivity.h"

#include <QAbstractTableModel>

namespace qs {

// Sensitivity rows as they stream in: layer, perplexity with only this layer quantized and with
// everything but this layer quantized, and the same rows' fidelity to the full-precision model
// (mean KL divergence, top-1 agreement). Sortable through a proxy (EditRole is the number).
class RunSensitivityModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        LayerColumn,
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
    const std::vector<SensitivityRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    std::vector<SensitivityRow> m_rows;
};

} // namespace qs

#include "RunSensitivityModel.h"

namespace qs {

RunSensitivityModel::RunSensitivityModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunSensitivityModel::clear() {
    if (m_rows.empty())
        return;
    beginResetModel();
    m_rows.clear();
    endResetModel();
}

void RunSensitivityModel::addRow(const SensitivityRow& row) {
    const int at = rowCount();
    beginInsertRows({}, at, at);
    m_rows.push_back(row);
    endInsertRows();
}

int RunSensitivityModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int RunSensitivityModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunSensitivityModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const SensitivityRow& row = m_rows[static_cast<size_t>(index.row())];
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case LayerColumn:
            return QString::fromStdString(row.layer);
        case AloneColumn:
            return QString::number(row.alonePerplexity, 'f', 4);
        case AllButColumn:
            return QString::number(row.allButPerplexity, 'f', 4);
        default:
            return {};
        }
    }
    if (role == Qt::EditRole) {
        switch (index.column()) {
        case LayerColumn:
            return QString::fromStdString(row.layer);
        case AloneColumn:
            return row.alonePerplexity;
        case AllButColumn:
            return row.allButPerplexity;
        default:
            return {};
        }
    }
    if (role == Qt::TextAlignmentRole && index.column() != LayerColumn)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RunSensitivityModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case AloneColumn:
            return tr("Perplexity with only this layer quantized");
        case AllButColumn:
            return tr("Perplexity with the whole recipe except this layer");
        default:
            return {};
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case LayerColumn:
        return tr("Layer");
    case AloneColumn:
        return tr("PPL alone");
    case AllButColumn:
        return tr("PPL all but");
    default:
        return {};
    }
}

} // namespace qs

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

namespace {

// One entry per number column (Column order from AloneColumn on): header, tooltip, value and
// decimals shown; the one table data() and headerData() read.
struct NumberColumn {
    const char* header;
    const char* toolTip;
    double (*value)(const SensitivityRow&);
    int decimals;
    double displayScale;
};

const NumberColumn kNumberColumns[] = {
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "PPL alone"),
     QT_TRANSLATE_NOOP("RunSensitivityModel", "Perplexity with only this layer quantized"),
     [](const SensitivityRow& r) { return r.alonePerplexity; }, 4, 1.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "PPL all but"),
     QT_TRANSLATE_NOOP("RunSensitivityModel", "Perplexity with the whole recipe except this layer"),
     [](const SensitivityRow& r) { return r.allButPerplexity; }, 4, 1.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "KL alone"),
     QT_TRANSLATE_NOOP("RunSensitivityModel",
                       "Mean KL(fp32 ‖ only this layer quantized) over the scored tokens"),
     [](const SensitivityRow& r) { return r.aloneKl; }, 6, 1.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "Top-1 alone %"),
     QT_TRANSLATE_NOOP("RunSensitivityModel",
                       "Share of scored tokens whose most likely next token is unchanged with "
                       "only this layer quantized"),
     [](const SensitivityRow& r) { return r.aloneSameTop; }, 2, 100.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "KL all but"),
     QT_TRANSLATE_NOOP("RunSensitivityModel", "Mean KL(fp32 ‖ the whole recipe except this layer)"),
     [](const SensitivityRow& r) { return r.allButKl; }, 6, 1.0},
};
static_assert(sizeof(kNumberColumns) / sizeof(kNumberColumns[0]) ==
                  RunSensitivityModel::ColumnCount - RunSensitivityModel::AloneColumn,
              "one table entry per number column");

const NumberColumn* numberColumn(int column) {
    if (column < RunSensitivityModel::AloneColumn || column >= RunSensitivityModel::ColumnCount)
        return nullptr;
    return &kNumberColumns[column - RunSensitivityModel::AloneColumn];
}

} // namespace

QVariant RunSensitivityModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const SensitivityRow& row = m_rows[static_cast<size_t>(index.row())];
    const NumberColumn* c = numberColumn(index.column());
    if (role == Qt::DisplayRole || role == Qt::EditRole) {
        if (!c)
            return QString::fromStdString(row.layer);
        if (role == Qt::EditRole)
            return c->value(row);
        return QString::number(c->displayScale * c->value(row), 'f', c->decimals);
    }
    if (role == Qt::TextAlignmentRole && c)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RunSensitivityModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    const NumberColumn* c = numberColumn(section);
    if (role == Qt::ToolTipRole)
        return c ? tr(c->toolTip) : QVariant();
    if (role != Qt::DisplayRole)
        return {};
    return c ? tr(c->header) : tr("Layer");
}

} // namespace qs

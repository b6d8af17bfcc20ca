#include "RunSensitivityModel.h"

#include <cmath>
#include <limits>

namespace qs {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
} // namespace

RunSensitivityModel::RunSensitivityModel(QObject* parent)
    : QAbstractTableModel(parent), m_fpPerplexity(kNaN) {}

void RunSensitivityModel::clear() {
    m_fpPerplexity = kNaN;
    if (m_rows.empty())
        return;
    beginResetModel();
    m_rows.clear();
    endResetModel();
}

void RunSensitivityModel::setFullPrecisionPerplexity(double perplexity) {
    m_fpPerplexity = perplexity;
    if (!m_rows.empty())
        Q_EMIT dataChanged(index(0, DeltaAloneColumn), index(rowCount() - 1, DeltaAloneColumn));
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

// One entry per number column (Column order from DeltaAloneColumn on): header, tooltip, value and
// decimals shown; the one table data() and headerData() read.
struct NumberColumn {
    const char* header;
    const char* toolTip;
    double (*value)(const SensitivityRow&, double fpPerplexity);
    int decimals;
    double displayScale;
};

const NumberColumn kNumberColumns[] = {
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "ΔPPL alone"),
     QT_TRANSLATE_NOOP("RunSensitivityModel",
                       "Perplexity with only this layer quantized minus the unquantized "
                       "model's (known when the run ends): what this layer costs"),
     [](const SensitivityRow& r, double fp) { return r.alonePerplexity - fp; }, 4, 1.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "PPL alone"),
     QT_TRANSLATE_NOOP("RunSensitivityModel", "Perplexity with only this layer quantized"),
     [](const SensitivityRow& r, double) { return r.alonePerplexity; }, 4, 1.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "PPL all but"),
     QT_TRANSLATE_NOOP("RunSensitivityModel", "Perplexity with the whole recipe except this layer"),
     [](const SensitivityRow& r, double) { return r.allButPerplexity; }, 4, 1.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "KL alone"),
     QT_TRANSLATE_NOOP("RunSensitivityModel",
                       "Mean KL(fp32 ‖ only this layer quantized) over the scored tokens"),
     [](const SensitivityRow& r, double) { return r.aloneKl; }, 6, 1.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "Top-1 alone %"),
     QT_TRANSLATE_NOOP("RunSensitivityModel",
                       "Share of scored tokens whose most likely next token is unchanged with "
                       "only this layer quantized"),
     [](const SensitivityRow& r, double) { return r.aloneSameTop; }, 2, 100.0},
    {QT_TRANSLATE_NOOP("RunSensitivityModel", "KL all but"),
     QT_TRANSLATE_NOOP("RunSensitivityModel", "Mean KL(fp32 ‖ the whole recipe except this layer)"),
     [](const SensitivityRow& r, double) { return r.allButKl; }, 6, 1.0},
};
static_assert(sizeof(kNumberColumns) / sizeof(kNumberColumns[0]) ==
                  RunSensitivityModel::ColumnCount - RunSensitivityModel::DeltaAloneColumn,
              "one table entry per number column");

const NumberColumn* numberColumn(int column) {
    if (column < RunSensitivityModel::DeltaAloneColumn ||
        column >= RunSensitivityModel::ColumnCount)
        return nullptr;
    return &kNumberColumns[column - RunSensitivityModel::DeltaAloneColumn];
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
        const double v = c->value(row, m_fpPerplexity);
        if (role == Qt::EditRole)
            return v;
        if (std::isnan(v))
            return QStringLiteral("–");
        return QString::number(c->displayScale * v, 'f', c->decimals);
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

#include "ModuleTreeModel.h"

#include "DisplayFormat.h"

#include <utility>

namespace qs {

namespace {

QString relativeName(const QString& fullName, const QString& parentName) {
    if (!parentName.isEmpty() && fullName.size() > parentName.size() + 1 &&
        fullName.startsWith(parentName) && fullName.at(parentName.size()) == QLatin1Char('.'))
        return fullName.mid(parentName.size() + 1);
    return fullName;
}

} // namespace

ModuleTreeModel::ModuleTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void ModuleTreeModel::setTree(ModuleNode root) {
    beginResetModel();
    m_root = std::move(root);
    m_entries.clear();
    m_topLevel.clear();
    m_byName.clear();
    addChildren(m_root, -1, m_topLevel);
    treeReset();
    endResetModel();
}

void ModuleTreeModel::clear() {
    setTree(ModuleNode{});
}

void ModuleTreeModel::addChildren(const ModuleNode& node, int parentEntry,
                                  std::vector<int>& childEntries) {
    const QString parentName = QString::fromStdString(node.name);
    int row = 0;
    for (const ModuleNode& child : node.children) {
        const int self = static_cast<int>(m_entries.size());
        Entry e;
        e.node = &child;
        e.parent = parentEntry;
        e.row = row++;
        e.fullName = QString::fromStdString(child.name);
        e.shortName = relativeName(e.fullName, parentName);
        m_byName.insert(e.fullName, self);
        m_entries.push_back(std::move(e));
        childEntries.push_back(self);
        // m_entries may reallocate while the children are added: collect them into a local list.
        std::vector<int> grandChildren;
        addChildren(child, self, grandChildren);
        m_entries[static_cast<size_t>(self)].children = std::move(grandChildren);
    }
}

const ModuleTreeModel::Entry* ModuleTreeModel::entry(const QModelIndex& index) const {
    if (!index.isValid() || index.model() != this)
        return nullptr;
    const quintptr id = index.internalId();
    return id < m_entries.size() ? &m_entries[id] : nullptr;
}

const ModuleNode* ModuleTreeModel::node(const QModelIndex& index) const {
    const Entry* e = entry(index);
    return e ? e->node : nullptr;
}

QModelIndex ModuleTreeModel::indexOf(const QString& fullName) const {
    const auto it = m_byName.constFind(fullName);
    if (it == m_byName.constEnd())
        return {};
    return createIndex(m_entries[static_cast<size_t>(*it)].row, 0, static_cast<quintptr>(*it));
}

QModelIndex ModuleTreeModel::indexOfEntry(int entryNumber, int column) const {
    if (entryNumber < 0 || static_cast<size_t>(entryNumber) >= m_entries.size())
        return {};
    return createIndex(m_entries[static_cast<size_t>(entryNumber)].row, column,
                       static_cast<quintptr>(entryNumber));
}

QModelIndex ModuleTreeModel::index(int row, int column, const QModelIndex& parent) const {
    if (!hasIndex(row, column, parent))
        return {};
    const std::vector<int>* children = &m_topLevel;
    if (parent.isValid()) {
        const Entry* p = entry(parent);
        if (!p)
            return {};
        children = &p->children;
    }
    return createIndex(row, column, static_cast<quintptr>((*children)[static_cast<size_t>(row)]));
}

QModelIndex ModuleTreeModel::parent(const QModelIndex& child) const {
    const Entry* e = entry(child);
    if (!e || e->parent < 0)
        return {};
    const Entry& p = m_entries[static_cast<size_t>(e->parent)];
    return createIndex(p.row, 0, static_cast<quintptr>(e->parent));
}

int ModuleTreeModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid())
        return static_cast<int>(m_topLevel.size());
    if (parent.column() != 0)
        return 0;
    const Entry* p = entry(parent);
    return p ? static_cast<int>(p->children.size()) : 0;
}

int ModuleTreeModel::columnCount(const QModelIndex&) const {
    return ColumnCount;
}

bool ModuleTreeModel::collapsedByDefault(const QString& kind) {
    return kind == QLatin1String("experts");
}

namespace {

// "4 × 12,288": the experts' count and each one's parameters (shown in the shape column of the
// collapsed experts row); just the count when the experts differ in size.
QString expertsSummary(const ModuleNode& n) {
    const auto experts = static_cast<int64_t>(n.children.size());
    bool uniform = experts > 0;
    for (const ModuleNode& c : n.children)
        uniform = uniform && c.parameters == n.children.front().parameters;
    if (!uniform)
        return ModuleTreeModel::tr("%n expert(s)", nullptr, static_cast<int>(experts));
    return QStringLiteral("%1 \u00d7 %2")
        .arg(experts)
        .arg(display::count(n.children.front().parameters));
}

} // namespace

QVariant ModuleTreeModel::data(const QModelIndex& index, int role) const {
    const Entry* e = entry(index);
    if (!e)
        return {};
    const ModuleNode& n = *e->node;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case NameColumn:
            return e->shortName;
        case KindColumn:
            return QString::fromStdString(n.kind);
        case ShapeColumn:
            if (n.kind == "experts")
                return expertsSummary(n);
            return display::shape(n.shape);
        case DTypeColumn:
            return QString::fromStdString(n.dtype);
        case ParametersColumn:
            return display::count(n.parameters);
        }
        return {};
    case Qt::ToolTipRole:
        if (n.kind == "experts" && !n.children.empty())
            return tr("%1\n%2 experts; parameters per expert: %3")
                .arg(e->fullName)
                .arg(n.children.size())
                .arg(display::count(n.children.front().parameters));
        return e->fullName;
    case Qt::TextAlignmentRole:
        if (index.column() == ParametersColumn)
            return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
        return {};
    case FullNameRole:
        return e->fullName;
    case KindRole:
        return QString::fromStdString(n.kind);
    case ParametersRole:
        return static_cast<qlonglong>(n.parameters);
    case BlockIndexRole:
        return n.blockIndex;
    case SortRole:
        switch (index.column()) {
        case NameColumn:
            return static_cast<qlonglong>(index.internalId()); // tree order: layers.2 < layers.10
        case ParametersColumn:
            return static_cast<qlonglong>(n.parameters);
        case ShapeColumn: {
            qlonglong elements = n.shape.empty() ? 0 : 1;
            for (int64_t d : n.shape)
                elements *= d;
            return elements;
        }
        default:
            return data(index, Qt::DisplayRole);
        }
    default:
        return {};
    }
}

QVariant ModuleTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    if (role == Qt::DisplayRole) {
        static const char* const titles[ColumnCount] = {QT_TR_NOOP("Name"), QT_TR_NOOP("Kind"),
                                                        QT_TR_NOOP("Shape"), QT_TR_NOOP("DType"),
                                                        QT_TR_NOOP("Parameters")};
        return tr(titles[section]);
    }
    if (role == Qt::TextAlignmentRole && section == ParametersColumn)
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    return {};
}

} // namespace qs

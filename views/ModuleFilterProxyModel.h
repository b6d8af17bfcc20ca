#pragma once

#include <QSortFilterProxyModel>
#include <QString>

namespace qs {

// Filters a ModuleTreeModel by a wildcard pattern on the full module name ("*q_proj",
// "layers.1?.mlp*"), case-insensitively and unanchored (a plain word matches anywhere). Ancestors
// of a match stay visible so the tree keeps its shape, and a matching module keeps its subtree.
// Sorts by the source's SortRole; doubles compare numerically and NaN (no value yet) sorts last
// in either direction, so unreported layers never hide the worst ones.
class ModuleFilterProxyModel : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit ModuleFilterProxyModel(QObject* parent = nullptr);

    // Empty or blank shows everything. Returns false (and shows nothing) for a pattern that is
    // not a valid wildcard, such as an unclosed "[".
    bool setNamePattern(const QString& pattern);
    QString namePattern() const { return m_pattern; }
    bool isPatternValid() const { return m_patternValid; }

protected:
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    QString m_pattern;
    bool m_patternValid = true;
};

} // namespace qs

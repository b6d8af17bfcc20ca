#pragma once

#include <QStringList>

namespace qs {

// The recently opened model folders, newest first, persisted in QSettings: normalised absolute
// paths, no duplicates, at most `capacity` entries (a longer saved list is cut on read).
class RecentModelList {
public:
    explicit RecentModelList(int capacity) : m_capacity(capacity) {}

    QStringList entries() const;
    // Moves (or adds) `directory` to the front; returns the new list.
    QStringList add(const QString& directory);
    // Replaces the list (an empty one clears it); returns what was stored.
    QStringList set(const QStringList& directories);

    static QString normalized(const QString& directory);

private:
    int m_capacity;
};

} // namespace qs

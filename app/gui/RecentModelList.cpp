#include "RecentModelList.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace qs {

namespace {
const char* const RecentModelsKey = "recentModels";
}

QString RecentModelList::normalized(const QString& directory) {
    return QDir::cleanPath(QFileInfo(directory).absoluteFilePath());
}

QStringList RecentModelList::entries() const {
    return QSettings().value(QLatin1String(RecentModelsKey)).toStringList().mid(0, m_capacity);
}

QStringList RecentModelList::add(const QString& directory) {
    QStringList recent = entries();
    const QString path = normalized(directory);
    recent.removeAll(path);
    recent.prepend(path);
    return set(recent);
}

QStringList RecentModelList::set(const QStringList& directories) {
    const QStringList recent = directories.mid(0, m_capacity);
    QSettings().setValue(QLatin1String(RecentModelsKey), recent);
    return recent;
}

} // namespace qs

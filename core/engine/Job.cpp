#include "engine/Job.h"

namespace qs {

Job::Job(int id, const QString& title, QObject* parent)
    : QObject(parent), m_id(id), m_title(title) {
    setObjectName(QStringLiteral("job%1").arg(id));
}

} // namespace qs

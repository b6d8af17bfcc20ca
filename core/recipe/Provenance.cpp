#include "recipe/Provenance.h"

#include "io/JsonFields.h"

#include <QByteArray>
#include <QCryptographicHash>
#include <QDateTime>

#ifndef QS_VERSION
#error "QS_VERSION must be defined by core's CMake"
#endif

namespace qs {

std::string modelConfigHash(const std::string& configJsonText, const std::string& source) {
    const std::string canonical = parseJsonText(configJsonText, source).dump();
    const QByteArray digest = QCryptographicHash::hash(
        QByteArray(canonical.data(), qsizetype(canonical.size())), QCryptographicHash::Sha256);
    return digest.toHex().toStdString();
}

std::string toolVersion() {
    return QS_VERSION;
}

Provenance makeProvenance(const std::string& configJsonText, const std::string& modelPath) {
    Provenance p;
    p.modelConfigHash = modelConfigHash(configJsonText, modelPath + "/config.json");
    p.toolVersion = toolVersion();
    p.createdAt = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    p.modelPath = modelPath;
    return p;
}

} // namespace qs

#include "recipe/Provenance.h"

#include "io/JsonFields.h"
#include "util/Error.h"

#include <QByteArray>
#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>

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

std::string modelHeadersHash(const std::string& modelDir) {
    QCryptographicHash hash(QCryptographicHash::Sha256);
    const QDir dir(QString::fromStdString(modelDir));
    const std::string configPath = dir.filePath(QStringLiteral("config.json")).toStdString();
    hash.addData(QByteArray::fromStdString(modelConfigHash(readTextFile(configPath), configPath)));
    for (const QString& name :
         dir.entryList({QStringLiteral("*.safetensors")}, QDir::Files, QDir::Name)) {
        QFile f(dir.filePath(name));
        if (!f.open(QIODevice::ReadOnly))
            throw Error(f.fileName().toStdString(), "", f.errorString().toStdString());
        // The 8-byte little-endian header length, then the JSON header (names, dtypes, shapes,
        // offsets); its size is bounded so a hostile length cannot make us read the weights.
        const QByteArray length = f.read(8);
        if (length.size() != 8)
            throw Error(f.fileName().toStdString(), "header", "file shorter than 8 bytes");
        quint64 n = 0;
        for (int i = 7; i >= 0; --i)
            n = (n << 8) | quint8(length[i]);
        if (n > quint64(100) << 20 || qint64(n) > f.size() - 8)
            throw Error(f.fileName().toStdString(), "header", "header length out of range");
        hash.addData(name.toUtf8());
        hash.addData(f.read(qint64(n)));
    }
    return hash.result().toHex().toStdString();
}

std::string recipeHash(const Recipe& recipe) {
    Recipe r = recipe;
    r.provenance = Provenance{};
    const std::string canonical = r.toJson().dump();
    return QCryptographicHash::hash(QByteArray::fromStdString(canonical),
                                    QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

nlohmann::json ResultProvenance::toJson() const {
    nlohmann::json j;
    j["model"] = {{"path", modelPath}, {"headers_sha256", modelHash}};
    j["recipe_sha256"] = recipeHash;
    j["calibration"] = {
        {"data", calibrationData}, {"windows", calibrationWindows}, {"seq_len", calibrationSeqLen}};
    j["evaluation"] = {
        {"data", evaluationData}, {"windows", evaluationWindows}, {"seq_len", evaluationSeqLen}};
    j["engine_version"] = engineVersion;
    j["device"] = device;
    j["dtype"] = dtype;
    return j;
}

} // namespace qs

#include "run/ResumeKey.h"

#include "util/HostTensor.h"

#include <ATen/Parallel.h>

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>

namespace qs {

namespace {

nlohmann::ordered_json idsDigest(const at::Tensor& ids) {
    if (!ids.defined())
        return nullptr;
    const at::Tensor host = toHost(ids.to(at::kLong));
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(QByteArrayView(static_cast<const char*>(host.data_ptr()),
                             qsizetype(host.numel() * host.element_size())));
    return {{"shape", host.sizes().vec()}, {"sha256", h.result().toHex().toStdString()}};
}

nlohmann::ordered_json fileIdentity(const QFileInfo& f) {
    return {{"size", f.size()},
            {"modified", f.lastModified().toUTC().toString(Qt::ISODateWithMs).toStdString()}};
}

// A model is a folder of files (config, weights, tokenizer) or one file (GGUF).
nlohmann::ordered_json modelFiles(const std::string& modelDir) {
    const QFileInfo root(QString::fromStdString(modelDir));
    nlohmann::ordered_json files = nlohmann::ordered_json::object();
    if (root.isFile()) {
        files[root.fileName().toStdString()] = fileIdentity(root);
        return files;
    }
    for (const QFileInfo& f : QDir(root.absoluteFilePath()).entryInfoList(QDir::Files, QDir::Name))
        files[f.fileName().toStdString()] = fileIdentity(f);
    return files;
}

} // namespace

std::string resumeDir(const std::string& outDir) {
    QString out = QDir::cleanPath(QString::fromStdString(outDir));
    return (out + ".resume").toStdString();
}

std::string resumeRankDir(const std::string& outDir, int rank) {
    return resumeDir(outDir) + "/rank-" + std::to_string(rank);
}

nlohmann::ordered_json resumeKey(const RunRequest& req, const PreparedRun& prep, int rank,
                                 int worldSize) {
    nlohmann::ordered_json recipe = prep.recipe.toOrderedJson();
    if (recipe.contains("provenance") && recipe["provenance"].is_object())
        recipe["provenance"].erase("created_at"); // when it was written, not what it does
    nlohmann::ordered_json options = nlohmann::ordered_json::object();
    for (const auto& [name, value] : req.exportOptions)
        options[name] = value;
    // The order a refusal looks in: the first field that differs is the one it names.
    return {{"recipe", std::move(recipe)},
            {"world_size", worldSize},
            {"rank", rank},
            {"threads", at::get_num_threads()},
            {"model_files", modelFiles(req.modelDir)},
            {"calibration_ids", idsDigest(prep.calibration)},
            {"evaluation_ids", idsDigest(prep.evaluation)},
            {"export_formats", prep.exportFormats},
            {"export_options", std::move(options)}};
}

} // namespace qs

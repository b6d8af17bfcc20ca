#include "run/FullPrecisionReference.h"

#include "recipe/Provenance.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace qs {

namespace {

// Bumped when the cached layout or the meaning of a reference changes.
constexpr const char* kReferenceFormat = "quantscope-fp-reference-1";

std::string referenceKey(const RunRequest& request, const PreparedRun& prep) {
    QCryptographicHash h(QCryptographicHash::Sha256);
    auto add = [&h](const std::string& s) {
        h.addData(QByteArray::fromStdString(s));
        h.addData(QByteArray(1, '\0'));
    };
    add(kReferenceFormat);
    add(modelHeadersHash(request.modelDir));
    const at::Tensor ids = prep.evaluation.to(at::kLong).contiguous();
    add(std::to_string(ids.size(0)) + "x" + std::to_string(ids.size(1)));
    h.addData(QByteArray(reinterpret_cast<const char*>(ids.data_ptr<int64_t>()),
                         qsizetype(ids.numel() * int64_t(sizeof(int64_t)))));
    add(prep.model->compute().device.str());
    add(dtypeLabel(prep.model->compute().dtype));
    add(toolVersion());
    // The engine build itself: a rebuilt binary may round its forward differently, so it never
    // reads a reference another build wrote (Linux names the running executable in /proc).
    const QFileInfo exe(QFileInfo(QStringLiteral("/proc/self/exe")).symLinkTarget());
    if (exe.exists())
        add(exe.absoluteFilePath().toStdString() + ":" + std::to_string(exe.size()) + ":" +
            std::to_string(exe.lastModified().toMSecsSinceEpoch()));
    return h.result().toHex().toStdString();
}

nlohmann::json perplexityJson(const PerplexityResult& p) {
    return {{"tokens", p.tokens},    {"windows", p.windows},
            {"seq_len", p.seqLen},   {"predicted", p.predicted},
            {"mean_nll", p.meanNll}, {"perplexity", p.perplexity},
            {"seconds", p.seconds},  {"tokens_per_second", p.tokensPerSecond},
            {"device", p.device},    {"dtype", p.dtype}};
}

PerplexityResult perplexityFromJson(const nlohmann::json& j) {
    PerplexityResult p;
    p.tokens = j.at("tokens").get<int64_t>();
    p.windows = j.at("windows").get<int64_t>();
    p.seqLen = j.at("seq_len").get<int64_t>();
    p.predicted = j.at("predicted").get<int64_t>();
    p.meanNll = j.at("mean_nll").get<double>();
    p.perplexity = j.at("perplexity").get<double>();
    p.seconds = j.at("seconds").get<double>();
    p.tokensPerSecond = j.at("tokens_per_second").get<double>();
    p.device = j.at("device").get<std::string>();
    p.dtype = j.at("dtype").get<std::string>();
    return p;
}

} // namespace

std::string fidelityCacheDir() {
    const char* own = std::getenv("QS_CACHE_DIR");
    if (own && *own)
        return std::string(own) == "off" ? std::string() : std::string(own) + "/fp-reference";
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg)
        return std::string(xdg) + "/quantscope/fp-reference";
    const char* home = std::getenv("HOME");
    return home && *home ? std::string(home) + "/.cache/quantscope/fp-reference" : std::string();
}

FullPrecisionReference FullPrecisionReference::obtain(const RunRequest& request,
                                                      const PreparedRun& prep,
                                                      const PipelineProgress& progress,
                                                      bool writesCache) {
    FullPrecisionReference ref;
    ref.m_windows = prep.evaluation.size(0);
    ref.m_seqLen = prep.evaluation.size(1);
    const std::string dir = fidelityCacheDir();
    const std::string key = dir.empty() ? std::string() : referenceKey(request, prep);
    const QString bin = QString::fromStdString(dir + "/" + key + ".bin");
    const QString meta = QString::fromStdString(dir + "/" + key + ".json");

    if (!dir.empty() && ref.readCached(bin, meta, prep.model->compute().dtype))
        return ref;

    // A recipe without schemes over the same model, data and windows: the evaluation every
    // full-precision perplexity comes from.
    RunRequest plain;
    plain.modelDir = request.modelDir;
    plain.recipe.evaluation = prep.recipe.evaluation;
    plain.device = request.device;
    plain.dtype = request.dtype;
    plain.tokenizer = request.tokenizer;
    plain.evaluate = true;
    plain.fidelity = false; // it is the reference
    QuantizationOutcome out = runQuantization(plain, progress);
    const at::Tensor hidden = out.evalHidden.to(at::kCPU).contiguous();
    if (hidden.size(0) != ref.m_windows || hidden.size(1) != ref.m_seqLen)
        throw Error("fidelity", "evaluation",
                    "the full-precision pass evaluated other windows than the quantized one");
    ref.m_perplexity = *out.perplexity;
    ref.m_width = hidden.size(2);
    ref.m_dtype = hidden.scalar_type();

    if (writesCache && !dir.empty() && QDir().mkpath(QString::fromStdString(dir))) {
        QSaveFile data(bin);
        const auto bytes = qint64(hidden.numel() * int64_t(hidden.element_size()));
        if (data.open(QIODevice::WriteOnly) &&
            data.write(static_cast<const char*>(hidden.data_ptr()), bytes) == bytes &&
            data.commit()) {
            nlohmann::json j = {{"format", kReferenceFormat},
                                {"model", request.modelDir},
                                {"data", prep.recipe.evaluation.dataPath},
                                {"windows", ref.m_windows},
                                {"seq_len", ref.m_seqLen},
                                {"width", ref.m_width},
                                {"dtype", dtypeLabel(ref.m_dtype)},
                                {"perplexity", perplexityJson(ref.m_perplexity)}};
            QSaveFile m(meta);
            const QByteArray text = QByteArray::fromStdString(j.dump(2) + "\n");
            if (m.open(QIODevice::WriteOnly) && m.write(text) == text.size() && m.commit()) {
                ref.m_file = bin.toStdString();
                return ref;
            }
        }
    }
    ref.m_hidden = hidden; // no cache: kept for this run
    return ref;
}

bool FullPrecisionReference::readCached(const QString& bin, const QString& meta,
                                        at::ScalarType dtype) {
    // A damaged or foreign entry is recomputed, not trusted.
    QFile f(meta);
    if (!QFile::exists(bin) || !f.open(QIODevice::ReadOnly))
        return false;
    const nlohmann::json j = nlohmann::json::parse(f.readAll().toStdString(), nullptr, false);
    try {
        if (!j.is_object() || j.value("format", "") != kReferenceFormat ||
            j.value("dtype", "") != dtypeLabel(dtype))
            return false;
        const int64_t width = j.at("width").get<int64_t>();
        if (QFileInfo(bin).size() !=
            m_windows * m_seqLen * width * int64_t(c10::elementSize(dtype)))
            return false;
        m_perplexity = perplexityFromJson(j.at("perplexity"));
        m_width = width;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
    m_dtype = dtype;
    m_file = bin.toStdString();
    m_fromCache = true;
    return true;
}

at::Tensor FullPrecisionReference::windows(int64_t first, int64_t count,
                                           const at::Device& device) const {
    if (m_hidden.defined())
        return m_hidden.narrow(0, first, count).to(device);
    QFile f(QString::fromStdString(m_file));
    const int64_t rowBytes = m_seqLen * m_width * int64_t(c10::elementSize(m_dtype));
    at::Tensor out = at::empty({count, m_seqLen, m_width}, at::TensorOptions().dtype(m_dtype));
    if (!f.open(QIODevice::ReadOnly) || !f.seek(first * rowBytes) ||
        f.read(static_cast<char*>(out.data_ptr()), count * rowBytes) != count * rowBytes)
        throw Error(m_file, "",
                    "cannot read the cached full-precision reference: " +
                        f.errorString().toStdString());
    return out.to(device);
}

} // namespace qs

#include "calib/ResumeState.h"

#include "calib/PlanReport.h"
#include "io/SafetensorsFile.h"
#include "io/TensorDType.h"
#include "quant/TypeTraits.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/ATen.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace qs {

namespace {

constexpr const char* kManifest = "state.json";
constexpr const char* kFormat = "quantscope-resume-state";
constexpr int kVersion = 1;
constexpr const char* kBlockMeta = "quantscope_block";
const char* const kStreamNames[] = {"reference", "quantized", "evaluation"};

std::string numbered(const char* stem, int n) {
    char name[64];
    std::snprintf(name, sizeof name, "%s-%05d.safetensors", stem, n);
    return name;
}

// Tensors by name, written in this order: host copies of their bytes, dtype as they are.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

void writeTensors(const std::string& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata) {
    std::vector<TensorInfo> layout;
    std::vector<at::Tensor> host;
    for (const auto& [name, t] : tensors) {
        const std::optional<DType> dtype = dtypeOfScalarType(t.scalar_type());
        if (!dtype)
            throw Error(path, name, "no safetensors dtype for this tensor's elements");
        TensorInfo info;
        info.name = name;
        info.dtype = *dtype;
        info.shape = t.sizes().vec();
        layout.push_back(std::move(info));
        host.push_back(toHost(t));
    }
    SafetensorsWriter writer(path, std::move(layout), metadata);
    for (const at::Tensor& h : host)
        writer.writeNext(h.data_ptr(), uint64_t(h.numel()) * uint64_t(h.element_size()));
    writer.commit();
}

// A tensor of `file` copied out of the mapping; undefined when the file has no such tensor.
at::Tensor readTensor(const SafetensorsFile& file, const std::string& name,
                      const at::Device& device) {
    const TensorInfo* info = file.find(name);
    if (!info)
        return {};
    const std::optional<at::ScalarType> type = denseScalarType(info->dtype);
    if (!type)
        throw Error(file.path(), name, "not a dtype the resume state writes");
    const at::Tensor view =
        at::from_blob(const_cast<uint8_t*>(file.data(*info)), info->shape, at::dtype(*type));
    // A copy either way: the mapping goes when the file is closed.
    return device.is_cpu() ? view.clone() : view.to(device);
}

at::Tensor requireTensor(const SafetensorsFile& file, const std::string& name,
                         const at::Device& device) {
    at::Tensor t = readTensor(file, name, device);
    if (!t.defined())
        throw Error(file.path(), name, "missing from the saved block");
    return t;
}

// Integer codes are kept as int32 while a run computes (LayerPlan.h); every int4, uint4, int8
// and uint8 code fits a byte, so the state stores them as one (a quarter of the bytes) and the
// restore widens them back, exactly.
at::Tensor narrowCodes(const quant::QuantizedTensor& q) {
    const quant::TypeTraits& t = quant::traits(q.dtype);
    const at::Tensor& codes = q.codes;
    if (t.encoding != quant::Encoding::Int || codes.is_floating_point() || t.qmin < -128 ||
        t.qmax > 255 || codes.element_size() == 1)
        return codes;
    return codes.to(t.qmin < 0 ? at::kChar : at::kByte);
}

void addParams(NamedTensors& out, const std::string& prefix, const quant::QuantParams& p) {
    const std::pair<const char*, const at::Tensor*> fields[] = {{"scale", &p.scale},
                                                                {"zero_point", &p.zeroPoint},
                                                                {"global_scale", &p.globalScale},
                                                                {"scale_codes", &p.scaleCodes}};
    for (const auto& [field, t] : fields)
        if (t->defined())
            out.emplace_back(prefix + field, *t);
}

quant::QuantParams readParams(const SafetensorsFile& file, const std::string& prefix,
                              const at::Device& device) {
    quant::QuantParams p;
    p.scale = readTensor(file, prefix + "scale", device);
    p.zeroPoint = readTensor(file, prefix + "zero_point", device);
    p.globalScale = readTensor(file, prefix + "global_scale", device);
    p.scaleCodes = readTensor(file, prefix + "scale_codes", device);
    return p;
}

std::string shortJson(const nlohmann::ordered_json& v) {
    std::string s = v.is_null() ? std::string("absent") : v.dump();
    return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

// The first member where `was` and `now` differ, as a path ("recipe.algorithms[0].name"),
// with both values; false when they are equal.
bool firstDifference(const nlohmann::ordered_json& was, const nlohmann::ordered_json& now,
                     const std::string& at, std::string& where, nlohmann::ordered_json& wasValue,
                     nlohmann::ordered_json& nowValue) {
    if (was == now)
        return false;
    if (was.is_object() && now.is_object()) {
        // In the order this run's key lists them (the recipe first: the likeliest to differ and
        // the most telling to name), then what only the saved key has.
        std::vector<std::string> keys;
        for (auto it = now.begin(); it != now.end(); ++it)
            keys.push_back(it.key());
        for (auto it = was.begin(); it != was.end(); ++it)
            if (!now.contains(it.key()))
                keys.push_back(it.key());
        for (const std::string& k : keys) {
            const nlohmann::ordered_json a = was.contains(k) ? was[k] : nlohmann::ordered_json();
            const nlohmann::ordered_json b = now.contains(k) ? now[k] : nlohmann::ordered_json();
            if (firstDifference(a, b, at.empty() ? k : at + "." + k, where, wasValue, nowValue))
                return true;
        }
    }
    if (was.is_array() && now.is_array() && was.size() == now.size()) {
        for (size_t i = 0; i < was.size(); ++i)
            if (firstDifference(was[i], now[i], at + "[" + std::to_string(i) + "]", where, wasValue,
                                nowValue))
                return true;
    }
    where = at;
    wasValue = was;
    nowValue = now;
    return true;
}

} // namespace

ResumeState::ResumeState(std::string dir, nlohmann::ordered_json key)
    : m_dir(std::move(dir)), m_key(std::move(key)) {}

int ResumeState::open() {
    const std::string manifest = path(kManifest);
    m_finished = 0;
    m_seconds.clear();
    std::ifstream in(manifest, std::ios::binary);
    if (!in) {
        if (QFileInfo::exists(QString::fromStdString(manifest)))
            throw Error(manifest, "", "cannot be read");
        return 0; // nothing saved yet: a fresh run
    }
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(text.str());
    } catch (const nlohmann::ordered_json::exception& e) {
        throw Error(manifest, "", std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object() || j.value("format", "") != kFormat)
        throw Error(manifest, "format",
                    std::string("not a Quantscope resume state (") + kFormat + ")");
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != kVersion)
        throw Error(manifest, "version",
                    "resume state version " +
                        shortJson(j.value("version", nlohmann::ordered_json())) +
                        ", this build reads " + std::to_string(kVersion));
    std::string where;
    nlohmann::ordered_json was, now;
    if (firstDifference(j.value("key", nlohmann::ordered_json()), m_key, "", where, was, now)) {
        if (where.empty())
            where = "key"; // not an object at all
        throw Error(manifest, where,
                    "the saved state is of another run: " + where + " was " + shortJson(was) +
                        ", now " + shortJson(now) + "; run the interrupted command again, or " +
                        "remove " + m_dir + " to start afresh");
    }
    const nlohmann::ordered_json& finished = j["finished_blocks"];
    if (!finished.is_number_integer() || finished.get<int64_t>() < 0)
        throw Error(manifest, "finished_blocks", "not a non-negative integer");
    const nlohmann::ordered_json& seconds = j["block_seconds"];
    if (!seconds.is_array() || int64_t(seconds.size()) != finished.get<int64_t>())
        throw Error(manifest, "block_seconds", "not one time per finished block");
    for (const auto& s : seconds) {
        if (!s.is_number())
            throw Error(manifest, "block_seconds", "not a number");
        m_seconds.push_back(s.get<double>());
    }
    m_finished = finished.get<int>();
    if (m_finished > 0 &&
        !QFileInfo::exists(QString::fromStdString(path(numbered("streams", m_finished)))))
        throw Error(path(numbered("streams", m_finished)), "",
                    "missing: the state names block " + std::to_string(m_finished - 1) +
                        " finished but its streams are gone");
    return m_finished;
}

void ResumeState::rewindTo(int finished) {
    if (finished == m_finished)
        return;
    if (finished < 0 || finished > m_finished)
        throw Error(path(kManifest), "finished_blocks",
                    "cannot continue from block " + std::to_string(finished) + ": " +
                        std::to_string(m_finished) + " finished here");
    if (finished > 0 &&
        !QFileInfo::exists(QString::fromStdString(path(numbered("streams", finished)))))
        throw Error(path(numbered("streams", finished)), "",
                    "missing: the other ranks continue after block " +
                        std::to_string(finished - 1) + ", whose streams this rank no longer has");
    m_finished = finished;
    m_seconds.resize(size_t(finished));
}

void ResumeState::restoreBlock(int index, DecoderBlock& block, std::vector<LayerPlan>& plans,
                               const at::Device& device) const {
    const std::string file = path(numbered("block", index));
    const std::unique_ptr<SafetensorsFile> saved = SafetensorsFile::open(file);
    const auto meta = saved->header().metadata.find(kBlockMeta);
    nlohmann::ordered_json j;
    try {
        if (meta == saved->header().metadata.end())
            throw Error(file, kBlockMeta, "missing");
        j = nlohmann::ordered_json::parse(meta->second);
    } catch (const nlohmann::ordered_json::exception& e) {
        throw Error(file, kBlockMeta, std::string("not valid JSON: ") + e.what());
    }
    if (j.value("block", -1) != index || !j["plans"].is_array() ||
        j["plans"].size() != plans.size())
        throw Error(file, kBlockMeta,
                    "does not describe block " + std::to_string(index) + " with " +
                        std::to_string(plans.size()) + " linears");

    // The block's tensors a transform may have changed, then the weights as quantized.
    std::map<std::string, LinearLayer*> linears;
    for (LinearLayer* l : block.linears()) {
        linears[l->name] = l;
        if (at::Tensor b = readTensor(*saved, l->name + ".bias", device); b.defined())
            l->bias = b;
    }
    for (const BlockNorm& n : block.norms()) {
        if (n.weight)
            *n.weight = requireTensor(*saved, n.name + ".weight", device);
        if (n.bias && n.bias->defined())
            *n.bias = requireTensor(*saved, n.name + ".bias", device);
    }
    for (size_t i = 0; i < plans.size(); ++i) {
        LayerPlan& p = plans[i];
        const nlohmann::ordered_json& s = j["plans"][i];
        const std::string field = std::string(kBlockMeta) + ".plans[" + std::to_string(i) + "]";
        if (!s.is_object() || s.value("name", "") != p.name)
            throw Error(file, field, "does not describe " + p.name);
        const auto linear = linears.find(p.name);
        if (linear == linears.end())
            throw Error(file, p.name, "the block has no such linear");
        LinearLayer& l = *linear->second;
        // The exporters read the weight the block holds (the dequantized one); the reference
        // was used only before the weight pass, so both take it.
        if (!s.contains("weight") || !s["weight"].is_boolean())
            throw Error(file, field + ".weight", "not true or false");
        if (s["weight"].get<bool>()) {
            at::Tensor w = requireTensor(*saved, p.name + ".weight", device);
            if (w.sizes() != l.weight.sizes())
                throw Error(file, p.name + ".weight", "saved with another shape than the model's");
            l.weight = w;
        } else {
            l.weight = at::Tensor(); // released after its codes were made (readsOnlyCodes)
        }
        p.weight.reference = l.weight;
        p.weight.dequantized = l.weight;
        p.transforms.clear();
        try {
            for (const auto& t : s.value("transforms", nlohmann::ordered_json::array()))
                p.transforms.push_back(t.get<std::string>());
        } catch (const nlohmann::ordered_json::exception& e) {
            throw Error(file, field + ".transforms",
                        std::string("not a list of names: ") + e.what());
        }
        p.weight.codes.reset();
        if (at::Tensor codes = readTensor(*saved, "plan:" + p.name + ":codes", device);
            codes.defined()) {
            if (!p.scheme)
                throw Error(file, p.name, "has codes but the recipe leaves the layer unquantized");
            if (const nlohmann::ordered_json& d = s.value("codes_dtype", nlohmann::ordered_json());
                !d.is_null()) {
                const std::optional<DType> wide =
                    d.is_string() ? dtypeFromName(d.get<std::string>()) : std::nullopt;
                const std::optional<at::ScalarType> type =
                    wide ? denseScalarType(*wide) : std::nullopt;
                if (!type)
                    throw Error(file, field + ".codes_dtype", "not a dtype: " + d.dump());
                codes = codes.to(*type); // exact: every code fits the narrow type
            }
            p.weight.codes =
                quant::QuantizedTensor{p.scheme->weight.dtype, codes,
                                       readParams(*saved, "plan:" + p.name + ":codes.", device)};
        }
        p.createActivationQuantizers();
        for (auto [role, quantizer] :
             {std::pair{"input", &p.input}, std::pair{"output", &p.output}}) {
            if (!*quantizer || !(*quantizer)->isStatic())
                continue;
            quant::QuantParams params =
                readParams(*saved, "plan:" + p.name + ":" + role + ".", device);
            if (!params.scale.defined())
                throw Error(file, "plan:" + p.name + ":" + role + ".scale",
                            "missing from the saved block");
            (*quantizer)->freezeWith(std::move(params));
        }
        fillReportHeader(p);
    }
}

ResumeStreams ResumeState::restoreStreams(const at::Device& device) const {
    ResumeStreams out;
    if (m_finished == 0)
        return out;
    const std::unique_ptr<SafetensorsFile> saved =
        SafetensorsFile::open(path(numbered("streams", m_finished)));
    out.reference = readTensor(*saved, kStreamNames[0], device);
    out.quantized = readTensor(*saved, kStreamNames[1], device);
    out.evaluation = readTensor(*saved, kStreamNames[2], device);
    return out;
}

void ResumeState::saveBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans,
                            const ResumeStreams& streams, double seconds, bool withBlock) {
    if (index != m_finished)
        throw Error(path(kManifest), "finished_blocks",
                    "block " + std::to_string(index) + " saved after " +
                        std::to_string(m_finished) + " finished blocks");
    if (!QDir().mkpath(QString::fromStdString(m_dir)))
        throw Error(m_dir, "", "cannot create the resume state's folder");
    if (withBlock) {
        NamedTensors tensors;
        nlohmann::ordered_json described = nlohmann::ordered_json::array();
        std::map<std::string, const LinearLayer*> linears;
        for (LinearLayer* l : block.linears()) {
            linears[l->name] = l;
            if (l->bias.defined())
                tensors.emplace_back(l->name + ".bias", l->bias);
        }
        for (const BlockNorm& n : block.norms()) {
            if (n.weight)
                tensors.emplace_back(n.name + ".weight", *n.weight);
            if (n.bias && n.bias->defined())
                tensors.emplace_back(n.name + ".bias", *n.bias);
        }
        for (const LayerPlan& p : plans) {
            const auto l = linears.find(p.name);
            const bool weight = l != linears.end() && l->second->weight.defined();
            if (weight)
                tensors.emplace_back(p.name + ".weight", l->second->weight);
            nlohmann::ordered_json codesDtype; // the codes' own dtype when stored narrower
            if (p.weight.codes) {
                const at::Tensor& codes = p.weight.codes->codes;
                const at::Tensor narrow = narrowCodes(*p.weight.codes);
                if (narrow.scalar_type() != codes.scalar_type())
                    codesDtype = dtypeName(*dtypeOfScalarType(codes.scalar_type()));
                tensors.emplace_back("plan:" + p.name + ":codes", narrow);
                addParams(tensors, "plan:" + p.name + ":codes.", p.weight.codes->params);
            }
            for (auto [role, quantizer] :
                 {std::pair{"input", &p.input}, std::pair{"output", &p.output}})
                if (*quantizer && (*quantizer)->isStatic() && (*quantizer)->isFrozen())
                    addParams(tensors, "plan:" + p.name + ":" + role + ".", (*quantizer)->params());
            described.push_back({{"name", p.name},
                                 {"weight", weight},
                                 {"transforms", p.transforms},
                                 {"codes_dtype", codesDtype}});
        }
        writeTensors(
            path(numbered("block", index)), tensors,
            {{kBlockMeta, nlohmann::ordered_json{{"block", index}, {"plans", described}}.dump()}});
    }
    NamedTensors carried;
    const at::Tensor* const streamTensors[] = {&streams.reference, &streams.quantized,
                                               &streams.evaluation};
    for (size_t i = 0; i < 3; ++i)
        if (streamTensors[i]->defined())
            carried.emplace_back(kStreamNames[i], *streamTensors[i]);
    writeTensors(path(numbered("streams", index + 1)), carried, {});
    m_finished = index + 1;
    m_seconds.push_back(seconds);
    writeManifest();
}

void ResumeState::dropOlderStreams() {
    for (int b = m_finished - 1; b >= 1; --b) {
        const QString older = QString::fromStdString(path(numbered("streams", b)));
        if (!QFileInfo::exists(older))
            break;
        QFile::remove(older);
    }
}

void ResumeState::remove() {
    QDir(QString::fromStdString(m_dir)).removeRecursively();
}

void ResumeState::writeManifest() const {
    const nlohmann::ordered_json j = {{"format", kFormat},
                                      {"version", kVersion},
                                      {"key", m_key},
                                      {"finished_blocks", m_finished},
                                      {"block_seconds", m_seconds}};
    writeFileAtomically(path(kManifest), j.dump(2) + "\n");
}

} // namespace qs

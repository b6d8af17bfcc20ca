#include "tokenize/TokenizerLoader.h"

#include "tokenize/HfBpeTokenizer.h"
#include "tokenize/HfJson.h"
#include "tokenize/TokenizerPlugin.h"
#include "util/Error.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QLibrary>
#include <QPluginLoader>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>

namespace qs {

namespace {

using nlohmann::json;

constexpr const char* kSentencePieceName = "sentencepiece";

std::string joined(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i)
        out += (i ? sep : "") + parts[i];
    return out;
}

bool isFile(const std::string& path) {
    return QFileInfo(QString::fromStdString(path)).isFile();
}

// The JSON object in `path`, or null when the file is absent. Throws qs::Error when it is there
// but unreadable or not JSON.
json readOptionalJson(const std::string& path) {
    // Also turns 1e400 (out_of_range, not a parse_error) into qs::Error: found by
    // fuzz_tokenizer_config.
    return hfjson::readOptionalDocument(path).value_or(json());
}

// tokenizer_config.json writes special tokens as "text" or {"content": "text", ...}.
bool specialTokenName(const json& config, const char* key, std::string* name, bool* isNull) {
    if (!config.is_object() || !config.contains(key))
        return false;
    const json& v = config[key];
    *isNull = v.is_null();
    if (v.is_string())
        *name = v.get<std::string>();
    else if (v.is_object() && v.contains("content") && v["content"].is_string())
        *name = v["content"].get<std::string>();
    else if (!v.is_null())
        return false;
    return true;
}

// The id (or first of a list of ids), -1 when absent or not a valid token id: a value beyond
// int32 must not wrap around into the vocabulary.
int32_t firstId(const json& v) {
    const json& id = v.is_array() && !v.empty() ? v[0] : v;
    if (id.is_number_unsigned())
        return id.get<uint64_t>() <= uint64_t(hfjson::kMaxTokenId) ? id.get<int32_t>() : -1;
    if (id.is_number_integer())
        return id.get<int64_t>() >= 0 && id.get<int64_t>() <= hfjson::kMaxTokenId
                   ? id.get<int32_t>()
                   : -1;
    return -1;
}

// Whether a tokenizer.json post_processor puts a special token before a single sequence.
bool postProcessorAddsBos(const json& node) {
    if (!node.is_object())
        return false;
    const auto typeIt = node.find("type");
    const std::string type =
        typeIt != node.end() && typeIt->is_string() ? typeIt->get<std::string>() : std::string();
    if (type == "Sequence" && node.contains("processors") && node["processors"].is_array()) {
        for (const json& p : node["processors"]) {
            if (postProcessorAddsBos(p))
                return true;
        }
        return false;
    }
    if (type == "BertProcessing" || type == "RobertaProcessing")
        return true;
    if (type != "TemplateProcessing" || !node.contains("single") || !node["single"].is_array() ||
        node["single"].empty())
        return false;
    return node["single"][0].is_object() && node["single"][0].contains("SpecialToken");
}

// BOS/EOS of a tokenizer.json tokenizer from the model's configs (the tokenizer file alone does
// not say which of its special tokens they are).
void applyConfiguredSpecialIds(HfBpeTokenizer& tok, const json& tokenizerConfig,
                               const json& modelConfig) {
    struct Slot {
        const char* nameKey;
        const char* idKey;
        void (HfBpeTokenizer::*set)(int32_t);
    };
    for (const Slot& slot : {Slot{"bos_token", "bos_token_id", &HfBpeTokenizer::setBosId},
                             Slot{"eos_token", "eos_token_id", &HfBpeTokenizer::setEosId}}) {
        std::string name;
        bool isNull = false;
        if (specialTokenName(tokenizerConfig, slot.nameKey, &name, &isNull)) {
            const int32_t id = isNull ? -1 : tok.tokenToId(name);
            if (isNull || id >= 0) {
                (tok.*slot.set)(id);
                continue;
            }
        }
        if (modelConfig.is_object() && modelConfig.contains(slot.idKey)) {
            const int32_t id = firstId(modelConfig[slot.idKey]);
            if (id >= 0 && id < tok.vocabSize())
                (tok.*slot.set)(id);
        }
    }
}

struct PluginCache {
    std::mutex mutex;
    TokenizerPlugin* plugin = nullptr;
};

PluginCache& pluginCache() {
    static PluginCache cache;
    return cache;
}

} // namespace

std::vector<std::string> TokenizerLoader::pluginSearchPath() {
    QStringList dirs;
    const QString env = qEnvironmentVariable("QS_PLUGIN_PATH");
    for (const QString& d : env.split(QDir::listSeparator(), Qt::SkipEmptyParts))
        dirs << d;
    if (QCoreApplication::instance()) {
        const QString app = QCoreApplication::applicationDirPath();
        dirs << app + "/../plugins" << app + "/plugins" << app + "/../lib/quantscope/plugins";
    }
#ifdef QS_BUILD_PLUGIN_DIR
    dirs << QStringLiteral(QS_BUILD_PLUGIN_DIR);
#endif
    std::vector<std::string> out;
    for (const QString& d : dirs) {
        const std::string clean = QDir::cleanPath(QDir(d).absolutePath()).toStdString();
        if (std::find(out.begin(), out.end(), clean) == out.end())
            out.push_back(clean);
    }
    return out;
}

TokenizerPlugin* TokenizerLoader::sentencePiecePlugin(std::string* error) {
    PluginCache& cache = pluginCache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.plugin)
        return cache.plugin;

    const std::vector<std::string> dirs = pluginSearchPath();
    std::vector<std::string> failures;
    for (const std::string& dirPath : dirs) {
        const QDir dir(QString::fromStdString(dirPath));
        if (!dir.exists())
            continue;
        for (const QFileInfo& entry : dir.entryInfoList(QDir::Files, QDir::Name)) {
            if (!QLibrary::isLibrary(entry.fileName()))
                continue;
            // The hints must be set before the library is first loaded: DeepBind keeps
            // sentencepiece's bundled protobuf from binding to LibTorch's (docs/pitfalls.md), and
            // the plugin stays loaded because the tokenizers it creates run its code.
            QPluginLoader loader(entry.absoluteFilePath());
            loader.setLoadHints(QLibrary::DeepBindHint | QLibrary::PreventUnloadHint);
            const QJsonObject meta = loader.metaData();
            if (meta.value("IID").toString() != QLatin1String(QS_TOKENIZER_PLUGIN_IID) ||
                meta.value("MetaData").toObject().value("name").toString() !=
                    QLatin1String(kSentencePieceName))
                continue;
            QObject* instance = loader.instance();
            auto* plugin = qobject_cast<TokenizerPlugin*>(instance);
            if (!plugin) {
                failures.push_back(entry.absoluteFilePath().toStdString() + ": " +
                                   loader.errorString().toStdString());
                continue;
            }
            cache.plugin = plugin;
            return plugin;
        }
    }
    if (error) {
        *error = "no sentencepiece tokenizer plugin (IID " QS_TOKENIZER_PLUGIN_IID ") in " +
                 (dirs.empty() ? std::string("(no folders)") : joined(dirs, ", "));
        if (!failures.empty())
            *error += "; failed to load: " + joined(failures, "; ");
    }
    return nullptr;
}

TokenizerBackend TokenizerLoader::parseBackend(const std::string& name) {
    if (name == "auto" || name.empty())
        return TokenizerBackend::Auto;
    if (name == "sentencepiece" || name == "sp")
        return TokenizerBackend::SentencePiece;
    if (name == "hf" || name == "huggingface")
        return TokenizerBackend::HuggingFace;
    throw Error("tokenizer backend", "", "unknown '" + name + "' (auto, sentencepiece or hf)");
}

std::string TokenizerLoader::backendName(TokenizerBackend backend) {
    switch (backend) {
    case TokenizerBackend::Auto:
        return "auto";
    case TokenizerBackend::SentencePiece:
        return "sentencepiece";
    case TokenizerBackend::HuggingFace:
        return "hf";
    }
    return "auto";
}

LoadedTokenizer TokenizerLoader::load(const std::string& modelDir, TokenizerBackend backend) {
    const QDir dir(QString::fromStdString(modelDir));
    if (!dir.exists())
        throw Error(modelDir, "", "model directory does not exist");
    auto path = [&dir](const char* name) { return dir.absoluteFilePath(name).toStdString(); };
    const std::string spPath = path("tokenizer.model");
    const std::string jsonPath = path("tokenizer.json");
    const std::string vocabPath = path("vocab.json");
    const std::string mergesPath = path("merges.txt");

    LoadedTokenizer result;
    std::vector<std::string> problems;
    HfBpeTokenizer* hf = nullptr;

    if (backend != TokenizerBackend::HuggingFace) {
        if (!isFile(spPath)) {
            problems.push_back(spPath + ": not found");
        } else {
            std::string error;
            if (TokenizerPlugin* plugin = sentencePiecePlugin(&error)) {
                result.tokenizer = plugin->loadModelFile(spPath, &error);
                if (result.tokenizer)
                    result.sourceFile = spPath;
            }
            if (!result.tokenizer)
                problems.push_back(spPath + ": " + error);
        }
        if (backend == TokenizerBackend::SentencePiece && !result.tokenizer)
            throw Error(modelDir, "",
                        "cannot use a sentencepiece tokenizer: " + joined(problems, "; "));
    }
    if (!result.tokenizer) {
        if (isFile(jsonPath)) {
            try {
                auto tok = HfBpeTokenizer::fromTokenizerJson(jsonPath);
                hf = tok.get();
                result.tokenizer = std::move(tok);
                result.sourceFile = jsonPath;
            } catch (const Error& e) {
                problems.push_back(e.what());
            }
        } else {
            problems.push_back(jsonPath + ": not found");
        }
    }
    if (!result.tokenizer && isFile(vocabPath) && isFile(mergesPath)) {
        try {
            auto tok = HfBpeTokenizer::fromVocabAndMerges(vocabPath, mergesPath);
            hf = tok.get();
            result.tokenizer = std::move(tok);
            result.sourceFile = vocabPath;
        } catch (const Error& e) {
            problems.push_back(e.what());
        }
    }
    if (!result.tokenizer)
        throw Error(modelDir, "", "no usable tokenizer: " + joined(problems, "; "));
    // A missing tokenizer.model is normal for most models; only a present but unusable one is
    // worth reporting.
    if (!problems.empty() && isFile(spPath) && backend == TokenizerBackend::Auto)
        result.note = "tokenizer.model skipped (" + problems.front() + ")";

    const json tokenizerConfig = readOptionalJson(path("tokenizer_config.json"));
    if (hf)
        applyConfiguredSpecialIds(*hf, tokenizerConfig, readOptionalJson(path("config.json")));

    if (tokenizerConfig.is_object() && tokenizerConfig.contains("add_bos_token") &&
        tokenizerConfig["add_bos_token"].is_boolean()) {
        result.addBos = tokenizerConfig["add_bos_token"].get<bool>();
    } else if (hf && hf->templateBosId() >= 0) {
        result.addBos = true;
    } else if (!hf && isFile(jsonPath)) {
        const json tj = readOptionalJson(jsonPath);
        result.addBos = tj.is_object() && postProcessorAddsBos(tj.value("post_processor", json()));
    } else if (!hf) {
        // A bare tokenizer.model: Llama-family tokenizers prepend BOS by default.
        result.addBos = result.tokenizer->bosId() >= 0;
    }
    if (result.addBos && result.tokenizer->bosId() < 0)
        result.addBos = false;
    return result;
}

} // namespace qs

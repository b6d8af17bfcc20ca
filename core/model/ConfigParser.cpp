#include "model/ConfigParser.h"

#include "io/JsonFields.h"
#include "model/ModelFamily.h"
#include "util/Error.h"

#include <QDir>

namespace qs {

namespace {

// bos/eos ids may be an integer, null or (newer configs) a list whose first entry is used.
int64_t tokenId(const JsonFields& f, const std::string& key) {
    if (!f.has(key))
        return -1;
    const nlohmann::json& v = f.object().at(key);
    if (v.is_array()) {
        if (v.empty())
            return -1;
        nlohmann::json first = nlohmann::json::object({{key, v.front()}});
        return JsonFields(first, f.source()).requiredInt(key, 0, INT32_MAX);
    }
    return f.requiredInt(key, 0, INT32_MAX);
}

} // namespace

ModelConfig parseModelConfig(const std::string& jsonText, const std::string& source) {
    const nlohmann::json j = parseJsonText(jsonText, source);
    const JsonFields f(j, source);
    ModelConfig c;
    c.source = source;
    c.raw = j;
    c.modelType = f.requiredString("model_type");
    if (f.has("architectures")) {
        const nlohmann::json& a = j.at("architectures");
        if (!a.is_array() || a.empty() || !a.front().is_string())
            throw Error(source, "architectures", "expected a non-empty list of class names");
        c.architecture = a.front().get<std::string>();
    }
    c.vocabSize = f.requiredInt("vocab_size", 1, 1 << 24);
    c.torchDtype = f.optionalString("torch_dtype", "float32");
    c.bosTokenId = tokenId(f, "bos_token_id");
    c.eosTokenId = tokenId(f, "eos_token_id");
    c.tieWordEmbeddings = f.optionalBool("tie_word_embeddings", false);
    familyFor(c.modelType, source).parseConfig(f, c);
    if (c.bosTokenId >= c.vocabSize)
        throw Error(source, "bos_token_id", "id beyond vocab_size");
    if (c.eosTokenId >= c.vocabSize)
        throw Error(source, "eos_token_id", "id beyond vocab_size");
    return c;
}

ModelConfig loadModelConfig(const std::string& directory) {
    const std::string path =
        QDir(QString::fromStdString(directory)).filePath("config.json").toStdString();
    return parseModelConfig(readTextFile(path), path);
}

} // namespace qs

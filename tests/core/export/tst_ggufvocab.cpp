// GGUF tokenizer metadata from a Hugging Face tokenizer.json (export/GgufVocab), read back from
// the written model.gguf with io/GgufFile and compared with the tokenizer.json itself:
//  - the synthetic checkpoints' sentencepiece-style BPE (byte_fallback, "▁"): model "llama",
//    every token by id, <0xNN> BYTE, the named special tokens CONTROL, padding up to the
//    embedding's rows UNUSED, and scores that order the merges as their ranks do (llama.cpp's
//    sentencepiece tokenizer merges by score);
//  - a hand-written byte-level BPE (GPT-2 byte map) with each pre-tokenizer layout llama.cpp
//    names: model "gpt2", tokens, types, merges verbatim, tokenizer.ggml.pre;
//  - special ids and add_* flags as gguf-py's SpecialVocab reads them;
//  - tokenizers llama.cpp would tokenize differently refused by file and field, before any file
//    is written.
#include "TestMain.h"
#include "TestSupport.h"

#include "export/GgufVocab.h"
#include "io/GgufFile.h"
#include "io/GgufFolder.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "synth/SyntheticModel.h"
#include "tokenize/TokenizerLoader.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QtTest>

#include <fstream>
#include <map>
#include <set>

namespace {

using nlohmann::json;

json readJson(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

void writeJson(const std::string& path, const json& j) {
    std::ofstream(path) << j.dump(1);
}

// A synthetic Llama small enough to export in a fraction of a second; vocab_size 512 rows.
std::string writeModel(const QString& name, int64_t vocab = 512) {
    qs::SyntheticModelOptions opt;
    opt.outDir = (qs::test::tempDir(name) + "/model").toStdString();
    opt.hiddenSize = 64;
    opt.intermediateSize = 128;
    opt.numLayers = 1;
    opt.numHeads = 2;
    opt.numKvHeads = 1;
    opt.vocabSize = vocab;
    opt.maxPositions = 64;
    qs::writeSyntheticModel(opt);
    return opt.outDir;
}

// quantize --format gguf --gguf-type f32 with nothing quantized; returns the output folder.
QString exportGguf(const std::string& modelDir, const QString& name) {
    qs::QuantFlags flags;
    flags.quantScheme = "uint4_wo_32";
    flags.excludeLayers = {"*"};
    qs::RunRequest req;
    req.modelDir = modelDir;
    req.recipe = qs::recipeFromFlags(flags);
    const QString out = qs::test::tempDir(name) + "/gguf";
    req.outDir = out.toStdString();
    req.exportFormats = {"gguf"};
    req.exportOptions["gguf_type"] = "f32";
    qs::runQuantization(req);
    return out;
}

const qs::GgufValue& meta(const qs::GgufHeader& h, const std::string& key) {
    const qs::GgufValue* v = h.find(key);
    if (!v)
        throw std::runtime_error("missing " + key);
    return *v;
}

std::vector<std::string> strings(const qs::GgufHeader& h, const std::string& key) {
    std::vector<std::string> out;
    for (const qs::GgufValue& v : meta(h, key).array)
        out.push_back(v.s);
    return out;
}

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others (controls, space,
// 0x7F-0xA0, 0xAD) for U+0100 onwards in byte order.
std::string byteChar(int b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    int code = b;
    if (!printable) {
        int n = 0;
        for (int k = 0; k < b; ++k)
            if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE))
                ++n;
        code = 256 + n;
    }
    return QString(QChar(char16_t(code))).toStdString();
}

// A byte-level BPE tokenizer.json: the 256 byte characters, then the merges' tokens, then added
// tokens (two special, one plain with a "▁", one plain that looks special). `pre` is the
// pre_tokenizer node.
json byteLevelTokenizer(const json& pre, bool ignoreMerges) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b)
        vocab[byteChar(b)] = b;
    const std::string G = byteChar(' '); // "Ġ"
    const std::vector<std::pair<std::string, std::string>> merges = {
        {G, "t"}, {"h", "e"}, {G + "t", "he"}, {"i", "n"}, {G, "a"}, {"o", "n"}, {G + "a", "n"}};
    json mergeList = json::array();
    for (size_t r = 0; r < merges.size(); ++r) {
        vocab[merges[r].first + merges[r].second] = 256 + int(r);
        // Both forms tokenizer.json allows: "left right" and [left, right].
        mergeList.push_back(r % 2 ? json(merges[r].first + " " + merges[r].second)
                                  : json::array({merges[r].first, merges[r].second}));
    }
    auto added = [](int id, const char* content, bool special) {
        return json{{"id", id},          {"content", content}, {"single_word", false},
                    {"lstrip", false},   {"rstrip", false},    {"normalized", !special},
                    {"special", special}};
    };
    json t;
    t["added_tokens"] = {added(263, "<|begin_of_text|>", true), added(264, "<|end_of_text|>", true),
                         added(265,
                               "to\xE2\x96\x81"
                               "do",
                               false),
                         added(266, "<|eot_id|>", false)}; // not special, but looks it
    t["normalizer"] = nullptr;
    t["pre_tokenizer"] = pre;
    t["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", json::array()},
        {"special_tokens",
         {{"<|begin_of_text|>",
           {{"id", "<|begin_of_text|>"}, {"ids", {263}}, {"tokens", {"<|begin_of_text|>"}}}}}}};
    t["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
    t["model"] = {{"type", "BPE"},     {"dropout", nullptr},     {"unk_token", nullptr},
                  {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", ignoreMerges},
                  {"vocab", vocab},    {"merges", mergeList}};
    return t;
}

const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json splitThenByteLevel(const std::string& regex) {
    return {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", regex}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"},
               {"add_prefix_space", false},
               {"trim_offsets", false},
               {"use_regex", false}}}}};
}

// Replaces the synthetic tokenizer of `dir` with a byte-level one; bos/eos named in
// tokenizer_config.json as the added tokens.
void useByteLevel(const std::string& dir, const json& tokenizer) {
    writeJson(dir + "/tokenizer.json", tokenizer);
    writeJson(dir + "/tokenizer_config.json", {{"bos_token", "<|begin_of_text|>"},
                                               {"eos_token", {{"content", "<|end_of_text|>"}}},
                                               {"tokenizer_class", "PreTrainedTokenizerFast"}});
}

// Quantscope's own GGUF reader (io/GgufTokenizer, through the checkpoint GgufFolder converts the
// file to) tokenizes a text with digits, contractions, whitespace runs, non-ASCII letters and an
// added token's text into the same ids as the source's tokenizer.json, with the same BOS rule.
void checkReadBack(const std::string& sourceDir, const QString& ggufPath) {
    const std::string text = "In 2024 there were 1234567 tokens; I'll say it's 3.14 and WE'VE\n"
                             "  done it.\tNa\xC3\xAFve caf\xC3\xA9 <|eot_id|> the end";
    const qs::LoadedTokenizer source = qs::TokenizerLoader::load(sourceDir);
    const qs::LoadedTokenizer back =
        qs::TokenizerLoader::load(qs::resolveModelFolder(ggufPath.toStdString()));
    QCOMPARE(back.tokenizer->encode(text), source.tokenizer->encode(text));
    QCOMPARE(back.addBos, source.addBos);
    QCOMPARE(back.tokenizer->bosId(), source.tokenizer->bosId());
    QCOMPARE(back.tokenizer->eosId(), source.tokenizer->eosId());
}

// The qs::Error tokenizerJsonGgufVocab throws, or a failure when it throws none.
qs::Error refusal(const std::string& dir) {
    try {
        qs::tokenizerJsonGgufVocab(dir, 512);
    } catch (const qs::Error& e) {
        return e;
    }
    return qs::Error("", "", "no error");
}

} // namespace

class TestGgufVocab : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // GgufFolder converts .gguf files into a cache folder: keep it inside the test's temp dir.
    void initTestCase() { qputenv("XDG_CACHE_HOME", qs::test::tempDir("vocab-cache").toUtf8()); }

    // The synthetic checkpoint (no tokenizer.model) exports; its tokenizer metadata against
    // its tokenizer.json and tokenizer_config.json.
    void sentencePieceStyleBpe() {
        const std::string dir = writeModel("vocab-sp");
        QVERIFY(!QFileInfo::exists(QString::fromStdString(dir + "/tokenizer.model")));
        const QString out = exportGguf(dir, "vocab-sp");
        const auto file = qs::GgufFile::open((out + "/model.gguf").toStdString());
        const qs::GgufHeader& h = file->header();
        const json tok = readJson(dir + "/tokenizer.json");
        QCOMPARE(meta(h, "tokenizer.ggml.model").s, std::string("llama"));
        QCOMPARE(meta(h, "tokenizer.ggml.pre").s, std::string("default"));
        QVERIFY(!h.find("tokenizer.ggml.merges")); // sentencepiece models merge by score

        const std::vector<std::string> tokens = strings(h, "tokenizer.ggml.tokens");
        const auto& types = meta(h, "tokenizer.ggml.token_type").array;
        const auto& scores = meta(h, "tokenizer.ggml.scores").array;
        const json& vocab = tok["model"]["vocab"];
        QCOMPARE(tokens.size(), size_t(512)); // config.json vocab_size: the embedding's rows
        QCOMPARE(types.size(), tokens.size());
        QCOMPARE(scores.size(), tokens.size());
        QVERIFY(vocab.size() < tokens.size());
        std::map<std::string, int64_t> idOf;
        for (auto it = vocab.begin(); it != vocab.end(); ++it) {
            const int64_t id = it.value().get<int64_t>();
            idOf[it.key()] = id;
            QCOMPARE(tokens[size_t(id)], it.key());
            const bool isByte = it.key().size() == 6 && it.key().rfind("<0x", 0) == 0;
            const bool named = it.key() == "<unk>" || it.key() == "<s>" || it.key() == "</s>";
            QCOMPARE(types[size_t(id)].i, int64_t(isByte ? 6 : named ? 3 : 1));
        }
        for (size_t i = vocab.size(); i < tokens.size(); ++i) {
            QCOMPARE(tokens[i], "[PAD" + std::to_string(i) + "]");
            QCOMPARE(types[i].i, int64_t(5));
            QCOMPARE(scores[i].f, -1000.0);
        }
        // Scores: the token of merge r scores -r, so the merges apply in rank order; every
        // other token scores below the last merge.
        const json& merges = tok["model"]["merges"];
        QVERIFY(merges.size() > 50);
        std::set<int64_t> produced;
        for (size_t r = 0; r < merges.size(); ++r) {
            const std::string m = merges[r].get<std::string>();
            const size_t space = m.find(' ');
            const int64_t id = idOf.at(m.substr(0, space) + m.substr(space + 1));
            if (produced.insert(id).second)
                QCOMPARE(scores[size_t(id)].f, -double(r));
        }
        for (size_t i = 0; i < vocab.size(); ++i)
            if (!produced.count(int64_t(i)))
                QVERIFY(scores[i].f < -double(merges.size() - 1));
        // SpecialVocab: ids from tokenizer_config.json's tokens among the added tokens; add_bos
        // and add_eos from its flags; the pair template "<s> A <s> B" has no separator.
        QCOMPARE(meta(h, "tokenizer.ggml.bos_token_id").u, uint64_t(1));
        QCOMPARE(meta(h, "tokenizer.ggml.eos_token_id").u, uint64_t(2));
        QCOMPARE(meta(h, "tokenizer.ggml.unknown_token_id").u, uint64_t(0));
        QVERIFY(!h.find("tokenizer.ggml.padding_token_id"));
        QCOMPARE(meta(h, "tokenizer.ggml.add_bos_token").u, uint64_t(1));
        QCOMPARE(meta(h, "tokenizer.ggml.add_eos_token").u, uint64_t(0));
        QCOMPARE(meta(h, "tokenizer.ggml.add_sep_token").u, uint64_t(0));
        checkReadBack(dir, out + "/model.gguf");
    }

    // Byte-level BPE with each layout: pre name, tokens, types, merges, special ids.
    void byteLevelBpe_data() {
        QTest::addColumn<QString>("layout");
        QTest::addColumn<QString>("pre");
        QTest::newRow("ByteLevel") << "gpt2"
                                   << "gpt-2";
        QTest::newRow("Split llama3") << "llama3"
                                      << "llama-bpe";
        QTest::newRow("Split qwen2") << "qwen2"
                                     << "qwen2";
    }
    void byteLevelBpe() {
        QFETCH(QString, layout);
        QFETCH(QString, pre);
        const std::string dir = writeModel("vocab-bl-" + layout);
        const json preNode =
            layout == "gpt2"
                ? json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}
                : splitThenByteLevel(layout == "llama3" ? kLlama3Regex : kQwen2Regex);
        const json tok = byteLevelTokenizer(preNode, layout == "llama3");
        useByteLevel(dir, tok);
        const QString out = exportGguf(dir, "vocab-bl-" + layout);
        const auto file = qs::GgufFile::open((out + "/model.gguf").toStdString());
        const qs::GgufHeader& h = file->header();
        QCOMPARE(meta(h, "tokenizer.ggml.model").s, std::string("gpt2"));
        QCOMPARE(QString::fromStdString(meta(h, "tokenizer.ggml.pre").s), pre);
        QVERIFY(!h.find("tokenizer.ggml.scores"));
        const std::vector<std::string> tokens = strings(h, "tokenizer.ggml.tokens");
        const auto& types = meta(h, "tokenizer.ggml.token_type").array;
        QCOMPARE(tokens.size(), size_t(512));
        const json& vocab = tok["model"]["vocab"];
        for (auto it = vocab.begin(); it != vocab.end(); ++it) {
            QCOMPARE(tokens[it.value().get<size_t>()], it.key());
            QCOMPARE(types[it.value().get<size_t>()].i, int64_t(1));
        }
        // Added: special -> CONTROL; plain -> USER_DEFINED with "▁" written as a space.
        QCOMPARE(tokens[263], std::string("<|begin_of_text|>"));
        QCOMPARE(types[263].i, int64_t(3));
        QCOMPARE(tokens[264], std::string("<|end_of_text|>"));
        QCOMPARE(types[264].i, int64_t(3));
        QCOMPARE(tokens[265], std::string("to do"));
        QCOMPARE(types[265].i, int64_t(4));
        QCOMPARE(tokens[266], std::string("<|eot_id|>"));
        QCOMPARE(types[266].i, int64_t(3)); // the converter's does_token_look_special
        for (size_t i = 267; i < tokens.size(); ++i) {
            QCOMPARE(tokens[i], "[PAD" + std::to_string(i) + "]");
            QCOMPARE(types[i].i, int64_t(5));
        }
        // Merges in rank order as "left right", whichever form the file used.
        const std::vector<std::string> merges = strings(h, "tokenizer.ggml.merges");
        QCOMPARE(merges.size(), tok["model"]["merges"].size());
        for (size_t r = 0; r < merges.size(); ++r) {
            const json& m = tok["model"]["merges"][r];
            QCOMPARE(merges[r], m.is_string()
                                    ? m.get<std::string>()
                                    : m[0].get<std::string>() + " " + m[1].get<std::string>());
        }
        // bos/eos from tokenizer_config.json (a string and an AddedToken object), found among
        // the added tokens; add_bos from the template's leading special token; no add_eos
        // (no trailing one, no tokenizer_config flag).
        QCOMPARE(meta(h, "tokenizer.ggml.bos_token_id").u, uint64_t(263));
        QCOMPARE(meta(h, "tokenizer.ggml.eos_token_id").u, uint64_t(264));
        QCOMPARE(meta(h, "tokenizer.ggml.add_bos_token").u, uint64_t(1));
        QVERIFY(!h.find("tokenizer.ggml.add_eos_token"));
        QVERIFY(!h.find("tokenizer.ggml.unknown_token_id"));
        checkReadBack(dir, out + "/model.gguf");
    }

    // Without tokenizer_config.json: ids from config.json's *_token_id (the synthetic config
    // says bos 1, eos 2), the template's add_bos kept; an id outside the tokens is skipped.
    void specialIdsFromConfigJson() {
        const std::string dir = writeModel("vocab-config");
        useByteLevel(dir, byteLevelTokenizer({{"type", "ByteLevel"}}, false));
        QVERIFY(QFile::remove(QString::fromStdString(dir + "/tokenizer_config.json")));
        json cfg = readJson(dir + "/config.json");
        cfg["pad_token_id"] = 100000; // outside the 512 tokens
        cfg["unk_token_id"] = 7;
        writeJson(dir + "/config.json", cfg);
        const qs::GgufVocab v = qs::tokenizerJsonGgufVocab(dir, 512);
        const std::vector<std::pair<std::string, uint32_t>> ids = {
            {"tokenizer.ggml.bos_token_id", 1},
            {"tokenizer.ggml.eos_token_id", 2},
            {"tokenizer.ggml.unknown_token_id", 7}};
        QCOMPARE(v.specialIds, ids);
        QCOMPARE(v.addSpecial, (std::vector<std::pair<std::string, bool>>{
                                   {"tokenizer.ggml.add_bos_token", true}}));
    }

    // Kinds llama.cpp would tokenize differently: refused naming tokenizer.json (or
    // config.json's limit) and the field; an export stops before writing anything.
    void unsupportedTokenizers_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("field");
        QTest::newRow("WordPiece model") << "wordpiece"
                                         << "model.type";
        QTest::newRow("Split with another regex") << "regex"
                                                  << "pre_tokenizer.pretokenizers[0].pattern";
        QTest::newRow("prefix space") << "prefix"
                                      << "pre_tokenizer.add_prefix_space";
        QTest::newRow("Metaspace pre-tokenizer") << "metaspace"
                                                 << "pre_tokenizer";
        QTest::newRow("llama3 regex keeping merges") << "merges"
                                                     << "model.ignore_merges";
        QTest::newRow("BPE without byte-level decoder") << "decoder"
                                                        << "decoder.type";
        QTest::newRow("lowercase normalizer") << "lowercase"
                                              << "normalizer.type";
        QTest::newRow("more tokens than rows") << "rows"
                                               << "model.vocab";
        QTest::newRow("gap before an added token") << "gap"
                                                   << "added_tokens";
    }
    void unsupportedTokenizers() {
        QFETCH(QString, edit);
        QFETCH(QString, field);
        const std::string dir = writeModel("vocab-bad-" + edit);
        json t = byteLevelTokenizer({{"type", "ByteLevel"}}, false);
        if (edit == "wordpiece")
            t["model"]["type"] = "WordPiece";
        else if (edit == "regex")
            t["pre_tokenizer"] = splitThenByteLevel(R"(\p{L}+|\s+)");
        else if (edit == "prefix")
            t["pre_tokenizer"]["add_prefix_space"] = true;
        else if (edit == "metaspace")
            t["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}};
        else if (edit == "merges")
            t["pre_tokenizer"] = splitThenByteLevel(kLlama3Regex);
        else if (edit == "decoder")
            t["decoder"] = {{"type", "WordPiece"}};
        else if (edit == "lowercase")
            t["normalizer"] = {{"type", "Lowercase"}};
        else if (edit == "rows") // added tokens up to id 600, past the 512 rows
            for (int id = 267; id <= 600; ++id)
                t["added_tokens"].push_back(
                    {{"id", id}, {"content", "<extra" + std::to_string(id) + ">"}});
        if (edit == "gap") { // the synthetic (sentencepiece-style) tokenizer, one id skipped
            json sp = readJson(dir + "/tokenizer.json");
            sp["added_tokens"].push_back({{"id", sp["model"]["vocab"].size() + 1},
                                          {"content", "<tool>"},
                                          {"special", true}});
            writeJson(dir + "/tokenizer.json", sp);
        } else {
            useByteLevel(dir, t);
        }
        const qs::Error e = refusal(dir);
        QCOMPARE(QString::fromStdString(e.source()),
                 QString::fromStdString(dir + "/tokenizer.json"));
        QCOMPARE(QString::fromStdString(e.field()), field);
        QVERIFY2(!e.reason().empty(), e.what());
        if (edit == "rows")
            QVERIFY2(e.reason().find("config.json") != std::string::npos, e.what());

        bool refused = false;
        try {
            exportGguf(dir, "vocab-bad-out-" + edit);
        } catch (const qs::Error& again) {
            refused = again.field() == e.field();
        }
        QVERIFY(refused);
        QVERIFY(!QFileInfo::exists(qs::test::tempDir("vocab-bad-out-" + edit) + "/gguf"));
    }
};

QS_TEST_GUILESS_MAIN(TestGgufVocab)
#include "tst_ggufvocab.moc"

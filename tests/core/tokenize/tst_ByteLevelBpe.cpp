// Byte-level BPE (GPT-2, Llama-3, Qwen2 pre-tokenization) against Hugging Face `tokenizers`.
//
// Reference ids, counts and checksums below were produced once, offline, with Hugging Face
// tokenizers 0.23.3 (pip, in a throwaway venv outside the repository):
//   GPT-2:   Tokenizer(models.BPE.from_file(vocab.json, merges.txt)) with
//            pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel() and
//            add_special_tokens(["<|endoftext|>"]); encode(text, add_special_tokens=False).
//   Llama-3 / Qwen2: Tokenizer.from_file() of the same tokenizer.json that writeSplitTokenizer()
//            below builds from the same GPT-2 vocab/merges (their pre-tokenizer regexes, NFC for
//            Qwen2, ignore_merges for Llama-3), so the split scanners are checked against the real
//            Oniguruma regexes.
// Files are read as bytes (no newline translation). Checksum: FNV-1a 64 over the ids as
// little-endian int32 (see fnv1a()).

#include "TestMain.h"
#include "TestSupport.h"
#include "TokenizerTestUtil.h"

#include "tokenize/HfBpeTokenizer.h"

#include <QElapsedTimer>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using qs::HfBpeTokenizer;
using qs::test::fnv1a;
using qs::test::readBytes;

namespace {

QString gpt2File(const char* name) {
    return qs::test::sharedPath(QStringLiteral("tokenizers/gpt2/") + name);
}

std::unique_ptr<HfBpeTokenizer> gpt2() {
    return HfBpeTokenizer::fromVocabAndMerges(gpt2File("vocab.json").toStdString(),
                                              gpt2File("merges.txt").toStdString());
}

// The Llama-3 and Qwen2 split regexes as published in their tokenizer.json files.
const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A Llama-3 / Qwen2 style tokenizer.json over the GPT-2 vocabulary (the real ones are not in
// ../shared): Split regex + ByteLevel(use_regex=false), a BOS template and two extra added tokens.
QString writeSplitTokenizer(const QString& flavour) {
    const bool qwen = flavour == "qwen2";
    nlohmann::json vocab = nlohmann::json::parse(readBytes(gpt2File("vocab.json")));
    nlohmann::json merges = nlohmann::json::array();
    std::istringstream lines(readBytes(gpt2File("merges.txt")));
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.rfind("#version", 0) == 0)
            continue;
        const size_t sp = line.find(' ');
        merges.push_back({line.substr(0, sp), line.substr(sp + 1)});
    }
    const int n = static_cast<int>(vocab.size());
    auto added = [](int id, const char* content, bool special) {
        return nlohmann::json{{"id", id},          {"content", content}, {"single_word", false},
                              {"lstrip", false},   {"rstrip", false},    {"normalized", false},
                              {"special", special}};
    };
    nlohmann::json byteLevel = {{"type", "ByteLevel"},
                                {"add_prefix_space", false},
                                {"trim_offsets", true},
                                {"use_regex", false}};
    nlohmann::json root = {
        {"version", "1.0"},
        {"added_tokens",
         {added(50256, "<|endoftext|>", true), added(n, "<|begin_of_text|>", true),
          added(n + 1, "<|im_start|>", false)}},
        {"normalizer", qwen ? nlohmann::json{{"type", "NFC"}} : nlohmann::json()},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", qwen ? kQwen2Regex : kLlama3Regex}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            byteLevel}}}},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single",
           {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"special_tokens",
           {{"<|begin_of_text|>",
             {{"id", "<|begin_of_text|>"}, {"ids", {n}}, {"tokens", {"<|begin_of_text|>"}}}}}}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", !qwen},
          {"vocab", vocab},
          {"merges", merges}}}};
    const QString path = qs::test::tempDir(flavour) + "/tokenizer.json";
    std::ofstream(path.toStdString()) << root.dump();
    return path;
}

const std::vector<std::string> kCases = {
    "Hello world",
    "I'm sure they'll say it's John's; we've, you're, I'd, DON'T, She'S 'tis",
    "The year 2023 had 365 days and 1,234,567.89 dollars; 12345678 ²½",
    "naïve café — Ελληνικά, русский, 日本語, 한국어",
    "emoji 🙂👍🏽 and 👨‍👩‍👧 family",
    "multiple   spaces\tand\ttabs   ",
    "line one\nline two\r\n\n\nend\n",
    "  leading and trailing  ",
    "<|endoftext|>special token inside<|endoftext|> and <|endoftext|>",
    "(parenthesised) 'quoted' \"double\" ...!?",
    "x!!!\n\nfoo \n  bar\t\tbaz\u00a0qux  \r\n",
    "abc123456def 7 88 999 0000 ٣٤",
    "\thello, ''world'' (big) 'LL 'Re 'VE",
};

// clang-format off
const std::vector<std::vector<int32_t>> kGpt2Ids = {
    {15496, 995},
    {40, 1101, 1654, 484, 1183, 910, 340, 338, 1757, 338, 26, 356, 1053, 11, 345, 821, 11, 314, 1549, 11, 23917, 6, 51, 11, 1375, 6, 50, 705, 48010},
    {464, 614, 1160, 1954, 550, 21268, 1528, 290, 352, 11, 24409, 11, 20, 3134, 13, 4531, 5054, 26, 17031, 2231, 30924, 1587, 110, 23141},
    {2616, 38776, 40304, 851, 7377, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105, 11, 220, 21169, 35072, 21727, 21727, 31583, 18849, 140, 117, 11, 10545, 245, 98, 17312, 105, 45739, 252, 11, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
    {368, 31370, 32485, 41840, 235, 8582, 237, 121, 290, 50169, 101, 447, 235, 41840, 102, 447, 235, 41840, 100, 1641},
    {48101, 220, 220, 9029, 197, 392, 197, 8658, 82, 220, 220, 220},
    {1370, 530, 198, 1370, 734, 201, 628, 198, 437, 198},
    {220, 3756, 290, 25462, 220, 220},
    {50256, 20887, 11241, 2641, 50256, 290, 220, 50256},
    {7, 8000, 956, 1417, 8, 705, 421, 5191, 6, 366, 23352, 1, 2644, 22857},
    {87, 10185, 198, 198, 21943, 220, 198, 220, 2318, 197, 197, 65, 1031, 1849, 421, 87, 220, 220, 201, 198},
    {39305, 10163, 29228, 4299, 767, 9193, 36006, 17643, 18923, 96, 149, 97},
    {197, 31373, 11, 10148, 6894, 7061, 357, 14261, 8, 705, 3069, 705, 3041, 705, 6089},
};
const std::vector<std::vector<int32_t>> kLlama3Ids = {
    {15496, 995},
    {40, 1101, 1654, 484, 1183, 910, 340, 338, 1757, 338, 26, 356, 1053, 11, 345, 821, 11, 314, 1549, 11, 23917, 6, 51, 11, 1375, 6, 50, 705, 48010},
    {464, 614, 220, 19004, 18, 550, 220, 24760, 1528, 290, 220, 16, 11, 24409, 11, 20, 3134, 13, 4531, 5054, 26, 220, 10163, 29228, 3695, 220, 31185, 23141},
    {2616, 38776, 40304, 851, 7377, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105, 11, 220, 21169, 35072, 21727, 21727, 31583, 18849, 140, 117, 11, 10545, 245, 98, 17312, 105, 45739, 252, 11, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
    {368, 31370, 32485, 41840, 235, 8582, 237, 121, 290, 50169, 101, 447, 235, 41840, 102, 447, 235, 41840, 100, 1641},
    {48101, 220, 220, 9029, 197, 392, 197, 8658, 82, 220, 220, 220},
    {1370, 530, 198, 1370, 734, 201, 628, 198, 437, 198},
    {220, 3756, 290, 25462, 220, 220},
    {50256, 20887, 11241, 2641, 50256, 290, 220, 50256},
    {7, 8000, 956, 1417, 8, 705, 421, 5191, 6, 366, 23352, 1, 2644, 22857},
    {87, 10185, 628, 21943, 220, 198, 220, 2318, 197, 197, 65, 1031, 1849, 421, 87, 220, 220, 201, 198},
    {39305, 10163, 29228, 4299, 220, 22, 220, 3459, 220, 17032, 220, 830, 15, 220, 149, 96, 149, 97},
    {197, 31373, 11, 10148, 6894, 7061, 357, 14261, 8, 705, 3069, 705, 3041, 705, 6089},
};
const std::vector<std::vector<int32_t>> kQwen2Ids = {
    {15496, 995},
    {40, 1101, 1654, 484, 1183, 910, 340, 338, 1757, 338, 26, 356, 1053, 11, 345, 821, 11, 314, 1549, 11, 23917, 6, 51, 11, 1375, 6, 50, 705, 48010},
    {464, 614, 220, 17, 15, 17, 18, 550, 220, 18, 21, 20, 1528, 290, 220, 16, 11, 17, 18, 19, 11, 20, 21, 22, 13, 23, 24, 5054, 26, 220, 16, 17, 18, 19, 20, 21, 22, 23, 220, 31185, 23141},
    {2616, 38776, 40304, 851, 7377, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105, 11, 220, 21169, 35072, 21727, 21727, 31583, 18849, 140, 117, 11, 10545, 245, 98, 17312, 105, 45739, 252, 11, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
    {368, 31370, 32485, 41840, 235, 8582, 237, 121, 290, 50169, 101, 447, 235, 41840, 102, 447, 235, 41840, 100, 1641},
    {48101, 220, 220, 9029, 197, 392, 197, 8658, 82, 220, 220, 220},
    {1370, 530, 198, 1370, 734, 201, 628, 198, 437, 198},
    {220, 3756, 290, 25462, 220, 220},
    {50256, 20887, 11241, 2641, 50256, 290, 220, 50256},
    {7, 8000, 956, 1417, 8, 705, 421, 5191, 6, 366, 23352, 1, 2644, 22857},
    {87, 10185, 628, 21943, 220, 198, 220, 2318, 197, 197, 65, 1031, 1849, 421, 87, 220, 220, 201, 198},
    {39305, 16, 17, 18, 19, 20, 21, 4299, 220, 22, 220, 23, 23, 220, 24, 24, 24, 220, 15, 15, 15, 15, 220, 149, 96, 149, 97},
    {197, 31373, 11, 10148, 6894, 7061, 357, 14261, 8, 705, 3069, 705, 3041, 705, 6089},
};
// clang-format on

} // namespace

class TestByteLevelBpe : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void gpt2TrickyStrings() {
        const auto tok = gpt2();
        QCOMPARE(tok->vocabSize(), 50257);
        QCOMPARE(tok->eosId(), 50256);
        QCOMPARE(kCases.size(), kGpt2Ids.size());
        for (size_t i = 0; i < kCases.size(); ++i) {
            const auto ids = tok->encode(kCases[i]);
            if (ids != kGpt2Ids[i])
                qWarning("case %zu: %s", i, kCases[i].c_str());
            QCOMPARE(ids, kGpt2Ids[i]);
        }
    }

    // Byte-level BPE is lossless: decoding gives the text back, except that special tokens are
    // skipped (as Hugging Face's decode(skip_special_tokens=True)).
    void gpt2RoundTrip() {
        const auto tok = gpt2();
        for (const std::string& text : kCases) {
            if (text.find("<|endoftext|>") != std::string::npos)
                continue;
            QCOMPARE(tok->decode(tok->encode(text)), text);
        }
        QCOMPARE(tok->decode(tok->encode(kCases[8])), std::string("special token inside and "));
        QCOMPARE(tok->encode(""), std::vector<int32_t>{});
        QCOMPARE(tok->decode({}), std::string());
    }

    // A character split across tokens: decoding one part gives U+FFFD per maximal invalid
    // subsequence, like Rust's from_utf8_lossy (reference: tokenizers' decode of the same ids).
    void gpt2DecodePartialCharacter() {
        const auto tok = gpt2();
        QCOMPARE(tok->encode("🙂"), (std::vector<int32_t>{8582, 25081}));
        QCOMPARE(tok->decode({8582}), std::string("\xEF\xBF\xBD"));
        QCOMPARE(tok->decode({25081}), std::string("\xEF\xBF\xBD\xEF\xBF\xBD"));
        QCOMPARE(tok->decode({8582, 25081}), std::string("🙂"));
    }

    void gpt2WholeWikitextMatchesReference() {
        const auto tok = gpt2();
        const std::string text = readBytes(qs::test::sharedPath("data/wikitext2-test.txt"));
        QElapsedTimer timer;
        timer.start();
        const auto ids = tok->encode(text);
        const qint64 ms = timer.elapsed();
        qInfo("GPT-2 BPE: %zu bytes -> %zu ids in %lld ms", text.size(), ids.size(), ms);
        QCOMPARE(ids.size(), size_t(287644));
        QCOMPARE(fnv1a(ids), 0xcaba192b7bd76080ULL);
        QCOMPARE(tok->decode(ids), text);
    }

    void gpt2TinyStoriesMatchesReference() {
        const auto tok = gpt2();
        const auto ids = tok->encode(readBytes(qs::test::sharedPath("data/tinystories-eval.txt")));
        QCOMPARE(ids.size(), size_t(5376));
        QCOMPARE(fnv1a(ids), 0x66f933e9c9d9386fULL);
    }

    void splitPatterns_data() {
        QTest::addColumn<QString>("flavour");
        QTest::newRow("llama3") << "llama3";
        QTest::newRow("qwen2") << "qwen2";
    }

    void splitPatterns() {
        QFETCH(QString, flavour);
        const auto tok =
            HfBpeTokenizer::fromTokenizerJson(writeSplitTokenizer(flavour).toStdString());
        const auto& expected = flavour == "qwen2" ? kQwen2Ids : kLlama3Ids;
        QCOMPARE(kCases.size(), expected.size());
        for (size_t i = 0; i < kCases.size(); ++i) {
            const auto ids = tok->encode(kCases[i]);
            if (ids != expected[i])
                qWarning("case %zu: %s", i, kCases[i].c_str());
            QCOMPARE(ids, expected[i]);
        }
        // Added tokens: special and not, and the BOS the post-processor template adds.
        QCOMPARE(tok->encode("<|im_start|>user"), (std::vector<int32_t>{50258, 7220}));
        QCOMPARE(tok->templateBosId(), 50257);
        QCOMPARE(tok->bosId(), 50257);
        QCOMPARE(tok->vocabSize(), 50259);
        QCOMPARE(tok->decode({50258, 7220, 50257}), std::string("<|im_start|>user"));
        QCOMPARE(tok->kind(), std::string("hf-bpe-bytelevel"));
    }

    void splitPatternsWholeWikitext_data() {
        QTest::addColumn<QString>("flavour");
        QTest::addColumn<qulonglong>("count");
        QTest::addColumn<qulonglong>("checksum");
        QTest::newRow("llama3") << "llama3" << 297906ULL << 0x15d84240e3e7ab2cULL;
        QTest::newRow("qwen2") << "qwen2" << 307739ULL << 0x10bb02fa90b14e34ULL;
    }

    void splitPatternsWholeWikitext() {
        QFETCH(QString, flavour);
        QFETCH(qulonglong, count);
        QFETCH(qulonglong, checksum);
        const auto tok =
            HfBpeTokenizer::fromTokenizerJson(writeSplitTokenizer(flavour).toStdString());
        const std::string text = readBytes(qs::test::sharedPath("data/wikitext2-test.txt"));
        const auto ids = tok->encode(text);
        QCOMPARE(ids.size(), size_t(count));
        QCOMPARE(fnv1a(ids), uint64_t(checksum));
        QCOMPARE(tok->decode(ids), text);
    }
};

QS_TEST_GUILESS_MAIN(TestByteLevelBpe)
#include "tst_ByteLevelBpe.moc"

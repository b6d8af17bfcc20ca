// Bad tokenizer files give a qs::Error whose message names the file (and the field), never a
// crash or a silently wrong tokenizer.

#include "TestMain.h"
#include "TestSupport.h"

#include "tokenize/HfBpeTokenizer.h"
#include "tokenize/TokenizerLoader.h"
#include "util/Error.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QtTest>

using qs::HfBpeTokenizer;
using qs::TokenizerBackend;
using qs::TokenizerLoader;

namespace {

QString writeFile(const QString& dir, const QString& name, const QByteArray& bytes) {
    const QString path = dir + "/" + name;
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size())
        qFatal("cannot write %s", qPrintable(path));
    return path;
}

// A small valid byte-fallback BPE tokenizer.json with `model` spliced in.
QByteArray tokenizerJson(const QByteArray& model, const QByteArray& preTokenizer = "null") {
    return R"({"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": )" +
           preTokenizer + R"(, "post_processor": null, "decoder": null, "model": )" + model + "}";
}

const QByteArray kGoodModel =
    R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";

// Runs `f`, expects qs::Error, and returns its message.
template <typename F> std::string errorOf(F f) {
    try {
        f();
    } catch (const qs::Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("unexpected exception type: ") + e.what();
    }
    return "no exception";
}

bool contains(const std::string& haystack, const QString& needle) {
    return haystack.find(needle.toStdString()) != std::string::npos;
}

} // namespace

class TestTokenizerErrors : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void validMinimalTokenizer() {
        // The baseline the broken variants below differ from.
        const QString dir = qs::test::tempDir("tok-valid");
        const auto tok = HfBpeTokenizer::fromTokenizerJson(
            writeFile(dir, "tokenizer.json", tokenizerJson(kGoodModel)).toStdString());
        QCOMPARE(tok->encode("abba"), (std::vector<int32_t>{2, 1, 0}));
    }

    void missingFile() {
        const QString path = qs::test::tempDir("tok-missing") + "/tokenizer.json";
        const std::string msg =
            errorOf([&] { HfBpeTokenizer::fromTokenizerJson(path.toStdString()); });
        QVERIFY2(contains(msg, path), msg.c_str());
        QVERIFY2(contains(msg, "cannot open"), msg.c_str());
    }

    void corruptJson() {
        const QString dir = qs::test::tempDir("tok-corrupt");
        const QString path = writeFile(dir, "tokenizer.json", tokenizerJson(kGoodModel).left(60));
        const std::string msg =
            errorOf([&] { HfBpeTokenizer::fromTokenizerJson(path.toStdString()); });
        QVERIFY2(contains(msg, path), msg.c_str());
        QVERIFY2(contains(msg, "not valid JSON"), msg.c_str());
    }

    void unsupportedModels_data() {
        QTest::addColumn<QByteArray>("model");
        QTest::addColumn<QByteArray>("preTokenizer");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown model type")
            << QByteArray(R"({"type": "WordPiece", "vocab": {"a": 0}})") << QByteArray("null")
            << "model.type";
        QTest::newRow("merge of unknown token")
            << QByteArray(R"({"type": "BPE", "vocab": {"a": 0, "ab": 2}, "merges": ["a b"]})")
            << QByteArray("null") << "model.merges[0]";
        QTest::newRow("merge without result")
            << QByteArray(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]})")
            << QByteArray("null") << "model.merges[0]";
        QTest::newRow("malformed merge")
            << QByteArray(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]})")
            << QByteArray("null") << "model.merges[0]";
        QTest::newRow("vocab not an object")
            << QByteArray(R"({"type": "BPE", "vocab": [1, 2], "merges": []})") << QByteArray("null")
            << "model.vocab";
        QTest::newRow("unknown unk token")
            << QByteArray(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<u>"})")
            << QByteArray("null") << "model.unk_token";
        QTest::newRow("unsupported split regex")
            << kGoodModel
            << QByteArray(
                   R"({"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated"})")
            << "pre_tokenizer.pattern.Regex";
        QTest::newRow("unknown pre-tokenizer")
            << kGoodModel << QByteArray(R"({"type": "BertPreTokenizer"})") << "pre_tokenizer.type";
    }

    void unsupportedModels() {
        QFETCH(QByteArray, model);
        QFETCH(QByteArray, preTokenizer);
        QFETCH(QString, expected);
        const QString dir = qs::test::tempDir("tok-bad");
        const QString path = writeFile(dir, "tokenizer.json", tokenizerJson(model, preTokenizer));
        const std::string msg =
            errorOf([&] { HfBpeTokenizer::fromTokenizerJson(path.toStdString()); });
        QVERIFY2(contains(msg, path), msg.c_str());
        QVERIFY2(contains(msg, expected), msg.c_str());
    }

    void badMergesTxt() {
        const QString dir = qs::test::tempDir("tok-merges");
        const QString vocab = writeFile(dir, "vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
        const QString merges = writeFile(dir, "merges.txt", "#version: 0.2\na b\na b c\n");
        const std::string msg = errorOf(
            [&] { HfBpeTokenizer::fromVocabAndMerges(vocab.toStdString(), merges.toStdString()); });
        QVERIFY2(contains(msg, merges), msg.c_str());
        QVERIFY2(contains(msg, "line 3"), msg.c_str());
    }

    void loaderNamesEveryFileTried() {
        const QString dir = qs::test::tempDir("tok-empty");
        const std::string msg = errorOf([&] { TokenizerLoader::load(dir.toStdString()); });
        QVERIFY2(contains(msg, dir + "/tokenizer.model"), msg.c_str());
        QVERIFY2(contains(msg, dir + "/tokenizer.json"), msg.c_str());
        QVERIFY2(contains(msg, "not found"), msg.c_str());
    }

    void loaderReportsBrokenTokenizerJson() {
        const QString dir = qs::test::tempDir("tok-loader-bad");
        writeFile(dir, "tokenizer.json",
                  tokenizerJson(R"({"type": "Unigram", "vocab": [["a", 0.0]]})"));
        const std::string msg = errorOf(
            [&] { TokenizerLoader::load(dir.toStdString(), TokenizerBackend::HuggingFace); });
        QVERIFY2(contains(msg, dir + "/tokenizer.json"), msg.c_str());
        QVERIFY2(contains(msg, "Unigram"), msg.c_str());
    }

    void loaderReportsCorruptConfig() {
        const QString dir = qs::test::tempDir("tok-loader-config");
        writeFile(dir, "tokenizer.json", tokenizerJson(kGoodModel));
        writeFile(dir, "tokenizer_config.json", "{\"add_bos_token\": tru");
        const std::string msg = errorOf([&] { TokenizerLoader::load(dir.toStdString()); });
        QVERIFY2(contains(msg, dir + "/tokenizer_config.json"), msg.c_str());
    }

    void loaderMissingDirectory() {
        const QString dir = qs::test::tempDir("tok-gone") + "/nothing-here";
        const std::string msg = errorOf([&] { TokenizerLoader::load(dir.toStdString()); });
        QVERIFY2(contains(msg, dir), msg.c_str());
        QVERIFY2(contains(msg, "does not exist"), msg.c_str());
    }

    // ---- hostile files (fuzz/regressions/fuzz_tokenizer_*): a clean qs::Error naming the file,
    // the field and the limit, never another exception, a huge allocation or a wrapped id ----

    void hostileTokenizerJson_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("expected"); // in the message besides the path
        // nlohmann throws out_of_range, not parse_error, for a number no double holds.
        QTest::newRow("number beyond double")
            << tokenizerJson(R"({"type": "BPE", "vocab": {"a": 1e400}, "merges": []})")
            << "not valid JSON";
        // An id of 2^31 - 1 sized the id table at 2^31 strings (and overflowed maxId + 1).
        QTest::newRow("vocab id int32 max")
            << tokenizerJson(R"({"type": "BPE", "vocab": {"a": 2147483647}, "merges": []})")
            << "kMaxTokenId";
        QTest::newRow("vocab id beyond int32")
            << tokenizerJson(R"({"type": "BPE", "vocab": {"a": 4294967296}, "merges": []})")
            << "model.vocab";
        QTest::newRow("negative added token id")
            << QByteArray(R"({"added_tokens": [{"id": -7, "content": "x"}], "model": )" +
                          kGoodModel + "}")
            << "added_tokens[0].id";
        QTest::newRow("post-processor BOS not a token")
            << QByteArray(
                   R"({"post_processor": {"type": "BertProcessing", "cls": ["<s>", 99999]}, "model": )" +
                   kGoodModel + "}")
            << "post_processor";
        // json::value() threw nlohmann's type_error for these.
        QTest::newRow("strip decoder start not a number")
            << QByteArray(R"({"decoder": {"type": "Strip", "start": "x"}, "model": )" + kGoodModel +
                          "}")
            << "decoder.start";
        QTest::newRow("post-processor type not a string")
            << QByteArray(R"({"post_processor": {"type": 7}, "model": )" + kGoodModel + "}")
            << "post_processor.type";
        QTest::newRow("nesting") << QByteArray("{\"model\": " + QByteArray(3000, '[') + "]")
                                 << "kMaxJsonDepth";
        QByteArray steps = R"({"type": "Sequence", "decoders": [)";
        for (int i = 0; i < 300; ++i)
            steps += QByteArray(i ? "," : "") + R"({"type": "Fuse"})";
        QTest::newRow("too many decoder steps")
            << QByteArray(R"({"decoder": )" + steps + R"(]}, "model": )" + kGoodModel + "}")
            << "kMaxPipelineSteps";
    }
    void hostileTokenizerJson() {
        QFETCH(QByteArray, json);
        QFETCH(QString, expected);
        const QString dir = qs::test::tempDir("tok-hostile");
        const QString path = writeFile(dir, "tokenizer.json", json);
        const std::string msg =
            errorOf([&] { HfBpeTokenizer::fromTokenizerJson(path.toStdString()); });
        QVERIFY2(contains(msg, path), msg.c_str());
        QVERIFY2(contains(msg, expected), msg.c_str());
    }

    void manyAddedTokensLoad() {
        // Each added token used to re-sort its whole bucket (n^2 log n for tokens sharing a first
        // byte). Plain strings here: moc mis-lexes some raw string literals.
        QByteArray added = "[";
        for (int i = 0; i < 20000; ++i)
            added += QString("%1{\"id\": %2, \"content\": \"<t%3>\", \"special\": true}")
                         .arg(i ? "," : "")
                         .arg(3 + i)
                         .arg(i)
                         .toUtf8();
        const QString dir = qs::test::tempDir("tok-many-added");
        const QString path =
            writeFile(dir, "tokenizer.json",
                      "{\"added_tokens\": " + added + "], \"model\": " + kGoodModel + "}");
        QElapsedTimer timer;
        timer.start();
        const auto tok = HfBpeTokenizer::fromTokenizerJson(path.toStdString());
        // Printed, not bounded (wall-clock bounds fail on a loaded machine).
        qInfo("20000 added tokens loaded in %lld ms", static_cast<long long>(timer.elapsed()));
        QCOMPARE(tok->encode("ab<t19999>b<t7>"), (std::vector<int32_t>{2, 20002, 1, 10}));
    }

    void configIdsDoNotWrapAround() {
        // 4294967298 used to be read as int32 (2, a valid id): it is not a token id.
        const QString dir = qs::test::tempDir("tok-wrap");
        writeFile(dir, "tokenizer.json", tokenizerJson(kGoodModel));
        writeFile(dir, "tokenizer_config.json", R"({"eos_token": "<missing>"})");
        writeFile(dir, "config.json", R"({"eos_token_id": 4294967298, "bos_token_id": [-1]})");
        const qs::LoadedTokenizer loaded =
            TokenizerLoader::load(dir.toStdString(), TokenizerBackend::HuggingFace);
        QCOMPARE(loaded.tokenizer->eosId(), -1);
        QCOMPARE(loaded.tokenizer->bosId(), -1);
    }

    void loaderReportsNumberBeyondDouble() {
        const QString dir = qs::test::tempDir("tok-loader-1e400");
        writeFile(dir, "tokenizer.json", tokenizerJson(kGoodModel));
        writeFile(dir, "tokenizer_config.json", R"({"model_max_length": 1e400})");
        const std::string msg = errorOf(
            [&] { TokenizerLoader::load(dir.toStdString(), TokenizerBackend::HuggingFace); });
        QVERIFY2(contains(msg, dir + "/tokenizer_config.json"), msg.c_str());
        QVERIFY2(contains(msg, "not valid JSON"), msg.c_str());
    }
};

QS_TEST_GUILESS_MAIN(TestTokenizerErrors)
#include "tst_TokenizerErrors.moc"

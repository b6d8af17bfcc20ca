// stories260K's tokenizer.json (sentencepiece-style BPE with byte fallback) against Python's
// tokenizers, and TokenizerLoader's fallbacks to it: nothing here needs the sentencepiece plugin,
// so this suite runs in every build, the headless one (QS_WITH_SENTENCEPIECE=OFF) included. The
// comparisons with the plugin are tst_SentencePieceTokenizers.
//
// References, produced once offline on the files read as bytes:
//   tokenizer.json: Hugging Face tokenizers 0.23.3 (pip, throwaway venv outside the repository),
//     Tokenizer.from_file(tokenizer.json).encode(text, add_special_tokens=False).ids
// Checksum: FNV-1a 64 over the ids as little-endian int32 (TokenizerTestUtil.h).
#include "TestMain.h"
#include "TestSupport.h"
#include "TokenizerTestUtil.h"

#include "tokenize/TokenizerLoader.h"
#include "util/Error.h"

#include <QFile>
#include <QtTest>

#include <sstream>

using qs::LoadedTokenizer;
using qs::TokenizerBackend;
using qs::TokenizerLoader;
using qs::test::fnv1a;
using qs::test::readBytes;

namespace {

std::string modelDir() {
    return qs::test::sharedPath("models/stories260K").toStdString();
}

std::string dataFile(const char* name) {
    return readBytes(qs::test::sharedPath(QStringLiteral("data/") + name));
}

const std::vector<int32_t> kOnceUponATime = {403, 407, 261, 378}; // docs/pitfalls.md

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A temporary model folder with some of stories260K's files, or with broken replacements.
QString makeDir(const QString& name, const QStringList& copied,
                const QList<QPair<QString, QByteArray>>& written = {}) {
    const QString dir = qs::test::tempDir(name);
    for (const QString& f : copied)
        QFile::copy(qs::test::sharedPath("models/stories260K/" + f), dir + "/" + f);
    for (const auto& [f, bytes] : written) {
        QFile out(dir + "/" + f);
        if (!out.open(QIODevice::WriteOnly) || out.write(bytes) != bytes.size())
            qFatal("cannot write %s", qPrintable(out.fileName()));
    }
    return dir;
}

} // namespace

class TestStoriesTokenizerJson : public QObject {
    Q_OBJECT

private:
    LoadedTokenizer m_hf;

private Q_SLOTS:
    void initTestCase() {
        m_hf = TokenizerLoader::load(modelDir(), TokenizerBackend::HuggingFace);
        QVERIFY(m_hf.tokenizer);
    }

    void hfJsonBasics() {
        QCOMPARE(m_hf.tokenizer->kind(), std::string("hf-bpe"));
        QVERIFY(endsWith(m_hf.sourceFile, "/tokenizer.json"));
        QCOMPARE(m_hf.tokenizer->encode("Once upon a time"), kOnceUponATime);
        QCOMPARE(m_hf.tokenizer->vocabSize(), 512);
        QCOMPARE(m_hf.tokenizer->bosId(), 1);
        QCOMPARE(m_hf.tokenizer->eosId(), 2);
        QVERIFY(m_hf.addBos);
        // Byte fallback for characters outside the 512-piece vocabulary (reference: both
        // Python libraries give these ids).
        const std::vector<int32_t> expected = {270, 485, 306, 414, 410, 233, 154, 168,
                                               233, 159, 175, 410, 243, 162, 156, 133};
        QCOMPARE(m_hf.tokenizer->encode("héllo 日本 🙂"), expected);
        QCOMPARE(m_hf.tokenizer->decode(expected), std::string("héllo 日本 🙂"));
    }

    void hfJsonMatchesPythonTokenizers_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<qulonglong>("count");
        QTest::addColumn<qulonglong>("checksum");
        QTest::newRow("tinystories-eval")
            << "tinystories-eval.txt" << 11475ULL << 0xf55500937e244be2ULL;
        QTest::newRow("wikitext2-test")
            << "wikitext2-test.txt" << 815069ULL << 0xa2ff792e98a05560ULL;
    }

    void hfJsonMatchesPythonTokenizers() {
        QFETCH(QString, file);
        QFETCH(qulonglong, count);
        QFETCH(qulonglong, checksum);
        const auto ids = m_hf.tokenizer->encode(dataFile(qPrintable(file)));
        QCOMPARE(ids.size(), size_t(count));
        QCOMPARE(fnv1a(ids), uint64_t(checksum));
    }

    // tokenizer.json's Prepend + Replace normalizer keeps runs of spaces and leading and
    // trailing spaces (sentencepiece's remove_extra_whitespaces does not; reference ids from
    // Python's tokenizers).
    void whitespaceIsKept() {
        QCOMPARE(m_hf.tokenizer->encode("a  b"), (std::vector<int32_t>{261, 410, 268}));
        QCOMPARE(m_hf.tokenizer->encode(" a b "), (std::vector<int32_t>{410, 261, 268, 410}));
    }

    void decodeRoundTrip() {
        std::istringstream lines(dataFile("tinystories-eval.txt"));
        int checked = 0;
        for (std::string line; std::getline(lines, line) && checked < 40;) {
            if (line.empty() || line.front() == ' ' || line.find("  ") != std::string::npos)
                continue;
            QCOMPARE(m_hf.tokenizer->decode(m_hf.tokenizer->encode(line)), line);
            ++checked;
        }
        QCOMPARE(checked, 12); // the file's lines without a leading or a double space
        const std::string unicode = "Tom said: «ça va?» 🙂\nThe end.";
        QCOMPARE(m_hf.tokenizer->decode(m_hf.tokenizer->encode(unicode)), unicode);
        // Special tokens are skipped when decoding.
        QCOMPARE(m_hf.tokenizer->decode({1, 403, 407, 2}), std::string("Once upon"));
    }

    // Auto on stories260K itself: the plugin's tokenizer.model where the plugin is built, else
    // tokenizer.json with a note that says why tokenizer.model was not used.
    void autoOnStories260K() {
        const LoadedTokenizer t = TokenizerLoader::load(modelDir());
        if (QS_HAVE_SENTENCEPIECE_PLUGIN) {
            QCOMPARE(t.tokenizer->kind(), std::string("sentencepiece"));
            QVERIFY(t.note.empty());
        } else {
            QCOMPARE(t.tokenizer->kind(), std::string("hf-bpe"));
            QVERIFY2(t.note.find("tokenizer.model") != std::string::npos, t.note.c_str());
        }
        QCOMPARE(t.tokenizer->encode("Once upon a time"), kOnceUponATime);
        QVERIFY(t.addBos);
    }

    void autoFallsBackToTokenizerJson() {
        const QString dir = makeDir("json-only", {"tokenizer.json", "tokenizer_config.json"});
        const LoadedTokenizer t = TokenizerLoader::load(dir.toStdString());
        QCOMPARE(t.tokenizer->kind(), std::string("hf-bpe"));
        QVERIFY(t.addBos);
        QCOMPARE(t.tokenizer->encode("Once upon a time"), kOnceUponATime);
        QVERIFY(t.note.empty()); // no tokenizer.model at all: nothing to report
    }

    // A tokenizer.model that is not a protobuf: with or without the plugin, auto falls back to
    // tokenizer.json and says why, and a forced sentencepiece backend names the file.
    void brokenTokenizerModel() {
        const QString dir = makeDir("broken-model", {"tokenizer.json"},
                                    {{"tokenizer.model", QByteArray("not a protobuf at all")}});
        const LoadedTokenizer t = TokenizerLoader::load(dir.toStdString());
        QCOMPARE(t.tokenizer->kind(), std::string("hf-bpe"));
        QVERIFY2(t.note.find("tokenizer.model") != std::string::npos, t.note.c_str());
        // No tokenizer_config.json: BOS from tokenizer.json's TemplateProcessing.
        QVERIFY(t.addBos);
        try {
            TokenizerLoader::load(dir.toStdString(), TokenizerBackend::SentencePiece);
            QFAIL("expected qs::Error");
        } catch (const qs::Error& e) {
            const std::string msg = e.what();
            QVERIFY2(msg.find(dir.toStdString() + "/tokenizer.model") != std::string::npos,
                     msg.c_str());
        }
    }

    void addBosFollowsTokenizerConfig() {
        const QString dir = makeDir("no-bos", {"tokenizer.json"},
                                    {{"tokenizer_config.json", "{\"add_bos_token\": false}"}});
        QVERIFY(!TokenizerLoader::load(dir.toStdString()).addBos);
    }

    void backendNames() {
        QCOMPARE(TokenizerLoader::parseBackend("auto"), TokenizerBackend::Auto);
        QCOMPARE(TokenizerLoader::parseBackend("sentencepiece"), TokenizerBackend::SentencePiece);
        QCOMPARE(TokenizerLoader::parseBackend("hf"), TokenizerBackend::HuggingFace);
        QVERIFY_THROWS_EXCEPTION(qs::Error, TokenizerLoader::parseBackend("bogus"));
        QCOMPARE(TokenizerLoader::backendName(TokenizerBackend::HuggingFace), std::string("hf"));
    }
};

QS_TEST_GUILESS_MAIN(TestStoriesTokenizerJson)
#include "tst_StoriesTokenizerJson.moc"

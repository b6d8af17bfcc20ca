// stories260K's tokenizer through the sentencepiece plugin, against Python's sentencepiece and
// against tokenizer.json (sentencepiece-style BPE with byte fallback), and TokenizerLoader's
// choices where the plugin is there. Needs the plugin: a build without libsentencepiece
// (QS_WITH_SENTENCEPIECE=OFF) skips the whole suite, and ctest shows it Skipped. What needs no
// plugin (tokenizer.json against Python's tokenizers, the loader's fallbacks) is
// tst_StoriesTokenizerJson, which runs in every build.
//
// References, produced once offline on the files read as bytes:
//   sentencepiece: Debian's python3-sentencepiece 0.1.97 (/usr/bin/python3),
//     SentencePieceProcessor(model_file=tokenizer.model).encode(text)
//   tokenizer.json: Hugging Face tokenizers 0.23.3 (pip, throwaway venv outside the repository),
//     Tokenizer.from_file(tokenizer.json).encode(text, add_special_tokens=False).ids
// Checksum: FNV-1a 64 over the ids as little-endian int32 (TokenizerTestUtil.h).

#include "TestMain.h"
#include "TestSupport.h"
#include "TokenizerTestUtil.h"

#include "tokenize/TokenizerLoader.h"
#include "util/Error.h"

#include <QDir>
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

class TestSentencePieceTokenizers : public QObject {
    Q_OBJECT

private:
    LoadedTokenizer m_sp;
    LoadedTokenizer m_hf;

private Q_SLOTS:
    void initTestCase() {
        if (!QS_HAVE_SENTENCEPIECE_PLUGIN)
            QSKIP("built without libsentencepiece (QS_WITH_SENTENCEPIECE=OFF): there is no "
                  "plugin to compare with tokenizer.json");
        m_sp = TokenizerLoader::load(modelDir(), TokenizerBackend::SentencePiece);
        m_hf = TokenizerLoader::load(modelDir(), TokenizerBackend::HuggingFace);
        QVERIFY(m_sp.tokenizer);
        QVERIFY(m_hf.tokenizer);
    }

    void pluginLoadsBesideLibTorch() {
        // This executable links quantscope_core and LibTorch: the plugin's protobuf copy must not
        // clash with LibTorch's (docs/pitfalls.md), which would have aborted initTestCase.
        QCOMPARE(m_sp.tokenizer->kind(), std::string("sentencepiece"));
        QVERIFY(endsWith(m_sp.sourceFile, "/tokenizer.model"));
        QCOMPARE(m_sp.tokenizer->encode("Once upon a time"), kOnceUponATime);
        QCOMPARE(m_sp.tokenizer->vocabSize(), 512);
        QCOMPARE(m_sp.tokenizer->bosId(), 1);
        QCOMPARE(m_sp.tokenizer->eosId(), 2);
        QVERIFY(m_sp.addBos); // tokenizer_config.json: add_bos_token true
    }

    // Byte fallback for characters outside the 512-piece vocabulary: the plugin gives the ids
    // tokenizer.json gives (tst_StoriesTokenizerJson; both Python libraries agree).
    void byteFallbackAgreesWithTokenizerJson() {
        const std::vector<int32_t> expected = {270, 485, 306, 414, 410, 233, 154, 168,
                                               233, 159, 175, 410, 243, 162, 156, 133};
        QCOMPARE(m_hf.tokenizer->encode("héllo 日本 🙂"), expected);
        QCOMPARE(m_sp.tokenizer->encode("héllo 日本 🙂"), expected);
    }

    void pluginMatchesPythonSentencePiece_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<qulonglong>("count");
        QTest::addColumn<qulonglong>("checksum");
        QTest::newRow("tinystories-eval")
            << "tinystories-eval.txt" << 11475ULL << 0xf55500937e244be2ULL;
        QTest::newRow("wikitext2-test")
            << "wikitext2-test.txt" << 815065ULL << 0x21d25be363565f00ULL;
    }

    void pluginMatchesPythonSentencePiece() {
        QFETCH(QString, file);
        QFETCH(qulonglong, count);
        QFETCH(qulonglong, checksum);
        const auto ids = m_sp.tokenizer->encode(dataFile(qPrintable(file)));
        QCOMPARE(ids.size(), size_t(count));
        QCOMPARE(fnv1a(ids), uint64_t(checksum));
    }

    void hfJsonEqualsPluginOnTinyStories() {
        const std::string text = dataFile("tinystories-eval.txt");
        const auto sp = m_sp.tokenizer->encode(text);
        QCOMPARE(m_hf.tokenizer->encode(text), sp);
        QCOMPARE(sp.size(), size_t(11475));
    }

    // tokenizer.model normalizes with remove_extra_whitespaces (runs of spaces collapse, leading
    // and trailing spaces go); tokenizer.json's Prepend + Replace normalizer does not, so the
    // two only agree on text without such runs. Reference ids from both Python libraries:
    // sentencepiece "a  b" -> [261, 268], tokenizers -> [261, 410, 268].
    void knownWhitespaceDifference() {
        QCOMPARE(m_sp.tokenizer->encode("a  b"), (std::vector<int32_t>{261, 268}));
        QCOMPARE(m_hf.tokenizer->encode("a  b"), (std::vector<int32_t>{261, 410, 268}));
        QCOMPARE(m_sp.tokenizer->encode(" a b "), (std::vector<int32_t>{261, 268}));
        QCOMPARE(m_hf.tokenizer->encode(" a b "), (std::vector<int32_t>{410, 261, 268, 410}));
    }

    // wikitext2-test.txt has 4 double spaces (815065 vs 815069 ids above); with them collapsed
    // the two implementations agree on every id of the 1.3 MB text.
    void hfJsonEqualsPluginOnWikitext() {
        std::string text = dataFile("wikitext2-test.txt");
        std::string collapsed;
        collapsed.reserve(text.size());
        for (char c : text) {
            if (!(c == ' ' && !collapsed.empty() && collapsed.back() == ' '))
                collapsed += c;
        }
        QVERIFY(collapsed.size() < text.size());
        const auto sp = m_sp.tokenizer->encode(collapsed);
        const auto hf = m_hf.tokenizer->encode(collapsed);
        QCOMPARE(hf.size(), sp.size());
        QCOMPARE(hf, sp);
        QCOMPARE(sp.size(), size_t(815065)); // the collapsing is what sentencepiece does itself
    }

    void decodeRoundTrip() {
        std::istringstream lines(dataFile("tinystories-eval.txt"));
        int checked = 0;
        for (std::string line; std::getline(lines, line) && checked < 40;) {
            if (line.empty() || line.front() == ' ' || line.find("  ") != std::string::npos)
                continue;
            QCOMPARE(m_sp.tokenizer->decode(m_sp.tokenizer->encode(line)), line);
            QCOMPARE(m_hf.tokenizer->decode(m_hf.tokenizer->encode(line)), line);
            ++checked;
        }
        QVERIFY(checked >= 10);
        const std::string unicode = "Tom said: «ça va?» 🙂\nThe end.";
        QCOMPARE(m_hf.tokenizer->decode(m_hf.tokenizer->encode(unicode)), unicode);
        QCOMPARE(m_sp.tokenizer->decode(m_sp.tokenizer->encode(unicode)), unicode);
        // Special tokens are skipped when decoding.
        QCOMPARE(m_hf.tokenizer->decode({1, 403, 407, 2}), std::string("Once upon"));
    }

    void autoPrefersSentencePiece() {
        const LoadedTokenizer t = TokenizerLoader::load(modelDir());
        QCOMPARE(t.tokenizer->kind(), std::string("sentencepiece"));
        QVERIFY(t.note.empty());
    }

    void bareTokenizerModelAddsBos() {
        const QString dir = makeDir("model-only", {"tokenizer.model"});
        const LoadedTokenizer t = TokenizerLoader::load(dir.toStdString());
        QCOMPARE(t.tokenizer->kind(), std::string("sentencepiece"));
        QVERIFY(t.addBos);
        QVERIFY_THROWS_EXCEPTION(
            qs::Error, TokenizerLoader::load(dir.toStdString(), TokenizerBackend::HuggingFace));
    }

    void pluginSearchPathStartsWithEnvironment() {
        const auto path = TokenizerLoader::pluginSearchPath();
        QVERIFY(!path.empty());
        const QByteArray env = qgetenv("QS_PLUGIN_PATH");
        if (!env.isEmpty())
            QCOMPARE(QString::fromStdString(path.front()),
                     QDir::cleanPath(QDir(QString::fromLocal8Bit(env)).absolutePath()));
        std::string error;
        QVERIFY2(TokenizerLoader::sentencePiecePlugin(&error), error.c_str());
    }
};

QS_TEST_GUILESS_MAIN(TestSentencePieceTokenizers)
#include "tst_SentencePieceTokenizers.moc"

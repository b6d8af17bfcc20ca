// `quantscope-cli tokenize`: the ids of a literal text and of a whole file as `eval` scores it
// (BOS once, then the text's ids), against the references Python's tokenizers and sentencepiece
// gave offline for stories260K (tst_StoriesTokenizerJson, tst_SentencePieceTokenizers: 11475 ids
// of tinystories-eval.txt, FNV-1a 0xf55500937e244be2; "Once upon a time" = 403 407 261 378),
// through either backend and from the GGUF export; usage errors named.
#include "../core/tokenize/TokenizerTestUtil.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "tokenize/TokenizerLoader.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

namespace {

std::vector<int32_t> idsOf(const QJsonObject& j) {
    std::vector<int32_t> ids;
    for (const QJsonValue& v : j["ids"].toArray())
        ids.push_back(int32_t(v.toInt()));
    return ids;
}

} // namespace

class TestCliTokenize : public QObject {
    Q_OBJECT

    QString m_model;

    static QJsonObject json(const QStringList& args) {
        const qs::test::CliRun r =
            qs::test::runCli(QStringList{"tokenize"} + args + QStringList{"--json"});
        if (r.exitCode != 0)
            qFatal("tokenize failed: %s", r.err.constData());
        return QJsonDocument::fromJson(r.out).object();
    }

private Q_SLOTS:
    void initTestCase() { m_model = qs::test::sharedPath("models/stories260K"); }

    void literalText() {
        const qs::test::CliRun r =
            qs::test::runCli({"tokenize", m_model, "--text", "Once upon a time"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, QByteArray("403 407 261 378\n"));
        for (const QString& backend : {QString("auto"), QString("hf")}) {
            const QJsonObject j =
                json({m_model, "--text", "Once upon a time", "--tokenizer", backend});
            QCOMPARE(idsOf(j), (std::vector<int32_t>{403, 407, 261, 378}));
            QCOMPARE(j["count"].toInt(), 4);
            if (backend == "hf")
                QVERIFY2(j["tokenizer"].toString().endsWith("/tokenizer.json"),
                         qPrintable(j["tokenizer"].toString()));
        }
    }

    // --data: BOS (id 1) once, then the ids of the whole file read with universal newlines
    // (tinystories-eval.txt has CRLF; the evaluation protocol reads it as text), i.e. the
    // tokenizer's encoding of the text with CRLF and lone CR made LF. The tokenizer itself is
    // checked against the references on the raw bytes by tst_StoriesTokenizerJson; this checks
    // that the CLI scores what the protocol says.
    void wholeFileAsEvalScoresIt() {
        const QString path = qs::test::sharedPath("data/tinystories-eval.txt");
        const QJsonObject j = json({m_model, "--data", path});
        std::string text = qs::test::readBytes(path);
        const std::string raw = text;
        text =
            QByteArray::fromStdString(text).replace("\r\n", "\n").replace('\r', '\n').toStdString();
        QVERIFY(text.size() < raw.size()); // the file does have CRLF
        const qs::LoadedTokenizer tok = qs::TokenizerLoader::load(m_model.toStdString());
        std::vector<int32_t> expected{tok.tokenizer->bosId()};
        const std::vector<int32_t> body = tok.tokenizer->encode(text);
        expected.insert(expected.end(), body.begin(), body.end());
        QCOMPARE(expected.front(), 1);
        QCOMPARE(idsOf(j), expected);
        QCOMPARE(j["count"].toInt(), int(expected.size()));
        QVERIFY(tok.tokenizer->encode(raw).size() == 11475); // the raw bytes' reference count
    }

    void ggufFileGivesTheSameIds() {
        const QString gguf = qs::test::sharedPath("models/stories260K-gguf/stories260K.gguf");
        QCOMPARE(idsOf(json({gguf, "--text", "Once upon a time"})),
                 (std::vector<int32_t>{403, 407, 261, 378}));
    }

    void usageErrorsAreNamed() {
        qs::test::CliRun r = qs::test::runCli({"tokenize", m_model});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--data") && r.err.contains("--text"), r.err);
        r = qs::test::runCli({"tokenize", m_model, "--text", "a", "--data",
                              qs::test::sharedPath("data/tinystories-eval.txt")});
        QCOMPARE(r.exitCode, 2);
        r = qs::test::runCli({"tokenize", m_model, "--text", "a", "--tokenizer", "bogus"});
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains("bogus"), r.err);
        const QString missing = qs::test::tempDir("tokenize") + "/no-model";
        r = qs::test::runCli({"tokenize", missing, "--text", "a"});
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains(missing.toUtf8()), r.err);
    }
};

QS_TEST_GUILESS_MAIN(TestCliTokenize)
#include "tst_cli_tokenize.moc"

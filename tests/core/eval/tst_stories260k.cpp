// The real shared model (../shared/models/stories260K): reference perplexities of
// docs/evaluation.md and the model's known greedy story opening.
#include "TestMain.h"
#include "TestSupport.h"

#include "eval/TextEvaluation.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <c10/core/InferenceMode.h>

#include <QtTest>

class TestStories260K : public QObject {
    Q_OBJECT

private:
    QString m_model;

private Q_SLOTS:
    void initTestCase() { m_model = qs::test::sharedPath("models/stories260K"); }

    void tinyStoriesPerplexity_data() {
        QTest::addColumn<QString>("tokenizer");
        QTest::newRow("sentencepiece plugin") << "sentencepiece";
        QTest::newRow("tokenizer.json") << "hf";
    }

    void tinyStoriesPerplexity() {
        QFETCH(QString, tokenizer);
        if (tokenizer == "sentencepiece" && !QS_HAVE_SENTENCEPIECE_PLUGIN)
            QSKIP("built without libsentencepiece (QS_WITH_SENTENCEPIECE=OFF): tokenizer.model is "
                  "read through tokenizer.json only");
        qs::EvalRequest req;
        req.evaluation.dataPath = qs::test::sharedPath("data/tinystories-eval.txt").toStdString();
        req.evaluation.seqLen = 256;
        const qs::PerplexityResult r =
            qs::evaluateModelOnText(m_model.toStdString(), req, {},
                                    qs::TokenizerLoader::parseBackend(tokenizer.toStdString()));
        QCOMPARE(r.windows, int64_t(44));
        QCOMPARE(r.seqLen, int64_t(256));
        QCOMPARE(r.tokens, int64_t(11465)); // Python sentencepiece on the text + BOS
        const double rel = std::abs(r.perplexity - 5.7471) / 5.7471;
        QVERIFY2(rel < 1e-4, qPrintable(QString("perplexity %1").arg(r.perplexity, 0, 'f', 6)));
    }

    void wikitextPerplexity() {
        qs::EvalRequest req;
        req.evaluation.dataPath = qs::test::sharedPath("data/wikitext2-test.txt").toStdString();
        req.evaluation.seqLen = 512;
        req.evaluation.maxWindows = 40;
        const qs::PerplexityResult r = qs::evaluateModelOnText(m_model.toStdString(), req);
        QCOMPARE(r.windows, int64_t(40));
        const double rel = std::abs(r.perplexity - 131.01) / 131.01;
        QVERIFY2(rel < 1e-4, qPrintable(QString("perplexity %1").arg(r.perplexity, 0, 'f', 4)));
    }

    void greedyStoryOpening() {
        c10::InferenceMode guard;
        const qs::GenerationResult r = qs::generateFromPrompt(
            m_model.toStdString(), "Once upon a time", 30, qs::ComputeOptions{});
        QVERIFY2(
            QString::fromStdString(r.text).startsWith(
                ", there was a little girl named Lily. She loved to play outside in the park."),
            r.text.c_str());
        QCOMPARE(r.promptIds, (std::vector<int32_t>{1, 403, 407, 261, 378}));
    }

    void seqLenBeyondPositionsRefused() {
        qs::EvalRequest req;
        req.evaluation.dataPath = qs::test::sharedPath("data/tinystories-eval.txt").toStdString();
        req.evaluation.seqLen = 1024; // the model has 512 positions
        try {
            qs::evaluateModelOnText(m_model.toStdString(), req);
            QFAIL("accepted a window longer than the model's positions");
        } catch (const qs::Error& e) {
            QVERIFY2(QString(e.what()).contains("max_position_embeddings"), e.what());
        }
    }
};

QS_TEST_GUILESS_MAIN(TestStories260K)
#include "tst_stories260k.moc"

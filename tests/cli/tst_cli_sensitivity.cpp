// `quantscope-cli analyze --sensitivity` on the CPU, which every machine has (tst_cli_device
// compares the same rows between the CPU and a GPU, where there is one). The study calibrates
// once and reuses the frozen plans for every row; for a weight-only scheme each row must be what
// a separate `eval` of that row's recipe prints, to the last bit (tst_sensitivityrun shows the
// same inside one process; here it is the CLI's rows, keys and JSON doubles): the full-precision
// and whole-recipe perplexities, and for a few rows the layer quantized alone (every other
// layer excluded) and the recipe with all but that layer.
#include "TestMain.h"
#include "TestSupport.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QtTest>

namespace {

QJsonObject cliJson(const QStringList& args) {
    const qs::test::CliRun r = qs::test::runCli(args);
    if (r.exitCode != 0)
        qFatal("quantscope-cli %s failed: %s", qPrintable(args.join(' ')), r.err.constData());
    return QJsonDocument::fromJson(r.out).object();
}

} // namespace

class TestCliSensitivity : public QObject {
    Q_OBJECT

    QString m_model, m_eval, m_calib;
    const QStringList m_excluded{"*down_proj", "*lm_head"};

    QStringList evalArgs() const {
        return {"eval", m_model,         "--data", m_eval,  "--eval-seq-len",
                "256",  "--max-windows", "1",      "--json"};
    }
    double evalPerplexity(const QStringList& exclude, bool quantized = true) const {
        QStringList args = evalArgs();
        if (quantized)
            args << "--quant-scheme"
                 << "uint4_wo_32"
                 << "--exclude-layers" << exclude;
        return cliJson(args)["perplexity"].toDouble();
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        m_eval = qs::test::sharedPath("data/tinystories-eval.txt");
        m_calib = qs::test::sharedPath("data/tinystories-calib.txt");
    }

    void rowsEqualSeparateEvaluations() {
        const QJsonObject sens =
            cliJson({"analyze",          m_model,      "--quant-scheme", "uint4_wo_32",
                     "--exclude-layers", "*down_proj", "*lm_head",       "--sensitivity",
                     "--data",           m_eval,       "--eval-seq-len", "256",
                     "--max-windows",    "1",          "--no-channels",  "--json",
                     "--calib-data",     m_calib,      "--seq-len",      "64",
                     "--num-calib-data", "1",          "--device",       "cpu"})["sensitivity"]
                .toObject();
        const QJsonArray rows = sens["layers"].toArray();
        // One row per quantized linear: q, k, v, o, gate and up of the 5 blocks (down_proj and
        // the head excluded), each once.
        QCOMPARE(rows.size(), 5 * 6);
        QStringList layers;
        for (const QJsonValue& v : rows) {
            const QJsonObject row = v.toObject();
            layers << row["layer"].toString();
            QVERIFY2(!layers.back().endsWith("down_proj"), qPrintable(layers.back()));
            for (const char* key : {"alone_perplexity", "all_but_perplexity", "alone_kl",
                                    "alone_same_top", "all_but_kl", "all_but_same_top"})
                QVERIFY2(row.contains(key), key);
        }
        QCOMPARE(QSet<QString>(layers.begin(), layers.end()).size(), layers.size());

        QVERIFY(sens["fp_perplexity"].toDouble() == evalPerplexity({}, false));
        QVERIFY(sens["full_perplexity"].toDouble() == evalPerplexity(m_excluded));
        int checked = 0;
        for (int i : {0, int(rows.size()) - 1}) { // blocks 0 and 4
            const QJsonObject row = rows[i].toObject();
            const QString layer = row["layer"].toString();
            QStringList others = m_excluded;
            for (const QString& l : layers)
                if (l != layer)
                    others << l;
            const double alone = evalPerplexity(others);
            const double allBut = evalPerplexity(m_excluded + QStringList{layer});
            QVERIFY2(row["alone_perplexity"].toDouble() == alone, qPrintable(layer));
            QVERIFY2(row["all_but_perplexity"].toDouble() == allBut, qPrintable(layer));
            // One 4-bit layer alone changes the logits.
            QVERIFY2(row["alone_kl"].toDouble() > 0, qPrintable(layer));
            ++checked;
        }
        QCOMPARE(checked, 2);
    }

    // A recipe that names its evaluation text (as one saved from the workbench does) is enough:
    // the study evaluates on that text and those windows, as `eval --recipe` does, and gives
    // the same perplexities as the flags above. Neither --data nor such a recipe: a usage error
    // naming both.
    void aRecipeNamesItsEvaluationText() {
        const QString recipe = qs::test::tempDir("sensitivity-recipe") + "/recipe.json";
        QFile f(recipe);
        QVERIFY(f.open(QIODevice::WriteOnly));
        const QJsonObject evaluation{{"data", m_eval}, {"seq_len", 256}, {"max_windows", 1}};
        f.write(QJsonDocument(QJsonObject{{"format", "quantscope-recipe"},
                                          {"version", 1},
                                          {"global", "uint4_wo_32"},
                                          {"exclude", QJsonArray{"*down_proj", "*lm_head"}},
                                          {"evaluation", evaluation}})
                    .toJson());
        f.close();
        const QStringList calib{"--calib-data",     m_calib, "--seq-len", "64",
                                "--num-calib-data", "1",     "--device",  "cpu"};
        const QJsonObject sens = cliJson(QStringList{"analyze", m_model, "--recipe", recipe,
                                                     "--sensitivity", "--no-channels", "--json"} +
                                         calib)["sensitivity"]
                                     .toObject();
        QCOMPARE(sens["layers"].toArray().size(), 5 * 6);
        QVERIFY(sens["fp_perplexity"].toDouble() == evalPerplexity({}, false));
        QVERIFY(sens["full_perplexity"].toDouble() == evalPerplexity(m_excluded));

        const qs::test::CliRun none = qs::test::runCli(
            QStringList{"analyze", m_model, "--quant-scheme", "uint4_wo_32", "--sensitivity"} +
            calib);
        QCOMPARE(none.exitCode, 2);
        QVERIFY2(none.err.contains("--data") && none.err.contains("--recipe"),
                 none.err.constData());
    }
};

QS_TEST_GUILESS_MAIN(TestCliSensitivity)
#include "tst_cli_sensitivity.moc"

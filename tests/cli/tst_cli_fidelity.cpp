// The fidelity block of `quantscope-cli eval` (KL divergence, Δp, top-1 agreement against the
// full-precision model) checked against an independent computation in plain PyTorch, and its
// edge cases: a recipe that quantizes nothing, and the cached full-precision reference.
#include "TestMain.h"
#include "TestSupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <cmath>

class TestCliFidelity : public QObject {
    Q_OBJECT

private:
    using Run = qs::test::CliRun;
    QString m_model, m_data;
    // Weight-only, so the fake-quantized export holds exactly the weights the evaluation uses
    // (down_proj's 172 inputs are no multiple of 32).
    const QStringList m_recipe = {"--quant_scheme", "uint4_wo_32", "--exclude_layers",
                                  "*down_proj"};
    static constexpr int kSeqLen = 128, kWindows = 4;

    QJsonObject evalJson(const QStringList& extra, int windows = kWindows) {
        QStringList args = {"eval",           m_model,
                            "--data",         m_data,
                            "--eval-seq-len", QString::number(kSeqLen),
                            "--max-windows",  QString::number(windows),
                            "--json"};
        const Run r = qs::test::runCli(args + extra);
        if (r.exitCode != 0)
            qFatal("eval failed: %s", r.err.constData());
        return QJsonDocument::fromJson(r.out).object();
    }

    static double value(const QJsonObject& fidelity, const char* key) {
        return fidelity[key].toObject()["value"].toDouble();
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        m_data = qs::test::sharedPath("data/tinystories-eval.txt");
        qputenv("QS_CACHE_DIR", qs::test::tempDir("cache").toUtf8());
    }

    // Issue 28: a recipe saved from the workbench names its evaluation text and windows, and
    // `eval --recipe` runs on them without --data; a window flag given still wins. The same
    // recipe from flags over the same windows is the same computation: equal figures.
    void aRecipeNamesItsEvaluationText() {
        const QString recipe = qs::test::tempDir("recipe-eval") + "/recipe.json";
        QFile f(recipe);
        QVERIFY(f.open(QIODevice::WriteOnly));
        const QJsonObject evaluation{
            {"data", m_data}, {"seq_len", kSeqLen}, {"max_windows", kWindows}};
        const QJsonObject json{{"format", "quantscope-recipe"},
                               {"version", 1},
                               {"global", "uint4_wo_32"},
                               {"exclude", QJsonArray{"*down_proj"}},
                               {"evaluation", evaluation}};
        f.write(QJsonDocument(json).toJson());
        f.close();
        const Run fromRecipe = qs::test::runCli({"eval", m_model, "--recipe", recipe, "--json"});
        QVERIFY2(fromRecipe.exitCode == 0, fromRecipe.err.constData());
        const QJsonObject r = QJsonDocument::fromJson(fromRecipe.out).object();
        QCOMPARE(r["windows"].toInt(), kWindows);
        QCOMPARE(r["seq_len"].toInt(), kSeqLen);
        const QJsonObject flags = evalJson(m_recipe);
        QCOMPARE(r["perplexity"].toDouble(), flags["perplexity"].toDouble());
        QCOMPARE(value(r["fidelity"].toObject(), "kl_mean"),
                 value(flags["fidelity"].toObject(), "kl_mean"));
        const Run fewer = qs::test::runCli(
            {"eval", m_model, "--recipe", recipe, "--max-windows", "2", "--json", "--no-fidelity"});
        QVERIFY2(fewer.exitCode == 0, fewer.err.constData());
        QCOMPARE(QJsonDocument::fromJson(fewer.out).object()["windows"].toInt(), 2);
        // Neither --data nor a recipe naming a text: a usage error naming both.
        const Run none = qs::test::runCli({"eval", m_model, "--quant_scheme", "int8"});
        QCOMPARE(none.exitCode, 2);
        QVERIFY2(none.err.contains("--data") && none.err.contains("--recipe"),
                 none.err.constData());
    }

    // The CLI's figures against tests/reference/hf_reference.py's, which runs its own forward
    // of the fake-quantized export and of the original model on the same ids, in float64 from
    // fp32 logits. Tolerances, from the arithmetic:
    // - the two forwards' fp32 logits differ by at most eps = 1e-5 x max |logit| per logit
    //   (tests/core/model/tst_decodermodel.cpp derives and checks that bound);
    // - an NLL moves by at most 2 eps per model (log-softmax is 2-Lipschitz in the max norm),
    //   so ln(PPL(Q)/PPL(base)) by 4 eps, and p = exp(-NLL) <= 1 by at most 2 eps per model:
    //   mean and RMS Δp by 4 eps;
    // - KL(p || q) to first order: dKL/dy = q - p (|q - p|_1 <= 2) and
    //   dKL/dx_j = p_j (log(p_j / q_j) - KL), so it moves by eps (2 + E_p|log(p/q) - KL|),
    //   the latter averaged over positions by the reference;
    // - a top-1 token can differ only where a model's top-two margin is below 2 eps.
    void matchesPlainPyTorch() {
        const QString dir = qs::test::tempDir("reference");
        const Run q = qs::test::runCli(
            QStringList{"quantize", m_model} + m_recipe +
            QStringList{"--format", "fake", "--output_dir", dir + "/fake", "--quiet"});
        QVERIFY2(q.exitCode == 0, q.err.constData());
        const Run t = qs::test::runCli({"tokenize", m_model, "--data", m_data, "--json"});
        QCOMPARE(t.exitCode, 0);
        QFile ids(dir + "/ids.txt");
        QVERIFY(ids.open(QIODevice::WriteOnly));
        for (const QJsonValue& id : QJsonDocument::fromJson(t.out).object()["ids"].toArray())
            ids.write(QByteArray::number(id.toInt()) + ' ');
        ids.close();

        QProcess py;
        py.start(qs::test::referencePython(),
                 {QStringLiteral(QS_SOURCE_DIR "/tests/reference/hf_reference.py"), "fidelity",
                  m_model, dir + "/fake", ids.fileName(), QString::number(kSeqLen),
                  QString::number(kWindows)});
        QVERIFY(py.waitForFinished(600000));
        QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
        const QJsonObject ref = QJsonDocument::fromJson(py.readAllStandardOutput()).object();

        const QJsonObject ours = evalJson(m_recipe)["fidelity"].toObject();
        QCOMPARE(ours["positions"].toInt(), kWindows * (kSeqLen - 1));
        QCOMPARE(ref["positions"].toInt(), kWindows * (kSeqLen - 1));

        const double eps = 1e-5 * ref["max_abs_logit"].toDouble();
        const double klTolerance = eps * (2.0 + ref["kl_logit_sensitivity_mean"].toDouble());
        const double kl = value(ours, "kl_mean");
        qInfo("KL %.9f (reference %.9f, tolerance %.2e), same top %.4f (reference %.4f)", kl,
              ref["kl_mean"].toDouble(), klTolerance, value(ours, "same_top"),
              ref["same_top"].toDouble());
        QVERIFY2(std::abs(kl - ref["kl_mean"].toDouble()) <= klTolerance,
                 qPrintable(QString("KL %1 against %2 (tolerance %3)")
                                .arg(kl, 0, 'g', 10)
                                .arg(ref["kl_mean"].toDouble(), 0, 'g', 10)
                                .arg(klTolerance)));
        // The comparison means something only if the quantization moved the model well beyond it.
        QVERIFY(kl > 100 * klTolerance);
        QVERIFY(std::abs(value(ours, "ln_ppl_ratio") - ref["ln_ppl_ratio"].toDouble()) <= 4 * eps);
        QVERIFY(std::abs(value(ours, "delta_p_mean") - ref["delta_p_mean"].toDouble()) <= 4 * eps);
        QVERIFY(std::abs(value(ours, "delta_p_rms") - ref["delta_p_rms"].toDouble()) <= 4 * eps);
        int nearTies = 0;
        for (const QJsonValue& m : ref["top_margins"].toArray())
            nearTies += m.toDouble() < 2 * eps ? 1 : 0;
        const double positions = ref["positions"].toDouble();
        QVERIFY2(std::abs(value(ours, "same_top") - ref["same_top"].toDouble()) * positions <=
                     nearTies + 0.5,
                 qPrintable(QString("same top %1 against %2, %3 near ties")
                                .arg(value(ours, "same_top"))
                                .arg(ref["same_top"].toDouble())
                                .arg(nearTies)));
        QVERIFY(value(ours, "same_top") < 1.0);
    }

    // Every layer excluded: the quantized run computes exactly what the reference computed, so
    // every KL and Δp is 0 and every top-1 token the same, with no rounding at all.
    void quantizingNothingGivesZero() {
        const QJsonObject f =
            evalJson({"--quant_scheme", "uint4_wo_32", "--exclude_layers", "*"})["fidelity"]
                .toObject();
        QVERIFY(!f.isEmpty());
        QVERIFY(value(f, "kl_mean") == 0.0);
        QVERIFY(value(f, "same_top") == 1.0);
        QVERIFY(value(f, "delta_p_rms") == 0.0);
        QVERIFY(value(f, "ln_ppl_ratio") == 0.0);
        for (const char* key : {"kl_quantiles", "delta_p_quantiles"})
            for (const QJsonValue& q : f[key].toArray())
                QVERIFY2(q.toObject()["value"].toDouble() == 0.0, key);
    }

    // The full-precision side is computed once per model, ids and settings: the second run reads
    // it back and gives the same figures to the last bit, as does a run with the cache off.
    void referenceIsCachedAndReused() {
        const QString cache = qs::test::tempDir("cache-reuse");
        qputenv("QS_CACHE_DIR", cache.toUtf8());
        const QJsonObject first = evalJson(m_recipe, 3)["fidelity"].toObject();
        QVERIFY(!first["reference_from_cache"].toBool());
        QCOMPARE(QDir(cache + "/fp-reference").entryList({"*.bin"}).size(), 1);
        const QJsonObject second = evalJson(m_recipe, 3)["fidelity"].toObject();
        QVERIFY(second["reference_from_cache"].toBool());
        QVERIFY(value(first, "kl_mean") == value(second, "kl_mean"));
        QVERIFY(value(first, "perplexity_base") == value(second, "perplexity_base"));
        // Other windows are another reference.
        evalJson(m_recipe, 2);
        QCOMPARE(QDir(cache + "/fp-reference").entryList({"*.bin"}).size(), 2);
        qputenv("QS_CACHE_DIR", "off");
        const QJsonObject uncached = evalJson(m_recipe, 3)["fidelity"].toObject();
        QVERIFY(!uncached["reference_from_cache"].toBool());
        QVERIFY(value(first, "kl_mean") == value(uncached, "kl_mean"));
        qputenv("QS_CACHE_DIR", qs::test::tempDir("cache").toUtf8());
    }

    // A damaged entry (cut short, or JSON that is not the cache's) and a cache folder that
    // cannot be made are not trusted or fatal: the reference is computed again, same figures.
    void damagedCacheIsRecomputed() {
        const QString cache = qs::test::tempDir("cache-damaged");
        qputenv("QS_CACHE_DIR", cache.toUtf8());
        const QJsonObject first = evalJson(m_recipe, 1)["fidelity"].toObject();
        const QDir dir(cache + "/fp-reference");
        const QString bin = dir.filePath(dir.entryList({"*.bin"}).value(0));
        const QString meta = dir.filePath(dir.entryList({"*.json"}).value(0));
        QVERIFY(QFile::resize(bin, QFileInfo(bin).size() - 4));
        QVERIFY(!evalJson(m_recipe, 1)["fidelity"].toObject()["reference_from_cache"].toBool());
        QVERIFY(evalJson(m_recipe, 1)["fidelity"].toObject()["reference_from_cache"].toBool());
        QFile m(meta);
        QVERIFY(m.open(QIODevice::WriteOnly | QIODevice::Truncate));
        m.write("{\"format\": 7}");
        m.close();
        const QJsonObject again = evalJson(m_recipe, 1)["fidelity"].toObject();
        QVERIFY(!again["reference_from_cache"].toBool());
        QVERIFY(value(first, "kl_mean") == value(again, "kl_mean"));
        qputenv("QS_CACHE_DIR", (bin + "/not-a-folder").toUtf8()); // under a file
        const QJsonObject uncached = evalJson(m_recipe, 1)["fidelity"].toObject();
        QVERIFY(!uncached["reference_from_cache"].toBool());
        QVERIFY(value(first, "kl_mean") == value(uncached, "kl_mean"));
        qputenv("QS_CACHE_DIR", qs::test::tempDir("cache").toUtf8());
    }

    // --no-fidelity: the perplexity alone, as before.
    void fidelityCanBeSkipped() {
        const QJsonObject j = evalJson(m_recipe + QStringList{"--no-fidelity"}, 1);
        QVERIFY(j.contains("perplexity"));
        QVERIFY(!j.contains("fidelity"));
    }
};

QS_TEST_GUILESS_MAIN(TestCliFidelity)
#include "tst_cli_fidelity.moc"

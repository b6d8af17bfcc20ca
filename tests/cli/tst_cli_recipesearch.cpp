// quantscope-cli recipe --auto on stories260K, as a user runs it: the JSON report (the budget
// used against the budget asked, predicted and measured KL, the frontier), the recipe it writes
// (sized again by recipe --size: the same effective_bits), the text report, and the refusals
// (exit code, the flag named).
#include "TestMain.h"
#include "TestSupport.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

class TestCliRecipeSearch : public QObject {
    Q_OBJECT

private:
    using Run = qs::test::CliRun;
    QString m_model;

    QStringList searchArgs(const QString& budget) const {
        return {"recipe",           "--auto",
                "--model",          m_model,
                "--calib-data",     qs::test::sharedPath("data/tinystories-calib.txt"),
                "--num-calib-data", "4",
                "--seq-len",        "64",
                "--data",           qs::test::sharedPath("data/tinystories-eval.txt"),
                "--eval-seq-len",   "128",
                "--max-windows",    "2",
                "--candidates",     "none,uint4_wo_32,int8",
                "--budget-bpw",     budget,
                "--quiet"};
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        qputenv("QS_CACHE_DIR", qs::test::tempDir("cache").toUtf8());
    }

    void jsonReportAndRecipe() {
        const QString out = qs::test::tempDir("search") + "/recipe.json";
        const Run r = qs::test::runCli(searchArgs("8") << "--json"
                                                       << "--out" << out);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const double bits = j["effective_bits"].toDouble();
        QVERIFY(bits > 4.0 && bits <= 8.0);
        QCOMPARE(j["budget"]["bits_per_weight"]["asked"].toDouble(), 8.0);
        QVERIFY(j["budget"]["bits_per_weight"]["used"].toDouble() == bits);
        // The prediction: the sum of the chosen units' KL alone, in unit order, through
        // KL = S / (1 + lambda S) with the lambda the report gives, fitted on one measured
        // uniform recipe per quantizing candidate.
        double sum = 0.0;
        const QJsonArray units = j["units"].toArray();
        QCOMPARE(units.size(), 5 * 4); // q/k/v, o, gate/up, down per block
        for (const QJsonValue& u : units) {
            const QString chosen = u["chosen"].toString();
            sum += chosen == "none" ? 0.0 : u["kl_alone"][chosen].toDouble();
        }
        QVERIFY(sum == j["predicted"]["kl_alone_sum"].toDouble());
        const QJsonObject prediction = j["prediction"].toObject();
        const double lambda = prediction["lambda"].toDouble();
        QVERIFY(sum / (1.0 + lambda * sum) == j["predicted"]["kl_mean"].toDouble());
        QCOMPARE(prediction["anchors"].toArray().size(), 2); // uint4_wo_32 and int8
        for (const QJsonValue& a : prediction["anchors"].toArray())
            QVERIFY(a["kl_measured"].toDouble() > 0.0 && a["kl_alone_sum"].toDouble() > 0.0);
        QVERIFY(j["measured"]["kl_mean"].toDouble() > 0.0);
        QVERIFY(j["measured"]["perplexity"].toDouble() > 1.0);
        // The frontier: ascending bits, descending predicted KL, the chosen point on it.
        const QJsonArray frontier = j["frontier"].toArray();
        QVERIFY(frontier.size() > 2);
        for (int i = 1; i < frontier.size(); ++i) {
            QVERIFY(frontier[i]["bits"].toDouble() > frontier[i - 1]["bits"].toDouble());
            QVERIFY(frontier[i]["predicted_kl"].toDouble() <
                    frontier[i - 1]["predicted_kl"].toDouble());
        }
        const QJsonObject chosen = frontier[j["chosen_point"].toInt()].toObject();
        QVERIFY(chosen["bits"].toDouble() == bits);
        if (j["chosen_point"].toInt() + 1 < frontier.size())
            QVERIFY(frontier[j["chosen_point"].toInt() + 1]["bits"].toDouble() > 8.0);
        // The recipe written is the point: recipe --size gives the same effective_bits.
        QVERIFY(QFileInfo::exists(out));
        const Run size = qs::test::runCli({"recipe", "--size", out, "--model", m_model, "--json"});
        QVERIFY2(size.exitCode == 0, size.err.constData());
        QVERIFY(QJsonDocument::fromJson(size.out).object()["effective_bits"].toDouble() == bits);
        // ...and it exports as Quark hf_format without --allow-unloadable: the search offers no
        // layout transformers + amd-quark refuse (stories260K's 172-wide MLP).
        const Run exported =
            qs::test::runCli({"quantize", m_model, "--recipe", out, "--format", "quark", "--out",
                              qs::test::tempDir("search") + "/quark", "--quiet"});
        QVERIFY2(exported.exitCode == 0, exported.err.constData());
    }

    void textReport() {
        const Run r = qs::test::runCli(searchArgs("10") << "--no-measure");
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(r.out.contains("predicted frontier"));
        QVERIFY(r.out.contains("predicted KL = S / (1 + lambda S)"));
        QVERIFY(r.out.contains("bits per weight asked"));
        QVERIFY(r.out.contains("not measured"));
    }

    void refinementReport() {
        const Run r = qs::test::runCli(searchArgs("8") << "--json"
                                                       << "--refine"
                                                       << "2");
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QVERIFY(j["effective_bits"].toDouble() <= 8.0);
        const QJsonObject refinement = j["refinement"].toObject();
        const QJsonArray rounds = refinement["rounds"].toArray();
        QVERIFY(!rounds.isEmpty() && rounds.size() <= 2);
        // Each round starts where the last kept proposal measured; a proposal is kept only when
        // it measures lower; the report's KL is the last kept one's.
        double kl = rounds[0]["kl_before"].toDouble();
        for (const QJsonValue& round : rounds) {
            QVERIFY(round["kl_before"].toDouble() == kl);
            QVERIFY(round["evaluations"].toInt() > 0);
            if (round["kl_after"].isNull())
                continue;
            const bool lower = round["kl_after"].toDouble() < kl;
            QCOMPARE(round["accepted"].toBool(), lower);
            if (lower)
                kl = round["kl_after"].toDouble();
        }
        QVERIFY(refinement["kl_measured_on_cost_windows"].toDouble() == kl);
        // A changed pick names, per unit, what the frontier had chosen.
        int changed = 0;
        for (const QJsonValue& u : j["units"].toArray())
            changed += u.toObject().contains("frontier_pick") ? 1 : 0;
        QCOMPARE(changed > 0, refinement["changed_pick"].toBool());

        const Run text = qs::test::runCli(searchArgs("8") << "--no-measure"
                                                          << "--refine"
                                                          << "1");
        QVERIFY2(text.exitCode == 0, text.err.constData());
        QVERIFY(text.out.contains("refinement in context"));
        QVERIFY(text.out.contains("round 1: from KL"));
    }

    void refusals() {
        Run r = qs::test::runCli(searchArgs("1"));
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--budget-bpw") && r.err.contains("infeasible"), r.err.constData());
        QStringList args = searchArgs("6");
        args[args.indexOf("none,uint4_wo_32,int8")] = "none,int5_wo";
        r = qs::test::runCli(args);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--candidates") && r.err.contains("int5_wo"), r.err.constData());
        r = qs::test::runCli(searchArgs("6") << "--quant-scheme"
                                             << "int8");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--candidates"), r.err.constData());
        r = qs::test::runCli(searchArgs("6") << "--cost-windows"
                                             << "0");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--cost-windows"), r.err.constData());
        r = qs::test::runCli(searchArgs("6") << "--unit-costs"
                                             << "guessed");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--unit-costs") && r.err.contains("guessed"), r.err.constData());
        r = qs::test::runCli(searchArgs("6") << "--refine"
                                             << "some");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--refine") && r.err.contains("some"), r.err.constData());
        args = searchArgs("6");
        args[args.indexOf("--budget-bpw")] = "--budget-kl";
        args[args.indexOf("6")] = "0.05";
        r = qs::test::runCli(args << "--refine"
                                  << "1");
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--refine") && r.err.contains("size budget"), r.err.constData());
        r = qs::test::runCli({"recipe", "--auto", "--model", m_model, "--budget-bpw", "4"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--data"), r.err.constData());
    }
};

QS_TEST_GUILESS_MAIN(TestCliRecipeSearch)
#include "tst_cli_recipesearch.moc"

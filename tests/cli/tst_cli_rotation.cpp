// The CLI runs Quark's rotation (--quant_algo rotation, or Quark's older name quarot): the
// recipe it saves names it, an evaluation with it runs, and the rotated model exports.
#include "TestMain.h"
#include "TestSupport.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

class TestCliRotation : public QObject {
    Q_OBJECT

private:
    struct Run {
        int exitCode;
        QByteArray out, err;
    };
    static Run cli(const QStringList& args) {
        QProcess p;
        p.start(qs::test::binDir() + "/quantscope-cli", args);
        if (!p.waitForFinished(600000))
            qFatal("quantscope-cli timed out");
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
                p.readAllStandardOutput(), p.readAllStandardError()};
    }

private Q_SLOTS:
    void quarotEvaluatesAndIsRecorded() {
        const QString model = qs::test::sharedPath("models/stories260K");
        const QString recipePath = qs::test::tempDir("cli-rotation") + "/recipe.json";
        const QStringList common{
            "--quant-scheme",   "int8",
            "--calib-data",     qs::test::sharedPath("data/tinystories-calib.txt"),
            "--num-calib-data", "4",
            "--calib-seq-len",  "64",
            "--quiet"};
        for (const QString& name : {QString("quarot"), QString("rotation")}) {
            const Run r = cli(QStringList{"eval", model, "--data",
                                          qs::test::sharedPath("data/tinystories-eval.txt"),
                                          "--eval-seq-len", "64", "--max-windows", "4", "--json",
                                          "--quant_algo", name, "--save-recipe", recipePath} +
                              common);
            QVERIFY2(r.exitCode == 0, r.err);
            const QJsonObject out = QJsonDocument::fromJson(r.out).object();
            QVERIFY2(out.contains("perplexity"), r.out);
            QVERIFY(out["perplexity"].toDouble() > 1.0);
            QFile f(recipePath);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QJsonArray algos = QJsonDocument::fromJson(f.readAll())["algorithms"].toArray();
            QCOMPARE(algos.size(), 1);
            QCOMPARE(algos[0].toObject()["name"].toString(), QString("rotation"));
        }
        // The rotated model exports (its head untied: stories260K ties it, the rotation folds
        // the final norm into it).
        const QString outDir = qs::test::tempDir("cli-rotation-export") + "/out";
        const Run r = cli(
            QStringList{"quantize", model, "--out", outDir, "--quant_algo", "rotation"} + common);
        QVERIFY2(r.exitCode == 0, r.err);
        QFile config(outDir + "/config.json");
        QVERIFY(config.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(config.readAll())["tie_word_embeddings"].toBool(true),
                 false);
        QVERIFY(QFileInfo::exists(outDir + "/quantscope_recipe.json"));
    }
};

QS_TEST_GUILESS_MAIN(TestCliRotation)
#include "tst_cli_rotation.moc"

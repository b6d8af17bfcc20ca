// A hostile or damaged file a user received (config, checkpoint, tokenizer, recipe) gives an
// error dialog that names the file and, where there is one, the field; the workbench stays
// usable: the real model opens right after. Each case copies stories260K into a fresh folder and
// damages one file, as a download gone wrong or a crafted file would.
#include "EvalPanel.h"
#include "MainWindow.h"
#include "RecipeDocument.h"
#include "TestMain.h"
#include "TestSupport.h"
#include "WorkbenchPage.h"

#include <QDir>
#include <QFile>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

namespace {

QMessageBox* visibleBox(const QWidget& window) {
    for (QMessageBox* box : window.findChildren<QMessageBox*>(QStringLiteral("errorBox")))
        if (box->isVisible())
            return box;
    return nullptr;
}

// stories260K without tokenizer.model, so the tokenizer is read from tokenizer.json (the file
// the tokenizer cases damage) whether or not the sentencepiece plugin is built.
QString copyOfStories(const QString& name) {
    const QDir from(qs::test::sharedPath(QStringLiteral("models/stories260K")));
    const QString to = qs::test::tempDir(name);
    for (const QString& f : from.entryList(QDir::Files))
        if (f != QLatin1String("tokenizer.model"))
            QFile::copy(from.filePath(f), to + QLatin1Char('/') + f);
    return to;
}

void overwrite(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size())
        qFatal("cannot write %s", qPrintable(path));
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return f.readAll();
}

QByteArray nested(int depth) {
    return QByteArray(depth, '[') + QByteArray(depth, ']');
}

} // namespace

class TestHostileFiles : public QObject {
    Q_OBJECT

    QString m_stories;

private Q_SLOTS:
    void initTestCase() {
        const QString home = qs::test::tempDir(QStringLiteral("hostile-home"));
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(home + QStringLiteral("/config")));
        qputenv("XDG_DATA_HOME", QFile::encodeName(home + QStringLiteral("/data")));
        QCoreApplication::setOrganizationName(QStringLiteral("QuantscopeTest"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_hostilefiles"));
        m_stories = qs::test::sharedPath(QStringLiteral("models/stories260K"));
    }

    // stage: "open" (the model folder), "evaluate" (the tokenizer is read when text is), or
    // "recipe" (File > Open Recipe on the opened model).
    void hostileFileGivesADialog_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("stage");
        QTest::addColumn<QStringList>("named");
        const QByteArray config = readAll(m_stories + QStringLiteral("/config.json"));
        const QByteArray model = readAll(m_stories + QStringLiteral("/model.safetensors"));

        QTest::newRow("config not JSON") << "config.json" << QByteArray("{\"hidden_size\": 64,")
                                         << "open" << QStringList{"config.json"};
        QByteArray wrongType = config;
        wrongType.replace("\"hidden_size\": 64", "\"hidden_size\": \"sixty-four\"");
        QVERIFY(wrongType != config);
        QTest::newRow("config field of the wrong type")
            << "config.json" << wrongType << "open" << QStringList{"config.json", "hidden_size"};
        QTest::newRow("config nested 100000 deep")
            << "config.json" << nested(100000) << "open" << QStringList{"config.json"};
        QTest::newRow("checkpoint truncated")
            << "model.safetensors" << model.left(model.size() / 2) << "open"
            << QStringList{"model.safetensors", "data_offsets", "truncated"};
        QTest::newRow("checkpoint header length beyond the file")
            << "model.safetensors" << QByteArray(8, '\xff') + model.mid(8) << "open"
            << QStringList{"model.safetensors", "header length"};
        QTest::newRow("tokenizer nested 100000 deep")
            << "tokenizer.json" << nested(100000) << "evaluate" << QStringList{"tokenizer.json"};
        QTest::newRow("tokenizer vocabulary not an object")
            << "tokenizer.json"
            << QByteArray(R"({"model": {"type": "BPE", "vocab": [1, 2], "merges": []}})")
            << "evaluate" << QStringList{"tokenizer.json", "model.vocab"};
        QTest::newRow("recipe with an unknown scheme")
            << "recipe.json"
            << QByteArray(R"({"format": "quantscope-recipe", "version": 1, "global": "int5_wo"})")
            << "recipe" << QStringList{"recipe.json", "global"};
        QTest::newRow("recipe nested 100000 deep")
            << "recipe.json" << nested(100000) << "recipe" << QStringList{"recipe.json"};
    }

    void hostileFileGivesADialog() {
        QFETCH(QString, file);
        QFETCH(QByteArray, content);
        QFETCH(QString, stage);
        QFETCH(QStringList, named);
        const QString dir = copyOfStories(QStringLiteral("hostile"));
        overwrite(dir + QLatin1Char('/') + file, content);

        qs::MainWindow window;
        window.show();
        QSignalSpy shown(&window, &qs::MainWindow::modelShown);
        QSignalSpy failed(&window, &qs::MainWindow::modelOpenFailed);
        window.openModel(dir);
        if (stage == QLatin1String("open")) {
            QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        } else {
            QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
            if (stage == QLatin1String("evaluate")) {
                qs::EvalPanel* eval = window.workbenchPage()->evalPanel();
                // Evaluate runs the recipe (the proposed int8 one): it calibrates first, and the
                // copy has no calibration text beside it to propose.
                window.recipeDocument()->setCalibrationData(
                    qs::test::sharedPath(QStringLiteral("data/tinystories-calib.txt")));
                window.recipeDocument()->setEvaluationData(
                    qs::test::sharedPath(QStringLiteral("data/tinystories-eval.txt")));
                QTest::mouseClick(eval->evaluateButton(), Qt::LeftButton);
                QTRY_VERIFY_WITH_TIMEOUT(!eval->isRunning(), 60000);
            } else {
                QSignalSpy refused(&window, &qs::MainWindow::recipeLoadFailed);
                QVERIFY(!window.loadRecipe(dir + QLatin1Char('/') + file));
                QCOMPARE(refused.count(), 1);
            }
        }
        QTRY_VERIFY_WITH_TIMEOUT(visibleBox(window) != nullptr, 10000);
        QMessageBox* box = visibleBox(window);
        for (const QString& word : named)
            QVERIFY2(box->text().contains(word) || box->informativeText().contains(word) ||
                         box->detailedText().contains(word),
                     qPrintable(box->text()));
        qInfo("%s", qPrintable(box->text()));
        box->accept();

        // Still usable: the real model opens in the same window.
        shown.clear();
        window.openModel(m_stories);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        QVERIFY(window.isWorkbenchShown());
    }
};

QS_TEST_MAIN(TestHostileFiles)
#include "tst_hostilefiles.moc"

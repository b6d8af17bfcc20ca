// parseJsonText is the JSON front door of config.json, recipes, Quark configs and checkpoint
// indexes: hostile documents become one qs::Error naming the file and the limit, never another
// exception or a recursion as deep as the document (readers after it, and nlohmann's dump() in
// error messages, recurse per level).
#include "TestMain.h"
#include "io/Checkpoint.h"
#include "io/JsonFields.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QFile>
#include <QtTest>

using namespace qs;

namespace {

std::string errorOf(const std::string& text) {
    try {
        parseJsonText(text, "hostile.json");
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("unexpected exception type: ") + e.what();
    }
    return "accepted";
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size())
        qFatal("cannot write %s", qPrintable(path));
}

} // namespace

class TestJsonLimits : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void refused_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("reason");
        QTest::newRow("deep arrays") << QByteArray(200000, '[') << "kMaxJsonDepth";
        QTest::newRow("deep objects")
            << QByteArray("{\"a\":").repeated(1000) + "1" + QByteArray(1000, '}')
            << "kMaxJsonDepth";
        QTest::newRow("number beyond double") << QByteArray("{\"x\": 1e400}") << "invalid JSON";
        QTest::newRow("syntax") << QByteArray("{\"x\": tru}") << "invalid JSON at byte";
        // Issue 28: not nlohmann's "[json.exception.parse_error.101]".
        QTest::newRow("empty") << QByteArray() << "the file is empty";
        QTest::newRow("blank") << QByteArray(" \n\t\n") << "the file is empty";
        QTest::newRow("too large")
            << QByteArray(qsizetype(kMaxJsonDocumentBytes) + 1, ' ') << "kMaxJsonDocumentBytes";
    }
    void refused() {
        QFETCH(QByteArray, text);
        QFETCH(QString, reason);
        const std::string msg = errorOf(text.toStdString());
        QVERIFY2(msg.find("hostile.json") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find(reason.toStdString()) != std::string::npos, msg.c_str());
    }

    void withinLimitsIsAccepted() {
        const std::string nested =
            std::string(kMaxJsonDepth - 1, '[') + "1" + std::string(kMaxJsonDepth - 1, ']');
        QCOMPARE(errorOf(nested), std::string("accepted"));
        QCOMPARE(parseJsonText("{\"a\": [1, {\"b\": null}]}", "ok.json")["a"][1].is_object(), true);
    }

    void deepCheckpointIndexIsRefused() {
        const QString dir = test::tempDir("deep-index");
        writeFile(dir + "/model.safetensors.index.json",
                  "{\"weight_map\": " + QByteArray(100000, '[') + "}");
        try {
            Checkpoint::open(dir.toStdString());
            QFAIL("accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("model.safetensors.index.json") !=
                         std::string::npos,
                     e.what());
            QVERIFY2(std::string(e.what()).find("kMaxJsonDepth") != std::string::npos, e.what());
        }
    }
};

QS_TEST_GUILESS_MAIN(TestJsonLimits)
#include "tst_json_limits.moc"

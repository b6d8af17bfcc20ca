// Cross-check against Python torch: quark_reference.py recomputes Quark's integer, MX-scale,
// MX INT8, BFP16 and MX6 fake quantization with torch operations (fp32 and bf16 inputs) and the
// results must match ours bit for bit.
#include "QuantTestHelpers.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "quant/Quantize.h"
#include "quant/TypeTraits.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace qs::quant;
using namespace qs::quant::test;

class TestQuantTorchRef : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    nlohmann::json m_cases;

    at::Tensor load(const std::string& name) {
        if (!m_cases.contains(name))
            qFatal("reference case %s missing", name.c_str());
        std::vector<int64_t> shape = m_cases[name].get<std::vector<int64_t>>();
        QFile f(m_dir.filePath(QString::fromStdString(name) + ".bin"));
        if (!f.open(QIODevice::ReadOnly))
            qFatal("cannot read %s", name.c_str());
        const QByteArray bytes = f.readAll();
        at::Tensor t = at::empty(shape, at::kFloat);
        if (bytes.size() != t.numel() * 4)
            qFatal("size mismatch for %s", name.c_str());
        std::memcpy(t.data_ptr<float>(), bytes.constData(), size_t(bytes.size()));
        return t;
    }

    static QuantSpec intSpec(DataType d, Granularity g, bool sym, int group = 0) {
        QuantSpec s = QuantSpec::defaults(d);
        s.granularity = g;
        s.symmetric = sym;
        s.chAxis = g == Granularity::PerGroup ? -1 : 0;
        s.groupSize = group;
        return s;
    }

private Q_SLOTS:
    void initTestCase() {
        const QString python = qs::test::referencePython();
        if (!QFileInfo::exists(python))
            QSKIP(qPrintable(python + " (with torch) is not installed"));
        const QString script = QStringLiteral(QS_SOURCE_DIR "/tests/core/quant/quark_reference.py");
        QVERIFY2(QFileInfo::exists(script), "quark_reference.py not found beside the test source");
        QVERIFY(m_dir.isValid());
        QProcess p;
        p.start(python, {script, m_dir.path()});
        QVERIFY(p.waitForFinished(300000));
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
                 p.readAllStandardError().constData());
        QFile index(m_dir.filePath("index.json"));
        QVERIFY(index.open(QIODevice::ReadOnly));
        const auto j = nlohmann::json::parse(index.readAll().toStdString());
        m_cases = j["cases"];
        qInfo("reference torch %s", j["torch"].get<std::string>().c_str());
    }

    void integerGroupsTensorsChannels() {
        const at::Tensor w = load("w");
        int checked = 0;
        for (const char* dt : {"f32", "bf16"}) {
            const at::Tensor x = std::string(dt) == "f32" ? w : w.to(at::kBFloat16);
            const std::pair<const char*, DataType> types[] = {
                {"int4", DataType::Int4}, {"uint4", DataType::Uint4}, {"int8", DataType::Int8}};
            for (const auto& [name, d] : types) {
                for (bool sym : {true, false}) {
                    const std::string tag =
                        std::string(name) + "_g32_" + (sym ? "sym" : "asym") + "_" + dt;
                    const QuantSpec s = intSpec(d, Granularity::PerGroup, sym, 32);
                    const QuantParams p = computeParams(s, observeRange(x, s));
                    QVERIFY2(firstDifference(p.scale.reshape({-1}), load("scale_" + tag)) < 0,
                             tag.c_str());
                    QVERIFY2(firstDifference(fakeQuantize(x, s, p), load("out_" + tag)) < 0,
                             tag.c_str());
                    QVERIFY2(firstDifference(fakeQuantize(x, s), load("out_" + tag)) < 0,
                             tag.c_str());
                    ++checked;
                }
            }
            const QuantSpec t = intSpec(DataType::Int8, Granularity::PerTensor, true);
            QVERIFY(firstDifference(fakeQuantize(x, t),
                                    load(std::string("out_int8_tensor_sym_") + dt)) < 0);
            const QuantSpec c = intSpec(DataType::Uint8, Granularity::PerChannel, false);
            QVERIFY(firstDifference(fakeQuantize(x, c),
                                    load(std::string("out_uint8_channel_asym_") + dt)) < 0);
            checked += 2;
        }
        QCOMPARE(checked, 16);
    }

    void mxScalesAndBlockFormats() {
        const at::Tensor act = load("act");
        const std::pair<const char*, DataType> mx[] = {{"scale_mxfp4", DataType::MxFp4},
                                                       {"scale_mxfp6_e3m2", DataType::MxFp6E3M2},
                                                       {"scale_mxfp8_e4m3", DataType::MxFp8E4M3}};
        for (const auto& [name, d] : mx) {
            const QuantSpec s = QuantSpec::defaults(d);
            const QuantParams p = computeParams(s, observeRange(act, s));
            QVERIFY2(firstDifference(p.scale.reshape({-1}), load(name)) < 0, name);
        }
        QVERIFY(firstDifference(fakeQuantize(act, QuantSpec::defaults(DataType::MxInt8)),
                                load("out_mxint8")) < 0);
        QVERIFY(firstDifference(fakeQuantize(act, QuantSpec::defaults(DataType::Bfp16)),
                                load("out_bfp16")) < 0);
        QVERIFY(firstDifference(fakeQuantize(act, QuantSpec::defaults(DataType::Mx6)),
                                load("out_mx6")) < 0);
    }
};

QS_TEST_APPLESS_MAIN(TestQuantTorchRef)
#include "tst_quant_torchref.moc"

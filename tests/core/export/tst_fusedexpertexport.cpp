// Exports of the families whose checkpoints store a layer's experts fused (model/FusedExperts:
// DBRX's w1/v1/w2). The engine quantizes each expert's linears on their own; the fake-quantized
// checkpoint puts them back into the stored tensors, under the source's names and shapes, so
// that transformers (and Quantscope) read it like the source. Reopened, it computes what the
// run's in-memory model computed: the same fake-quantized weights, cut out again bit for bit.
#include "TestMain.h"
#include "TestSupport.h"
#include "TinyExportRun.h"

#include "io/SafetensorsFile.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <QtTest>

#include <cstring>
#include <set>

class TestFusedExpertExport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void fakeExportFusesExpertsBack_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QStringList>("fused"); // the stored expert tensors of block 0
        QTest::newRow("dbrx") << "dbrx"
                              << QStringList{"transformer.blocks.0.ffn.experts.mlp.w1",
                                             "transformer.blocks.0.ffn.experts.mlp.v1",
                                             "transformer.blocks.0.ffn.experts.mlp.w2"};
    }

    void fakeExportFusesExpertsBack() {
        QFETCH(QString, folder);
        QFETCH(QStringList, fused);
        const std::string dir =
            qs::test::sharedPath("models/tiny-families/" + folder).toStdString();
        const QString out = qs::test::tempDir("fused-" + folder) + "/export";
        const qs::QuantizationOutcome o =
            qs::runQuantization(qs::test::tinyUint4Export(dir, out, "fake"));

        const auto file = qs::SafetensorsFile::open((out + "/model.safetensors").toStdString());
        const auto source = qs::SafetensorsFile::open(dir + "/model.safetensors");
        std::set<std::string> written, stored;
        for (const qs::TensorInfo& t : file->header().tensors)
            written.insert(t.name);
        for (const qs::TensorInfo& t : source->header().tensors)
            stored.insert(t.name);
        QVERIFY(written == stored);
        for (const QString& f : fused) {
            const std::string n = f.toStdString();
            const qs::TensorInfo* a = file->find(n);
            const qs::TensorInfo* b = source->find(n);
            QCOMPARE(a->shape, b->shape);
            QCOMPARE(a->dtype, b->dtype);
            // quantized: no longer the source's float weights
            QVERIFY2(std::memcmp(file->data(*a), source->data(*b), a->byteSize()) != 0, n.c_str());
        }

        qs::test::verifyReopenedPerplexity(out, o);
    }

    // Quark exports DBRX's experts merged back with stacked scales, a layout not written here:
    // refused before any work, naming the experts and the way out.
    void quarkRefusesDbrxExperts() {
        const std::string dir = qs::test::sharedPath("models/tiny-families/dbrx").toStdString();
        const QString out = qs::test::tempDir("fused-dbrx-quark") + "/export";
        try {
            qs::runQuantization(qs::test::tinyUint4Export(dir, out, "quark"));
            QFAIL("a Quark export of DBRX was written");
        } catch (const qs::Error& e) {
            QVERIFY2(std::string(e.what()).find("ffn.experts.mlp") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("--format fake") != std::string::npos, e.what());
        }
        QVERIFY(!QFileInfo::exists(out));
    }
};

QS_TEST_APPLESS_MAIN(TestFusedExpertExport)
#include "tst_fusedexpertexport.moc"

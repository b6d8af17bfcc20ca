// util/LargeTensor: emptyLargeCpu gives an ordinary CPU tensor of the asked shape and type, small
// or several 2 MiB pages large (the huge-page advice covers whole pages inside the buffer only and
// must not change what the tensor holds), and releaseFreedHeapMemory hands back free heap pages
// without touching live memory.
#include "TestMain.h"

#include "util/LargeTensor.h"

#include <ATen/ATen.h>

#include <QtTest>

#include <algorithm>
#include <memory>
#include <vector>

class TestLargeTensor : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void shapesAndTypes_data() {
        QTest::addColumn<qlonglong>("rows");
        QTest::addColumn<qlonglong>("cols");
        QTest::addColumn<int>("dtype");
        QTest::newRow("empty") << 0LL << 16LL << int(at::kFloat);
        QTest::newRow("small float") << 3LL << 5LL << int(at::kFloat);
        QTest::newRow("one page bytes") << 1024LL << 512LL << int(at::kFloat);     // 2 MiB
        QTest::newRow("12 MiB float") << 3072LL << 1024LL << int(at::kFloat);      // 12 MiB
        QTest::newRow("5 MiB uint8") << 5LL << (1LL << 20) << int(at::kByte);      // odd pages
        QTest::newRow("3 MiB bfloat16") << 1536LL << 1024LL << int(at::kBFloat16); // 3 MiB
    }

    void shapesAndTypes() {
        QFETCH(qlonglong, rows);
        QFETCH(qlonglong, cols);
        QFETCH(int, dtype);
        const auto type = static_cast<at::ScalarType>(dtype);
        at::Tensor t = qs::emptyLargeCpu({rows, cols}, type);
        QCOMPARE(t.sizes().vec(), (std::vector<int64_t>{rows, cols}));
        QCOMPARE(t.scalar_type(), type);
        QVERIFY(t.device().is_cpu());
        QVERIFY(t.is_contiguous());
        if (t.numel() == 0)
            return;
        // Every element writable and read back: a pattern over the whole buffer.
        const at::Tensor pattern = at::arange(t.numel(), at::TensorOptions(at::kLong))
                                       .remainder(251)
                                       .to(type)
                                       .view({rows, cols});
        t.copy_(pattern);
        QVERIFY(at::equal(t, pattern));
    }

    void releaseKeepsLiveMemory() {
        std::vector<std::unique_ptr<std::vector<int>>> blocks;
        for (int i = 0; i < 64; ++i)
            blocks.push_back(std::make_unique<std::vector<int>>(64 * 1024, i));
        for (size_t i = 0; i < blocks.size(); i += 2)
            blocks[i].reset(); // free every other block: holes in the heap
        qs::releaseFreedHeapMemory();
        qs::releaseFreedHeapMemory(size_t(1) << 40); // more than is free: does nothing
        int checked = 0;
        for (size_t i = 1; i < blocks.size(); i += 2) {
            QVERIFY(std::all_of(blocks[i]->begin(), blocks[i]->end(),
                                [&](int v) { return v == int(i); }));
            ++checked;
        }
        QCOMPARE(checked, 32);
    }
};

QS_TEST_GUILESS_MAIN(TestLargeTensor)
#include "tst_largetensor.moc"

// Experts stored fused (model/FusedExperts): each layout's slices hold, element for element, the
// weights transformers' own expert code reads for that expert (DbrxExpertGLU, Llama4TextExperts,
// GptOssExperts: the index arithmetic is written out here), and fusing the slices gives back the
// stored tensors bit for bit (copies only: equal by construction, no tolerance).
#include "TestMain.h"
#include "model/FusedExperts.h"

#include <ATen/ATen.h>
#include <QtTest>

namespace {

constexpr int64_t kExperts = 3, kWidth = 5, kHidden = 4; // I = 5, H = 4

float at3(const at::Tensor& t, int64_t a, int64_t b, int64_t c) {
    return t[a][b][c].item<float>();
}

void verifyRoundTrip(qs::ExpertStorage storage, const std::map<std::string, at::Tensor>& fused) {
    std::vector<qs::ExpertSlices> slices;
    for (int64_t e = 0; e < kExperts; ++e)
        slices.push_back(qs::sliceExpert(storage, fused, e, kExperts));
    const std::map<std::string, at::Tensor> back = qs::fuseExperts(storage, slices);
    QCOMPARE(back.size(), fused.size());
    for (const auto& [name, t] : fused) {
        QVERIFY2(back.count(name), name.c_str());
        QVERIFY2(back.at(name).sizes() == t.sizes(), name.c_str());
        QVERIFY2(at::equal(back.at(name), t), name.c_str());
    }
}

} // namespace

class TestFusedExperts : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void namesAndShapesPerLayout() {
        using qs::ExpertStorage;
        QVERIFY(qs::fusedExpertTensors(ExpertStorage::PerExpert, false).empty());
        QCOMPARE(qs::fusedExpertTensors(ExpertStorage::DbrxRows, false),
                 (std::vector<std::string>{"w1", "v1", "w2"}));
        QCOMPARE(qs::fusedExpertTensors(ExpertStorage::GateUpInterleaved, true).size(), size_t(4));
        QCOMPARE(qs::fusedExpertShape(ExpertStorage::DbrxRows, "w2", 3, 5, 4),
                 (std::vector<int64_t>{15, 4}));
        QCOMPARE(qs::fusedExpertShape(ExpertStorage::GateUpHalves, "gate_up_proj", 3, 5, 4),
                 (std::vector<int64_t>{3, 4, 10}));
        QCOMPARE(qs::fusedExpertShape(ExpertStorage::GateUpHalves, "down_proj", 3, 5, 4),
                 (std::vector<int64_t>{3, 5, 4}));
    }

    // DBRX: w1.view(E, I, H)[e] is the gate, v1 the up, and x @ w2.view(E, I, H)[e] the down
    // projection, so down[h][i] = w2[e * I + i][h].
    void dbrxRows() {
        const at::Tensor w1 = at::randn({kExperts * kWidth, kHidden});
        const at::Tensor v1 = at::randn({kExperts * kWidth, kHidden});
        const at::Tensor w2 = at::randn({kExperts * kWidth, kHidden});
        const std::map<std::string, at::Tensor> fused{{"w1", w1}, {"v1", v1}, {"w2", w2}};
        const qs::ExpertSlices s = qs::sliceExpert(qs::ExpertStorage::DbrxRows, fused, 2, kExperts);
        QCOMPARE(s.gate.sizes(), at::IntArrayRef({kWidth, kHidden}));
        QCOMPARE(s.down.sizes(), at::IntArrayRef({kHidden, kWidth}));
        QVERIFY(!s.gateBias.defined());
        for (int64_t i = 0; i < kWidth; ++i)
            for (int64_t h = 0; h < kHidden; ++h) {
                QCOMPARE(s.gate[i][h].item<float>(), w1[2 * kWidth + i][h].item<float>());
                QCOMPARE(s.up[i][h].item<float>(), v1[2 * kWidth + i][h].item<float>());
                QCOMPARE(s.down[h][i].item<float>(), w2[2 * kWidth + i][h].item<float>());
            }
        verifyRoundTrip(qs::ExpertStorage::DbrxRows, fused);
    }

    // Llama 4: gate_up = x @ gate_up_proj[e], gate, up = chunk(2, -1): gate[i][h] =
    // gate_up_proj[e][h][i], up[i][h] = gate_up_proj[e][h][I + i]; down[h][i] = down_proj[e][i][h].
    void gateUpHalves() {
        const at::Tensor gu = at::randn({kExperts, kHidden, 2 * kWidth});
        const at::Tensor down = at::randn({kExperts, kWidth, kHidden});
        const std::map<std::string, at::Tensor> fused{{"gate_up_proj", gu}, {"down_proj", down}};
        const qs::ExpertSlices s =
            qs::sliceExpert(qs::ExpertStorage::GateUpHalves, fused, 1, kExperts);
        for (int64_t i = 0; i < kWidth; ++i)
            for (int64_t h = 0; h < kHidden; ++h) {
                QCOMPARE(s.gate[i][h].item<float>(), at3(gu, 1, h, i));
                QCOMPARE(s.up[i][h].item<float>(), at3(gu, 1, h, kWidth + i));
                QCOMPARE(s.down[h][i].item<float>(), at3(down, 1, i, h));
            }
        verifyRoundTrip(qs::ExpertStorage::GateUpHalves, fused);
    }

    // gpt-oss: gate_up = x @ gate_up_proj[e] + gate_up_proj_bias[e]; gate = gate_up[..., ::2],
    // up = gate_up[..., 1::2]; out = h @ down_proj[e] + down_proj_bias[e].
    void gateUpInterleavedWithBiases() {
        const at::Tensor gu = at::randn({kExperts, kHidden, 2 * kWidth});
        const at::Tensor guBias = at::randn({kExperts, 2 * kWidth});
        const at::Tensor down = at::randn({kExperts, kWidth, kHidden});
        const at::Tensor downBias = at::randn({kExperts, kHidden});
        const std::map<std::string, at::Tensor> fused{{"gate_up_proj", gu},
                                                      {"gate_up_proj_bias", guBias},
                                                      {"down_proj", down},
                                                      {"down_proj_bias", downBias}};
        const qs::ExpertSlices s =
            qs::sliceExpert(qs::ExpertStorage::GateUpInterleaved, fused, 2, kExperts);
        for (int64_t i = 0; i < kWidth; ++i) {
            for (int64_t h = 0; h < kHidden; ++h) {
                QCOMPARE(s.gate[i][h].item<float>(), at3(gu, 2, h, 2 * i));
                QCOMPARE(s.up[i][h].item<float>(), at3(gu, 2, h, 2 * i + 1));
                QCOMPARE(s.down[h][i].item<float>(), at3(down, 2, i, h));
            }
            QCOMPARE(s.gateBias[i].item<float>(), guBias[2][2 * i].item<float>());
            QCOMPARE(s.upBias[i].item<float>(), guBias[2][2 * i + 1].item<float>());
        }
        for (int64_t h = 0; h < kHidden; ++h)
            QCOMPARE(s.downBias[h].item<float>(), downBias[2][h].item<float>());
        verifyRoundTrip(qs::ExpertStorage::GateUpInterleaved, fused);
    }
};

QS_TEST_APPLESS_MAIN(TestFusedExperts)
#include "tst_fusedexperts.moc"

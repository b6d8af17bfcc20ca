// One numeric definition per quantizer: the fused CPU kernels (FastGroupQuant.h) and the ATen
// path give bit-identical fake-quantized values, codes, scales and zero points; an activation
// quantizer (the one entry point the pipeline uses, whichever kernel it picks) equals the ATen
// path for every registry scheme's input and output spec, static and dynamic; and a plan's kept
// codes dequantize to exactly the weight the quantized forward uses. Inputs: random, edge cases
// (ties at .5, saturation, subnormals, zeros, constant rows, NaN/Inf) and stories260K's weights.
#include "QuantTestHelpers.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "calib/ActivationQuantizer.h"
#include "calib/LayerPlan.h"
#include "io/Checkpoint.h"
#include "model/DecoderModel.h"
#include "quant/FastGroupQuant.h"
#include "quant/Observer.h"
#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/Parallel.h>

#include <QtTest>

#include <cfloat>
#include <limits>

using namespace qs::quant;
using namespace qs::quant::test;

namespace {

// [rows, 64] of edge values: exact ties of a power-of-two grid, saturating values, subnormals,
// zeros, a constant row, NaN and +-Inf in rows of their own.
at::Tensor edgeCases() {
    at::Tensor x = randomWeights({12, 64}, 7, 30);
    for (int i = 0; i < 64; ++i)
        x[0][i] = (float(i - 32) + 0.5f) / 16.0f; // ties on a 1/16 grid
    x[1].fill_(0.0f);
    x[2].fill_(-0.3f);
    for (int i = 0; i < 64; ++i)
        x[3][i] = float(i) * 1e-41f; // subnormals
    x[4][3] = 1e30f;                 // saturates any scale observed elsewhere
    x[4][4] = -1e30f;
    x[5][7] = std::numeric_limits<float>::quiet_NaN();
    x[6][9] = std::numeric_limits<float>::infinity();
    x[7][11] = -std::numeric_limits<float>::infinity();
    return x;
}

// Parameters observed on `calibration`, then applied to `x`: static quantization, where x may
// hold values outside the observed range.
QuantParams observed(const at::Tensor& calibration, const QuantSpec& spec) {
    auto obs = Observer::create(spec);
    obs->observe(calibration);
    return obs->params();
}

} // namespace

class TestQuantFused : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::set_num_threads(2); }

    void staticFusedEqualsAten() {
        const at::Tensor calibration = randomWeights({12, 64}, 3, 10);
        int checked = 0;
        for (const at::Tensor& x : {edgeCases(), randomWeights({40, 128}, 11, 20)}) {
            for (DataType d : kIntTypes) {
                for (bool sym : {true, false}) {
                    for (Granularity g : {Granularity::PerTensor, Granularity::PerGroup}) {
                        QuantSpec spec = intSpec(d, g, sym, 32);
                        // Per group the parameters need x's group count: observe other data of
                        // x's shape (narrower, so x saturates).
                        const at::Tensor calib =
                            g == Granularity::PerTensor
                                ? calibration
                                : randomWeights({x.size(0), x.size(1)}, 13, 10) * 0.5;
                        const QuantParams p = observed(calib, spec);
                        QVERIFY(fastParamsPathApplies(x, spec, p));
                        const at::Tensor fused = fakeQuantizeFastWithParams(x, spec, p);
                        const at::Tensor aten = fakeQuantize(x, spec, p);
                        QVERIFY2(firstDifference(fused, aten) == -1,
                                 qPrintable(QString::fromStdString(spec.summary())));
                        ++checked;
                    }
                }
            }
        }
        QCOMPARE(checked, 2 * 6 * 2 * 2);
        // A scale below the smallest normal is clamped to it by both paths.
        QuantSpec tiny = intSpec(DataType::Int8, Granularity::PerTensor, true);
        QuantParams p;
        p.scale = at::full({}, 1e-42f);
        p.zeroPoint = at::zeros({}, at::kInt);
        const at::Tensor x = edgeCases();
        QCOMPARE(firstDifference(fakeQuantizeFastWithParams(x, tiny, p), fakeQuantize(x, tiny, p)),
                 int64_t(-1));
        // Not applicable: bf16 input, a non-integer type, parameters of the wrong count.
        QVERIFY(!fastParamsPathApplies(x.to(at::kBFloat16), tiny, p));
        QVERIFY(!fastParamsPathApplies(x, QuantSpec::defaults(DataType::Fp8E4M3), p));
        QuantParams wrong = p;
        wrong.scale = at::ones({3});
        wrong.zeroPoint = at::zeros({3}, at::kInt);
        QVERIFY(!fastParamsPathApplies(x, tiny, wrong));
        QVERIFY_THROWS_EXCEPTION(qs::Error, fakeQuantizeFastWithParams(x, tiny, wrong));
    }

    // Every registry scheme's activation specs through ActivationQuantizer (static: observe,
    // freeze, apply; dynamic: apply) against the ATen path with the same parameters.
    void activationQuantizerIsTheAtenDefinition() {
        const at::Tensor calibration = randomWeights({4, 16, 64}, 5, 12);
        const at::Tensor x = at::cat({edgeCases().unsqueeze(0).narrow(1, 0, 8).reshape({2, 4, 64}),
                                      randomWeights({2, 4, 64}, 6, 40)},
                                     0);
        int checked = 0;
        for (const SchemeName& n : schemeNames()) {
            if (n.legacy)
                continue;
            const QuantScheme scheme = resolveScheme(n.name);
            for (const auto& spec : {scheme.input, scheme.output}) {
                if (!spec)
                    continue;
                qs::ActivationQuantizer q("layer", *spec);
                at::Tensor reference;
                if (spec->isDynamic) {
                    reference = fakeQuantize(x, *spec, observed(x, *spec));
                } else {
                    q.observe(calibration);
                    q.freeze();
                    reference = fakeQuantize(x, *spec, q.params());
                }
                QVERIFY2(firstDifference(q.apply(x), reference) == -1, n.name.c_str());
                ++checked;
            }
        }
        QVERIFY(checked >= 10);
    }

    // stories260K's real weights (and a static per-tensor int8 activation grid over them).
    void realWeights() {
        const auto checkpoint =
            qs::Checkpoint::open(qs::test::sharedPath("models/stories260K").toStdString());
        int checked = 0;
        for (const char* name :
             {"model.layers.0.self_attn.q_proj.weight", "model.layers.2.mlp.gate_proj.weight",
              "model.layers.4.mlp.down_proj.weight"}) {
            const at::Tensor w = qs::loadTensor(*checkpoint, name, at::kFloat, at::kCPU);
            for (DataType d : kIntTypes) {
                for (bool sym : {true, false}) {
                    const QuantSpec perTensor = intSpec(d, Granularity::PerTensor, sym);
                    const QuantParams p = observed(w * 0.25, perTensor); // saturates
                    QCOMPARE(firstDifference(fakeQuantizeFastWithParams(w, perTensor, p),
                                             fakeQuantize(w, perTensor, p)),
                             int64_t(-1));
                    QuantSpec channel = intSpec(d, Granularity::PerChannel, sym);
                    const FastQuantResult fast = fakeQuantizeFast(w, channel, true);
                    const QuantParams pc = computeParams(channel, observeRange(w, channel));
                    QCOMPARE(firstDifference(fast.fake, fakeQuantize(w, channel, pc)), int64_t(-1));
                    QVERIFY(at::equal(fast.codes, quantize(w, channel, pc).codes));
                    checked += 2;
                }
            }
        }
        QCOMPARE(checked, 3 * 6 * 2 * 2);
    }

    // The plan keeps what an exporter writes: for fp32 weights, dequantizing the kept codes
    // gives exactly the weight the quantized forward uses, for every registry scheme with codes.
    void planCodesDequantizeToTheForwardWeight() {
        const at::Tensor w = randomWeights({48, 128}, 17, 25);
        int withCodes = 0, fakeOnly = 0;
        for (const SchemeName& n : schemeNames()) {
            if (n.legacy)
                continue;
            qs::LayerPlan plan;
            plan.name = "layer";
            plan.scheme = resolveScheme(n.name);
            plan.quantizeWeight(w);
            QVERIFY(plan.weight.reference.is_same(w));
            if (!plan.weight.codes) {
                ++fakeOnly;
                continue;
            }
            const at::Tensor back = dequantize(*plan.weight.codes, plan.scheme->weight, at::kFloat);
            QVERIFY2(firstDifference(back, plan.weight.dequantized) == -1, n.name.c_str());
            ++withCodes;
        }
        QVERIFY(withCodes >= 10);
        QVERIFY(fakeOnly >= 1); // e.g. the progressive int4 -> fp8 weight
        // No scheme: the weight passes through and nothing is kept.
        qs::LayerPlan none;
        none.quantizeWeight(w);
        QVERIFY(none.weight.dequantized.is_same(w));
        QVERIFY(!none.weight.codes);
    }
};

QS_TEST_GUILESS_MAIN(TestQuantFused)
#include "tst_quant_fused.moc"

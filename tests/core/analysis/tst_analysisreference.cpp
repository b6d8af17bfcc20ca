// The analysis metrics and the KV-cache quantizer recomputed from the tensors with the plain
// formulas, independently of analysis/ErrorAccumulator, calib/LayerAnalyzer and the calibration
// pipeline: stories260K's block 0, whose linears' full-precision inputs the test rebuilds by hand
// from the checkpoint (q/k/v read RMSNorm(embedding) * gain; no earlier block to run), in double.
//
// Definitions (docs of LayerReport.h; Quark's debug metrics):
//   mse = mean (a - r)^2, SQNR = 10 log10(sum r^2 / sum (a - r)^2) dB,
//   cosine = sum a r / sqrt(sum a^2 sum r^2), maxAbs = max |a - r|,
//   meanRelative = mean |a - r| / (|r| + 1e-8),
//   channel absmax = max over calibration tokens of |x_c|, outlier score = the largest channel
//   absmax over the median one (element n/2 of the sorted absmaxes, the upper middle for even n),
//   fp8 e4m3 per-tensor static scale = amax / 448 (Quark: amax over the calibration outputs,
//   448 the largest finite e4m3 value; here taken from the independent minifloat table).
// Which tokens: the run's own calibration windows (tokenizeFile + calibrationSamples with the
// recipe's seed: data selection, not a metric).
#include "../quant/MiniFloatReference.h"
#include "ErrorMetricsFormula.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "calib/CalibrationData.h"
#include "eval/TextEvaluation.h"
#include "io/Checkpoint.h"
#include "model/DecoderModel.h"
#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "run/QuantizationRun.h"
#include "tokenize/TokenizerLoader.h"

#include <ATen/ATen.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>

using namespace qs;

namespace {

constexpr int64_t kSamples = 2;
constexpr int64_t kSeqLen = 64;

using Reference = qs::test::ErrorFormula;

// The metrics of `a` against `r` (ErrorAccumulator's eps of 1e-8 in the relative error).
Reference metricsOf(const at::Tensor& a, const at::Tensor& r) {
    return qs::test::errorMetricsFormula(a, r, 1e-8);
}

double relative(double a, double b) {
    return std::fabs(a - b) / std::fabs(b);
}

} // namespace

class TestAnalysisReference : public QObject {
    Q_OBJECT

    std::string m_model;
    std::unique_ptr<Checkpoint> m_ckpt;
    at::Tensor m_blockInput; // block 0's q/k/v input over the calibration tokens, [tokens, 64]

    at::Tensor weight(const std::string& name) const {
        return loadTensor(*m_ckpt, name, at::kFloat, at::kCPU);
    }

    RunRequest request(const std::string& scheme) const {
        RunRequest req;
        req.modelDir = m_model;
        req.recipe.global = quant::resolveScheme(scheme);
        req.recipe.exclude = {"*down_proj"}; // 172 inputs: no groups of 32
        req.recipe.calibration.dataPath =
            test::sharedPath("data/tinystories-calib.txt").toStdString();
        req.recipe.calibration.numSamples = kSamples;
        req.recipe.calibration.seqLen = kSeqLen;
        req.analyze = true;
        return req;
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = test::sharedPath("models/stories260K").toStdString();
        m_ckpt = Checkpoint::open(m_model);
        const std::string calib = test::sharedPath("data/tinystories-calib.txt").toStdString();
        const std::vector<int32_t> ids = tokenizeFile(TokenizerLoader::load(m_model), calib);
        const at::Tensor windows =
            calibrationSamples(ids, kSamples, kSeqLen, RunRequest().recipe.calibration.seed, calib);
        QCOMPARE(windows.size(0), kSamples);
        // RMSNorm(e) * g = e / sqrt(mean(e^2) + eps) * g, per token, in double (config.json:
        // rms_norm_eps 1e-5).
        const at::Tensor e = weight("model.embed_tokens.weight")
                                 .to(at::kDouble)
                                 .index_select(0, windows.reshape(-1));
        const at::Tensor g = weight("model.layers.0.input_layernorm.weight").to(at::kDouble);
        m_blockInput = e / (e.pow(2).mean(-1, true) + 1e-5).sqrt() * g;
        QCOMPARE(m_blockInput.size(0), kSamples * kSeqLen);
    }

    // Weight errors of every linear of the model (uint4 per group of 32), against the
    // checkpoint's weight fake-quantized by the scheme's weight spec (the quantizer itself is
    // checked against the formulas in tst_quant_int). The library sums in double in chunks in
    // another order: relative differences of order 1e-15 sqrt(n); 1e-9 allowed. maxAbs is a
    // maximum of the same exact float differences: equal.
    void weightErrorsEqualTheFormulas() {
        const QuantizationOutcome out = runQuantization(request("uint4_wo_32"), {});
        const quant::QuantSpec spec = quant::resolveScheme("uint4_wo_32").weight;
        int checked = 0;
        for (const LayerReport& l : out.report.layers) {
            if (!l.quantized)
                continue;
            const at::Tensor w = weight(l.name + ".weight");
            const Reference ref = metricsOf(quant::fakeQuantize(w, spec), w);
            const QByteArray name = QByteArray::fromStdString(l.name);
            QVERIFY2(l.weight.valid, name);
            QVERIFY2(relative(l.weight.mse, ref.mse) <= 1e-9, name);
            QVERIFY2(std::fabs(l.weight.sqnrDb - ref.sqnrDb) <= 1e-8, name);
            QVERIFY2(std::fabs(l.weight.cosine - ref.cosine) <= 1e-12, name);
            QVERIFY2(l.weight.maxAbs == ref.maxAbs, name);
            QVERIFY2(relative(l.weight.meanRelative, ref.meanRelative) <= 1e-9, name);
            ++checked;
        }
        // q, k, v, o, gate and up of the 5 blocks (down_proj excluded; the tied head is not
        // quantized).
        QCOMPARE(checked, 5 * 6);
    }

    // Block 0's q/k/v: the input statistics and the local output error from the hand-built
    // inputs. The engine computes the inputs in float32: the norm's mean of 64 squares, its
    // reciprocal square root and two products each round to u = 2^-24, together at most
    // (64 + 4) u = 4.1e-6 relative; channel absmax and outlier score are allowed 1e-5. The
    // outputs x W^T are float32 dot products of 64 terms (error <= 64 u |x||w| ~ 4e-6 of the
    // output scale), while uint4's error is ~1e-1 of it: the MSE moves by ~1e-4 relative at
    // most (allowed 1e-3), SQNR by 10 / ln 10 of that (allowed 5e-3 dB), cosine by 1e-6.
    void inputStatisticsAndOutputErrorEqualTheFormulas() {
        const QuantizationOutcome out = runQuantization(request("uint4_wo_32"), {});
        const quant::QuantSpec spec = quant::resolveScheme("uint4_wo_32").weight;
        const at::Tensor absmax = std::get<0>(m_blockInput.abs().max(0));
        std::vector<double> sorted(absmax.data_ptr<double>(),
                                   absmax.data_ptr<double>() + absmax.numel());
        std::sort(sorted.begin(), sorted.end());
        const double outlierScore = sorted.back() / sorted[sorted.size() / 2];
        int checked = 0;
        for (const LayerReport& l : out.report.layers) {
            if (l.block != 0 || (l.kind != "q_proj" && l.kind != "k_proj" && l.kind != "v_proj"))
                continue;
            const QByteArray name = QByteArray::fromStdString(l.name);
            QCOMPARE(l.input.tokens, kSamples * kSeqLen);
            QCOMPARE(int64_t(l.input.absmax.size()), absmax.numel());
            for (int64_t c = 0; c < absmax.numel(); ++c)
                QVERIFY2(relative(l.input.absmax[size_t(c)], absmax[c].item<double>()) <= 1e-5,
                         name + " channel " + QByteArray::number(qlonglong(c)));
            QVERIFY2(relative(l.inputAbsmax, sorted.back()) <= 1e-5, name);
            QVERIFY2(relative(l.outlierScore, outlierScore) <= 1e-5, name);

            const at::Tensor w = weight(l.name + ".weight").to(at::kDouble);
            const at::Tensor wq = quant::fakeQuantize(weight(l.name + ".weight"), spec);
            const Reference ref = metricsOf(at::matmul(m_blockInput, wq.to(at::kDouble).t()),
                                            at::matmul(m_blockInput, w.t()));
            qInfo("%s: output MSE %.9g (reference %.9g), SQNR %.6f dB (%.6f)", name.constData(),
                  l.outputLocal.mse, ref.mse, l.outputLocal.sqnrDb, ref.sqnrDb);
            QVERIFY2(relative(l.outputLocal.mse, ref.mse) <= 1e-3, name);
            QVERIFY2(std::fabs(l.outputLocal.sqnrDb - ref.sqnrDb) <= 5e-3, name);
            QVERIFY2(std::fabs(l.outputLocal.cosine - ref.cosine) <= 1e-6, name);
            ++checked;
        }
        QCOMPARE(checked, 3);
    }

    // The KV cache (--kv_cache_dtype fp8, Quark's per-tensor static fp8 e4m3 on k_proj's and
    // v_proj's outputs): block 0's k/v output quantizers hold scale = amax / 448 with amax the
    // largest |x W^T| over the calibration tokens, computed here in double (float32 outputs
    // differ by <= 64 u relative: allowed 1e-5); q_proj, o_proj and the MLP have no output
    // quantizer under a weight-only scheme.
    void kvCacheScalesEqualTheFormula() {
        RunRequest req = request("uint4_wo_32");
        req.recipe.kvCache = quant::QuantSpec::defaults(quant::DataType::Fp8E4M3);
        req.analyze = false;
        req.keepPlans = true;
        const QuantizationOutcome out = runQuantization(req, {});
        QVERIFY(!out.plans.empty());
        const double fp8Max = quant::test::refTable(quant::test::kRefE4M3).back().second;
        QCOMPARE(fp8Max, 448.0);
        int withOutput = 0, kv = 0;
        for (const LayerPlan& p : out.plans.front()) {
            const bool isKv = p.name.find("k_proj") != std::string::npos ||
                              p.name.find("v_proj") != std::string::npos;
            QCOMPARE(p.output.has_value(), isKv);
            if (!p.output)
                continue;
            ++withOutput;
            QVERIFY(p.outputIsKvCache);
            const at::Tensor y =
                at::matmul(m_blockInput, weight(p.name + ".weight").to(at::kDouble).t());
            const double scale = y.abs().max().item<double>() / fp8Max;
            const double got = p.output->params().scale.item<double>();
            qInfo("%s: fp8 scale %.9g (reference %.9g)", p.name.c_str(), got, scale);
            QVERIFY2(relative(got, scale) <= 1e-5, p.name.c_str());
            ++kv;
        }
        QCOMPARE(withOutput, 2);
        QCOMPARE(kv, 2);
    }
};

QS_TEST_GUILESS_MAIN(TestAnalysisReference)
#include "tst_analysisreference.moc"

// PlanRowEvaluator::localErrorEnergy (the recipe search's scaled unit costs) against the same sum
// written out from the checkpoint: block 0's q_proj sees RMSNorm(embedding) x norm weight, so its
// local output error energy on the evaluation windows is sum ((x Wq^T) - (x W^T))^2 over them.
#include "TestMain.h"
#include "TestSupport.h"

#include "io/Checkpoint.h"
#include "model/DecoderModel.h"
#include "recipe/RecipeFlags.h"
#include "run/PlanRowEvaluator.h"
#include "run/PreparedRun.h"
#include "synth/SyntheticModel.h"

#include <ATen/ATen.h>
#include <QtTest>

#include <cmath>

class TestPlanRowEvaluator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void localErrorEnergyIsTheLayersOutputErrorOnTheReferenceStream() {
        qputenv("QS_CACHE_DIR", qs::test::tempDir("cache").toUtf8());
        qs::SyntheticModelOptions o;
        o.hiddenSize = 64, o.intermediateSize = 160, o.numLayers = 2, o.numHeads = 4,
        o.numKvHeads = 2, o.seed = 5;
        o.outDir = (qs::test::tempDir("rows") + "/model").toStdString();
        qs::writeSyntheticModel(o);

        qs::QuantFlags flags;
        flags.quantScheme = "int4_wo_32";
        flags.calibData = qs::test::sharedPath("data/tinystories-calib.txt").toStdString();
        flags.numCalibData = 2;
        flags.seqLen = 32;
        qs::RunRequest req;
        req.modelDir = o.outDir;
        req.recipe = qs::recipeFromFlags(flags);
        req.recipe.evaluation.dataPath =
            qs::test::sharedPath("data/tinystories-eval.txt").toStdString();
        req.recipe.evaluation.seqLen = 40;
        req.recipe.evaluation.maxWindows = 3;
        req.evaluate = true;
        qs::PreparedRun prep = qs::prepareRun(req);
        const qs::PipelineOptions options = qs::planKeepingOptions(prep);
        qs::CalibrationPipeline pipeline(*prep.model, *prep.planner, options);
        std::vector<std::vector<qs::LayerPlan>> plans =
            pipeline.run(prep.calibration, {}, {}).plans;
        qs::PlanRowEvaluator rows(*prep.model, prep.evaluation, options.maxBatchTokens);
        rows.measureReference(pipeline, plans);

        const std::string q = "model.layers.0.self_attn.q_proj";
        const std::map<std::string, double> energy =
            rows.localErrorEnergy(plans, 0, {q, "model.layers.1.self_attn.q_proj"});
        QCOMPARE(int(energy.size()), 1); // only block 0's layers are in block 0
        QVERIFY(energy.count(q));

        const qs::LayerPlan* plan = nullptr;
        for (const qs::LayerPlan& p : plans[0])
            if (p.name == q)
                plan = &p;
        QVERIFY(plan && plan->weight.dequantized.defined());
        QVERIFY(!plan->weight.dequantized.equal(plan->weight.reference));
        const std::shared_ptr<const qs::Checkpoint> ckpt = qs::Checkpoint::open(o.outDir);
        const at::Tensor g =
            qs::loadTensor(*ckpt, "model.layers.0.input_layernorm.weight", at::kDouble, at::kCPU);
        const at::Tensor h = rows.referenceInput(0).to(at::kDouble);
        QCOMPARE(h.size(0), int64_t(3));
        const double eps = prep.model->config().normEps;
        const at::Tensor x = h * at::rsqrt(h.square().mean(-1, true) + eps) * g;
        const at::Tensor d = at::matmul(
            x, (plan->weight.dequantized.to(at::kDouble) - plan->weight.reference.to(at::kDouble))
                   .t());
        const double expected = d.square().sum().item<double>();
        QVERIFY(expected > 0.0);
        // The evaluator runs in float32: y and yq are 64-term dot products of float32 x, each
        // to about sqrt(64) x 2^-24 ~ 5e-7 of |y|; their difference (int4's error, at least 1 %
        // of |y| here) to ~1e-4 relative at worst, the sum of its squares no worse: 1e-4.
        QVERIFY2(std::abs(energy.at(q) - expected) <= 1e-4 * expected,
                 qPrintable(
                     QString("%1 vs %2").arg(energy.at(q), 0, 'g', 10).arg(expected, 0, 'g', 10)));
    }
};

QS_TEST_GUILESS_MAIN(TestPlanRowEvaluator)
#include "tst_planrowevaluator.moc"

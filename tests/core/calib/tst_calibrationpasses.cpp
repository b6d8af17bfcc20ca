// The passes of the calibration pipeline, each where it stands in the order: the transform pass
// sees the captured inputs and the full-precision weights before weight quantization; a recipe
// field the engine cannot honour is refused before any work; float calibration observes the
// full-precision model (a layer's frozen ranges do not depend on the other layers' schemes)
// while sequential calibration observes the quantized upstream.
#include "TestMain.h"
#include "TestSupport.h"

#include "calib/BlockTransform.h"
#include "calib/CalibrationPipeline.h"
#include "calib/LayerPlanner.h"
#include "model/ModelLoader.h"
#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <c10/core/InferenceMode.h>

#include <QtTest>

namespace {

// Records what it was given and doubles one layer's weight, as a smoothing transform would.
class DoublingTransform : public qs::BlockTransform {
public:
    std::string name() const override { return "doubling"; }
    bool needsInputs() const override { return true; }
    void apply(qs::BlockTransformInput& in) override {
        for (const auto& [layer, batches] : in.inputs) {
            int64_t rows = 0;
            for (const at::Tensor& b : batches)
                rows += b.size(0);
            m_rows[layer] = rows;
        }
        for (qs::LinearLayer* l : in.block.linears()) {
            if (l->kind != "o_proj")
                continue;
            m_originals.push_back(l->weight.clone());
            l->weight = l->weight * 2;
            for (qs::LayerPlan& p : in.plans)
                if (p.name == l->name)
                    p.transforms.push_back(name());
        }
    }
    std::map<std::string, int64_t> m_rows;
    std::vector<at::Tensor> m_originals;
};

// Chooses q_proj's quantized weight itself, as GPTQ does (here: all zeros, unmistakable).
class CodeChoosingTransform : public qs::BlockTransform {
public:
    std::string name() const override { return "chooser"; }
    void apply(qs::BlockTransformInput& in) override {
        std::vector<qs::LinearLayer*> linears = in.block.linears();
        for (size_t i = 0; i < linears.size(); ++i) {
            if (linears[i]->kind != "q_proj")
                continue;
            qs::LayerPlan& p = in.plans[i];
            p.weight.reference = linears[i]->weight;
            p.weight.dequantized = at::zeros_like(linears[i]->weight);
            p.transforms.push_back(name());
        }
    }
};

} // namespace

class TestCalibrationPasses : public QObject {
    Q_OBJECT

private:
    QString m_model;
    QString m_text;

    qs::Recipe int8Recipe(const std::string& mode) const {
        qs::QuantFlags flags;
        flags.quantScheme = "int8"; // static per-tensor inputs
        flags.calibData = m_text.toStdString();
        flags.numCalibData = 6;
        flags.seqLen = 32;
        flags.calibMode = mode;
        return qs::recipeFromFlags(flags);
    }

    // Block 1's q_proj input quantizer scale after calibrating `recipe`.
    double block1InputScale(const qs::Recipe& recipe) const {
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = recipe;
        req.keepPlans = true;
        const qs::QuantizationOutcome out = qs::runQuantization(req);
        for (const qs::LayerPlan& p : out.plans.at(1))
            if (p.kind == "q_proj")
                return p.input->params().scale.item<double>();
        return -1;
    }

    // The pipeline over the synthetic model with int4_wo_32 everywhere and one transform,
    // plans kept.
    qs::PipelineResult runWithTransform(std::shared_ptr<qs::BlockTransform> transform,
                                        const at::Tensor& calibration) const {
        c10::InferenceMode guard;
        const qs::ModelHandle h = qs::openModelHandle(m_model.toStdString());
        auto model = h.instantiate({});
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int4_wo_32");
        qs::LayerPlanner planner = qs::LayerPlanner::forRecipe(recipe);
        qs::PipelineOptions options;
        options.transforms = {std::move(transform)};
        options.keepPlans = true;
        qs::CalibrationPipeline pipeline(*model, planner, options);
        return pipeline.run(calibration, {});
    }

private Q_SLOTS:
    void initTestCase() {
        qs::SyntheticModelOptions o;
        o.hiddenSize = 64, o.intermediateSize = 160, o.numLayers = 3, o.numHeads = 4,
        o.numKvHeads = 2, o.seed = 5;
        o.outDir = (qs::test::tempDir("passes") + "/model").toStdString();
        qs::writeSyntheticModel(o);
        m_model = QString::fromStdString(o.outDir);
        m_text = qs::test::sharedPath("data/tinystories-calib.txt");
    }

    void transformsRunOnCapturedInputsBeforeWeightQuantization() {
        auto transform = std::make_shared<DoublingTransform>();
        const qs::PipelineResult r =
            runWithTransform(transform, at::randint(0, 512, {3, 16}, at::kLong));
        const qs::quant::QuantScheme scheme = qs::quant::resolveScheme("int4_wo_32");

        QCOMPARE(int(transform->m_originals.size()), 3); // one o_proj per block
        QCOMPARE(transform->m_rows.at("model.layers.2.mlp.down_proj"), int64_t(3 * 16));
        const qs::LayerPlan& o = r.plans.at(1).at(3);
        QCOMPARE(o.kind, std::string("o_proj"));
        QCOMPARE(o.transforms, std::vector<std::string>{"doubling"});
        // The plan's reference is the transformed weight, and the quantized weight derives
        // from it (not from the checkpoint's).
        QVERIFY(at::equal(o.weight.reference, transform->m_originals[1] * 2));
        QVERIFY(at::equal(o.weight.dequantized,
                          qs::quant::fakeQuantize(transform->m_originals[1] * 2, scheme.weight)));
        QVERIFY(o.weight.codes.has_value());
        QVERIFY(r.plans.at(1).at(0).transforms.empty());
    }

    // A weight-only run whose sink reads only codes (the Quark exporter) releases each
    // linear's float weights once its codes exist and keeps uint8 codes; the codes are the
    // ones a run keeping everything computes (exact: the same round-to-nearest, narrowed).
    void codesOnlySinkReleasesFloatWeights() {
        c10::InferenceMode guard;
        const qs::ModelHandle h = qs::openModelHandle(m_model.toStdString());
        auto model = h.instantiate({});
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("uint4_wo_32");
        const at::Tensor none = at::zeros({0, 2}, at::kLong);

        qs::LayerPlanner keptPlanner = qs::LayerPlanner::forRecipe(recipe);
        qs::PipelineOptions kept;
        kept.keepPlans = true;
        const qs::PipelineResult full =
            qs::CalibrationPipeline(*model, keptPlanner, kept).run(none, {});

        qs::LayerPlanner planner = qs::LayerPlanner::forRecipe(recipe);
        qs::PipelineOptions options;
        options.sinkReadsOnlyCodes = true;
        int blocks = 0;
        const qs::BlockSink sink = [&](int index, qs::DecoderBlock& block,
                                       const std::vector<qs::LayerPlan>& plans) {
            ++blocks;
            const std::vector<qs::LinearLayer*> linears = block.linears();
            for (size_t i = 0; i < plans.size(); ++i) {
                const qs::LayerPlan& p = plans[i];
                QVERIFY(!p.weight.reference.defined());
                QVERIFY(!p.weight.dequantized.defined());
                QVERIFY(!linears[i]->weight.defined());
                QCOMPARE(p.weight.codes->codes.scalar_type(), at::kByte);
                const qs::LayerPlan& f = full.plans.at(size_t(index)).at(i);
                QVERIFY(at::equal(p.weight.codes->codes.to(at::kInt), f.weight.codes->codes));
                QVERIFY(at::equal(p.weight.codes->params.scale, f.weight.codes->params.scale));
            }
        };
        qs::CalibrationPipeline(*model, planner, options).run(none, {}, {}, sink);
        QCOMPARE(blocks, 3);

        // With calibration the forward passes need the weights: nothing is released.
        qs::LayerPlanner calibPlanner = qs::LayerPlanner::forRecipe(recipe);
        bool released = false;
        const qs::BlockSink check = [&](int, qs::DecoderBlock&,
                                        const std::vector<qs::LayerPlan>& plans) {
            for (const qs::LayerPlan& p : plans)
                released = released || !p.weight.reference.defined();
        };
        qs::CalibrationPipeline(*model, calibPlanner, options)
            .run(at::randint(0, 512, {2, 16}, at::kLong), {}, {}, check);
        QVERIFY(!released);
    }

    void weightsChosenByATransformAreKept() {
        const qs::PipelineResult r = runWithTransform(std::make_shared<CodeChoosingTransform>(),
                                                      at::zeros({0, 2}, at::kLong));
        for (const auto& block : r.plans) {
            for (const qs::LayerPlan& p : block) {
                if (p.kind == "q_proj")
                    QVERIFY(at::equal(p.weight.dequantized, at::zeros_like(p.weight.reference)));
                else
                    QVERIFY(!at::equal(p.weight.dequantized, p.weight.reference)); // RTN ran
            }
        }
    }

    void unhonouredRecipeFieldsAreRefusedBeforeWork() {
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = int8Recipe("float");
        req.recipe.algorithms.push_back(
            {"svdquant", nlohmann::json::object()}); // Quark's, not ours
        int progressCalls = 0;
        try {
            qs::runQuantization(req,
                                [&](double, const std::string&) { return ++progressCalls > 0; });
            QFAIL("ran a recipe whose algorithm the engine does not have");
        } catch (const qs::Error& e) {
            QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("algorithms[0].name"));
            QVERIFY2(QString(e.what()).contains("'svdquant'"), e.what());
        }
        QCOMPARE(progressCalls, 0);

        // An algorithm the engine has, on a scheme it cannot treat (GPTQ on int8's per-tensor
        // weights): refused naming the layer and the field, still before any work.
        req.recipe.algorithms = {{"gptq", nlohmann::json::object()}};
        try {
            qs::runQuantization(req,
                                [&](double, const std::string&) { return ++progressCalls > 0; });
            QFAIL("ran GPTQ on per-tensor weights");
        } catch (const qs::Error& e) {
            QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("weight.qscheme"));
            QVERIFY2(QString(e.what()).contains("model.layers.0."), e.what());
        }
        QCOMPARE(progressCalls, 0);

        req.recipe = int8Recipe("float");
        req.recipe.exportTargets = {"hf_fake", "tflite"}; // a format Quantscope does not know
        req.outDir = (qs::test::tempDir("refused") + "/out").toStdString();
        try {
            qs::runQuantization(req);
            QFAIL("accepted an export target it cannot write");
        } catch (const qs::Error& e) {
            QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("export_targets[1]"));
        }
        QVERIFY(!QFileInfo::exists(QString::fromStdString(req.outDir)));
        req.outDir.clear(); // nothing is exported: known targets do not matter to this run
        req.recipe.exportTargets = {"hf_fake", "onnx"};
        qs::runQuantization(req);
    }

    void floatCalibrationObservesTheFullPrecisionModel() {
        for (const std::string mode : {"float", "sequential"}) {
            const qs::Recipe all = int8Recipe(mode);
            qs::Recipe block0Excluded = all;
            block0Excluded.exclude = {"*layers.0.*"};
            const double a = block1InputScale(all), b = block1InputScale(block0Excluded);
            QVERIFY(a > 0 && b > 0);
            if (mode == "float")
                QCOMPARE(a, b); // block 0's quantization is invisible to block 1's observer
            else
                QVERIFY2(a != b, qPrintable(QString("%1 %2").arg(a).arg(b)));
        }
    }

    void calibrationModeIsRecordedAndValidated() {
        const qs::Recipe r = int8Recipe("sequential");
        QCOMPARE(r.calibration.mode, qs::CalibrationMode::Sequential);
        const qs::Recipe back = qs::Recipe::fromJson(r.toJson(), "test");
        QCOMPARE(back.calibration.mode, qs::CalibrationMode::Sequential);
        QCOMPARE(r.toJson()["calibration"]["mode"].get<std::string>(), std::string("sequential"));
        // Absent: Quark's float calibration.
        nlohmann::json j = r.toJson();
        j["calibration"].erase("mode");
        QCOMPARE(qs::Recipe::fromJson(j, "test").calibration.mode, qs::CalibrationMode::Float);
        j["calibration"]["mode"] = "greedy";
        try {
            qs::Recipe::fromJson(j, "test");
            QFAIL("accepted an unknown calibration mode");
        } catch (const qs::Error& e) {
            QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("calibration.mode"));
        }
        qs::QuantFlags flags;
        flags.quantScheme = "int8";
        flags.calibMode = "Float";
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::recipeFromFlags(flags));
    }
};

QS_TEST_GUILESS_MAIN(TestCalibrationPasses)
#include "tst_calibrationpasses.moc"

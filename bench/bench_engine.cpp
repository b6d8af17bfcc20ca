// Where a person waits on the engine, old and new paths in the same run. Prints medians and
// ratios, asserts nothing (these machines are shared and noisy).
//
//  1. Analysis overhead: `analyze` against a plain quantization of the same recipe (int8 static,
//     float calibration) on stories260K with its 15 calibration windows of 256 tokens.
//  2. Static int8 calibration per block on a synthetic 1024-hidden Llama (16 windows of 256
//     tokens) against the plain full-precision forward over the same tokens, block by block:
//     float calibration (Quark's, the default) and sequential, each with the fused static kernel
//     (new) and with the ATen path it replaced (old).
//  3. Sensitivity on stories260K (int8, 4 evaluation windows of 256): the old way, one
//     calibration and evaluation per row (2 per layer + 2), against one calibration reused by
//     every row; and the largest difference between their rows.
//
// Round-to-nearest throughput against memcpy is quantscope-bench-quant (bench_quant.cpp).
//
// usage: quantscope-bench-engine [--shared ../shared] [--threads N] [--reps 3] [--sections 123]
#include "calib/CalibrationPasses.h"
#include "model/ModelLoader.h"
#include "quant/FastGroupQuant.h"
#include "recipe/LayerPattern.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "run/SensitivityRun.h"
#include "synth/SyntheticModel.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <QDir>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
    std::string shared = "../shared";
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    int reps = 3;
    std::string sections = "123";
};

double seconds(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

double medianOf(int reps, const std::function<void()>& f) {
    f(); // warm-up: page cache, allocator, thread pool
    std::vector<double> t;
    for (int i = 0; i < reps; ++i)
        t.push_back(seconds(f));
    return median(t);
}

qs::RunRequest int8Request(const std::string& model, const std::string& calib, int64_t windows,
                           int64_t seq, const std::string& mode) {
    qs::QuantFlags flags;
    flags.quantScheme = "int8";
    flags.calibData = calib;
    flags.numCalibData = windows;
    flags.seqLen = seq;
    flags.calibMode = mode;
    qs::RunRequest req;
    req.modelDir = model;
    req.recipe = qs::recipeFromFlags(flags);
    return req;
}

void analysisOverhead(const Options& o) {
    const std::string model = o.shared + "/models/stories260K";
    const std::string calib = o.shared + "/data/tinystories-calib.txt";
    std::printf("\n## 1. analysis overhead (stories260K, int8 static, 15 x 256 calibration "
                "tokens)\n");
    std::printf("%-44s %10s %8s\n", "run", "median s", "ratio");
    for (const char* mode : {"float", "sequential"}) {
        qs::RunRequest req = int8Request(model, calib, 15, 256, mode);
        const double plain = medianOf(o.reps, [&] { qs::runQuantization(req); });
        req.analyze = true;
        const double analyze = medianOf(o.reps, [&] { qs::runQuantization(req); });
        std::printf("%-44s %10.3f %8.2f\n", (std::string("plain quantization, ") + mode).c_str(),
                    plain, 1.0);
        std::printf("%-44s %10.3f %8.2f   (target <= 1.5)\n",
                    (std::string("analyze, ") + mode).c_str(), analyze, analyze / plain);
    }
    std::printf("(float: the plain run is one full-precision pass with observers; the analysis "
                "adds the quantized pass it measures, so 2 passes are its floor)\n");
}

// Seconds per block of the plain full-precision forward over the calibration tokens, batched
// as the pipeline batches them.
std::vector<double> plainForwardPerBlock(const std::string& model, const at::Tensor& ids) {
    c10::InferenceMode guard;
    const qs::ModelHandle h = qs::openModelHandle(model);
    auto m = h.instantiate({});
    const qs::ForwardContext ctx = m->makeContext(ids.size(1));
    at::Tensor hidden = m->embed(ids);
    const int64_t batch = std::max<int64_t>(1, 2048 / ids.size(1));
    std::vector<double> out;
    for (int b = 0; b < m->numBlocks(); ++b) {
        std::unique_ptr<qs::DecoderBlock> block;
        at::Tensor next = at::empty_like(hidden);
        out.push_back(seconds([&] {
            block = m->loadBlock(b);
            for (int64_t r = 0; r < hidden.size(0); r += batch) {
                const int64_t n = std::min(batch, hidden.size(0) - r);
                next.narrow(0, r, n).copy_(block->forward(hidden.narrow(0, r, n), ctx));
            }
        }));
        hidden = next;
    }
    return out;
}

void staticCalibrationPerBlock(const Options& o) {
    QTemporaryDir dir;
    qs::SyntheticModelOptions s;
    s.hiddenSize = 1024, s.intermediateSize = 2816, s.numLayers = 2, s.numHeads = 16,
    s.numKvHeads = 16, s.vocabSize = 4096, s.seed = 3;
    s.outDir = QDir(dir.path()).filePath("model").toStdString();
    qs::writeSyntheticModel(s);
    const std::string calib = o.shared + "/data/calib-general.txt";
    qs::RunRequest req = int8Request(s.outDir, calib, 16, 256, "float");
    const qs::PreparedRun prep = qs::prepareRun(req);
    const std::vector<double> fp = plainForwardPerBlock(s.outDir, prep.calibration); // warm-up run
    std::vector<double> fpRuns;
    for (int i = 0; i < o.reps; ++i) {
        const auto t = plainForwardPerBlock(s.outDir, prep.calibration);
        fpRuns.push_back(t.back()); // the last block: nothing but that block's work
    }
    const double fpBlock = median(fpRuns);
    std::printf("\n## 2. static int8 calibration per block (synthetic Llama, hidden 1024, "
                "16 x 256 tokens; last block; median of %d)\n",
                o.reps);
    std::printf("%-44s %10s %8s\n", "path", "s/block", "ratio");
    std::printf("%-44s %10.3f %8.2f\n", "plain fp forward (same tokens, same batches)", fpBlock,
                1.0);
    for (const char* mode : {"float", "sequential"}) {
        for (bool fused : {true, false}) {
            qs::quant::setFusedStaticKernelEnabled(fused);
            qs::RunRequest r = int8Request(s.outDir, calib, 16, 256, mode);
            std::vector<double> blocks;
            qs::runQuantization(r); // warm-up
            for (int i = 0; i < o.reps; ++i)
                blocks.push_back(qs::runQuantization(r).blockSeconds.back());
            const double t = median(blocks);
            const std::string label = std::string(mode) + " calibration, " +
                                      (fused ? "fused kernel (new)" : "ATen path (old)");
            std::printf("%-44s %10.3f %8.2f%s\n", label.c_str(), t, t / fpBlock,
                        fused ? "   (target <= 2)" : "");
        }
    }
    qs::quant::setFusedStaticKernelEnabled(true);
}

void sensitivity(const Options& o) {
    const std::string model = o.shared + "/models/stories260K";
    qs::RunRequest req =
        int8Request(model, o.shared + "/data/tinystories-calib.txt", 15, 256, "float");
    req.recipe.evaluation.dataPath = o.shared + "/data/tinystories-eval.txt";
    req.recipe.evaluation.seqLen = 256;
    req.recipe.evaluation.maxWindows = 4;
    req.evaluate = true;

    qs::SensitivityResult fresh;
    const double tNew = seconds([&] { fresh = qs::runSensitivity(req); });

    // The old way: every measurement its own recipe, calibrated and evaluated on its own.
    std::vector<qs::SensitivityRow> old;
    const double tOld = seconds([&] {
        qs::RunRequest fp = req;
        fp.recipe.global.reset();
        qs::runQuantization(fp);
        qs::runQuantization(req);
        std::vector<std::string> layers;
        for (const qs::SensitivityRow& r : fresh.rows)
            layers.push_back(r.layer);
        for (const std::string& layer : layers) {
            qs::RunRequest alone = req, allBut = req;
            alone.recipe.kvCache.reset();
            for (const std::string& other : layers)
                if (other != layer)
                    alone.recipe.exclude.push_back(qs::exactLayerPattern(other));
            allBut.recipe.exclude.push_back(qs::exactLayerPattern(layer));
            old.push_back({layer, qs::runQuantization(alone).perplexity->perplexity,
                           qs::runQuantization(allBut).perplexity->perplexity});
        }
    });
    double maxDiff = 0.0;
    for (size_t i = 0; i < old.size() && i < fresh.rows.size(); ++i)
        maxDiff =
            std::max({maxDiff, std::abs(old[i].alonePerplexity - fresh.rows[i].alonePerplexity),
                      std::abs(old[i].allButPerplexity - fresh.rows[i].allButPerplexity)});
    std::printf("\n## 3. sensitivity (stories260K, int8 float calibration, %zu layers, 4 x 256 "
                "evaluation tokens)\n",
                fresh.rows.size());
    std::printf("%-44s %10s %8s\n", "path", "s", "speed-up");
    std::printf("%-44s %10.2f %8.2f\n", "one calibration per row (old)", tOld, 1.0);
    std::printf("%-44s %10.2f %8.2f   (goal >= 10)\n", "one calibration reused (new)", tNew,
                tOld / tNew);
    std::printf("largest |row difference| between the two: %.3g (perplexity)\n", maxDiff);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--shared")
            o.shared = value();
        else if (a == "--threads")
            o.threads = std::max(1, std::atoi(value().c_str()));
        else if (a == "--reps")
            o.reps = std::max(1, std::atoi(value().c_str()));
        else if (a == "--sections")
            o.sections = value();
        else {
            std::fprintf(stderr, "usage: quantscope-bench-engine [--shared DIR] [--threads N] "
                                 "[--reps N] [--sections 123]\n");
            std::exit(2);
        }
    }
    return o;
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    at::set_num_threads(o.threads);
    std::printf("# quantscope-bench-engine: threads %d, medians of %d after a warm-up\n",
                at::get_num_threads(), o.reps);
    try {
        if (o.sections.find('1') != std::string::npos)
            analysisOverhead(o);
        if (o.sections.find('2') != std::string::npos)
            staticCalibrationPerBlock(o);
        if (o.sections.find('3') != std::string::npos)
            sensitivity(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "quantscope-bench-engine: %s\n", e.what());
        return 1;
    }
    return 0;
}

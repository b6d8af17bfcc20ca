// Hand-built module trees and LayerReports for the layer tree, depth chart and detail tests.
// Every metric is a formula of (block, kind) so a test can compute the expected value itself.
#pragma once

#include "analysis/LayerReport.h"
#include "model/ModuleNode.h"
#include "quant/SchemeRegistry.h"

#include <cmath>
#include <string>
#include <vector>

namespace qs::test {

inline const std::vector<std::string>& fixtureKinds() {
    static const std::vector<std::string> kinds = {"q_proj", "k_proj", "up_proj", "down_proj"};
    return kinds;
}

inline std::string fixtureLayer(int block, const std::string& kind) {
    const bool attention = kind == "q_proj" || kind == "k_proj";
    return "model.layers." + std::to_string(block) + (attention ? ".self_attn." : ".mlp.") + kind;
}

inline ModuleNode fixtureNode(std::string name, std::string kind, int block,
                              std::vector<int64_t> shape = {}) {
    ModuleNode n;
    n.name = std::move(name);
    n.kind = std::move(kind);
    n.blockIndex = block;
    n.shape = std::move(shape);
    n.dtype = n.shape.empty() ? "" : "F32";
    n.parameters = n.shape.empty() ? 0 : n.shape[0] * n.shape[1];
    return n;
}

// model → layers.B → self_attn {q_proj, k_proj}, mlp {up_proj, down_proj}; model.norm; lm_head.
inline ModuleNode fixtureTree(int blocks) {
    ModuleNode root;
    ModuleNode model = fixtureNode("model", "model", -1);
    for (int b = 0; b < blocks; ++b) {
        const std::string prefix = "model.layers." + std::to_string(b);
        ModuleNode block = fixtureNode(prefix, "block", b);
        ModuleNode attn = fixtureNode(prefix + ".self_attn", "attention", b);
        ModuleNode mlp = fixtureNode(prefix + ".mlp", "mlp", b);
        attn.children.push_back(fixtureNode(fixtureLayer(b, "q_proj"), "linear", b, {16, 16}));
        attn.children.push_back(fixtureNode(fixtureLayer(b, "k_proj"), "linear", b, {8, 16}));
        mlp.children.push_back(fixtureNode(fixtureLayer(b, "up_proj"), "linear", b, {32, 16}));
        mlp.children.push_back(fixtureNode(fixtureLayer(b, "down_proj"), "linear", b, {16, 32}));
        block.children = {attn, mlp};
        model.children.push_back(block);
    }
    model.children.push_back(fixtureNode("model.norm", "norm", -1, {}));
    root.children = {model, fixtureNode("lm_head", "head", -1, {64, 16})};
    return root;
}

inline ErrorMetrics fixtureError(double sqnr, double meanRelative) {
    ErrorMetrics m;
    m.valid = true;
    m.sqnrDb = sqnr;
    m.mse = std::pow(10.0, -sqnr / 10.0);
    m.cosine = 0.99;
    m.meanRelative = meanRelative;
    return m;
}

// Deliberately not monotonic in the kind order, and with values that sort differently as text
// ("10.50" < "9.25" as strings).
inline LayerReport fixtureReport(int block, int kindIndex) {
    const std::string& kind = fixtureKinds()[size_t(kindIndex)];
    LayerReport r;
    r.name = fixtureLayer(block, kind);
    r.kind = kind;
    r.block = block;
    const int in = kind == "down_proj" ? 32 : 16;
    r.shape = {kind == "k_proj" ? 8 : (kind == "up_proj" ? 32 : 16), in};
    r.quantScheme = quant::resolveScheme("int8");
    r.scheme = r.quantScheme->label();
    r.quantized = true;
    const double k = (kindIndex * 7) % 4; // 0, 3, 2, 1
    r.weight = fixtureError(40.0 - 2.0 * block - k, 0.01 * (1 + k));
    r.outputLocal = fixtureError(30.0 - 1.5 * block - 0.5 * k, 0.02 * (1 + block + k));
    r.outputAccumulated = fixtureError(28.0 - 3.0 * block - 0.25 * k, 0.05);
    r.inputAbsmax = 1.5 + 4.0 * block + k;
    r.outlierScore = 2.0 + 3.75 * block + 1.25 * k; // 2 .. 15.5: crosses 10 for text order
    r.klProxy = 1e-4 * (1 + block + k);
    r.input.tokens = 1024;
    for (int c = 0; c < in; ++c) {
        const float a = 0.5f + 0.1f * static_cast<float>(c) + (c == 3 ? 5.0f : 0.0f);
        r.input.min.push_back(-a * 0.8f);
        r.input.max.push_back(a);
        r.input.absmax.push_back(a);
        r.input.percentile.push_back(a * 0.6f);
        r.input.kurtosis.push_back(0.0f);
    }
    for (int t = 0; t < 12; ++t)
        r.input.tokenAbsmax.push_back(1.0f + static_cast<float>(t % 5));
    r.input.histogram = {-4.0, 5.5, std::vector<int64_t>(64, 3)};
    r.input.quantizedHistogram = {-4.0, 5.5, std::vector<int64_t>(64, 0)};
    r.input.quantizedHistogram.counts[10] = 100;
    r.weightHistogram = {-0.3, 0.6, std::vector<int64_t>(128, 5)};
    r.weightQuantizedHistogram = {-0.3, 0.6, std::vector<int64_t>(128, 0)};
    r.weightQuantizedHistogram.counts[64] = 500;
    return r;
}

inline std::vector<LayerReport> fixtureBlock(int block) {
    std::vector<LayerReport> out;
    for (int k = 0; k < static_cast<int>(fixtureKinds().size()); ++k)
        out.push_back(fixtureReport(block, k));
    return out;
}

} // namespace qs::test

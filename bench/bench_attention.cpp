// The CPU attention loop (model/CausalAttention.cpp) against the materialising path it replaces
// (scores, additive mask, float32 softmax, matmul: `attention` in LlamaStyleModel.h), at the
// shapes of bench_forward.py's models, in the same run. Prints the median milliseconds of each
// and the loop's causal GFLOP/s (4 * B * heads * d * T(T+1)/2 multiply-adds counted as two
// FLOPs each); asserts nothing.
//
// usage: quantscope-bench-attention [--threads N] [--repeat N]
#include "MedianTime.h"
#include "model/CausalAttention.h"
#include "model/LlamaStyleModel.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

namespace {

struct Shape {
    const char* name;
    int64_t batch, heads, kvHeads, len, headDim;
};

} // namespace

int main(int argc, char** argv) {
    int threads = 2, repeat = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--threads"))
            threads = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--repeat"))
            repeat = std::max(1, std::atoi(argv[i + 1]));
    }
    at::set_num_threads(threads);
    c10::InferenceMode guard;
    const Shape shapes[] = {{"stories260K (44 windows)", 44, 8, 4, 256, 8},
                            {"llama-100m (8 windows)", 8, 12, 12, 256, 64},
                            {"llama-1b (2 windows)", 2, 32, 4, 256, 64}};
    std::printf("# threads %d, float32, median of %d\n", at::get_num_threads(), repeat);
    std::printf(
        "| shape | loop ms | loop GFLOP/s | materialising ms | ratio |\n|---|---|---|---|---|\n");
    for (const Shape& s : shapes) {
        at::manual_seed(1);
        // As the blocks make them: [B, T, h, d] memory viewed as [B, h, T, d].
        const at::Tensor q = at::randn({s.batch, s.len, s.heads, s.headDim}).transpose(1, 2);
        const at::Tensor k = at::randn({s.batch, s.len, s.kvHeads, s.headDim}).transpose(1, 2);
        const at::Tensor v = at::randn({s.batch, s.len, s.kvHeads, s.headDim}).transpose(1, 2);
        const double scale = 1.0 / std::sqrt(double(s.headDim));
        const at::Tensor mask = at::triu(
            at::full({s.len, s.len}, -std::numeric_limits<float>::infinity(), at::kFloat), 1);
        const double loop = medianMs(repeat, [&] { qs::causalAttentionCpu(q, k, v, scale, 0); });
        const double materialised = medianMs(repeat, [&] { qs::attention(q, k, v, mask, scale); });
        const double flops =
            4.0 * double(s.batch * s.heads * s.headDim) * double(s.len * (s.len + 1) / 2);
        std::printf("| %s | %.2f | %.1f | %.2f | %.2f |\n", s.name, loop, flops / loop / 1e6,
                    materialised, materialised / loop);
    }
    return 0;
}

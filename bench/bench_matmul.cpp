// The matmul floor of a workload: the time its linear layers would take if nothing but their
// matmuls ran (at::linear, the call the forward makes, with the CLI's thread setup), so a
// benchmark can say how far a measured run is from it in the same run. Each argument is one
// shape of the workload, TOKENS:OUTxIN*COUNT (COUNT linears of weight [OUT, IN] over TOKENS
// input rows each). Prints a table (median and least time of one call) and, last,
// `floor_ms X`: the sum over shapes of COUNT x the least time of one call. The least, not the
// median: a floor is the fastest these matmuls run here, and noise only ever adds time.
// Asserts nothing.
//
// usage: quantscope-bench-matmul [--threads N] [--repeat N] TOKENS:OUTxIN*COUNT...
#include "MedianTime.h"
#include "engine/Runtime.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Shape {
    int64_t tokens = 0, out = 0, in = 0, count = 0;
};

bool parseShape(const char* text, Shape& s) {
    char tail = 0;
    return std::sscanf(text, "%" SCNd64 ":%" SCNd64 "x%" SCNd64 "*%" SCNd64 "%c", &s.tokens, &s.out,
                       &s.in, &s.count, &tail) == 4 &&
           s.tokens > 0 && s.out > 0 && s.in > 0 && s.count > 0;
}

} // namespace

int main(int argc, char** argv) {
    int threads = 0, repeat = 9;
    std::vector<Shape> shapes;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
            repeat = std::max(1, std::atoi(argv[++i]));
        } else {
            Shape s;
            if (!parseShape(argv[i], s)) {
                std::fprintf(stderr,
                             "quantscope-bench-matmul: '%s' is not a shape TOKENS:OUTxIN*COUNT "
                             "(e.g. 2048:768x768*48)\n",
                             argv[i]);
                return 1;
            }
            shapes.push_back(s);
        }
    }
    if (shapes.empty()) {
        std::fprintf(stderr, "usage: quantscope-bench-matmul [--threads N] [--repeat N] "
                             "TOKENS:OUTxIN*COUNT...\n");
        return 1;
    }
    qs::configureThreads(threads);
    c10::InferenceMode guard;
    std::printf("# threads %d, float32 at::linear, %d runs of each\n", at::get_num_threads(),
                repeat);
    std::printf("| tokens | weight | count | median ms | least ms | GFLOP/s at the least |\n"
                "|---|---|---|---|---|---|\n");
    double total = 0.0;
    for (const Shape& s : shapes) {
        at::manual_seed(1);
        const at::Tensor x = at::randn({s.tokens, s.in});
        const at::Tensor w = at::randn({s.out, s.in});
        const at::Tensor b; // the block's linears carry no bias
        const std::vector<double> ms = sortedMs(repeat, [&] { at::linear(x, w, b); });
        const double flops = 2.0 * double(s.tokens) * double(s.out) * double(s.in);
        std::printf("| %" PRId64 " | %" PRId64 " x %" PRId64 " | %" PRId64
                    " | %.3f | %.3f | %.1f |\n",
                    s.tokens, s.out, s.in, s.count, ms[ms.size() / 2], ms.front(),
                    flops / ms.front() / 1e6);
        total += double(s.count) * ms.front();
    }
    std::printf("floor_ms %.3f\n", total);
    return 0;
}

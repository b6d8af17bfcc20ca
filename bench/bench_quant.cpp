// Round-to-nearest weight-only fake quantization throughput of the quantization core, in GB/s of
// fp32 weight read, beside a memcpy of the same bytes measured in the same run (the bandwidth
// ceiling for a pass that reads the weight once and writes it once). Prints medians and ratios,
// asserts nothing: these machines are shared and noisy.
//
// usage: quantscope-bench-quant [--threads N] [--shapes 11008x4096[,4096x4096]] [--reps 7]
//                               [--warmup 2] [--chained-reps 3] [--no-chained] [--json]
//
// Paths, per spec (int4 g128 sym = Quark int4_wo_128's weight, uint4 g128 asym, int8 per-channel):
//   fast     fakeQuantizeFast(x, spec, false, out) into a preallocated, pre-touched `out`
//   plan     LayerPlan::quantizeWeight: what the calibration pipeline runs per weight (the fused
//            loop, allocating, keeping the int32 codes for exporters)
//   generic  fakeQuantize(x, spec): the public API (dispatches to the fused loop, allocates)
//   chained  observeRange + computeParams + fakeQuantize(x, spec, params): plain ATen ops, what
//            the fused loop replaces (docs/pitfalls.md measured ~0.5 GB/s for it); 20x slower,
//            so it gets --chained-reps repetitions after one warm-up
//   memcpy   std::memcpy of the same bytes into a pre-touched buffer, split over the same
//            threads with at::parallel_for (one call when N = 1)
#include "calib/LayerPlan.h"
#include "quant/FastGroupQuant.h"
#include "quant/QuantSpec.h"
#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using qs::quant::QuantSpec;

struct Options {
    int threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::pair<int64_t, int64_t>> shapes{{11008, 4096}};
    int reps = 7;
    int warmup = 2;
    int chainedReps = 3;
    bool chained = true;
    bool json = false;
};

[[noreturn]] void usage(const char* why, int code = 2) {
    std::fprintf(code ? stderr : stdout,
                 "%s\nusage: quantscope-bench-quant [--threads N] [--shapes RxC[,RxC...]] "
                 "[--reps 7] [--warmup 2] [--chained-reps 3] [--no-chained] [--json]\n",
                 why);
    std::exit(code);
}

std::vector<std::pair<int64_t, int64_t>> parseShapes(const std::string& text) {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        const size_t x = item.find('x');
        if (x == std::string::npos)
            usage("--shapes: expected ROWSxCOLS");
        const int64_t rows = std::atoll(item.substr(0, x).c_str());
        const int64_t cols = std::atoll(item.substr(x + 1).c_str());
        if (rows <= 0 || cols <= 0 || cols % 128 != 0)
            usage("--shapes: positive sizes, columns a multiple of 128");
        shapes.emplace_back(rows, cols);
        start = comma + 1;
    }
    return shapes;
}

Options parseOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                usage(("missing value for " + a).c_str());
            return argv[++i];
        };
        if (a == "--threads")
            o.threads = std::atoi(value().c_str());
        else if (a == "--shapes")
            o.shapes = parseShapes(value());
        else if (a == "--reps")
            o.reps = std::atoi(value().c_str());
        else if (a == "--warmup")
            o.warmup = std::atoi(value().c_str());
        else if (a == "--chained-reps")
            o.chainedReps = std::atoi(value().c_str());
        else if (a == "--no-chained")
            o.chained = false;
        else if (a == "--json")
            o.json = true;
        else if (a == "-h" || a == "--help")
            usage("Quantization-core throughput against memcpy.", 0);
        else
            usage(("unknown argument " + a).c_str());
    }
    if (o.threads < 1 || o.reps < 1 || o.chainedReps < 1 || o.warmup < 0)
        usage("--threads, --reps and --chained-reps must be >= 1, --warmup >= 0");
    return o;
}

double medianSeconds(int warmup, int reps, const std::function<void()>& body) {
    for (int i = 0; i < warmup; ++i)
        body();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        body();
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

struct NamedSpec {
    std::string name;
    QuantSpec spec;
};

std::vector<NamedSpec> specs() {
    const QuantSpec int4 = qs::quant::resolveScheme("int4_wo_128").weight;
    QuantSpec uint4 = int4;
    uint4.dtype = qs::quant::DataType::Uint4;
    uint4.symmetric = false;
    QuantSpec int8 = QuantSpec::defaults(qs::quant::DataType::Int8);
    int8.granularity = qs::quant::Granularity::PerChannel;
    int8.chAxis = 0;
    int8.scaleType = int4.scaleType;
    uint4.validate("bench uint4");
    int8.validate("bench int8");
    return {{"int4 g128 sym (int4_wo_128)", int4},
            {"uint4 g128 asym", uint4},
            {"int8 per-channel sym", int8}};
}

// Keeps the optimiser from dropping a result and gives the chained path's output somewhere to go.
volatile float g_sink = 0.0f;

} // namespace

int main(int argc, char** argv) {
    const Options o = parseOptions(argc, argv);
    at::manual_seed(0);
    const std::vector<NamedSpec> all = specs();
    std::vector<int> threadCounts{1};
    if (o.threads != 1)
        threadCounts.push_back(o.threads);

    nlohmann::json results = nlohmann::json::array();
    if (!o.json)
        std::printf("# quantscope-bench-quant: median of %d after %d warm-up(s) (chained: %d after "
                    "%d); GB/s = fp32 weight bytes read per second; ratio = GB/s / memcpy GB/s "
                    "(same threads)\n",
                    o.reps, o.warmup, o.chainedReps, std::min(o.warmup, 1));
    for (const auto& [rows, cols] : o.shapes) {
        const at::Tensor x = at::randn({rows, cols}, at::kFloat) * 0.02;
        const double bytes = static_cast<double>(x.numel()) * sizeof(float);
        at::Tensor out = at::zeros_like(x); // zeros_like writes every page: pre-touched
        at::Tensor copyDst = at::zeros_like(x);

        // The fused loop must give the generic path's bits, or its speed means nothing.
        for (const NamedSpec& s : all) {
            const at::Tensor a = qs::quant::fakeQuantizeFast(x, s.spec, false, out).fake;
            const qs::quant::QuantParams p =
                qs::quant::computeParams(s.spec, qs::quant::observeRange(x, s.spec));
            const at::Tensor b = qs::quant::fakeQuantize(x, s.spec, p);
            if (!at::equal(a, b)) {
                std::fprintf(stderr, "fast path differs from the chained path for %s\n",
                             s.name.c_str());
                return 1;
            }
        }

        for (const int n : threadCounts) {
            at::set_num_threads(n);
            const char* src = static_cast<const char*>(x.data_ptr());
            char* dst = static_cast<char*>(copyDst.data_ptr());
            const int64_t nbytes = static_cast<int64_t>(bytes);
            const double tCopy = medianSeconds(o.warmup, o.reps, [&] {
                at::parallel_for(0, nbytes, int64_t(1) << 22, [&](int64_t b, int64_t e) {
                    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
                });
            });
            const double copyGbs = bytes / tCopy / 1e9;
            auto row = [&](const std::string& spec, const std::string& path, double seconds) {
                const double gbs = bytes / seconds / 1e9;
                results.push_back({{"rows", rows},
                                   {"cols", cols},
                                   {"threads", n},
                                   {"spec", spec},
                                   {"path", path},
                                   {"seconds", seconds},
                                   {"gb_per_s", gbs},
                                   {"ratio_to_memcpy", gbs / copyGbs}});
                if (!o.json)
                    std::printf("%-28s %-8s %9.2f %8.3f %8.2f\n", spec.c_str(), path.c_str(),
                                seconds * 1e3, gbs, gbs / copyGbs);
            };
            if (!o.json) {
                std::printf("\n## %lldx%lld fp32 (%.1f MB), threads %d\n",
                            static_cast<long long>(rows), static_cast<long long>(cols), bytes / 1e6,
                            at::get_num_threads());
                std::printf("%-28s %-8s %9s %8s %8s\n", "spec", "path", "ms", "GB/s", "ratio");
            }
            row("-", "memcpy", tCopy);
            for (const NamedSpec& s : all) {
                row(s.name, "fast", medianSeconds(o.warmup, o.reps, [&] {
                        qs::quant::fakeQuantizeFast(x, s.spec, false, out);
                    }));
                // What the calibration pipeline calls per weight (LayerPlan::quantizeWeight):
                // the fused pass that also keeps the int32 codes for exporters (allocating).
                row(s.name, "plan", medianSeconds(o.warmup, o.reps, [&] {
                        qs::LayerPlan plan;
                        plan.scheme = qs::quant::QuantScheme{};
                        plan.scheme->weight = s.spec;
                        plan.quantizeWeight(x);
                    }));
                row(s.name, "generic", medianSeconds(o.warmup, o.reps, [&] {
                        g_sink = qs::quant::fakeQuantize(x, s.spec).data_ptr<float>()[0];
                    }));
                if (o.chained)
                    row(s.name, "chained", medianSeconds(std::min(o.warmup, 1), o.chainedReps, [&] {
                            const qs::quant::QuantParams p = qs::quant::computeParams(
                                s.spec, qs::quant::observeRange(x, s.spec));
                            g_sink = qs::quant::fakeQuantize(x, s.spec, p).data_ptr<float>()[0];
                        }));
            }
        }
    }
    if (o.json)
        std::printf("%s\n", results.dump(2).c_str());
    return 0;
}

// GPTQ of one linear layer by the quantization core (algo::gptqHessian + algo::gptqQuantize), on
// a weight and calibration activations read from raw float32 files, so that a reference
// implementation (bench/bench_algorithms.py's plain PyTorch GPTQ) runs on the very same numbers.
// Prints the median seconds of the Hessian and of the quantization and writes the dequantized
// weight for the caller to score; asserts nothing (these machines are shared and noisy).
//
// usage: quantscope-bench-gptq --weight W.f32 --rows R --cols C --inputs X.f32 --tokens T
//                              [--scheme uint4_wo_128] [--desc-act] [--threads N] [--reps 3]
//                              [--out Q.f32]
//   W.f32: R*C float32, row-major [out, in]; X.f32: T*C float32, row-major [tokens, in].
#include "algo/Gptq.h"
#include "quant/SchemeRegistry.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string weightPath, inputsPath, outPath, scheme = "uint4_wo_128";
    int64_t rows = 0, cols = 0, tokens = 0;
    int threads = 2;
    int reps = 3;
    bool descAct = false;
};

[[noreturn]] void usage(const std::string& why, int code = 2) {
    std::fprintf(code ? stderr : stdout,
                 "%s\nusage: quantscope-bench-gptq --weight W.f32 --rows R --cols C --inputs "
                 "X.f32 --tokens T [--scheme uint4_wo_128] [--desc-act] [--threads N] [--reps 3] "
                 "[--out Q.f32]\n",
                 why.c_str());
    std::exit(code);
}

Options parseOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                usage("missing value for " + a);
            return argv[++i];
        };
        if (a == "--weight")
            o.weightPath = value();
        else if (a == "--inputs")
            o.inputsPath = value();
        else if (a == "--out")
            o.outPath = value();
        else if (a == "--scheme")
            o.scheme = value();
        else if (a == "--rows")
            o.rows = std::atoll(value().c_str());
        else if (a == "--cols")
            o.cols = std::atoll(value().c_str());
        else if (a == "--tokens")
            o.tokens = std::atoll(value().c_str());
        else if (a == "--threads")
            o.threads = std::atoi(value().c_str());
        else if (a == "--reps")
            o.reps = std::atoi(value().c_str());
        else if (a == "--desc-act")
            o.descAct = true;
        else if (a == "-h" || a == "--help")
            usage("GPTQ of one layer by the quantization core.", 0);
        else
            usage("unknown argument " + a);
    }
    if (o.weightPath.empty() || o.inputsPath.empty() || o.rows < 1 || o.cols < 1 || o.tokens < 1)
        usage("--weight, --inputs, --rows, --cols and --tokens are required");
    if (o.threads < 1 || o.reps < 1)
        usage("--threads and --reps must be >= 1");
    return o;
}

// Reads exactly rows*cols float32 values; a short or long file is a caller mistake.
at::Tensor readRaw(const std::string& path, int64_t rows, int64_t cols) {
    at::Tensor t = at::empty({rows, cols}, at::kFloat);
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f)
        usage(path + ": cannot open");
    const size_t n = static_cast<size_t>(rows * cols);
    const size_t got = std::fread(t.data_ptr<float>(), sizeof(float), n, f);
    const bool extra = std::fgetc(f) != EOF;
    std::fclose(f);
    if (got != n || extra)
        usage(path + ": expected " + std::to_string(n) + " float32 values");
    return t;
}

double median(std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

// Wall seconds of `body`; adds its process CPU seconds (all threads) to `cpu`: on a shared,
// oversubscribed machine the CPU time says more than the wall time.
double seconds(const std::function<void()>& body, std::vector<double>& cpu) {
    const std::clock_t c0 = std::clock();
    const auto t0 = std::chrono::steady_clock::now();
    body();
    cpu.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parseOptions(argc, argv);
    at::set_num_threads(o.threads);
    const at::Tensor weight = readRaw(o.weightPath, o.rows, o.cols);
    const std::vector<at::Tensor> inputs{readRaw(o.inputsPath, o.tokens, o.cols)};
    const qs::quant::QuantSpec spec = qs::quant::resolveScheme(o.scheme).weight;
    qs::algo::GptqOptions options;
    options.descAct = options.staticGroups = o.descAct; // desc_act needs static groups (Quark)

    std::vector<double> hessianTimes, quantTimes, hessianCpu, quantCpu;
    at::Tensor dequantized;
    double damping = 0;
    for (int r = 0; r < o.reps; ++r) {
        at::Tensor H;
        hessianTimes.push_back(seconds(
            [&] { H = qs::algo::gptqHessian(inputs, o.cols, "bench.linear"); }, hessianCpu));
        quantTimes.push_back(seconds(
            [&] {
                qs::algo::GptqResult result =
                    qs::algo::gptqQuantize(weight, H, spec, options, "bench.linear");
                dequantized = result.dequantized;
                damping = result.dampingUsed;
            },
            quantCpu));
    }
    if (!o.outPath.empty()) {
        const at::Tensor q = dequantized.contiguous();
        FILE* f = std::fopen(o.outPath.c_str(), "wb");
        if (!f || std::fwrite(q.data_ptr<float>(), sizeof(float), size_t(q.numel()), f) !=
                      size_t(q.numel()))
            usage(o.outPath + ": cannot write");
        std::fclose(f);
    }
    std::printf("%s\n", nlohmann::json{{"threads", at::get_num_threads()},
                                       {"reps", o.reps},
                                       {"hessian_seconds", median(hessianTimes)},
                                       {"quantize_seconds", median(quantTimes)},
                                       {"hessian_cpu_seconds", median(hessianCpu)},
                                       {"quantize_cpu_seconds", median(quantCpu)},
                                       {"damping", damping}}
                            .dump()
                            .c_str());
    return 0;
}

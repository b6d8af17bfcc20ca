#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

// Wall milliseconds of `repeat` runs of `run`, sorted, after one warm-up run (first-touch pages,
// thread start).
inline std::vector<double> sortedMs(int repeat, const std::function<void()>& run) {
    run();
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        run();
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    std::sort(ms.begin(), ms.end());
    return ms;
}

// Their median. Shared by the compiled benchmarks that time one call at a time.
inline double medianMs(int repeat, const std::function<void()>& run) {
    const std::vector<double> ms = sortedMs(repeat, run);
    return ms[ms.size() / 2];
}

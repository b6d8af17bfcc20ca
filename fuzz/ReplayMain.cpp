// A main for the fuzz targets outside libFuzzer: feeds every file under the given paths (files
// or folders, recursively) to LLVMFuzzerTestOneInput once. The regular build links each target
// with it, and ctest replays the seed corpus and every input that ever crashed
// (fuzz/regressions/<target>/) with the release binaries: a regression is a crash, an abort
// (an exception other than qs::Error escaping, a __builtin_trap) or a hang caught by ctest's
// timeout. The sanitizer builds (`fuzz` preset, scripts/fuzz.sh) find new inputs; this keeps the
// old ones fixed on every test run without a second, clang-built copy of core.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
    std::vector<fs::path> files;
    for (int i = 1; i < argc; ++i) {
        const fs::path p(argv[i]);
        if (fs::is_directory(p)) {
            for (const auto& e : fs::recursive_directory_iterator(p))
                if (e.is_regular_file())
                    files.push_back(e.path());
        } else if (fs::is_regular_file(p)) {
            files.push_back(p);
        } else {
            std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
            return 2;
        }
    }
    if (files.empty()) {
        std::fprintf(stderr, "replay: no inputs under the given paths\n");
        return 2;
    }
    for (const fs::path& f : files) {
        std::ifstream in(f, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        // Printed first, so the input that crashes is the last line of the test's output.
        std::fprintf(stderr, "replay: %s\n", f.string().c_str());
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("replayed %zu inputs\n", files.size());
    return 0;
}

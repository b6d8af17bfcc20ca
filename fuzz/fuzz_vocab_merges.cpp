// libFuzzer target: GPT-2 style vocab.json + merges.txt and a text to encode (FuzzSupport.h:
// three parts). Drives HfBpeTokenizer::fromVocabAndMerges from real files, then encode/decode.
// A finding is a crash, a sanitizer report, an exception other than qs::Error, or an encoded id
// outside [0, vocabSize) (__builtin_trap).
#include "FuzzSupport.h"
#include "tokenize/HfBpeTokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<std::string> parts = qsfuzz::splitParts(data, size, 3);
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    dir.write("vocab.json", parts[0]);
    dir.write("merges.txt", parts[1]);
    qsfuzz::expectCleanRefusal([&] {
        const auto tok =
            qs::HfBpeTokenizer::fromVocabAndMerges(dir.file("vocab.json"), dir.file("merges.txt"));
        const std::string text =
            parts[2].empty() ? std::string("Hello world, it's 2024!") : parts[2];
        const std::vector<int32_t> ids = tok->encode(text);
        for (const int32_t id : ids)
            if (id < 0 || id >= tok->vocabSize())
                __builtin_trap();
        tok->decode(ids);
    });
    return 0;
}

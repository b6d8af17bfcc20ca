// libFuzzer target: a tokenizer.json and a text to encode (FuzzSupport.h: two parts). Drives
// HfBpeTokenizer::fromTokenizerJson from a real file (vocabulary, merges, added tokens,
// normalizer, pre-tokenizer with its split patterns, decoder, post-processor), then encode and
// decode. A finding is a crash, a sanitizer report, an exception other than qs::Error, or an
// encoded id outside [0, vocabSize) (__builtin_trap).
#include "FuzzSupport.h"
#include "tokenize/HfBpeTokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<std::string> parts = qsfuzz::splitParts(data, size, 2);
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    dir.write("tokenizer.json", parts[0]);
    qsfuzz::expectCleanRefusal([&] {
        const auto tok = qs::HfBpeTokenizer::fromTokenizerJson(dir.file("tokenizer.json"));
        const std::string text =
            parts[1].empty() ? std::string("Once upon a time, 42 cats.\n") : parts[1];
        const std::vector<int32_t> ids = tok->encode(text);
        for (const int32_t id : ids)
            if (id < 0 || id >= tok->vocabSize())
                __builtin_trap();
        tok->decode(ids);
        // BOS/EOS are prepended and compared as ids of this vocabulary.
        if (tok->bosId() >= tok->vocabSize() || tok->eosId() >= tok->vocabSize())
            __builtin_trap();
        for (int32_t id = -1; id < std::min<int32_t>(tok->vocabSize(), 64) + 1; ++id)
            tok->tokenToId(tok->idToToken(id));
        tok->decode({-5, 0, tok->bosId(), tok->eosId(), tok->vocabSize(), INT32_MAX});
    });
    return 0;
}

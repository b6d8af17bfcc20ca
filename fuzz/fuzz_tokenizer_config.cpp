// libFuzzer target: a model folder's tokenizer files as TokenizerLoader reads them:
// tokenizer_config.json (special tokens as strings or {"content": ...}, add_bos_token),
// config.json (bos/eos ids) and tokenizer.json (FuzzSupport.h: three parts; an empty third part
// uses a small valid tokenizer.json so the fuzzer spends its time on the two configs). Backend
// "hf": the sentencepiece plugin is not built here. A finding is a crash, a sanitizer report, an
// exception other than qs::Error, or a loaded tokenizer that asks for a BOS it does not have.
#include "FuzzSupport.h"
#include "tokenize/TokenizerLoader.h"

namespace {

constexpr const char* kSmallTokenizer = R"({"version": "1.0",
 "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                  {"id": 1, "content": "<s>", "special": true},
                  {"id": 2, "content": "</s>", "special": true}],
 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
               {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
 "pre_tokenizer": null,
 "post_processor": {"type": "TemplateProcessing",
   "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
   "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
 "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
   "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ",
   "start": 1, "stop": 0}]},
 "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
   "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x41>": 3, "\u2581": 4, "a": 5, "b": 6,
             "\u2581a": 7, "ab": 8},
   "merges": ["\u2581 a", "a b"]}})";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<std::string> parts = qsfuzz::splitParts(data, size, 3);
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    if (!parts[0].empty())
        dir.write("tokenizer_config.json", parts[0]);
    if (!parts[1].empty())
        dir.write("config.json", parts[1]);
    dir.write("tokenizer.json", parts[2].empty() ? std::string(kSmallTokenizer) : parts[2]);
    qsfuzz::expectCleanRefusal([&] {
        const qs::LoadedTokenizer loaded =
            qs::TokenizerLoader::load(dir.path(), qs::TokenizerBackend::HuggingFace);
        const qs::Tokenizer& tok = *loaded.tokenizer;
        if ((loaded.addBos && tok.bosId() < 0) || tok.bosId() >= tok.vocabSize() ||
            tok.eosId() >= tok.vocabSize())
            __builtin_trap();
        for (const int32_t id : tok.encode("ab a AB"))
            if (id < 0 || id >= tok.vocabSize())
                __builtin_trap();
    });
    return 0;
}

#!/usr/bin/python3
"""Replaces the tokenizer of a synthetic checkpoint (`quantscope-cli synth`) with a byte-level BPE
tokenizer.json of the kind Llama 3, Qwen2 and GPT-2 ship, for checks of the GGUF exporter's
byte-level path (scripts/check-gguf-tokenizers.sh). Python's standard library only.

    scripts/make-bytelevel-tokenizer.py MODEL_DIR LAYOUT [TOKENS]

LAYOUT picks the pre-tokenizer: gpt2 (ByteLevel with GPT-2's regex), llama3 (Split with Llama 3's
regex, then ByteLevel; ignore_merges as Llama 3 has it) or qwen2 (Split with Qwen2's regex). The
vocabulary: the 256 byte characters (GPT-2's bytes_to_unicode), then BPE merges trained on the
English text of core/synth/SyntheticTokenizer.cpp plus digits, contractions and accented words,
until TOKENS (default 605) or no pair repeats; then <|begin_of_text|> and <|end_of_text|> as
special added tokens, named bos/eos in tokenizer_config.json, config.json and
generation_config.json. The training split is a plain-regex approximation of GPT-2's (Python's
re has no \\p{L}): it only decides which merges exist, the tokenizer's own regex is the layout's.
"""
import collections
import json
import os
import re
import sys

REGEX = {
    "gpt2": None,
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}


def bytes_to_unicode():
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(printable, map(chr, chars)))


def train(text, size):
    byte_char = bytes_to_unicode()
    vocab = {byte_char[b]: b for b in range(256)}
    words = collections.Counter(re.findall(r" ?[A-Za-z\u00C0-\u024F]+| ?[0-9]+| ?[^\sA-Za-z0-9\u00C0-\u024F]+|\s+", text))
    split = {w: [byte_char[x] for x in w.encode("utf-8")] for w in words}
    merges = []
    while len(vocab) < size:
        pairs = collections.Counter()
        for w, n in words.items():
            s = split[w]
            for i in range(len(s) - 1):
                pairs[(s[i], s[i + 1])] += n
        if not pairs:
            break
        (a, b), count = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if count < 2 or a + b in vocab:
            break
        merges.append(a + " " + b)
        vocab[a + b] = len(vocab)
        for w, s in split.items():
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            split[w] = out
    return vocab, merges


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[2] not in REGEX:
        sys.exit(__doc__)
    model, layout = sys.argv[1], sys.argv[2]
    size = int(sys.argv[3]) if len(sys.argv) == 4 else 605
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = open(os.path.join(root, "core", "synth", "SyntheticTokenizer.cpp"), encoding="utf-8").read()
    text = " ".join(re.findall(r'"([^"\\]*)"', source))
    text += (" In 2024 there were 1234567 tokens; I'll say it's 3.14 and we've done 42 things."
             " \u00dcn\u00efc\u00f6d\u00e9 fa\u00e7ade na\u00efve caf\u00e9. Don't stop!")
    vocab, merges = train(text, size)
    n = len(vocab)

    def added(i, content):
        return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True}

    if REGEX[layout] is None:
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    else:
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": REGEX[layout]}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    bos = "<|begin_of_text|>"
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(n, bos), added(n + 1, "<|end_of_text|>")],
        "normalizer": None, "pre_tokenizer": pre,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [n], "tokens": [bos]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": layout == "llama3", "vocab": vocab, "merges": merges}}
    config_path = os.path.join(model, "config.json")
    config = json.load(open(config_path))
    if config["vocab_size"] < n + 2:
        sys.exit(f"{config_path}: vocab_size {config['vocab_size']} < {n + 2} tokens")
    config["bos_token_id"], config["eos_token_id"] = n, n + 1
    with open(os.path.join(model, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
    with open(os.path.join(model, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": bos,
                   "eos_token": "<|end_of_text|>", "model_max_length": config.get("max_position_embeddings", 1024)},
                  f, indent=2)
    with open(config_path, "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(model, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": n, "eos_token_id": n + 1, "do_sample": False}, f, indent=2)
    print(f"{model}: {layout} byte-level BPE, {n} tokens ({len(merges)} merges) + 2 added")


if __name__ == "__main__":
    main()

"""Seeds for the file-reader fuzz targets (used by make_corpus.py; standard library only).

Each target gets a folder named after it without "fuzz_". Multi-file inputs join their files with
SEPARATOR, in the order the target's header comment gives.
"""
import glob
import json
import os
import struct

SEPARATOR = b"\n--8<--\n"  # fuzz/FuzzSupport.h kSeparator

GPT2_REGEX = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}")


def join(*parts):
    return SEPARATOR.join(p if isinstance(p, bytes) else p.encode() for p in parts)


def dumps(obj):
    return json.dumps(obj, indent=1, ensure_ascii=False)


# ---- tokenizers ------------------------------------------------------------------------------

def byte_level_vocab():
    """GPT-2's byte-to-unicode alphabet as a vocabulary, plus a few merges."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    vocab = {table[b]: i for i, b in enumerate(range(256))}
    merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("i", "n"), ("\u0120", "a")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    return vocab, merges


def tokenizer_seeds():
    vocab, merges = byte_level_vocab()
    byte_level = {
        "version": "1.0",
        "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>",
                          "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    seeds = {"gpt2_bytelevel.json": byte_level}
    for name, regex in (("llama3", LLAMA3_REGEX), ("qwen2", QWEN2_REGEX), ("gpt2", GPT2_REGEX)):
        t = json.loads(json.dumps(byte_level))
        t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]}
        t["model"]["merges"] = [[a, b] for a, b in merges]
        t["model"]["ignore_merges"] = name == "llama3"
        t["post_processor"] = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>",
                                                  "ids": [vocab["<|endoftext|>"]]}}}]}
        seeds["split_%s.json" % name] = t
    sp = {
        "version": "1.0",
        "added_tokens": [{"id": 0, "content": "<unk>", "special": True, "normalized": False},
                         {"id": 1, "content": "<s>", "special": True, "normalized": False},
                         {"id": 2, "content": "</s>", "special": True, "normalized": False},
                         {"id": 9, "content": "<pad>", "special": False, "normalized": True,
                          "lstrip": True, "rstrip": True, "single_word": True}],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Strip", "strip_left": True,
                                                      "strip_right": False},
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
             "split": True},
            {"type": "Digits", "individual_digits": True},
            {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithNext",
             "invert": True}]},
        "post_processor": {"type": "BertProcessing", "cls": ["<s>", 1], "sep": ["</s>", 2]},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"}]},
        "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                  "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x41>": 3, "<0xC3>": 4,
                            "\u2581": 5, "a": 6, "b": 7, "\u2581a": 8, "ab": 9, "1": 10},
                  "merges": ["\u2581 a", "a b"]},
    }
    seeds["sentencepiece_style.json"] = sp
    return seeds


TEXTS = ["Once upon a time, there was a little girl named Lily.",
         "It's 2024: I'll say 'hello' -- 12345 caf\u00e9s\n\n  \u4e16\u754c\r\n\t!",
         "<|endoftext|>the <pad> in ab-ab"]


def tokenizer_json(out, shared, write):
    for i, (name, tok) in enumerate(sorted(tokenizer_seeds().items())):
        write(out, "tokenizer_json", name, join(dumps(tok), TEXTS[i % len(TEXTS)]))
    for path in sorted(glob.glob(os.path.join(shared, "models", "*", "tokenizer.json"))):
        with open(path, "rb") as f:
            write(out, "tokenizer_json", "shared_" + os.path.basename(os.path.dirname(path)),
                  join(f.read(), TEXTS[0]))


def vocab_merges(out, shared, write):
    vocab, merges = byte_level_vocab()
    write(out, "vocab_merges", "small", join(
        dumps(vocab), "#version: 0.2\n" + "\n".join(a + " " + b for a, b in merges) + "\n",
        TEXTS[1]))
    gpt2 = os.path.join(shared, "tokenizers", "gpt2")
    if os.path.isfile(os.path.join(gpt2, "vocab.json")):
        # The first merges of GPT-2 with just the tokens they need: real data, a few KB.
        with open(os.path.join(gpt2, "vocab.json"), encoding="utf-8") as f:
            full = json.load(f)
        with open(os.path.join(gpt2, "merges.txt"), encoding="utf-8") as f:
            lines = [ln.rstrip("\n") for ln in f][:300]
        keep = dict(list(full.items())[:256])
        for ln in lines[1:]:
            a, b = ln.split(" ")
            for t in (a, b, a + b):
                if t in full:
                    keep[t] = full[t]
        keep["<|endoftext|>"] = full.get("<|endoftext|>", len(full))
        write(out, "vocab_merges", "shared_gpt2_head",
              join(dumps(keep), "\n".join(lines) + "\n", TEXTS[0]))


def tokenizer_config(out, shared, write):
    configs = {
        "strings": ({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True},
                    {"bos_token_id": 1, "eos_token_id": 2}),
        "objects": ({"bos_token": {"content": "<s>", "lstrip": False, "normalized": False,
                                   "rstrip": False, "single_word": False, "__type": "AddedToken"},
                     "eos_token": {"content": "</s>"}, "add_bos_token": False},
                    {"bos_token_id": [1, 2], "eos_token_id": [2]}),
        "nulls": ({"bos_token": None, "eos_token": "<missing>"},
                  {"bos_token_id": None, "eos_token_id": 99999999999}),
    }
    for name, (tc, mc) in configs.items():
        write(out, "tokenizer_config", name, join(dumps(tc), dumps(mc), b""))
    model = os.path.join(shared, "models", "stories260K")
    if os.path.isfile(os.path.join(model, "tokenizer_config.json")):
        parts = []
        for name in ("tokenizer_config.json", "config.json", "tokenizer.json"):
            with open(os.path.join(model, name), "rb") as f:
                parts.append(f.read())
        write(out, "tokenizer_config", "shared_stories260K", join(*parts))


# ---- recipes and Quark configs ----------------------------------------------------------------

def spec(dtype, qscheme, ch_axis=None, group_size=None, dynamic=False, symmetric=True,
         observer="PerTensorMinMaxObserver"):
    return {"dtype": dtype, "qscheme": qscheme, "ch_axis": ch_axis, "group_size": group_size,
            "is_dynamic": dynamic, "symmetric": symmetric, "round_method": "half_even",
            "scale_type": "float", "observer_cls": observer}


INT4_G128 = spec("int4", "per_group", -1, 128, observer="PerGroupMinMaxObserver")
FP8 = spec("fp8_e4m3", "per_tensor", symmetric=None)
INT8_TOKEN = spec("int8", "per_channel", 1, dynamic=True, observer="PerChannelMinMaxObserver")


def layer(weight, inputs=None, outputs=None):
    return {"weight": weight, "input_tensors": inputs, "output_tensors": outputs, "bias": None}


def recipes():
    base = {"format": "quantscope-recipe", "version": 1, "global": "int4_wo_128",
            "layer_overrides": [], "layer_type_overrides": {}, "exclude": ["lm_head"],
            "kv_cache": None, "algorithms": [],
            "calibration": {"data": "", "num_samples": 128, "seq_len": 512, "seed": 0},
            "evaluation": {"data": "", "seq_len": 0, "max_windows": 0},
            "export_targets": ["hf_fake"], "unfit_policy": "error",
            "provenance": {"model_config_hash": "", "tool_version": "", "created_at": "",
                           "model_path": ""}}
    full = json.loads(json.dumps(base))
    full.update({
        "global": layer(INT8_TOKEN, INT8_TOKEN),
        "layer_overrides": [{"pattern": "*down_proj", "scheme": "int8"},
                            {"pattern": "re:.*layers\\.(0|1)\\.mlp\\..*", "scheme": layer(FP8, FP8)},
                            {"pattern": "model.layers.1[0-5].*", "scheme": "fp8"}],
        "layer_type_overrides": {"o_proj": "fp8", "q_proj": layer(INT4_G128)},
        "exclude": ["lm_head", "re:.*k_proj", "*layers.0.mlp.gate_proj"],
        "kv_cache": "fp8",
        "algorithms": [{"name": "gptq", "damp_percent": 0.01, "block_size": 128,
                        "desc_act": True},
                       {"name": "smoothquant", "alpha": 0.5}],
        "calibration": {"data": "calib.txt", "num_samples": 16, "seq_len": 64, "seed": 7},
        "evaluation": {"data": "eval.txt", "seq_len": 128, "max_windows": 4},
        "export_targets": ["hf_fake", "quark"], "unfit_policy": "skip"})
    kv = json.loads(json.dumps(base))
    kv.update({"global": None, "kv_cache": FP8, "algorithms": [{"name": "rotation",
                                                                "rotation_size": 64}]})
    return {"base.json": base, "full.json": full, "kv_only.json": kv}


def quark_configs():
    qc = {"algo_config": None, "exclude": ["lm_head"],
          "export": {"kv_cache_group": [], "min_kv_scale": 0.0, "pack_method": "reorder",
                     "weight_format": "real_quantized", "weight_merge_groups": None},
          "global_quant_config": layer(INT4_G128), "kv_cache_post_rope": False,
          "kv_cache_quant_config": {}, "layer_quant_config": {},
          "layer_type_quant_config": {}, "quant_method": "quark", "quant_mode": "eager_mode",
          "softmax_quant_spec": None, "version": "0.10+82f969537f"}
    int4 = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "model_type": "llama",
            "num_hidden_layers": 2, "quantization_config": qc, "torch_dtype": "bfloat16"}
    fp8 = json.loads(json.dumps(int4))
    q = fp8["quantization_config"]
    q["global_quant_config"] = layer(FP8, FP8)
    kv_layer = layer(FP8, FP8, FP8)
    q["layer_quant_config"] = {"*k_proj": kv_layer, "*v_proj": kv_layer}
    q["kv_cache_quant_config"] = {"*k_proj": kv_layer, "*v_proj": kv_layer}
    q["export"]["kv_cache_group"] = ["*k_proj", "*v_proj"]
    q["exclude"] = ["lm_head", "re:.*layers\\.0\\.mlp\\.gate_proj"]
    typed = json.loads(json.dumps(qc))
    typed["layer_type_quant_config"] = {"*.down_proj": layer(INT8_TOKEN, INT8_TOKEN)}
    typed["algo_config"] = [{"name": "gptq", "damp_percent": 0.01, "desc_act": True}]
    return {"int4_config.json": int4, "fp8_kv_config.json": fp8, "bare_block.json": typed}


PATTERNS = [
    "re:.*layers\\.(0|1)\\..*\nmodel.layers.0.mlp.down_proj\nmodel.layers.11.mlp.up_proj",
    "re:(a+)+$\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\naaaa",
    "re:^model\\.layers\\.\\d{1,2}\\.(self_attn|mlp)\\.[a-z_]+_proj$\nmodel.layers.3.mlp.up_proj",
    "re:(?:[^.]+\\.)*?k_proj\\b\nmodel.layers.0.self_attn.k_proj\nk_proj_x",
    "*down_proj\nmodel.layers.0.mlp.down_proj\n[x]*?.name",
    "model.layers.1[0-5].*\nmodel.layers.12.mlp\nmodel.layers.1.mlp",
    "[!]]x\n]x\nax",
    "re:\\x41\\u0042[\\d\\-_]{0,3}|x*?\nAB-1\nxxx\nre:abc",
]


def recipe_and_patterns(out, shared, write):
    for name, r in recipes().items():
        write(out, "recipe", name, dumps(r))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in sorted(glob.glob(os.path.join(repo, "examples", "recipes", "*.json"))):
        with open(path, "rb") as f:
            write(out, "recipe", "example_" + os.path.basename(path), f.read())
    for name, c in quark_configs().items():
        write(out, "quark_config", name, dumps(c))
    for i, p in enumerate(PATTERNS):
        write(out, "layer_pattern", "pattern%d" % i, p)


# ---- checkpoints and models -------------------------------------------------------------------

def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def shrink_dim(d):
    # Dimensions that are multiples of 8 shrink by 8 (hidden, heads x head_dim, intermediate,
    # vocabulary); counts such as experts stay. Position tables are rebuilt from the config.
    return d // 8 if d >= 8 and d % 8 == 0 else d


SHRINK_KEYS = ("hidden_size", "intermediate_size", "ffn_dim", "moe_intermediate_size",
               "word_embed_proj_dim", "vocab_size", "head_dim", "max_position_embeddings",
               "original_max_position_embeddings", "sliding_window", "query_pre_attn_scalar")


def shrunk_model(folder, safetensors_image):
    """config.json and one-layer model.safetensors of a tiny-families model, about 8x smaller in
    every dimension, or None when the folder is not such a model."""
    try:
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        header = read_safetensors(os.path.join(folder, "model.safetensors"))
    except (OSError, ValueError, struct.error):
        return None
    config["num_hidden_layers"] = 1
    for key in SHRINK_KEYS:
        if isinstance(config.get(key), int) and not isinstance(config.get(key), bool):
            config[key] = shrink_dim(config[key])
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(config.get(key), int):
            config[key] = min(config[key], config.get("vocab_size", 1) - 1)
    tensors = []
    for name, info in header.items():
        if name == "__metadata__" or (".layers." in name and ".layers.0." not in name):
            continue
        shape = [shrink_dim(d) for d in info["shape"]]
        if "embed_positions" in name:  # OPT: max_position_embeddings + 2 rows
            shape[0] = config.get("max_position_embeddings", 0) + 2
        tensors.append((name, info["dtype"], shape))
    return config, safetensors_image(tensors, {"format": "pt"})


def checkpoints_and_models(out, shared, write, safetensors_image, config_seeds):
    a = safetensors_image([("model.embed_tokens.weight", "F32", [4, 2]),
                           ("lm_head.weight", "F16", [4, 2])], {"format": "pt"})
    b = safetensors_image([("model.norm.weight", "BF16", [2])], None)
    index = {"metadata": {"total_size": 58},
             "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                            "lm_head.weight": "model-00001-of-00002.safetensors",
                            "model.norm.weight": "model-00002-of-00002.safetensors"}}
    write(out, "checkpoint", "sharded", join(dumps(index), a, b))
    write(out, "checkpoint", "single", join(b"", a, b""))
    bad_index = dict(index, weight_map={"x": "../model-00001-of-00002.safetensors"})
    write(out, "checkpoint", "escaping_index", join(dumps(bad_index), a, b""))
    for folder in sorted(glob.glob(os.path.join(shared, "models", "tiny-families", "*"))):
        shrunk = shrunk_model(folder, safetensors_image)
        if shrunk is None:
            continue
        config, image = shrunk
        fam = os.path.basename(folder)
        write(out, "model", "shared_" + fam, join(dumps(config), image))
        write(out, "checkpoint", "shared_" + fam, join(b"", image, b""))
        with open(os.path.join(folder, "config.json"), "rb") as f:
            write(out, "config", "shared_" + fam + ".json", f.read())
    for name, config in config_seeds.items():  # configs with a checkpoint that does not fit
        write(out, "model", "config_only_" + name, join(dumps(config), a))


def write_all(out, shared, safetensors_image, config_seeds, write):
    tokenizer_json(out, shared, write)
    vocab_merges(out, shared, write)
    tokenizer_config(out, shared, write)
    recipe_and_patterns(out, shared, write)
    checkpoints_and_models(out, shared, write, safetensors_image, config_seeds)

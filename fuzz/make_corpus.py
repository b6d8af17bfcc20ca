#!/usr/bin/env python3
"""Writes tiny seed inputs for the fuzz targets (standard library only).

usage: make_corpus.py OUTDIR [SHARED_DIR]  ->  OUTDIR/<target without "fuzz_">/...
Safetensors seeds follow the format spec: u64 little-endian header length, UTF-8 JSON header
padded with spaces to a multiple of 8, then the tensor bytes back to back. Multi-file inputs join
their files with SEPARATOR (fuzz/FuzzSupport.h). With SHARED_DIR (the shared models folder beside
the checkout), seeds are also derived from its models: configs and tokenizers as they are, and the
tiny-families checkpoints shrunk to one small layer so an input stays a few kilobytes. Nothing is
copied into the repository.
"""
import json
import os
import struct
import sys

ITEM_BITS = {"F64": 64, "F32": 32, "F16": 16, "BF16": 16, "I64": 64, "I32": 32, "I16": 16,
             "I8": 8, "U64": 64, "U32": 32, "U16": 16, "U8": 8, "BOOL": 8, "F8_E4M3": 8,
             "F8_E5M2": 8, "F8_E8M0": 8, "F4": 4}


def safetensors_image(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        numel = 1
        for d in shape:
            numel *= d
        size = numel * ITEM_BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + size]}
        data += bytes((i * 7 + len(name)) & 0xFF for i in range(size))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


SAFETENSORS_SEEDS = {
    "empty": ([], None),
    "metadata_only": ([], {"format": "pt"}),
    "one_f32": ([("w", "F32", [2, 3])], None),
    "scalar_and_zero": ([("s", "F64", []), ("z", "BF16", [0, 4])], {"format": "pt"}),
    "mixed": ([("a.weight", "F16", [4]), ("a.weight_scale", "F32", [1]),
               ("q", "I8", [2, 2]), ("flag", "BOOL", [3])], {"format": "pt", "k": "v"}),
    "quantized": ([("w", "F8_E4M3", [2, 4]), ("s", "F8_E8M0", [2]), ("p", "F4", [2, 4]),
                   ("z", "U32", [1, 2])], None),
    "rank8": ([("r", "U8", [1, 1, 1, 1, 1, 1, 2, 1])], None),
}

LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 172, "num_hidden_layers": 2, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 8, "vocab_size": 512, "max_position_embeddings": 512,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "rope_scaling": None, "hidden_act": "silu",
    "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": True, "bos_token_id": 1,
    "eos_token_id": 2, "torch_dtype": "float32",
}
CONFIG_SEEDS = {
    "llama": LLAMA,
    "llama3_rope": dict(LLAMA, rope_theta=500000.0, eos_token_id=[2, 3], rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 256}),
    "llama_linear_rope": dict(LLAMA, rope_scaling={"type": "linear", "factor": 2.0}),
    "mistral": dict(LLAMA, architectures=["MistralForCausalLM"], model_type="mistral",
                    sliding_window=256, tie_word_embeddings=False),
    "qwen2": dict(LLAMA, architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                  use_sliding_window=False, sliding_window=None, bos_token_id=None),
    "opt": {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 64,
            "ffn_dim": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "vocab_size": 512, "max_position_embeddings": 256, "activation_function": "relu",
            "do_layer_norm_before": True, "word_embed_proj_dim": 64, "enable_bias": True,
            "bos_token_id": 2, "eos_token_id": 2, "torch_dtype": "float16",
            "tie_word_embeddings": True},
}


def main():
    out = sys.argv[1]
    shared = sys.argv[2] if len(sys.argv) > 2 else ""
    for name, (tensors, metadata) in SAFETENSORS_SEEDS.items():
        write(out, "safetensors", name + ".safetensors", safetensors_image(tensors, metadata))
    for name, config in CONFIG_SEEDS.items():
        write(out, "config", name + ".json", json.dumps(config, indent=2))
    more_seeds.write_all(out, shared, safetensors_image, CONFIG_SEEDS, write)
    gguf_seeds.write_all(out, shared, write)
    quark_seeds.write_all(out, shared, write)


def write(out, target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import more_seeds  # noqa: E402  (beside this script)
    import gguf_seeds  # noqa: E402
    import quark_seeds  # noqa: E402
    main()

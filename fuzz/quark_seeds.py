"""Seeds for fuzz_quark_checkpoint (standard library only), imported by make_corpus.py.

An input is config.json SEP model.safetensors [SEP index.json SEP second shard] (the target's
header comment). Seeds: a 2-layer tiny llama (hidden = intermediate = 16, or 32
where MX blocks of 32 need it)
exported in Quark's hf_format layout (core/export/QuarkHfExporter.h, docs/formats.md) for each
scheme the reader meets: uint4 per group (reorder) and int4 per group (order) with the output
dimension padded to whole int32 words, int4 per channel, uint4 per tensor, int8 per tensor with a
static input scale and zero point, uint8 per channel, fp8 e4m3 per tensor with an fp8 KV cache
(output_scale), fp8 e5m2 per channel, mxfp4 (FP4 two per byte, E8M0 scales as uint8), a
fake_quantized export (float weights) and the uint4 one split into two shards with an index.
With SHARED_DIR, Quark 0.13's own exports (reference/quark-exports) with their config.json as
written and their tensors cut to layer 0's attention projections (under 10 KB, the real bytes).
"""
import json
import os
import struct

SEPARATOR = b"\n--8<--\n"  # fuzz/FuzzSupport.h kSeparator
ITEM_BYTES = {"F32": 4, "I32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1, "F8_E5M2": 1}
REORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def image(tensors):
    """safetensors bytes of [(name, dtype, shape, data)], data given as bytes."""
    header, blob = {"__metadata__": {"format": "pt"}}, b""
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + blob


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def i32(values):
    return struct.pack("<%di" % len(values), *values)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def codes(count, lo, hi, salt):
    return [lo + (i * 5 + salt) % (hi - lo + 1) for i in range(count)]


def pack_int4(rows, order):
    """rows of codes (lists of n) -> int32 words, ceil(n/8) per row, nibble i = order[i]."""
    words = []
    for row in rows:
        for c in range(0, len(row), 8):
            w = 0
            for i, k in enumerate(order):
                if c + k < len(row):
                    w |= (row[c + k] & 0xF) << (4 * i)
            words.append(w - (1 << 32) if w >= 1 << 31 else w)
    return i32(words)


def spec(dtype, qscheme, ch_axis=None, group_size=None, symmetric=True, dynamic=False, **extra):
    s = {"dtype": dtype, "qscheme": qscheme, "ch_axis": ch_axis, "group_size": group_size,
         "symmetric": symmetric, "is_dynamic": dynamic, "round_method": "half_even",
         "scale_type": "float", "observer_cls": "PerTensorMinMaxObserver"}
    s.update(extra)
    return s


def linear_tensors(name, out, inp, weight, salt):
    """Quark's tensors of one linear [out, in] quantized with `weight` (a spec dict)."""
    dt, qs = weight["dtype"], weight["qscheme"]
    t = []
    if weight.get("scale_format") == "e8m0":  # MX: FP4 codes two per byte, E8M0 scales
        t.append((name + ".weight", "U8", [out, inp // 2],
                  bytes(codes(out * inp // 2, 0, 255, salt))))
        t.append((name + ".weight_scale", "U8", [out, inp // 32],
                  bytes(codes(out * inp // 32, 120, 130, salt))))
        return t
    if dt in ("int4", "uint4"):
        lo, hi = (-8, 7) if dt == "int4" else (0, 15)
        order = REORDER if weight.get("_pack") != "order" else list(range(8))
        if qs == "per_group":
            g = inp // weight["group_size"]
            rows = [codes(out, lo, hi, salt + r) for r in range(inp)]  # transposed [in, out]
            zp_rows = [codes(out, lo, hi, salt + 3 * r) if not weight["symmetric"]
                       else [0] * out for r in range(g)]
            t.append((name + ".weight", "I32", [inp, (out + 7) // 8], pack_int4(rows, order)))
            t.append((name + ".weight_scale", "F32", [g, out],
                      f32([0.01 * (1 + (i % 7)) for i in range(g * out)])))
            t.append((name + ".weight_zero_point", "I32", [g, (out + 7) // 8],
                      pack_int4(zp_rows, order)))
        else:
            rows = [codes(inp, lo, hi, salt + r) for r in range(out)]
            t.append((name + ".weight", "I32", [out, (inp + 7) // 8], pack_int4(rows, order)))
            if qs == "per_channel":
                t.append((name + ".weight_scale", "F32", [out],
                          f32([0.02 * (1 + i % 5) for i in range(out)])))
                t.append((name + ".weight_zero_point", "I32", [(out + 7) // 8],
                          pack_int4([codes(out, lo, hi, salt)], order)))
            else:
                t.append((name + ".weight_scale", "F32", [], f32([0.03])))
                t.append((name + ".weight_zero_point", "I32", [], i32([8 if lo == 0 else 0])))
        return t
    scale_shape = [out] if qs == "per_channel" else []
    scales = f32([0.004 * (1 + i % 3) for i in range(numel(scale_shape))])
    if dt in ("int8", "uint8"):
        lo, hi = (-128, 127) if dt == "int8" else (0, 255)
        t.append((name + ".weight", "I8" if dt == "int8" else "U8", [out, inp],
                  bytes(c & 0xFF for c in codes(out * inp, lo, hi, salt))))
        t.append((name + ".weight_scale", "F32", scale_shape, scales))
        t.append((name + ".weight_zero_point", "I32", scale_shape,
                  i32([0 if dt == "int8" else 128] * numel(scale_shape))))
    else:  # fp8: every byte is a code (0x7F/0xFF are E4M3's NaNs)
        t.append((name + ".weight", "F8_E4M3" if dt == "fp8_e4m3" else "F8_E5M2", [out, inp],
                  bytes(codes(out * inp, 0, 255, salt))))
        t.append((name + ".weight_scale", "F32", scale_shape, scales))
    return t


def tiny_llama(hidden, layers=2):
    heads, head_dim = hidden // 8, 8
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "hidden_size": hidden, "intermediate_size": hidden,
            "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": max(1, heads // 2), "head_dim": head_dim, "vocab_size": 16,
            "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "hidden_act": "silu",
            "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2,
            "torch_dtype": "float32"}


def model_tensors(config, weight, exclude, inputs=None, outputs=None):
    h, ff = config["hidden_size"], config["intermediate_size"]
    kv = config["num_key_value_heads"] * config["head_dim"]
    t = [("model.embed_tokens.weight", "F32", [config["vocab_size"], h],
          f32([0.01 * (i % 11) for i in range(config["vocab_size"] * h)])),
         ("model.norm.weight", "F32", [h], f32([1.0] * h))]
    shapes = {"self_attn.q_proj": (h, h), "self_attn.k_proj": (kv, h), "self_attn.v_proj": (kv, h),
              "self_attn.o_proj": (h, h), "mlp.gate_proj": (ff, h), "mlp.up_proj": (ff, h),
              "mlp.down_proj": (h, ff)}
    for b in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % b
        t.append((p + "input_layernorm.weight", "F32", [h], f32([1.0] * h)))
        t.append((p + "post_attention_layernorm.weight", "F32", [h], f32([1.0] * h)))
        for i, (short, (out, inp)) in enumerate(sorted(shapes.items())):
            name = p + short
            if weight is None or any(name.endswith(e) for e in exclude):
                t.append((name + ".weight", "F32", [out, inp],
                          f32([0.001 * ((j * 3 + i) % 17) for j in range(out * inp)])))
                continue
            t += linear_tensors(name, out, inp, weight, 7 * b + i)
            if inputs is not None:
                t.append((name + ".input_scale", "F32", [], f32([0.05])))
                if inputs["dtype"] in ("int8", "uint8"):
                    t.append((name + ".input_zero_point", "I32", [], i32([0])))
            if outputs is not None and short in ("self_attn.k_proj", "self_attn.v_proj"):
                t.append((name + ".output_scale", "F32", [], f32([0.5])))
    return t


def layer(weight, inputs=None, outputs=None):
    return {"weight": weight, "input_tensors": inputs, "output_tensors": outputs, "bias": None}


def quark_config(config, weight, exclude, pack="reorder", inputs=None, outputs=None,
                 weight_format="real_quantized"):
    w = {k: v for k, v in weight.items() if not k.startswith("_")}
    kv = ["*k_proj", "*v_proj"] if outputs is not None else []
    kv_layer = layer(w, inputs, outputs)
    qc = {"algo_config": None, "exclude": ["lm_head"] + ["*" + e for e in exclude],
          "export": {"kv_cache_group": kv, "min_kv_scale": 0.0, "pack_method": pack,
                     "weight_format": weight_format, "weight_merge_groups": None},
          "global_quant_config": layer(w, inputs), "kv_cache_post_rope": False,
          "kv_cache_quant_config": {k: kv_layer for k in kv},
          "layer_quant_config": {k: kv_layer for k in kv}, "layer_type_quant_config": {},
          "quant_method": "quark", "quant_mode": "eager_mode", "softmax_quant_spec": None,
          "version": "0.13"}
    return dict(config, quantization_config=qc)


def join(*parts):
    return SEPARATOR.join(p if isinstance(p, bytes) else p.encode() for p in parts)


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"))


G8 = {"ch_axis": -1, "group_size": 8, "observer_cls": "PerGroupMinMaxObserver"}
PER_CHANNEL = {"ch_axis": 0, "observer_cls": "PerChannelMinMaxObserver"}
MXFP4 = spec("fp4", "per_group", -1, 32, symmetric=None, scale_format="e8m0",
             scale_calculation_mode="even", observer_cls="PerBlockMXObserver")
FP8_TENSOR = spec("fp8_e4m3", "per_tensor", symmetric=None)
INT8_TENSOR = spec("int8", "per_tensor")

# name: (hidden, weight spec, excluded suffixes, pack method, input spec, output spec)
SYNTHETIC = {
    "uint4_g8_reorder": (16, spec("uint4", "per_group", symmetric=False, **G8), [], "reorder",
                         None, None),
    "int4_g8_order": (16, dict(spec("int4", "per_group", **G8), _pack="order"), [], "order",
                      None, None),
    "int4_per_channel": (16, spec("int4", "per_channel", **PER_CHANNEL), [], "reorder", None,
                         None),
    "uint4_per_tensor": (16, spec("uint4", "per_tensor", symmetric=False), ["down_proj"],
                         "reorder", None, None),
    "int8_static_input": (16, INT8_TENSOR, ["mlp.down_proj"], "reorder",
                          INT8_TENSOR, None),
    "uint8_per_channel": (16, spec("uint8", "per_channel", symmetric=False, **PER_CHANNEL),
                          ["mlp.down_proj"], "reorder", None, None),
    "fp8_kv_cache": (16, FP8_TENSOR, ["mlp.down_proj"], "reorder", FP8_TENSOR,
                     FP8_TENSOR),
    "fp8_e5m2_per_channel": (16, spec("fp8_e5m2", "per_channel", symmetric=None, **PER_CHANNEL),
                             ["mlp.down_proj"], "reorder", None, None),
    "mxfp4": (32, MXFP4, [], "reorder", None, None),
}


def synthetic(out, write):
    for name, (hidden, weight, exclude, pack, inputs, outputs) in SYNTHETIC.items():
        config = tiny_llama(hidden)
        tensors = model_tensors(config, weight, exclude, inputs, outputs)
        cfg = quark_config(config, weight, exclude, pack, inputs, outputs)
        write(out, "quark_checkpoint", name, join(dumps(cfg), image(tensors)))
    # Fake-quantized export: float weights, opened as they are (one layer: F32 is 4 bytes a weight).
    config = tiny_llama(16, layers=1)
    weight = SYNTHETIC["int8_static_input"][1]
    cfg = quark_config(config, weight, [], weight_format="fake_quantized")
    write(out, "quark_checkpoint", "fake_quantized",
          join(dumps(cfg), image(model_tensors(config, None, []))))
    # Sharded: layer 0 and the rest in one shard, layer 1 in the other.
    hidden, weight, exclude, pack, _, _ = SYNTHETIC["uint4_g8_reorder"]
    config = tiny_llama(hidden)
    tensors = model_tensors(config, weight, exclude)
    second = [t for t in tensors if t[0].startswith("model.layers.1.")]
    first = [t for t in tensors if not t[0].startswith("model.layers.1.")]
    names = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    index = {"metadata": {"total_size": sum(len(t[3]) for t in tensors)},
             "weight_map": dict([(t[0], names[0]) for t in first] +
                                [(t[0], names[1]) for t in second])}
    write(out, "quark_checkpoint", "uint4_sharded",
          join(dumps(quark_config(config, weight, exclude, pack)), image(first), dumps(index),
               image(second)))


def reference(out, shared, write):
    """Quark's own exports with layer 0's attention projections only (their real bytes)."""
    root = os.path.join(shared, "reference", "quark-exports")
    if not os.path.isdir(root):
        return
    for scheme in sorted(os.listdir(root)):
        folder = os.path.join(root, scheme)
        try:
            with open(os.path.join(folder, "config.json"), "rb") as f:
                config = f.read()
            with open(os.path.join(folder, "model.safetensors"), "rb") as f:
                blob = f.read()
        except OSError:
            continue
        n = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8:8 + n])
        keep = []
        for name, info in sorted(header.items()):
            if name == "__metadata__":
                continue
            if name == "model.norm.weight" or name.startswith(
                    ("model.layers.0.self_attn.q_proj.", "model.layers.0.self_attn.k_proj.")):
                b, e = info["data_offsets"]
                keep.append((name, info["dtype"], info["shape"], blob[8 + n + b:8 + n + e]))
        write(out, "quark_checkpoint", "reference_" + scheme, join(config, image(keep)))


def write_all(out, shared, write):
    synthetic(out, write)
    reference(out, shared, write)

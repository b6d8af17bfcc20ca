#!/usr/bin/env python3
"""The tiny Qwen1.5-MoE checkpoint with a mixture of experts in every layer.

    scripts/make-qwen2moe-allmoe.py SOURCE_DIR OUT_DIR

../shared/models/tiny-families/qwen2_moe has a dense MLP in layer 1 (mlp_only_layers [1]), which
llama.cpp's qwen2moe architecture cannot express (every block has a router and experts there), so
the GGUF export refuses it by name. This writes the same checkpoint with layer 1's dense MLP
replaced by a copy of layer 2's MoE block (router, experts, shared expert and its gate) and
mlp_only_layers [], every other tensor and file unchanged: a model llama.cpp can compute, made of
the shared folder's own weights. Standard library only (the safetensors format is an 8-byte
header length, a JSON header, then the data); tests/core/export/tst_ggufexport_moe.cpp builds the
same folder in C++.
"""
import json
import os
import shutil
import struct
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(src):
        if name not in ("config.json", "model.safetensors") and not name.startswith("reference"):
            shutil.copyfile(os.path.join(src, name), os.path.join(out, name))
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    config["mlp_only_layers"] = []
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    metadata = header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], data[begin:end])
    tensors = {k: v for k, v in tensors.items() if not k.startswith("model.layers.1.mlp.")}
    for name in list(tensors):
        if name.startswith("model.layers.2.mlp."):
            tensors["model.layers.1.mlp." + name[len("model.layers.2.mlp."):]] = tensors[name]
    out_header, blobs, offset = {}, [], 0
    if metadata is not None:
        out_header["__metadata__"] = metadata
    for name in sorted(tensors):
        dtype, shape, blob = tensors[name]
        out_header[name] = {"dtype": dtype, "shape": shape,
                            "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Export memory benchmark: peak resident memory of `quantscope-cli quantize --format ...` on a
7B-shaped synthetic Llama (32 blocks of 4096/11008, BF16, 13.5 GB of weights), against the size
of one decoder block, the bound the streaming exporters promise (issue 10: "stays within about
one block of memory, whatever the model size"). Prints numbers; asserts nothing.

The checkpoint is `synth --preset 7b --sparse`: real safetensors files whose data are holes
(zeros), so it costs seconds and no disk. Every weight is still read, quantized, packed and
written; zeros make no difference to the memory the pipeline holds.

Columns: wall seconds, peak RSS (wait4's ru_maxrss: anonymous memory plus the file pages mapped
at the time), the output's size, and (peak RSS - start-up RSS) / one block's bytes in the
checkpoint's dtype and in fp32 (the engine computes a block in fp32).

usage: bench/bench_export_memory.py [--build build/release] [--work /tmp/qs-bench-export]
                                    [--formats quark,gguf,fake] [--scheme uint4_wo_128]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak_rss_mib(cmd):
    """(wall s, peak RSS MiB, stdout) of one run; os.wait4 reports the child's ru_maxrss."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"command failed (status {status}): {' '.join(cmd)}")
    return wall, usage.ru_maxrss / 1024.0, out.decode()


def folder_bytes(path):
    total = 0
    for base, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(base, f))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--work", default="/tmp/qs-bench-export")
    ap.add_argument("--formats", default="quark,gguf,fake")
    ap.add_argument("--scheme", default="uint4_wo_128")
    ap.add_argument("--preset", default="7b")
    a = ap.parse_args()
    cli = os.path.join(a.build, "bin", "quantscope-cli")
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, f"{a.preset}-sparse")
    if not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([cli, "synth", "--preset", a.preset, "--sparse", "--out", model],
                       check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(model, "config.json")) as f:
        cfg = json.load(f)
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    head_dim = h // heads
    block_params = h * (heads * head_dim) + 2 * h * (kv * head_dim) + (heads * head_dim) * h \
        + 3 * h * i + 2 * h
    stored = 2 if cfg.get("torch_dtype", "float32") in ("bfloat16", "float16") else 4
    block_mib, block32_mib = block_params * stored / 2**20, block_params * 4 / 2**20
    embed_mib = cfg["vocab_size"] * h * stored / 2**20
    weights = folder_bytes(model)

    print(f"# {subprocess.run([cli, '--version'], capture_output=True, text=True).stdout.strip()}")
    print(f"# {a.preset}: {cfg['num_hidden_layers']} blocks, hidden {h}, intermediate {i}, "
          f"checkpoint {weights / 2**30:.1f} GiB; one block {block_mib:.0f} MiB stored "
          f"({block32_mib:.0f} MiB fp32), embedding {embed_mib:.0f} MiB")
    _, rss0, _ = peak_rss_mib([cli, "--version"])
    _, rss_inspect, _ = peak_rss_mib([cli, "inspect", model])
    print(f"# baselines: start-up {rss0:.0f} MiB, inspect (headers) {rss_inspect:.0f} MiB")
    print(f"{'format':<8}{'scheme':<16}{'wall s':>9}{'peak RSS MiB':>14}{'output GiB':>12}"
          f"{'(RSS-start)/block':>19}{'/ block fp32':>14}")
    for fmt in [x for x in a.formats.split(",") if x]:
        out = os.path.join(a.work, f"out-{fmt}")
        shutil.rmtree(out, ignore_errors=True)
        cmd = [cli, "quantize", model, "--quant-scheme", a.scheme, "--format", fmt, "--out", out]
        if fmt == "gguf":
            cmd += ["--gguf-type", "auto"]  # the exact GGUF form of the scheme's codes
        wall, rss, _ = peak_rss_mib(cmd)
        size = folder_bytes(out) / 2**30
        print(f"{fmt:<8}{a.scheme:<16}{wall:>9.1f}{rss:>14.0f}{size:>12.2f}"
              f"{(rss - rss0) / block_mib:>19.2f}{(rss - rss0) / block32_mib:>14.2f}")
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()

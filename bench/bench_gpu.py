#!/usr/bin/env python3
"""GPU benchmark: prints numbers, never asserts (machines are shared; compare ratios).

Runs on a machine with a CUDA GPU and a PyTorch with CUDA (the one whose LibTorch the CUDA build
links, e.g. `scripts/build-cuda.sh`), all in one run on the same synthetic 1B-shaped Llama
(TinyLlama's shape: hidden 2048, 22 layers, 32 heads, 4 KV heads, vocab 32000), same windows,
same dtype:

1. `quantscope-cli eval --device cuda` tokens/s against a plain PyTorch eager forward of the
   same weights (tests/reference/hf_reference.py, one window at a time as transformers' eager
   loop does) and, where the `transformers` package is importable, LlamaForCausalLM with
   attn_implementation="eager"; perplexities side by side.
2. Calibration seconds per block: `quantize` (int8, static activations) and `analyze`.
3. Peak GPU memory (nvidia-smi sampled every 50 ms) of `quantize` against depth.

  bench_gpu.py --cli .gpu/build/bin/quantscope-cli --data wikitext2-test.txt --work /tmp/qsgpu
"""
import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
import hf_reference  # noqa: E402

SHAPE = ["--hidden", "2048", "--intermediate", "5632", "--heads", "32", "--kv-heads", "4",
         "--vocab", "32000", "--max-positions", "2048", "--dtype", "BF16"]


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout, dt


class GpuMemorySampler:
    """Peak memory.used (MiB) of GPU 0 while the block runs, minus the level before it."""

    def __enter__(self):
        self.peak = 0
        self.base = self._used()
        self._stop = False
        self._t = threading.Thread(target=self._loop)
        self._t.start()
        return self

    def _used(self):
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                              "-i", "0"], capture_output=True, text=True).stdout
        return int(out.strip().splitlines()[0])

    def _loop(self):
        while not self._stop:
            self.peak = max(self.peak, self._used())
            time.sleep(0.05)

    def __exit__(self, *exc):
        self._stop = True
        self._t.join()
        self.peak_delta = max(0, self.peak - self.base)


def synth(cli, out, layers):
    if not os.path.exists(os.path.join(out, "config.json")):
        run([cli, "synth", "--arch", "llama", "--layers", str(layers), "--out", out, "--seed", "1"] + SHAPE)
    return out


def eager_reference(model, ids, seq_len, windows, dtype):
    cfg, w = hf_reference.load(model)
    w = {k: v.to("cuda", dtype) for k, v in w.items()}
    rows = torch.tensor(ids[:windows * seq_len], device="cuda").view(windows, seq_len)
    torch.set_grad_enabled(False)
    hf_reference.logits(cfg, w, rows[:1])  # warm-up (kernels, allocator)
    torch.cuda.synchronize()
    nll = 0.0
    t0 = time.perf_counter()
    for i in range(windows):
        lg = hf_reference.logits(cfg, w, rows[i:i + 1]).float()
        lp = torch.log_softmax(lg[0, :-1], -1)
        nll -= lp.gather(-1, rows[i, 1:].unsqueeze(-1)).double().sum().item()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    del w
    torch.cuda.empty_cache()
    return windows * seq_len / dt, math.exp(nll / (windows * (seq_len - 1)))


def transformers_eager(model, ids, seq_len, windows, dtype):
    try:
        import transformers  # noqa: F401
        from transformers import AutoModelForCausalLM
    except ImportError:
        return None
    m = AutoModelForCausalLM.from_pretrained(model, torch_dtype=dtype, attn_implementation="eager").to("cuda")
    rows = torch.tensor(ids[:windows * seq_len], device="cuda").view(windows, seq_len)
    torch.set_grad_enabled(False)
    m(rows[:1])
    torch.cuda.synchronize()
    nll = 0.0
    t0 = time.perf_counter()
    for i in range(windows):
        lg = m(rows[i:i + 1]).logits.float()
        lp = torch.log_softmax(lg[0, :-1], -1)
        nll -= lp.gather(-1, rows[i, 1:].unsqueeze(-1)).double().sum().item()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    del m
    torch.cuda.empty_cache()
    return windows * seq_len / dt, math.exp(nll / (windows * (seq_len - 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", default="/tmp/qs-bench-gpu")
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--windows", type=int, default=80)
    ap.add_argument("--calib-windows", type=int, default=16)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cli = args.cli
    print(f"GPU: {torch.cuda.get_device_name(0)}; PyTorch {torch.__version__}")
    print(run([cli, "--version"])[0].strip())

    model = synth(cli, os.path.join(args.work, f"llama1b-{args.layers}"), args.layers)
    ids = json.loads(run([cli, "tokenize", model, "--data", args.data, "--json"])[0])["ids"]
    windows = min(args.windows, len(ids) // args.seq_len)
    print(f"\n1. eval, bf16, {windows} windows of {args.seq_len} tokens ({len(ids)} ids in the text)")
    ev = [cli, "eval", model, "--data", args.data, "--eval-seq-len", str(args.seq_len),
          "--max-windows", str(windows), "--device", "cuda", "--dtype", "bfloat16", "--json"]
    out, wall = run(ev)
    r = json.loads(out)
    ours = r.get("tokens_per_second") or windows * args.seq_len / wall
    print(f"  quantscope eval          {ours:10.0f} tokens/s   ppl {r['perplexity']:.6f}   (wall {wall:.1f} s)")
    ref_tps, ref_ppl = eager_reference(model, ids, args.seq_len, windows, torch.bfloat16)
    print(f"  plain PyTorch eager      {ref_tps:10.0f} tokens/s   ppl {ref_ppl:.6f}   ratio {ours / ref_tps:.2f}x")
    tf = transformers_eager(model, ids, args.seq_len, windows, torch.bfloat16)
    if tf:
        print(f"  transformers eager       {tf[0]:10.0f} tokens/s   ppl {tf[1]:.6f}   ratio {ours / tf[0]:.2f}x")
    else:
        print("  transformers eager       (transformers not importable here)")

    print(f"\n2. calibration, int8 static, {args.calib_windows} windows of {args.seq_len}, bf16, cuda")
    calib = ["--quant-scheme", "int8", "--calib-data", args.data, "--num-calib-data", str(args.calib_windows),
             "--seq-len", str(args.seq_len), "--device", "cuda", "--dtype", "bfloat16"]
    outdir = os.path.join(args.work, "q")
    _, qwall = run([cli, "quantize", model, "--out", outdir] + calib)
    _, awall = run([cli, "analyze", model, "--json"] + calib)
    print(f"  quantize {qwall:7.1f} s  ({qwall / args.layers:.2f} s/block, load and write included)")
    print(f"  analyze  {awall:7.1f} s  ({awall / args.layers:.2f} s/block)")

    print("\n3. peak GPU memory of quantize against depth (MiB over the idle level)")
    for layers in sorted({max(2, args.layers // 4), args.layers // 2, args.layers}):
        m = synth(cli, os.path.join(args.work, f"llama1b-{layers}"), layers)
        with GpuMemorySampler() as s:
            _, wall = run([cli, "quantize", m, "--out", outdir + str(layers)] + calib)
        print(f"  {layers:3d} blocks: peak {s.peak_delta:6d} MiB, {wall:.1f} s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""GPU benchmark: prints numbers, never asserts (machines are shared; compare ratios).

Runs on a machine with a CUDA GPU and a PyTorch with CUDA (the one whose LibTorch the build
links: the `pip` preset or scripts/build-cuda.sh), all in one run, same GPU, same windows, bf16:

1. Evaluation tokens/s on a 1B-shaped synthetic Llama (TinyLlama's shape: hidden 2048, 22 layers,
   32 heads, 4 KV heads, vocab 32000): `quantscope-cli eval --device cuda` (run clock, process
   wall, and the steady rate from two window counts) against transformers' LlamaForCausalLM with
   its default attention (sdpa) and with eager attention, each fed the same windows in batches of
   --batch windows, warm and load-included; the median of --runs runs each, perplexities side by
   side. Without `transformers` only our own figures are printed.
2. Calibration seconds per block, 1B- and 7B-shaped (hidden 4096, intermediate 11008, 32 heads;
   --calib-layers-1b and --layers-7b blocks): `analyze`, `quantize` int8 (static activations) and `quantize` uint4 per group 128
   with GPTQ, per block.
3. Peak GPU memory of `quantize` against depth (nvidia-smi sampled every 50 ms): flat is right.

  bench_gpu.py --cli build/pip/bin/quantscope-cli --data wikitext2-test.txt --work /tmp/qsgpu
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


def synth(cli, out, layers, shape=SHAPE):
    if not os.path.exists(os.path.join(out, "config.json")):
        run([cli, "synth", "--arch", "llama", "--layers", str(layers), "--out", out, "--seed", "1"] + shape)
    return out


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def transformers_eval(model, ids, seq_len, windows, batch, attention, runs):
    """transformers' forward over the same windows, batched: (warm tokens/s, median of `runs`
    after a warm-up, model already on the GPU; load-included tokens/s, from from_pretrained to the
    end of the first pass, no warm-up; perplexity)."""
    try:
        from transformers import AutoModelForCausalLM
    except ImportError:
        return None
    torch.set_grad_enabled(False)
    torch.cuda.synchronize()
    t_load = time.perf_counter()
    m = AutoModelForCausalLM.from_pretrained(model, dtype=torch.bfloat16,
                                             attn_implementation=attention).to("cuda")
    rows = torch.tensor(ids[:windows * seq_len], device="cuda").view(windows, seq_len)

    def one_pass():
        nll = torch.zeros((), dtype=torch.float64, device="cuda")
        for b in range(0, windows, batch):
            x = rows[b:b + batch]
            lg = m(x).logits[:, :-1].float()
            lp = torch.log_softmax(lg, -1)
            nll -= lp.gather(-1, x[:, 1:].unsqueeze(-1)).double().sum()
        total = nll.item()
        torch.cuda.synchronize()
        return total

    total = one_pass()  # the first pass doubles as the warm-up (kernels, allocator)
    cold = windows * seq_len / (time.perf_counter() - t_load)
    speeds = []
    for _ in range(runs):
        t0 = time.perf_counter()
        total = one_pass()
        speeds.append(windows * seq_len / (time.perf_counter() - t0))
    del m
    torch.cuda.empty_cache()
    return median(speeds), cold, math.exp(total / (windows * (seq_len - 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", default="/tmp/qs-bench-gpu")
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--layers-7b", type=int, default=2)
    ap.add_argument("--calib-layers-1b", type=int, default=5,
                    help="blocks of the 1B-shaped model whose calibration is timed")
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--windows", type=int, default=80)
    ap.add_argument("--batch", type=int, default=8, help="windows per transformers forward")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calib-windows", type=int, default=16)
    ap.add_argument("--sections", default="1,2,3", help="which of the three parts to run")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cli = args.cli
    print(f"GPU: {torch.cuda.get_device_name(0)}; PyTorch {torch.__version__}")
    print(run([cli, "--version"])[0].strip())

    sections = {int(x) for x in args.sections.split(",")}
    model = synth(cli, os.path.join(args.work, f"1B-shaped-{args.layers}"), args.layers)
    ids = json.loads(run([cli, "tokenize", model, "--data", args.data, "--json"])[0])["ids"]
    windows = min(args.windows, len(ids) // args.seq_len)
    if 1 in sections:
        evaluation(cli, model, ids, windows, args)
    if 2 in sections:
        calibration(cli, model, args)
    if 3 in sections:
        memory(cli, args)


def evaluation(cli, model, ids, windows, args):
    """Ours at `windows` and at 3x as many: the run clock (each block's weights streamed from the
    checkpoint as the run reaches it), the process wall (process start, CUDA start, tokenizing
    and loading included) and the steady rate, the extra windows over the extra seconds (what
    one more window costs once everything fixed is paid: transformers' warm figure counts the
    same). Then transformers warm and load-included, same windows, same batches."""
    more = min(3 * windows, len(ids) // args.seq_len)
    print(f"\n1. eval, bf16, {windows} windows of {args.seq_len} tokens (and {more} for the steady "
          f"rate), median of {args.runs} runs")

    def ours(n):
        ev = [cli, "eval", model, "--data", args.data, "--eval-seq-len", str(args.seq_len),
              "--max-windows", str(n), "--device", "cuda", "--dtype", "bfloat16", "--json",
              "--no-fidelity"]
        seconds, walls = [], []
        for _ in range(args.runs):
            out, wall = run(ev)
            r = json.loads(out)
            seconds.append(n * args.seq_len / r["tokens_per_second"])
            walls.append(wall)
        return median(seconds), median(walls), r["perplexity"]

    t1, w1, ppl = ours(windows)
    t3, w3, _ = ours(more)
    tokens = windows * args.seq_len
    steady = (more - windows) * args.seq_len / (t3 - t1) if more > windows and t3 > t1 else float("nan")
    rows = [("quantscope eval, run clock", tokens / t1, ppl),
            ("quantscope eval, process wall", tokens / w1, ppl),
            (f"quantscope eval, steady ({more} vs {windows} windows)", steady, ppl)]
    print(f"  {'':48s} {'tokens/s':>10s}   perplexity")
    for label, rate, p in rows:
        print(f"  {label:48s} {rate:10.0f}   {p:.6f}")
    for attention in ("sdpa", "eager"):
        tf = transformers_eval(model, ids, args.seq_len, windows, args.batch, attention, args.runs)
        if tf is None:
            print(f"  transformers {attention:5s}         (transformers not importable here)")
            continue
        warm, cold, p = tf
        print(f"  {'transformers ' + attention + ', warm (x' + str(args.batch) + ' windows)':48s} "
              f"{warm:10.0f}   {p:.6f}   ours steady / this {steady / warm:.2f}x, "
              f"run clock / this {tokens / t1 / warm:.2f}x")
        print(f"  {'transformers ' + attention + ', load included':48s} {cold:10.0f}   "
              f"{'':10s}   ours process wall / this {tokens / w1 / cold:.2f}x")


SHAPE_7B = ["--hidden", "4096", "--intermediate", "11008", "--heads", "32", "--kv-heads", "32",
            "--vocab", "32000", "--max-positions", "2048", "--dtype", "BF16"]


def calibration_args(args):
    return ["--calib-data", args.data, "--num-calib-data", str(args.calib_windows),
            "--seq-len", str(args.seq_len), "--device", "cuda", "--dtype", "bfloat16"]


def calibration(cli, model, args):
    # Seconds per block do not depend on depth (one block at a time): a few blocks give the rate.
    layers_1b = args.calib_layers_1b
    models = [("1B-shaped", synth(cli, os.path.join(args.work, f"1B-shaped-{layers_1b}"), layers_1b),
               layers_1b),
              ("7B-shaped", synth(cli, os.path.join(args.work, f"7B-shaped-{args.layers_7b}"),
                                  args.layers_7b, SHAPE_7B), args.layers_7b)]
    print(f"\n2. calibration, {args.calib_windows} windows of {args.seq_len}, bf16, cuda "
          "(seconds per block; process load and writing included)")
    calib = calibration_args(args)
    for label, m, layers in models:
        _, awall = run([cli, "analyze", m, "--json", "--quant-scheme", "int8"] + calib)
        _, qwall = run([cli, "quantize", m, "--out", os.path.join(args.work, "q-int8"),
                        "--quant-scheme", "int8"] + calib)
        _, gwall = run([cli, "quantize", m, "--out", os.path.join(args.work, "q-gptq"),
                        "--quant-scheme", "uint4_wo_128", "--quant-algo", "gptq"] + calib)
        print(f"  {label} ({layers} blocks): analyze {awall / layers:.2f} s/block, "
              f"quantize int8 {qwall / layers:.2f}, GPTQ uint4/128 {gwall / layers:.2f}"
              f"   (totals {awall:.1f} / {qwall:.1f} / {gwall:.1f} s)")


def memory(cli, args):
    calib = calibration_args(args)
    print("\n3. peak GPU memory of quantize int8 against depth (MiB over the idle level)")
    for label, shape, depths in (("1B-shaped", SHAPE, (5, 11, args.layers)),
                                 ("7B-shaped", SHAPE_7B, (1, args.layers_7b))):
        for layers in depths:
            m = synth(cli, os.path.join(args.work, f"{label}-{layers}"), layers, shape)
            with GpuMemorySampler() as s:
                _, wall = run([cli, "quantize", m, "--out", os.path.join(args.work, "q-depth"),
                               "--quant-scheme", "int8"] + calib)
            print(f"  {label} {layers:3d} blocks: peak {s.peak_delta:6d} MiB, {wall:.1f} s")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Algorithm benchmarks: prints numbers, medians of repeated runs and ratios against a baseline
measured in the same run (never asserted: machines here are noisy).

1. blocks: seconds and peak RSS per decoder block of `quantize` with each algorithm on a
   1B-shaped synthetic Llama (hidden 2048, intermediate 5632, 32 heads / 4 KV heads, vocab 32000,
   real random weights, only the first --layers blocks so it stays fast): uint4_wo_128 + RTN
   (baseline), gptq, awq; int8 (W8A8) + RTN, smoothquant, autosmoothquant, rotation. Seconds per
   block = the run's block_seconds (quantize --json), the algorithm's extra = minus RTN's of the
   same scheme. Quark's time for the same algorithm when a Quark venv is given (QS_QUARK_VENV or
   /work/venvs/quark); otherwise "Quark: not run (no venv)".
2. layer: GPTQ of one 4096x4096 layer (uint4 g128 asym, no act order, blocksize 128, damp 0.01)
   by quantscope-bench-gptq against bench/gptq_reference.py (the plain PyTorch algorithm) on the
   same weights and calibration activations (2048 tokens, 8 outlier channels), same threads;
   error = ||(W-Q)X||^2 / ||WX||^2 of each, so equal error is visible beside the time ratio.
3. stream70b: `quantize --quant-algo gptq` of a sparse 70B-shaped checkpoint (headers only: the
   weights are zeros, so GPTQ's arithmetic is the real one but its inputs are degenerate), killed
   after --timeout seconds; peak RSS, per-block seconds from the progress stream (a pty, so the
   CLI redraws its line with the block number), and 80 blocks extrapolated.

usage: bench/bench_algorithms.py [--build build/release] [--work /tmp/qs-bench-algos]
                                 [--sections blocks,layer,stream70b] [--threads 2] [--repeat 3]
                                 [--layers 1] [--windows 8] [--timeout 300]
"""
import argparse
import json
import os
import pty
import re
import select
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("QS_SHARED_DIR", os.path.normpath(os.path.join(ROOT, "..", "shared")))
PY = "/usr/bin/python3"


def measured(cmd):
    """Wall time and stdout of one run; exits on failure."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.decode()[-2000:]}")
    return time.perf_counter() - t0, p.stdout.decode()


def measured_rss(cmd):
    """Wall time, peak RSS in MB and stdout; wait4 on the child itself (communicate() would reap
    it first)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status:
        sys.exit(f"command failed ({status}): {' '.join(cmd)}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, out.decode()


def quark_python():
    venv = os.environ.get("QS_QUARK_VENV", "/work/venvs/quark")
    py = os.path.join(venv, "bin", "python")
    return py if os.path.exists(py) else None


def section_blocks(a, cli):
    model = os.path.join(a.work, f"llama-1b-{a.layers}l")
    if not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([cli, "synth", "--hidden", "2048", "--intermediate", "5632", "--layers",
                        str(a.layers), "--heads", "32", "--kv-heads", "4", "--vocab", "32000",
                        "--max-positions", "2048", "--dtype", "BF16", "--seed", "1", "--out",
                        model], check=True, capture_output=True)
    calib = os.path.join(SHARED, "data", "tinystories-calib.txt")
    # Rotation is left out: quantize refuses to export a rotated model (the exporters copy the
    # embedding, norms and head from the source), and a run without --out has no block timings.
    runs = [("uint4_wo_128", "rtn"), ("uint4_wo_128", "gptq"), ("uint4_wo_128", "awq"),
            ("int8", "rtn"), ("int8", "smoothquant"), ("int8", "autosmoothquant")]
    print(f"## quantize per block: 1B-shaped Llama (hidden 2048, intermediate 5632, "
          f"{a.layers} block(s), BF16, seed 1), calibration {a.windows} x 512 tokens of "
          f"tinystories-calib.txt, threads {a.threads}, CPU")
    print(f"{'scheme':<14}{'algo':<17}{'s/block':>9}{'extra s/block':>15}{'x RTN':>8}"
          f"{'wall s':>9}{'peak RSS MB':>13}")
    base = {}
    for scheme, algo in runs:
        out = os.path.join(a.work, f"out-{scheme}-{algo}")
        cmd = [cli, "quantize", model, "--quant-scheme", scheme, "--calib-data", calib,
               "--num-calib-data", str(a.windows), "--seq-len", "512", "--threads",
               str(a.threads), "--out", out, "--json", "--quiet"]
        if algo != "rtn":
            cmd += ["--quant-algo", algo]
        wall, rss, stdout = measured_rss(cmd)
        per_block = statistics.median(json.loads(stdout)["block_seconds"])
        if algo == "rtn":
            base[scheme] = per_block
        extra = per_block - base[scheme]
        print(f"{scheme:<14}{algo:<17}{per_block:>9.2f}{extra:>15.2f}"
              f"{per_block / base[scheme]:>8.1f}{wall:>9.1f}{rss:>13.0f}", flush=True)
        subprocess.run(["rm", "-rf", out])
    if quark_python() is None:
        print("Quark: not run (no venv: set QS_QUARK_VENV or create /work/venvs/quark)")
    else:
        print(f"Quark: venv found ({quark_python()}) but this script has no Quark driver yet")


def section_layer(a, build):
    import numpy as np
    import torch
    rows = cols = 4096
    tokens = 2048
    w_path, x_path = os.path.join(a.work, "gptq-w.f32"), os.path.join(a.work, "gptq-x.f32")
    torch.manual_seed(0)
    # Rows with a log-normal spread of magnitudes; inputs correlated through a shared rank-256
    # component (GPTQ has nothing to gain on white inputs), channel scales log-normal, 8 outlier
    # channels x40 (as real LLM activations).
    W = torch.randn(rows, cols) * 0.02 * torch.exp(torch.randn(rows, 1) * 0.3)
    X = (torch.randn(tokens, cols) + torch.randn(tokens, 256) @ (torch.randn(256, cols) * 0.1))
    X *= torch.exp(torch.randn(cols) * 0.5)
    X[:, torch.randperm(cols)[:8]] *= 40
    W.numpy().tofile(w_path)
    X.numpy().tofile(x_path)
    ours_q, ref_q = os.path.join(a.work, "gptq-q-ours.f32"), os.path.join(a.work, "gptq-q-ref.f32")
    _, ours = measured([os.path.join(build, "bin", "quantscope-bench-gptq"), "--weight", w_path,
                        "--inputs", x_path, "--rows", str(rows), "--cols", str(cols), "--tokens",
                        str(tokens), "--threads", str(a.threads), "--reps", str(a.repeat),
                        "--out", ours_q])
    _, ref = measured([PY, os.path.join(ROOT, "bench", "gptq_reference.py"), w_path, x_path,
                       str(rows), str(cols), str(tokens), str(a.threads), str(a.repeat), "4",
                       "128", ref_q])
    ours, ref = json.loads(ours), json.loads(ref)

    def error(path):
        Q = torch.from_numpy(np.fromfile(path, dtype=np.float32).reshape(rows, cols))
        return float(((W - Q) @ X.t()).double().pow(2).sum() / (W @ X.t()).double().pow(2).sum())

    print(f"## GPTQ of one {rows}x{cols} layer, uint4 g128 asym, blocksize 128, damp 0.01, "
          f"no act order, {tokens} calibration tokens; median of {a.repeat}, threads "
          f"{a.threads}")
    print(f"{'implementation':<26}{'hessian s':>10}{'quantize s':>12}{'total s':>10}"
          f"{'total CPU s':>13}{'rel. error':>12}")
    for name, r, q in (("quantscope", ours, ours_q), ("plain PyTorch reference", ref, ref_q)):
        r["total"] = r["hessian_seconds"] + r["quantize_seconds"]
        r["cpu"] = r["hessian_cpu_seconds"] + r["quantize_cpu_seconds"]
        print(f"{name:<26}{r['hessian_seconds']:>10.2f}{r['quantize_seconds']:>12.2f}"
              f"{r['total']:>10.2f}{r['cpu']:>13.2f}{error(q):>12.6f}")
    print(f"ratio quantscope / reference: wall {ours['total'] / ref['total']:.2f}, CPU "
          f"{ours['cpu'] / ref['cpu']:.2f} (quantize only, wall: "
          f"{ours['quantize_seconds'] / ref['quantize_seconds']:.2f}; goal <= 0.7)")


def section_stream70b(a, cli):
    model = os.path.join(a.work, "70b-sparse")
    if not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([cli, "synth", "--preset", "70b", "--sparse", "--out", model], check=True,
                       capture_output=True)
    out = os.path.join(a.work, "out-70b-gptq")
    cmd = [cli, "quantize", model, "--quant-scheme", "uint4_wo_128", "--quant-algo", "gptq",
           "--calib-data", os.path.join(SHARED, "data", "tinystories-calib.txt"),
           "--num-calib-data", str(a.windows), "--seq-len", "512", "--threads", str(a.threads),
           "--out", out]
    # A pty makes the CLI draw its progress line in place, block number included, at most 5
    # times a second; each "block N" change is timestamped here.
    master, slave = pty.openpty()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    starts, last, buf = {}, "", b""
    while time.perf_counter() - t0 < a.timeout:
        r, _, _ = select.select([master], [], [], 1.0)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf = (buf + chunk)[-4096:]
            text = buf.decode(errors="replace").replace("\r", "\n").split("\n")
            for line in text:
                m = re.search(r"block (\d+)", line)
                if m and int(m.group(1)) not in starts:
                    starts[int(m.group(1))] = time.perf_counter() - t0
                if line.strip():
                    last = line.strip()
        if p.poll() is not None:
            break
    elapsed = time.perf_counter() - t0
    if p.poll() is None:
        p.kill()
    _, _, usage = os.wait4(p.pid, 0)
    os.close(master)
    subprocess.run(["rm", "-rf", out])
    print(f"## GPTQ W4 (uint4_wo_128) of a 70B-shaped sparse checkpoint (weights are zeros), "
          f"streamed block by block, {a.windows} x 512 calibration tokens, threads {a.threads}, "
          f"stopped after {a.timeout} s")
    print(f"peak RSS {usage.ru_maxrss / 1024:.0f} MB; blocks started at (s): "
          f"{', '.join(f'{b}: {t:.1f}' for b, t in sorted(starts.items()))}")
    print(f"last progress line after {elapsed:.0f} s: {last}")
    done = sorted(starts)
    if len(done) >= 2:
        per = (starts[done[-1]] - starts[done[0]]) / (done[-1] - done[0])
        print(f"seconds per block {per:.1f}; 80 blocks extrapolated {per * 80 / 3600:.1f} h")
    else:
        print("no block finished within the time limit: see the progress line's ETA")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--work", default="/tmp/qs-bench-algos")
    ap.add_argument("--sections", default="blocks,layer,stream70b")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args()
    cli = os.path.join(a.build, "bin", "quantscope-cli")
    os.makedirs(a.work, exist_ok=True)
    print(f"# {subprocess.run([cli, '--version'], capture_output=True, text=True).stdout.strip()}"
          f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for s in a.sections.split(","):
        {"blocks": lambda: section_blocks(a, cli), "layer": lambda: section_layer(a, a.build),
         "stream70b": lambda: section_stream70b(a, cli)}[s]()


if __name__ == "__main__":
    main()

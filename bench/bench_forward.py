#!/usr/bin/python3
"""CPU forward pass: `quantscope-cli eval` against transformers' eager forward (issue 16).

One run, same machine, same windows, same thread count, float32 on both sides:
  stories260K   (/work/shared or ../shared beside the repo), TinyStories eval text, all windows
  llama-100m    `quantscope-cli synth --preset 100m`, 8 windows
  llama-1b      a TinyLlama-1.1B-shaped synthetic (hidden 2048, 22 layers, 32 heads, 4 KV heads,
                intermediate 5632, vocab 32000), 2 windows
Windows of 256 tokens. Synthetic checkpoints are written into a temporary folder (or --work, to
keep them between runs).

Quantscope: `eval --json` tokens/s (its own timer: reading each block's weights from the
checkpoint, forward and NLL). transformers: bench/hf_eager_forward.py in the venv of
scripts/make-bench-venv.sh, the forward and NLL over the same windows one window at a time and in
batches (model loading and a one-window warm-up excluded). The two alternate, one process each
per repeat, so a change in machine load hits both; medians of --repeat. The ratio is Quantscope
over the faster transformers mode. Prints numbers and the load average; asserts nothing.

usage: bench/bench_forward.py [--build build/release] [--venv /work/venvs/hf] [--repeat 3]
                              [--threads 2] [--models stories260K,llama-100m,llama-1b] [--work DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ = 256
SYNTH = {
    "llama-100m": ["--preset", "100m"],
    "llama-1b": ["--hidden", "2048", "--intermediate", "5632", "--layers", "22", "--heads", "32",
                 "--kv-heads", "4", "--vocab", "32000", "--max-positions", "2048"],
}
WINDOWS = {"stories260K": 0, "llama-100m": 8, "llama-1b": 2}


def shared_dir():
    for d in (os.environ.get("QS_SHARED_DIR"), os.path.join(ROOT, "..", "shared"), "/work/shared"):
        if d and os.path.isdir(os.path.join(d, "models", "stories260K")):
            return os.path.normpath(d)
    sys.exit("stories260K not found: set QS_SHARED_DIR")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--venv", default=os.environ.get("QS_BENCH_VENV", "/work/venvs/hf"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="stories260K,llama-100m,llama-1b")
    ap.add_argument("--batches", default="1,8", help="transformers batch sizes (windows)")
    ap.add_argument("--work", help="keep synthetic checkpoints here (default: a temp folder)")
    a = ap.parse_args()
    cli = os.path.join(a.build, "bin", "quantscope-cli")
    py = os.path.join(a.venv, "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"{py} missing: run scripts/make-bench-venv.sh {a.venv}")
    shared = shared_dir()
    data = os.path.join(shared, "data", "tinystories-eval.txt")
    tmp = tempfile.TemporaryDirectory(prefix="qs-bench-forward-")
    work = a.work or tmp.name
    os.makedirs(work, exist_ok=True)

    print(f"# {run([cli, '--version']).strip().splitlines()[0]}")
    print(f"# load average {os.getloadavg()[0]:.2f} at the start")
    print(f"# threads {a.threads}, float32, windows of {SEQ}, median of {a.repeat}; "
          f"eval text {data}")
    rows = []
    for name in a.models.split(","):
        if name == "stories260K":
            model = os.path.join(shared, "models", "stories260K")
        else:
            model = os.path.join(work, name)
            if not os.path.exists(os.path.join(model, "config.json")):
                run([cli, "synth", *SYNTH[name], "--seed", "1", "--out", model])
        ids = os.path.join(work, f"{name}.ids")
        with open(ids, "w") as f:
            f.write(run([cli, "tokenize", model, "--data", data]))
        maxw = WINDOWS[name]
        ours, theirs = [], []
        for _ in range(a.repeat):
            ours.append(json.loads(run(
                [cli, "eval", model, "--data", data, "--eval-seq-len", str(SEQ), "--max-windows",
                 str(maxw), "--threads", str(a.threads), "--dtype", "float32", "--quiet",
                 "--json"])))
            theirs.append(json.loads(run(
                [py, os.path.join(ROOT, "bench", "hf_eager_forward.py"), model, ids, str(SEQ),
                 str(maxw), str(a.threads), "1", *a.batches.split(",")])))
        hf = theirs[0]
        for b in hf["modes"]:
            runs = [t["modes"][b]["tokens_per_second"] for t in theirs]
            hf["modes"][b] = {"tokens_per_second": statistics.median(runs), "all": runs,
                              "perplexity": theirs[0]["modes"][b]["perplexity"]}
        q = statistics.median(o["tokens_per_second"] for o in ours)
        rows.append((name, ours[0], q, hf))
        print(f"## {name}: quantscope runs {[round(o['tokens_per_second']) for o in ours]}, "
              f"transformers {hf['transformers']} / torch {hf['torch']} runs "
              + ", ".join(f"batch {b}: {[round(r) for r in m['all']]}"
                          for b, m in hf["modes"].items()), flush=True)

    print(f"# load average {os.getloadavg()[0]:.2f} at the end")
    print()
    modes = a.batches.split(",")
    head = f"| model | windows | quantscope tok/s | " + " | ".join(
        f"transformers b{b} tok/s" for b in modes) + " | ratio | ppl quantscope | ppl transformers | rel. diff |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, o, q, hf in rows:
        best = max(m["tokens_per_second"] for m in hf["modes"].values())
        ppl = hf["modes"][modes[0]]["perplexity"]
        print(f"| {name} | {o['windows']} | {q:.0f} | "
              + " | ".join(f"{hf['modes'][b]['tokens_per_second']:.0f}" for b in modes)
              + f" | {q / best:.2f} | {o['perplexity']:.6f} | {ppl:.6f} | "
              f"{abs(o['perplexity'] / ppl - 1):.1e} |")


if __name__ == "__main__":
    main()

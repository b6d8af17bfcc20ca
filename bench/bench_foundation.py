#!/usr/bin/python3
"""Foundation benchmarks: prints numbers, medians of repeated runs and ratios against a baseline
measured in the same run (never asserted: machines here are noisy).

1. `inspect` wall time and peak RSS on sparse 7B- and 70B-shaped synthetic checkpoints and the
   Mixtral-8x7B- and Qwen3-30B-A3B-shaped mixture-of-experts ones (goal: < 1 s and < 200 MB,
   headers only).
2. `eval` tokens/s on stories260K and on a ~100M synthetic Llama, against plain PyTorch eager
   (tests/reference/hf_reference.py, Debian python3-torch) on the same token ids and threads.

usage: bench/bench_foundation.py [--build build/release] [--work /tmp/qs-bench] [--repeat 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))




def measured(cmd, repeat):
    """Median wall time and peak RSS over `repeat` runs, measured per child via wait4."""
    times, rss = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = p.stdout.read()
        p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        times.append(time.perf_counter() - t0)
        if status != 0:
            sys.exit(f"command failed: {' '.join(cmd)}")
        rss.append(usage.ru_maxrss / 1024)
    return statistics.median(times), max(rss), out.decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--work", default="/tmp/qs-bench")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    cli = os.path.join(a.build, "bin", "quantscope-cli")
    ref = os.path.join(ROOT, "tests", "reference", "hf_reference.py")
    os.makedirs(a.work, exist_ok=True)

    print(f"# {subprocess.run([cli, '--version'], capture_output=True, text=True).stdout.strip()}")
    print("## inspect (headers only); baseline: process start-up alone (--version loads LibTorch)")
    t0, rss0, _ = measured([cli, "--version"], a.repeat)
    print(f"{'checkpoint':<14}{'params':>16}{'files':>7}{'synth s':>9}{'inspect s':>11}{'peak RSS MB':>13}")
    print(f"{'(start-up)':<14}{'':>16}{'':>7}{'':>9}{t0:>11.3f}{rss0:>13.1f}")
    for preset in ("7b", "70b", "mixtral-8x7b", "qwen3-30b-a3b"):
        out = os.path.join(a.work, f"{preset}-sparse")
        if not os.path.exists(os.path.join(out, "config.json")):
            t_synth, _, _ = measured([cli, "synth", "--preset", preset, "--sparse", "--out", out], 1)
        else:
            t_synth = float("nan")
        t, rss, stdout = measured([cli, "inspect", out, "--json"], a.repeat)
        info = json.loads(stdout)
        print(f"{preset:<14}{info['total_parameters']:>16,}{len(info['checkpoint_files']):>7}"
              f"{t_synth:>9.2f}{t:>11.3f}{rss:>13.1f}")

    print(f"## eval tokens/s vs PyTorch eager (threads {a.threads}, median of {a.repeat})")
    syn100m = os.path.join(a.work, "llama-100m")
    if not os.path.exists(os.path.join(syn100m, "config.json")):
        measured([cli, "synth", "--preset", "100m", "--out", syn100m, "--seed", "1"], 1)
    cases = [("stories260K", os.path.join(SHARED, "models", "stories260K"), 256, 0),
             ("llama-100m", syn100m, 256, 8)]
    print(f"{'model':<14}{'windows':>8}{'quantscope tok/s':>18}{'pytorch tok/s':>15}{'ratio':>8}"
          f"{'ppl ours':>12}{'ppl torch':>12}")
    data = os.path.join(SHARED, "data", "tinystories-eval.txt")
    for name, model, seq, maxw in cases:
        ids_path = os.path.join(a.work, f"{name}.ids")
        with open(ids_path, "w") as f:
            f.write(subprocess.run([cli, "tokenize", model, "--data", data], check=True,
                                   capture_output=True, text=True).stdout)
        ours, theirs = [], []
        for _ in range(a.repeat):
            o = json.loads(subprocess.run(
                [cli, "eval", model, "--data", data, "--eval-seq-len", str(seq), "--max-windows",
                 str(maxw), "--threads", str(a.threads), "--json"],
                check=True, capture_output=True, text=True).stdout)
            r = json.loads(subprocess.run(
                ["/usr/bin/python3", ref, "perplexity", model, ids_path, str(seq), str(maxw),
                 str(a.threads)], check=True, capture_output=True, text=True).stdout)
            ours.append(o)
            theirs.append(r)
        q = statistics.median(x["tokens_per_second"] for x in ours)
        p = statistics.median(x["tokens_per_second"] for x in theirs)
        print(f"{name:<14}{ours[0]['windows']:>8}{q:>18.0f}{p:>15.0f}{q / p:>8.2f}"
              f"{ours[0]['perplexity']:>12.4f}{theirs[0]['perplexity']:>12.4f}")


if __name__ == "__main__":
    main()

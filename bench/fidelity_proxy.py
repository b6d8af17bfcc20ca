#!/usr/bin/python3
"""How well the analysis' per-layer KL proxy (LayerReport::klProxy, known right after Analyze)
predicts the measured KL divergence of the model with only that layer quantized (the sensitivity
study's "KL alone"): one `analyze --sensitivity --json` run per case gives both; prints the
Spearman rank correlation and the Pearson correlation of their logarithms, and how many of the
proxy's top five layers are among the measured top five.

  bench/fidelity_proxy.py [BUILD_DIR]    (default build/release; needs ../shared)

Cases: stories260K and the planted-outlier synthetic model of docs/results.md (synth --seed 1),
each with a weight-only uint4 scheme (group 32, down_proj excluded as in results.md) and W8A8
int8 static; evaluation windows of 256 on tinystories-eval (4 windows), calibration 15 x 256.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release")
CLI = os.path.join(BUILD, "bin/quantscope-cli")
SHARED = os.environ.get("QS_SHARED_DIR", os.path.join(ROOT, "../shared"))
DATA = os.path.join(SHARED, "data/tinystories-eval.txt")
CALIB = os.path.join(SHARED, "data/tinystories-calib.txt")


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else float("nan")


def case(model, name, scheme_args):
    out = subprocess.run([CLI, "analyze", model, "--calib-data", CALIB, "--num-calib-data", "15",
                          "--seq-len", "256", "--sensitivity", "--data", DATA, "--eval-seq-len",
                          "256", "--max-windows", "4", "--json", "--no-channels", "--quiet"]
                         + scheme_args, check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    layers = j["layers"]
    rows = [r for r in j["sensitivity"]["layers"] if r["layer"] in layers]
    proxy = [layers[r["layer"]]["kl_proxy"] for r in rows]
    kl = [r["alone_kl"] for r in rows]
    tiny = 1e-12
    spearman = pearson(ranks(proxy), ranks(kl))
    logs = pearson([math.log(max(p, tiny)) for p in proxy], [math.log(max(k, tiny)) for k in kl])
    top = lambda v: set(sorted(range(len(v)), key=lambda i: -v[i])[:5])
    print(f"{name:48s} {len(rows):6d} {spearman:9.3f} {logs:11.3f} {len(top(proxy) & top(kl)):6d}/5"
          f"   whole recipe KL {j['sensitivity']['full_kl']:.5f}")


def main():
    tmp = tempfile.mkdtemp(prefix="qs-proxy-")
    synth = os.path.join(tmp, "synth")
    subprocess.run([CLI, "synth", "--arch", "llama", "--seed", "1", "--out", synth], check=True,
                   capture_output=True)
    stories = os.path.join(SHARED, "models/stories260K")
    uint4 = ["--quant-scheme", "uint4_wo_32", "--exclude-layers", "*down_proj"]
    int8 = ["--quant-scheme", "int8"]
    print(f"{'case':48s} {'layers':>6s} {'Spearman':>9s} {'Pearson log':>11s} {'top-5':>8s}")
    for model, label in ((stories, "stories260K"), (synth, "synthetic (planted outliers)")):
        case(model, f"{label}, uint4_wo_32 RTN", uint4)
        case(model, f"{label}, int8 W8A8 static", int8)


if __name__ == "__main__":
    main()

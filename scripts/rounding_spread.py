#!/usr/bin/env python3
"""How much of an algorithm's difference from AMD Quark 0.13 is float32 rounding (issue 32).

Quantscope's forward is not bit-identical to transformers' (its RMSNorm, attention and matmul
kernels round differently), so the activations an algorithm calibrates on differ from Quark's
in the last bit. AWQ then makes discrete choices (a ratio from a grid of 20 per scaling group,
a clip from a grid of 10 per weight group) and GPTAQ/Qronos solve with nearly singular
matrices; both can turn last-bit differences into visible ones. This script measures how far
such differences move each program's row, on the same model for both: copy 0 is stories260K
as shipped; copy k > 0 has every float32 weight moved by exactly one unit in the last place, up
or down at random (seed k): the same model to float32 precision (stories260K's full-precision
perplexity moves by at most 1e-6). On every copy it runs, with the calibration and evaluation windows of
scripts/results.sh (`*down_proj` and lm_head excluded):

  ours       quantscope-cli eval with the recipe results.sh uses;
  Quark      Quark 0.13 as shipped;
  and a second Quark column: for awq, "Quark aligned", Quark's AWQ with its departures from
  ours undone (scripts/quark_awq_variants.py inputs+clip+stream: q/k/v searched on the
  block's inputs, o_proj's clip inputs divided by the applied scales, the next block fed by the
  scaled and clipped weights); for gptaq and qronos, "Quark float64 stats", Quark with its
  statistics summed in float64 as ours are (scripts/quark_rows.py --float64-stats).

and prints a markdown table per scheme with the mean difference and its standard error.

usage: rounding_spread.py SHARED_DIR [--algorithm awq|gptaq|qronos] [--cli PATH] [--copies K]
                          [--schemes S,...] [--work DIR]
Run with the venv of scripts/make-quark-venv.sh (torch, numpy, safetensors, amd-quark).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# The paired comparison's run of ours, its "equal" (within 1e-7 relative) and its mean ± s.e.
from quark_paired import diff, mean_se, ours_row, same  # noqa: E402
from quark_rows import SEQ  # noqa: E402  (scripts/results.sh's windows)
LABELS = {"awq": "AWQ", "gptaq": "GPTAQ", "qronos": "Qronos"}
# Per algorithm, Quark's two columns: (label, how to run it). "awq-variant V": quark_awq_variants.py
# with variant V; "rows [FLAGS]": quark_rows.py's row SCHEME_ALGORITHM with those flags.
QUARK_COLUMNS = {
    "awq": (("Quark", "awq-variant stock"), ("Quark aligned", "awq-variant inputs+clip+stream")),
    "gptaq": (("Quark", "rows"), ("Quark float64 stats", "rows --float64-stats")),
    "qronos": (("Quark", "rows"), ("Quark float64 stats", "rows --float64-stats")),
}


def write_copy(source, target, seed):
    """stories260K with every float32 weight one ULP up or down (seed 0: unchanged)."""
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(source):
        if name != "model.safetensors":
            shutil.copy(os.path.join(source, name), target)
    tensors = load_file(os.path.join(source, "model.safetensors"))
    if seed > 0:
        rng = np.random.default_rng(seed)
        for key, t in tensors.items():
            if t.dtype == np.float32:
                up = rng.random(t.shape) < 0.5
                toward = np.where(up, np.float32(np.inf), np.float32(-np.inf))
                tensors[key] = np.nextafter(t, toward).astype(np.float32)
    save_file(tensors, os.path.join(target, "model.safetensors"), metadata={"format": "pt"})


def fp32(cli, shared, model):
    out = subprocess.run([cli, "eval", model, "--data", f"{shared}/data/tinystories-eval.txt",
                          "--eval-seq-len", str(SEQ), "--json", "--quiet"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["perplexity"]


def quark(shared, model, how, algorithm, schemes):
    """Quark's perplexity per scheme, run as `how` says (QUARK_COLUMNS)."""
    kind, *flags = how.split()
    rows = {}
    if kind == "awq-variant":
        out = subprocess.run([sys.executable, os.path.join(HERE, "quark_awq_variants.py"), shared,
                              flags[0], ",".join(schemes), "--model", model], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[0] == flags[0]:
                rows[parts[1]] = float(parts[2])
    else:
        keys = [f"{s}_{algorithm}" for s in schemes]
        out = subprocess.run([sys.executable, os.path.join(HERE, "quark_rows.py"), shared,
                              "--model", model, "--rows", ",".join(keys)] + flags, check=True,
                             capture_output=True, text=True).stdout
        # quark_rows.py prints "| SCHEME, ALGORITHM LABEL | perplexity | seconds |"
        for line in out.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            scheme = cells[0].split(",")[0]
            if len(cells) >= 2 and scheme in schemes and cells[0] != "fp32":
                try:
                    rows[scheme] = float(cells[1])
                except ValueError:
                    sys.exit(f"quark_rows.py {' '.join(flags)}: {line}")
    missing = [s for s in schemes if s not in rows]
    if missing:
        sys.exit(f"Quark ({how}) printed no {algorithm} row for {', '.join(missing)}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shared")
    ap.add_argument("--algorithm", default="awq", choices=sorted(QUARK_COLUMNS))
    ap.add_argument("--cli", default=os.path.join(HERE, "..", "build", "release", "bin",
                                                  "quantscope-cli"))
    ap.add_argument("--copies", type=int, default=8, help="copies of the model, the first as shipped")
    ap.add_argument("--schemes", default="uint4_wo_32,int4_wo_32")
    ap.add_argument("--work", help="where the copies go (default: a temporary directory)")
    args = ap.parse_args()
    if args.copies < 1:
        sys.exit(f"--copies: expected at least 1, got {args.copies}")
    schemes = args.schemes.split(",")
    source = f"{args.shared}/models/stories260K"
    if not os.path.isfile(os.path.join(source, "model.safetensors")):
        sys.exit(f"{source}: no model.safetensors there (SHARED_DIR is the shared data folder, "
                 "e.g. ../shared)")
    work = args.work or tempfile.mkdtemp(prefix="rounding-spread-")
    table = {s: [] for s in schemes}
    columns = QUARK_COLUMNS[args.algorithm]
    calib = f"{args.shared}/data/tinystories-calib.txt"
    for k in range(args.copies):
        model = os.path.join(work, f"copy{k}")
        write_copy(source, model, k)
        full = fp32(args.cli, args.shared, model)
        theirs = {label: quark(args.shared, model, how, args.algorithm, schemes)
                  for label, how in columns}
        for s in schemes:
            row = {"copy": k, "fp32": full,
                   "ours": ours_row(args.cli, args.shared, f"{s}_{args.algorithm}", calib, model,
                                    model_dir=model)}
            row.update({label: theirs[label][s] for label, _ in columns})
            table[s].append(row)
            print(f"# copy {k} {s}: " + ", ".join(f"{key} {v:.6f}" for key, v in row.items()
                                                   if key != "copy"), file=sys.stderr, flush=True)
        if not args.work:
            shutil.rmtree(model)
    labels = [label for label, _ in columns]
    for s in schemes:
        rows = table[s]
        print(f"\n#### {s}, {LABELS[args.algorithm]}\n")
        print("| copy | fp32 (ours) | ours | " + " | ".join(labels) + " | "
              + " | ".join(f"ours - {label}" for label in labels) + " |")
        print("|---" * (3 + 2 * len(labels)) + "|")
        for r in rows:
            name = "0 (as shipped)" if r["copy"] == 0 else str(r["copy"])
            print(f"| {name} | {r['fp32']:.6f} | {r['ours']:.6f} | "
                  + " | ".join(f"{r[label]:.6f}" for label in labels) + " | "
                  + " | ".join(diff(r["ours"], r[label]) for label in labels) + " |")
        cells = []
        for label in labels:
            m, se = mean_se([r["ours"] - r[label] for r in rows])
            cells.append(f"{m:+.6f} ± {se:.6f}")
        means = [mean_se([r[key] for r in rows])[0] for key in ["fp32", "ours"] + labels]
        print(f"| mean of {len(rows)} | " + " | ".join(f"{m:.6f}" for m in means) + " | "
              + " | ".join(cells) + " |")
        spread = [max(r[key] for r in rows) - min(r[key] for r in rows)
                  for key in ["fp32", "ours"] + labels]
        print("| max - min | " + " | ".join(f"{v:.6f}" for v in spread) + " |"
              + " |" * len(labels))
        below = [sum(r["ours"] < r[label] or same(r["ours"], r[label]) for r in rows)
                 for label in labels]
        print("| ours ≤ |" + " |" * (2 + len(labels)) + " "
              + " | ".join(f"{b} of {len(rows)}" for b in below) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The recipe search against the selections a user would make instead, on one model.

    bench/recipe_search.py MODEL [--build build/release] [--budgets 4.25,4.5,5,6]
                                 [--candidates none,fp8,uint4_wo_128,mxfp4_weight_only]
                                 [--windows 8] [--calib-windows 16] [--seq-len 256]
                                 [--cost-windows N] [--unit-costs measured|scaled]
                                 [--refine N]

For every budget (effective bits per weight, Quark hf_format), measured on the same evaluation
windows against the same full-precision model (mean KL, perplexity):
  ours     `quantscope-cli recipe --auto` (per-unit costs measured once, at the first budget;
           the other budgets reuse them with --costs; with --unit-costs scaled each budget measures its own): "sum" is the chosen units' summed KL
           alone, "pred KL" the search's prediction from it (docs/recipe-search.md), "KL" the
           measurement, "pred err" the prediction's error against it;
  uniform  the best single candidate for every layer whose size fits the budget (measured KL);
  top-k    that uniform recipe with the k layer groups of highest KL alone (the search's own
           per-unit measurements for that scheme) left unquantized, k as large as fits.
Then the search's cost (the first search, costs included) against one plain evaluation of the
full-precision model on the same windows. Every figure printed is measured in this run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def run(cmd):
    started = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p.stdout, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--budgets", default="4.25,4.5,5,6")
    ap.add_argument("--candidates", default="none,fp8,uint4_wo_128,mxfp4_weight_only")
    shared = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
    ap.add_argument("--calib", default=os.path.join(shared, "tinystories-calib.txt"))
    ap.add_argument("--data", default=os.path.join(shared, "tinystories-eval.txt"))
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--calib-windows", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--unit-costs", default="measured", choices=["measured", "scaled"],
                    help="the search's --unit-costs (top-k ranks by the search's per-unit costs, "
                    "scaled ones too)")
    ap.add_argument("--cost-windows", type=int, default=0,
                    help="the search's per-unit costs on the first N evaluation windows (0: all)")
    ap.add_argument("--refine", type=int, default=0,
                    help="the search's --refine N (rounds of refinement in context)")
    args = ap.parse_args()
    cli = os.path.join(args.build, "bin", "quantscope-cli")
    budgets = [float(b) for b in args.budgets.split(",")]
    candidates = args.candidates.split(",")
    if "none" not in candidates:
        sys.exit("--candidates must include none (the top-k selection leaves layers unquantized)")
    work = tempfile.mkdtemp(prefix="recipe-search-")
    data = ["--data", args.data, "--eval-seq-len", str(args.seq_len), "--max-windows", str(args.windows)]
    calib = ["--calib-data", args.calib, "--num-calib-data", str(args.calib_windows),
             "--seq-len", str(args.seq_len)]

    # One plain evaluation (full precision, the same windows): the unit of the search's cost.
    _, plain = run([cli, "eval", args.model] + data + ["--json", "--quiet"])

    def recipe_file(name, body):
        body = dict(body)
        body.update({"format": "quantscope-recipe", "version": 1,
                     "calibration": {"data": args.calib, "num_samples": args.calib_windows,
                                     "seq_len": args.seq_len},
                     "evaluation": {"data": args.data, "seq_len": args.seq_len,
                                    "max_windows": args.windows}})
        path = os.path.join(work, name + ".json")
        with open(path, "w") as f:
            json.dump(body, f)
        return path

    def measure(path):
        out, _ = run([cli, "eval", args.model, "--recipe", path] + data + ["--json", "--quiet"])
        j = json.loads(out)
        size, _ = run([cli, "recipe", "--size", path, "--model", args.model, "--json"])
        return {"bits": json.loads(size)["effective_bits"], "kl": j["fidelity"]["kl_mean"]["value"],
                "ppl": j["perplexity"]}

    # Ours: the first budget measures the costs, the others reuse them.
    ours = {}
    search_seconds = None
    costs = None
    for b in budgets:
        cmd = [cli, "recipe", "--auto", "--model", args.model, "--candidates", args.candidates,
               "--budget-bpw", str(b), "--json", "--quiet", "--out", os.path.join(work, f"ours-{b}.json")]
        cmd += calib + data
        if args.cost_windows:
            cmd += ["--cost-windows", str(args.cost_windows)]
        cmd += ["--unit-costs", args.unit_costs]
        if args.refine:
            cmd += ["--refine", str(args.refine)]
        if costs and args.unit_costs == "measured":  # scaled costs belong to their budget
            cmd += ["--costs", costs]
        started = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.monotonic() - started
        if p.returncode != 0:
            ours[b] = {"error": p.stderr.strip().splitlines()[-1]}
            continue
        j = json.loads(p.stdout)
        if not costs:
            costs = os.path.join(work, "costs.json")
            with open(costs, "w") as f:
                f.write(p.stdout)
            search_seconds = seconds
            units = j["units"]
        ours[b] = {"bits": j["effective_bits"], "kl": j["measured"]["kl_mean"],
                   "ppl": j["measured"]["perplexity"], "predicted": j["predicted"]["kl_mean"],
                   "sum": j["predicted"]["kl_alone_sum"],
                   "refined": bool(j["refinement"] and j["refinement"]["changed_pick"])}
    if not costs:
        sys.exit("no budget was feasible: " + "; ".join(v["error"] for v in ours.values()))

    # Uniform recipes, measured once each.
    uniform = {}
    for c in candidates:
        if c == "none":
            continue
        uniform[c] = measure(recipe_file("uniform-" + c, {"global": c, "unfit_policy": "skip"}))

    rows = []
    for b in budgets:
        fits = [(u["kl"], c) for c, u in uniform.items() if u["bits"] <= b]
        best = min(fits)[1] if fits else None
        topk = None
        if best:
            # Units by the search's KL alone for this scheme, most harmful first; exclude while
            # the recipe fits (sizes from the search's per-unit weight bytes, checked by --size).
            lw = sum(u["weights"] for u in units)
            by_harm = sorted((u for u in units if best in u["kl_alone"]), key=lambda u: -u["kl_alone"][best])
            base_bytes = sum(u["weight_bytes"].get(best, u["weight_bytes"]["none"]) for u in units)
            excluded, total = [], base_bytes
            for u in by_harm:
                extra = u["weight_bytes"]["none"] - u["weight_bytes"][best]
                if 8.0 * (total + extra) / lw > b:
                    break
                excluded.append(u)
                total += extra
            if excluded:
                patterns = [l for u in excluded for l in u["layers"]]
                topk = measure(recipe_file(f"topk-{b}", {"global": best, "unfit_policy": "skip",
                                                       "exclude": patterns}))
                topk["k"] = len(excluded)
                if topk["bits"] > b:
                    sys.exit(f"top-k at {b}: {topk['bits']} bits, above the budget")
            else:
                topk = dict(uniform[best], k=0)
        rows.append((b, ours[b], best, uniform.get(best), topk))

    model = os.path.basename(os.path.normpath(args.model))
    print(f"model {model}; candidates {args.candidates}; {args.windows} evaluation windows of "
          f"{args.seq_len}; calibration {args.calib_windows} x {args.seq_len}; costs on "
          f"{args.cost_windows or args.windows} windows, unit costs {args.unit_costs}, refinement rounds "
          f"{args.refine} (* the refinement changed the pick)")
    print(f"{'budget':>6} | {'ours bits':>9} {'sum':>9} {'pred KL':>9} {'KL':>9} {'pred err':>8} {'ppl':>10} | "
          f"{'uniform':>18} {'bits':>7} {'KL':>9} | {'top-k':>5} {'bits':>7} {'KL':>9} | best")
    for b, o, best, u, t in rows:
        if "error" in o:
            print(f"{b:6.2f} | infeasible: {o['error']}")
            continue
        err = 100.0 * (o["predicted"] - o["kl"]) / o["kl"] if o["kl"] > 0 else 0.0
        line = (f"{b:6.2f} | {o['bits']:9.4f} {o['sum']:9.5f} {o['predicted']:9.5f} "
                f"{o['kl']:8.5f}{'*' if o['refined'] else ' '}"
                f"{err:+7.1f}% {o['ppl']:10.4f} | ")
        if u:
            line += f"{best:>18} {u['bits']:7.3f} {u['kl']:9.5f} | {t['k']:5d} {t['bits']:7.3f} {t['kl']:9.5f} | "
            winner = min([("ours", o["kl"]), ("uniform", u["kl"]), ("top-k", t["kl"])], key=lambda x: x[1])[0]
        else:
            line += f"{'(none fits)':>18} {'':7} {'':9} | {'':5} {'':7} {'':9} | "
            winner = "ours"
        print(line + winner)
    quantizing = len([c for c in candidates if c != "none"])
    print(f"\nsearch (costs measured, first budget): {search_seconds:.1f} s; one plain evaluation: "
          f"{plain:.1f} s; ratio {search_seconds / plain:.1f} = {search_seconds / plain / len(candidates):.2f} "
          f"x (number of candidates, {len(candidates)}) [goal: at most 3]; "
          f"{quantizing} quantizing candidates, {len(units)} units")


if __name__ == "__main__":
    main()

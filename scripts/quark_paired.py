#!/usr/bin/env python3
"""Paired comparison of Quantscope and AMD Quark 0.13 over K disjoint calibration sets (issue 32).

One calibration set (docs/results.md) cannot say which of two implementations is better when a
row moves at the 1e-3 level with how its statistics are rounded (Qronos). Here each set is 15
consecutive windows of 256 tokens from its own offset of data/calib-general.txt, written to a
text file that both programs read:
- Quark: scripts/quark_rows.py's functions (the `llama` LLMTemplate's config, ModelQuantizer,
  perplexity on tinystories-eval windows of 256), the windows by quark_rows.calibration_windows;
- Quantscope: `quantscope-cli eval` with the recipe scripts/results.sh gives the same row
  (`*down_proj` and `*lm_head` excluded, the algorithm with its defaults).
The file holds exactly 15 whole windows ([BOS] + ids, 3840..4095 tokens), so
quantscope-cli takes all of them, in order, as Quark does (with more it would draw 15 at random);
the ids `quantscope-cli tokenize --data` prints for the file are checked equal to Quark's.

Set k starts at the first line that begins at or after k/8 of calib-general.txt (k = 0..7; the
sets do not depend on K) and takes whole lines until the text holds 15 windows, leaving out lines
with runs of spaces or tabs (kept()) and any line the two tokenizers still split differently.

Why calib-general.txt and not tinystories text: tinystories-calib.txt holds exactly the one set of
docs/results.md, and tinystories-eval.txt is the evaluation text, which calibration must not read;
calib-general.txt (2 MB of general English) gives as many disjoint sets as wanted. The price: the
sets are out of stories260K's domain, so they test the algorithms under a calibration/evaluation
mismatch, not on the domain of the single-set table.

Rows: {GPTQ (control: must be equal), GPTAQ, Qronos, AWQ} x {uint4_wo_32, int4_wo_32}; with
--float64-stats also Quark's GPTAQ and Qronos with their statistics summed in float64
(quark_rows.accumulate_in_float64), the arithmetic Quantscope uses.

Every measurement is appended to --tsv as it is made (set, row, program, perplexity, seconds),
so an interrupted run keeps what it measured, and --report renders the tables from that file.

usage: quark_paired.py SHARED_DIR --cli QUANTSCOPE_CLI --tsv FILE [--sets 0-7] [--rows KEY,...]
                       [--float64-stats] [--programs ours,quark,quark_float64] [--workdir DIR]
       quark_paired.py SHARED_DIR --tsv FILE --report [--sets 0-4]
Run with the venv of scripts/make-quark-venv.sh (scripts/quark-paired.sh does both).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import quark_rows as qr  # noqa: E402

MAX_SETS = 8
SCHEMES = ["uint4_wo_32", "int4_wo_32"]
ALGOS = ["gptq", "gptaq", "qronos", "awq"]
ROW_KEYS = [f"{s}_{a}" for s in SCHEMES for a in ALGOS]
QUARK, QUARK64, OURS = "quark", "quark_float64", "ours"


def parse_sets(spec):
    out = []
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    if any(k < 0 or k >= MAX_SETS for k in out):
        sys.exit(f"--sets: sets are 0..{MAX_SETS - 1}")
    return out


def kept(line):
    """Lines with two spaces in a row or a tab are left out: quantscope-cli's SentencePiece
    normalization folds such runs into one space (SentencePiece's remove_extra_whitespaces) where
    the transformers tokenizer of Quark's side keeps them, so the two programs' ids would differ."""
    return "  " not in line and "\t" not in line


def set_text(tokenizer, text, k, dropped=()):
    """Set k: the lines from the first one starting at or after k/MAX_SETS of the text, those
    kept() keeps and not in `dropped` (line offsets), as few as give [BOS] + ids of at least 15
    windows; refuses the set if they reach 16 windows. Returns the offset, the text, the kept
    lines' offsets and the number of ids."""
    need = qr.SEQ * qr.NUM_CALIB
    start = (len(text) * k) // MAX_SETS
    if start > 0:
        start = text.index("\n", start - 1) + 1
    lines = []  # (offset, line with its newline)
    pos = start
    while len(lines) < need:  # a line holds at least one token
        nl = text.find("\n", pos)
        if nl < 0:
            break
        if kept(text[pos:nl]) and pos not in dropped:
            lines.append((pos, text[pos:nl + 1]))
        pos = nl + 1

    def count(n):
        chunk = "".join(line for _, line in lines[:n])
        return 1 + len(tokenizer(chunk, add_special_tokens=False)["input_ids"])

    lo, hi = 1, len(lines)  # smallest n with count(n) >= need
    if count(hi) < need:
        sys.exit(f"set {k}: the text from offset {start} holds fewer than {need} tokens")
    while lo < hi:
        mid = (lo + hi) // 2
        if count(mid) >= need:
            hi = mid
        else:
            lo = mid + 1
    n_tokens = count(lo)
    if n_tokens >= need + qr.SEQ:
        sys.exit(f"set {k}: {n_tokens} tokens, more than {qr.NUM_CALIB} whole windows")
    return start, "".join(line for _, line in lines[:lo]), [o for o, _ in lines[:lo]], n_tokens


def cli_ids(cli, model_dir, *args):
    out = subprocess.run([cli, "tokenize", model_dir, *args], check=True, capture_output=True,
                         text=True).stdout
    return [int(t) for t in out.split()]


def differing_lines(cli, model_dir, tokenizer, text, offsets):
    """The offsets of the lines whose ids (each line alone) differ between the two tokenizers."""
    out = []
    for o in offsets:
        line = text[o:text.index("\n", o)]
        if cli_ids(cli, model_dir, "--text", line) != tokenizer(
                line, add_special_tokens=False)["input_ids"]:
            out.append(o)
    return out


def calibration_set(cli, model_dir, tokenizer, text, k, path):
    """Writes set k to `path` and checks that quantscope-cli tokenize --data gives Quark's ids;
    lines on which the two tokenizers differ are left out (and reported) until they agree."""
    dropped = []
    while True:
        start, chunk, offsets, n_tokens = set_text(tokenizer, text, k, dropped)
        with open(path, "w", encoding="utf-8") as f:
            f.write(chunk)
        if cli_ids(cli, model_dir, "--data", path) == qr.token_ids(tokenizer, path):
            return start, chunk, offsets, n_tokens, dropped
        bad = differing_lines(cli, model_dir, tokenizer, text, offsets)
        if not bad:
            sys.exit(f"{path}: quantscope-cli tokenize gives other ids than Quark's tokenizer")
        dropped += bad


def our_recipe(key):
    scheme, algo = key.rsplit("_", 1)
    return {"format": "quantscope-recipe", "version": 1, "global": scheme,
            "exclude": ["*down_proj", "*lm_head"], "algorithms": [{"name": algo}]}


def ours_row(cli, shared, key, calib_path, workdir, model_dir=None):
    """quantscope-cli's perplexity of row `key` (stories260K unless `model_dir`)."""
    recipe = os.path.join(workdir, "recipe.json")
    with open(recipe, "w", encoding="utf-8") as f:
        json.dump(our_recipe(key), f)
    cmd = [cli, "eval", model_dir or f"{shared}/models/stories260K", "--recipe", recipe,
           "--data", f"{shared}/data/tinystories-eval.txt", "--eval-seq-len", "256",
           "--calib-data", calib_path, "--calib-seq-len", "256", "--num-calib-data",
           str(qr.NUM_CALIB), "--json", "--quiet"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"quantscope-cli eval failed: {run.stderr.strip()[-300:]}")
    result = json.loads(run.stdout)
    if result["provenance"]["calibration"]["windows"] != qr.NUM_CALIB:
        raise RuntimeError("quantscope-cli did not calibrate on 15 windows")
    return result["perplexity"]


def quark_row(shared, key, calib, eval_windows, float64_stats):
    import torch

    _, _, scheme, algos, excl, _ = qr.ROW_BY_KEY[key]
    torch.manual_seed(0)
    restore = qr.accumulate_in_float64() if float64_stats else None
    try:
        return qr.run_row(f"{shared}/models/stories260K", scheme, algos, excl, calib, eval_windows)
    finally:
        if restore:
            restore()


def measure(args):
    from transformers import AutoTokenizer

    model_dir = f"{args.shared}/models/stories260K"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    eval_windows = qr.windows(qr.token_ids(tokenizer, f"{args.shared}/data/tinystories-eval.txt"),
                              qr.SEQ)
    text = open(f"{args.shared}/data/calib-general.txt", encoding="utf-8").read()
    rows = [r for r in ROW_KEYS if not args.rows or r in args.rows.split(",")]
    workdir = args.workdir or tempfile.mkdtemp(prefix="quark-paired-")
    os.makedirs(workdir, exist_ok=True)
    tsv = open(args.tsv, "a", encoding="utf-8")

    def record(k, key, program, ppl, secs):
        tsv.write(f"{k}\t{key}\t{program}\t{ppl!r}\t{secs:.1f}\n")
        tsv.flush()
        print(f"set {k} {key} {program}: {ppl:.6f} ({secs:.1f} s)", file=sys.stderr, flush=True)

    for k in parse_sets(args.sets):
        path = os.path.join(workdir, f"calib-set{k}.txt")
        start, chunk, offsets, n_tokens, dropped = calibration_set(args.cli, model_dir, tokenizer,
                                                                   text, k, path)
        calib = qr.calibration_windows(tokenizer, path)
        span = text.index("\n", offsets[-1]) + 1 - start
        tsv.write(f"{k}\t#set\toffset={start} span={span} lines={len(offsets)} "
                  f"chars={len(chunk)} tokens={n_tokens} dropped={len(dropped)}\t\t\n")
        tsv.flush()
        print(f"set {k}: offset {start}, {len(offsets)} lines, {n_tokens} tokens, {len(dropped)} "
              "lines dropped; same ids in both", file=sys.stderr, flush=True)
        for key in rows:
            programs = [OURS, QUARK] + ([QUARK64] if args.float64_stats and float64_row(key) else [])
            if args.programs:
                programs = [p for p in programs if p in args.programs.split(",")]
            for program in programs:
                t0 = time.time()
                if program == OURS:
                    ppl = ours_row(args.cli, args.shared, key, path, workdir)
                else:
                    ppl = quark_row(args.shared, key, calib, eval_windows, program == QUARK64)
                record(k, key, program, ppl, time.time() - t0)


def read_tsv(path):
    data, sets = {}, {}
    for line in open(path, encoding="utf-8"):
        k, key, program, ppl, _ = line.rstrip("\n").split("\t")
        if key == "#set":
            sets[int(k)] = program
        else:
            data[(int(k), key, program)] = float(ppl)  # the last measurement wins
    return data, sets


def float64_row(key):
    """The rows --float64-stats runs once more: GPTAQ's and Qronos' (quark_rows.py)."""
    return "gptaq" in key or "qronos" in key


# Two perplexities are "equal" within 1e-7 relative: what the two programs' float32 evaluations of
# the same weights differ by (a few 1e-8 on docs/results.md's rows), well below any algorithm's.
EQUAL = 1e-7


def same(o, q):
    return abs(o - q) <= EQUAL * q


def diff(o, q):
    """ours - Quark, or "0 (equal)" within EQUAL."""
    return "0 (equal)" if same(o, q) else f"{o - q:+.6f}"


def mean_se(xs):
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, float("nan")
    var = sum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    return m, math.sqrt(var / len(xs))


def report(args):
    data, sets = read_tsv(args.tsv)
    wanted = set(parse_sets(args.sets))
    sets = {k: v for k, v in sets.items() if k in wanted}
    for key in ROW_KEYS:
        label = qr.ROW_BY_KEY[key][1]
        ks = sorted(k for k in sets if (k, key, OURS) in data and (k, key, QUARK) in data)
        if not ks:
            continue
        has64 = all((k, key, QUARK64) in data for k in ks) and float64_row(key)
        print(f"### {label}")
        print()
        head = "| set | Quark 0.13 | ours | ours - Quark |"
        rule = "|---|---|---|---|"
        if has64:
            head += " Quark, float64 stats | ours - Quark (float64 stats) |"
            rule += "---|---|"
        print(head)
        print(rule)
        cols = {QUARK: [], OURS: [], QUARK64: []}
        for k in ks:
            q, o = data[(k, key, QUARK)], data[(k, key, OURS)]
            cols[QUARK].append(q)
            cols[OURS].append(o)
            line = f"| {k} | {q:.6f} | {o:.6f} | {diff(o, q)} |"
            if has64:
                q64 = data[(k, key, QUARK64)]
                cols[QUARK64].append(q64)
                line += f" {q64:.6f} | {diff(o, q64)} |"
            print(line)
        n = len(ks)

        def summary(ref):
            # equal figures (same()) count as "at or below"
            diffs = [o - q for o, q in zip(cols[OURS], cols[ref])]
            le = sum(o <= q or same(o, q) for o, q in zip(cols[OURS], cols[ref]))
            m, se = mean_se(diffs)
            return m, se, le

        m, se, le = summary(QUARK)
        line = (f"| mean of {n} | {sum(cols[QUARK]) / n:.6f} | {sum(cols[OURS]) / n:.6f} | "
                f"{m:+.6f} ± {se:.6f} |")
        if has64:
            m64, se64, le64 = summary(QUARK64)
            line += f" {sum(cols[QUARK64]) / n:.6f} | {m64:+.6f} ± {se64:.6f} |"
        print(line)
        line = f"| ours ≤ Quark | | | {le} of {n} |"
        if has64:
            line += f" | {le64} of {n} |"
        print(line)
        print()
    print("Sets (offsets in characters of calib-general.txt):",
          "; ".join(f"{k}: {sets[k]}" for k in sorted(sets)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shared")
    ap.add_argument("--cli", help="quantscope-cli")
    ap.add_argument("--tsv", required=True, help="measurements, appended to (and read by --report)")
    ap.add_argument("--sets", default=f"0-{MAX_SETS - 1}",
                    help="sets to measure (or with --report, to print), e.g. 0-3,5")
    ap.add_argument("--rows", default="", help="subset of " + ",".join(ROW_KEYS))
    ap.add_argument("--float64-stats", action="store_true",
                    help="also Quark's GPTAQ and Qronos with float64 statistics")
    ap.add_argument("--programs", default="",
                    help=f"measure only these of {OURS},{QUARK},{QUARK64} (default: all)")
    ap.add_argument("--workdir", help="where the sets' text files go (default: a temp folder)")
    ap.add_argument("--report", action="store_true", help="print the tables of --tsv")
    args = ap.parse_args()
    if args.report:
        report(args)
    else:
        if not args.cli:
            sys.exit("--cli is needed to measure")
        measure(args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs the rows of docs/results.md through AMD Quark 0.13 itself (issue 11, item 9).

Same model, same text, same windows as `quantscope-cli eval`:
- calibration: [BOS] + sentencepiece ids of the whole of tinystories-calib.txt, cut into 15
  consecutive windows of 256 tokens (remainder dropped), batch size 1 (as the reference exports
  in shared/reference/quark-exports were calibrated);
- evaluation (docs/evaluation.md): [BOS] + ids of the whole eval text, non-overlapping windows of
  256, NLL of tokens 1..255 of each window, perplexity = exp(mean NLL), summed in double.

Each row: the `llama` LLMTemplate's config for the scheme and algorithm (Quark's
quantize_quark.py path), ModelQuantizer.quantize_model on our windows, then perplexity of the
fake-quantized model. Prints one markdown row per recipe: label, perplexity, seconds (quantize +
eval), or the exception's text when Quark refuses the row.

usage: quark_rows.py SHARED_DIR [--rows uint4_wo_32_rtn,...] [--ours TSV] [--float64-stats
                     [--qronos-divisor 128] | --exact-qronos-products]
       (fp32 always runs)
Run with the venv of scripts/make-quark-venv.sh.
"""
import argparse
import math
import sys
import time
import traceback

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

SEQ = 256
NUM_CALIB = 15


def token_ids(tokenizer, path):
    text = open(path, encoding="utf-8").read()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [tokenizer.bos_token_id] + list(ids)


def calibration_windows(tokenizer, path):
    """The NUM_CALIB first windows of SEQ tokens of [BOS] + ids of the text at path: exactly the
    windows `quantscope-cli --calib-data path --calib-seq-len 256 --num-calib-data 15` takes when
    the text holds 15 whole windows (with more it draws 15 at random: see quark_paired.py)."""
    calib = windows(token_ids(tokenizer, path), SEQ, NUM_CALIB)
    if len(calib) != NUM_CALIB:
        sys.exit(f"{path}: {len(calib)} windows of {SEQ}, expected {NUM_CALIB}")
    return calib


def windows(ids, seq, limit=None):
    n = len(ids) // seq
    if limit is not None:
        n = min(n, limit)
    return [torch.tensor(ids[i * seq:(i + 1) * seq], dtype=torch.long).unsqueeze(0) for i in range(n)]


@torch.no_grad()
def perplexity(model, eval_windows):
    total = 0.0
    count = 0
    for w in eval_windows:
        logits = model(w).logits.float()
        logp = torch.log_softmax(logits[0, :-1].double(), dim=-1)
        nll = -logp.gather(1, w[0, 1:].unsqueeze(1)).squeeze(1)
        total += float(nll.sum())
        count += nll.numel()
    return math.exp(total / count)


# key, label, scheme, algorithms, exclude (besides lm_head, which quark_config always adds), and the
# label of the same recipe in scripts/results.sh (for the side-by-side columns of --ours)
ROWS = [
    ("uint4_wo_32_rtn", "uint4_wo_32, round to nearest", "uint4_wo_32", [], ["*down_proj"],
     "uint4_wo_32, round to nearest"),
    ("uint4_wo_32_gptq", "uint4_wo_32, GPTQ", "uint4_wo_32", ["gptq"], ["*down_proj"],
     "uint4_wo_32, GPTQ (Quark defaults: desc_act, static_groups)"),
    ("uint4_wo_32_gptaq", "uint4_wo_32, GPTAQ", "uint4_wo_32", ["gptaq"], ["*down_proj"],
     "uint4_wo_32, GPTAQ (Quark defaults: alpha 0.25)"),
    ("uint4_wo_32_qronos", "uint4_wo_32, Qronos", "uint4_wo_32", ["qronos"], ["*down_proj"],
     "uint4_wo_32, Qronos (Quark defaults: alpha 1e-3, beta 1e4)"),
    ("uint4_wo_32_awq", "uint4_wo_32, AWQ", "uint4_wo_32", ["awq"], ["*down_proj"],
     "uint4_wo_32, AWQ (Quark's grid and clip search)"),
    ("int4_wo_32_rtn", "int4_wo_32, round to nearest", "int4_wo_32", [], ["*down_proj"],
     "int4_wo_32, round to nearest"),
    ("int4_wo_32_gptq", "int4_wo_32, GPTQ", "int4_wo_32", ["gptq"], ["*down_proj"],
     "int4_wo_32, GPTQ (Quark defaults: desc_act, static_groups)"),
    ("int4_wo_32_gptaq", "int4_wo_32, GPTAQ", "int4_wo_32", ["gptaq"], ["*down_proj"],
     "int4_wo_32, GPTAQ (Quark defaults: alpha 0.25)"),
    ("int4_wo_32_qronos", "int4_wo_32, Qronos", "int4_wo_32", ["qronos"], ["*down_proj"],
     "int4_wo_32, Qronos (Quark defaults: alpha 1e-3, beta 1e4)"),
    ("int4_wo_32_awq", "int4_wo_32, AWQ", "int4_wo_32", ["awq"], ["*down_proj"],
     "int4_wo_32, AWQ (Quark's grid and clip search)"),
    ("int8_rtn", "int8 (W8A8 static), round to nearest", "int8", [], [],
     "int8 (W8A8 static), round to nearest"),
    ("int8_sq", "int8 (W8A8 static), SmoothQuant (alpha 1)", "int8", ["smoothquant"], [],
     "int8 (W8A8 static), SmoothQuant (Quark's defaults: alpha 1)"),
    ("int8_asq", "int8 (W8A8 static), AutoSmoothQuant", "int8", ["autosmoothquant"], [],
     "int8 (W8A8 static), AutoSmoothQuant (MSE)"),
    ("int8_rot", "int8 (W8A8 static), rotation", "int8", ["rotation"], [],
     "int8 (W8A8 static), rotation R1"),
    ("mxfp4_rtn", "mxfp4 (W+A), round to nearest", "mxfp4", [], [], "mxfp4 (W+A), round to nearest"),
    ("mxfp4_rot", "mxfp4 (W+A), rotation", "mxfp4", ["rotation"], [], "mxfp4 (W+A), rotation R1"),
]

ROW_BY_KEY = {r[0]: r for r in ROWS}


def exact_qronos_products():
    """Quark's Qronos with each window's products X~X~^T and X X~^T computed in float64 and
    rounded once to float32; its float32 running means (the scaling by (n-1)/n, the division by
    n, the sums) stay Quark's own. What it isolates: with this, Quark's rows equal those of
    --float64-stats, so the rounding that moves Quark's Qronos rows is that of the float32
    matrix products (the sgemm kernel MKL picks: scripts/quark-cbwr-spread.sh), not the running
    means'."""
    from quark.torch.algorithm.qronos.qronos import Qronos

    def rows_t(x):  # [.., T, in] -> [in, rows] in float32, as Quark transposes a linear's input
        return x.float().reshape(-1, x.shape[-1]).t()

    def product(a, b):
        return a.double().matmul(b.double().t()).float()

    def quantized(self, quant_inp, out, name):
        x = rows_t(quant_inp)
        self.nsamples += 1
        self.H *= (self.nsamples - 1) / self.nsamples
        self.H += product(x, x) / self.nsamples
        self.q_input = x

    def reference(self, inp, out, name):
        self.G *= (self.nsamples - 1) / self.nsamples
        self.G += product(rows_t(inp), self.q_input) / self.nsamples
        self.q_input = None

    Qronos.add_batch_quantized, Qronos.add_batch_nonquantized = quantized, reference


def accumulate_in_float64(qronos_divisor=1):
    """Makes Quark's GPTAQ and Qronos sum their statistics in float64, as Quantscope does.

    Quark 0.13 keeps H = X~X~^T and the cross term (GPTAQ: (X - X~)X~^T, Qronos: X X~^T) as
    float32 running means updated window by window; Quantscope sums every window's products in
    float64 and rounds once. Everything else (the windows, the scaling, the solve in float32) is
    Quark's own code. With this the two programs' rows can be compared without the rounding of
    the accumulation (docs/results.md). Qronos' H and G are divided by `qronos_divisor` before
    the solve (128: Quantscope's scale, 2/rows, at windows of 256 instead of Quark's 1/windows).
    Returns a function that puts Quark's own methods back."""
    import math as m
    from quark.torch.algorithm.gptaq.gptaq import Gptaq
    from quark.torch.algorithm.qronos.qronos import Qronos

    def rows_t(x):  # [.., T, in] -> [in, rows] in float64, as Quark transposes a linear's input
        return x.double().reshape(-1, x.shape[-1]).t()

    def qronos_quantized(self, quant_inp, out, name):
        x = rows_t(quant_inp)
        self.H, self.G = self.H.double(), self.G.double()
        self.nsamples += 1
        self.H *= (self.nsamples - 1) / self.nsamples
        self.H += x.matmul(x.t()) / self.nsamples
        self.q_input = x

    def qronos_reference(self, inp, out, name):
        self.G *= (self.nsamples - 1) / self.nsamples
        self.G += rows_t(inp).matmul(self.q_input.t()) / self.nsamples
        self.q_input = None

    def gptaq_quantized(self, quant_inp, out, name):
        self.H, self.delta_X_Xt = self.H.double(), self.delta_X_Xt.double()
        self.nsamples += 1
        self.H *= (self.nsamples - 1) / self.nsamples
        self.delta_X_Xt *= (self.nsamples - 1) / self.nsamples
        x = m.sqrt(2 / self.nsamples) * rows_t(quant_inp)
        self.H += x.matmul(x.t())
        self.q_input, self.batch_size = x, 1

    def gptaq_reference(self, inp, out, name):
        x = m.sqrt(2 / self.nsamples) * rows_t(inp)
        self.delta_X_Xt += (x - self.q_input).matmul(self.q_input.t())

    def solved_in_float32(quantize, *names, divisor=1):
        def wrapped(self, *a, **k):
            for n in names:
                setattr(self, n, (getattr(self, n) / divisor).float())
            return quantize(self, *a, **k)
        return wrapped

    saved = [(cls, name, getattr(cls, name)) for cls in (Qronos, Gptaq)
             for name in ("add_batch_quantized", "add_batch_nonquantized", "quantize")]

    def restore():
        for cls, name, method in saved:
            setattr(cls, name, method)

    Qronos.add_batch_quantized, Qronos.add_batch_nonquantized = qronos_quantized, qronos_reference
    Qronos.quantize = solved_in_float32(Qronos.quantize, "H", "G", divisor=qronos_divisor)
    Gptaq.add_batch_quantized, Gptaq.add_batch_nonquantized = gptaq_quantized, gptaq_reference
    Gptaq.quantize = solved_in_float32(Gptaq.quantize, "H", "delta_X_Xt")
    return restore


def quark_config(scheme, algorithms, exclude):
    from quark.torch import LLMTemplate

    template = LLMTemplate.get("llama")
    return template.get_config(scheme=scheme, algorithm=algorithms or None,
                               exclude_layers=["lm_head"] + exclude)


def run_row(model_dir, scheme, algorithms, exclude, calib, eval_windows):
    from quark.torch import ModelQuantizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    config = quark_config(scheme, algorithms, exclude)
    quantizer = ModelQuantizer(config)
    model = quantizer.quantize_model(model, calib)
    return perplexity(model, eval_windows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shared")
    ap.add_argument("--rows", default="")
    ap.add_argument("--float64-stats", action="store_true",
                    help="GPTAQ's and Qronos' statistics summed in float64 (accumulate_in_float64)")
    ap.add_argument("--exact-qronos-products", action="store_true",
                    help="Qronos' per-window products in float64, rounded once "
                    "(exact_qronos_products); its running means stay Quark's")
    ap.add_argument("--qronos-divisor", type=float, default=1,
                    help="with --float64-stats, Qronos' H and G divided by this before the solve "
                    "(128: Quantscope's scale)")
    ap.add_argument("--model", help="a copy of stories260K elsewhere (scripts/rounding_spread.py's "
                    "copies); default SHARED/models/stories260K")
    ap.add_argument("--ours", help="TSV of scripts/results.sh: label, perplexity, seconds; adds "
                    "Quantscope's columns (first row of each label: the stories260K tables)")
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.float64_stats and args.exact_qronos_products:
        sys.exit("--float64-stats and --exact-qronos-products: give one")
    if args.float64_stats:
        accumulate_in_float64(args.qronos_divisor)
    if args.exact_qronos_products:
        exact_qronos_products()
    model_dir = args.model or f"{args.shared}/models/stories260K"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    calib = calibration_windows(tokenizer, f"{args.shared}/data/tinystories-calib.txt")
    eval_windows = windows(token_ids(tokenizer, f"{args.shared}/data/tinystories-eval.txt"), SEQ)
    wanted = set(filter(None, args.rows.split(",")))
    ours = {}
    if args.ours:
        for line in open(args.ours, encoding="utf-8"):
            label, ppl, secs = (line.rstrip("\n").split("\t") + ["", ""])[:3]
            ours.setdefault(label, (ppl, secs))

    def ours_cols(label, quark_ppl=None):
        # Quantscope's perplexity and seconds, then (ours - Quark) / Quark: negative or zero is
        # at least as good as Quark (lower perplexity is better).
        if not args.ours:
            return ""
        ppl, secs = ours.get(label, ("", ""))
        if quark_ppl is None or not ppl:
            return f" {ppl} | {secs} | |"
        diff = (float(ppl) - quark_ppl) / quark_ppl
        # Equal when both print the same to the six decimals of the tables.
        same = f"{float(ppl):.6f}" == f"{quark_ppl:.6f}"
        verdict = "equal" if same else ("ours better" if diff < 0 else "Quark better")
        return f" {ppl} | {secs} | {diff:+.1e} ({verdict}) |"

    t0 = time.time()
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    fp = perplexity(model, eval_windows)
    print(f"| fp32 | {fp:.6f} | {time.time() - t0:.1f} |{ours_cols('fp32', fp)}", flush=True)
    for key, label, scheme, algos, excl, our_label in ROWS:
        if wanted and key not in wanted:
            continue
        t0 = time.time()
        try:
            ppl = run_row(model_dir, scheme, algos, excl, calib, eval_windows)
            print(f"| {label} | {ppl:.6f} | {time.time() - t0:.1f} |{ours_cols(our_label, ppl)}",
                  flush=True)
        except Exception as e:  # a row Quark cannot run is recorded, not fatal
            msg = f"{type(e).__name__}: {e}".replace("|", "/").replace("\n", " ")[:300]
            traceback.print_exc(file=sys.stderr)
            print(f"| {label} | not run by Quark: {msg} | {time.time() - t0:.1f} |{ours_cols(our_label)}",
                  flush=True)


if __name__ == "__main__":
    main()

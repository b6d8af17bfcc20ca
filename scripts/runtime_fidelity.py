#!/usr/bin/python3
"""The Python side of scripts/check-fidelity.sh: logits of the evaluation windows from the
reference forward and from transformers + amd-quark, and the fidelity table against the
full-precision logits. check-fidelity.sh explains what is compared and why the bounds hold.

  runtime_fidelity.py reference MODEL_DIR IDS.json SEQ_LEN WINDOWS OUT [ggml|mlas ROUNDED.json]
  runtime_fidelity.py transformers EXPORT_DIR IDS.json SEQ_LEN WINDOWS OUT
  runtime_fidelity.py table ROWS.json

Logits files (what every runtime writes, scripts/runtime_fidelity.mjs included): raw float32,
little-endian, [WINDOWS, SEQ_LEN - 1, vocab]: row t of window w is the logits after ids
w*L .. w*L+t, the prediction of token t + 1 (the `eval` protocol scores tokens 1..L-1 of each
window; position L-1 predicts nothing scored). IDS.json is `quantscope-cli tokenize --data
--json` (BOS once, as `eval`). ROUNDED.json: weight names whose matmul input the reference
rounds as the runtime's integer kernels do: `ggml`, llama.cpp's Q8_0 (hf_reference.ggml_q8_0_round);
`mlas`, onnxruntime's MatMulNBits (mlas_int8_round below).

`reference` runs tests/reference/hf_reference.py (plain PyTorch, fp32, imported, not edited) and
runs under Debian's python3; `transformers` runs in the venv of scripts/make-quark-venv.sh.
"""
import array
import json
import math
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "reference"))


def windows_of(ids_path, seq_len, count):
    """The first `count` non-overlapping windows of `seq_len` ids, as `eval --max-windows`."""
    ids = json.load(open(ids_path))["ids"]
    available = len(ids) // seq_len
    if available < count:
        sys.exit(f"{ids_path}: {len(ids)} ids hold {available} windows of {seq_len}, "
                 f"fewer than {count}")
    return torch.tensor(ids[:count * seq_len]).view(count, seq_len)


def write_logits(path, rows):
    """rows: [WINDOWS, SEQ_LEN - 1, vocab] float32, written raw (the .mjs side writes the same)."""
    # array, not numpy: Debian's python3-torch runs here without numpy.
    with open(path, "wb") as f:
        array.array("f", rows.to(torch.float32).flatten().tolist()).tofile(f)


def read_logits(path, windows, positions):
    data = bytearray(open(path, "rb").read())
    values = torch.frombuffer(data, dtype=torch.float32)
    if values.numel() % (windows * positions):
        sys.exit(f"{path}: {values.numel()} floats are not {windows} x {positions} rows")
    return values.view(windows * positions, -1).double()


def mlas_int8_round(x):
    """x as onnxruntime's MatMulNBits (its "all" level's kernel for blocked int4 QDQ MatMuls, at
    accuracy level 4) feeds it to the integer dot product: per block of 32 inputs along K, codes
    round-half-even(x * (127/amax)) times the scale amax/127 kept in fp32 (MLAS's
    QuantizeARow_CompInt8_avx2). ggml's Q8_0 rounding (hf_reference) but for the f16 scale."""
    b = x.reshape(*x.shape[:-1], -1, 32)
    amax = b.abs().amax(-1, keepdim=True)
    inverse = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
    return (torch.round(b * inverse) * (amax / 127)).reshape(x.shape)


def reference(model_dir, ids_path, seq_len, count, out, rounding=None, rounded_path=None):
    """hf_reference's forward of MODEL_DIR on the windows; with `rounding` (ggml or mlas) the
    inputs of the weights listed in ROUNDED.json rounded as that runtime's kernels round them."""
    import hf_reference as h
    torch.set_grad_enabled(False)
    torch.set_num_threads(1)  # the machine is shared; results must not depend on threads
    cfg, w = h.load(model_dir)
    rounded = set(json.load(open(rounded_path))) if rounded_path else ()
    if rounding == "mlas":
        # hf_reference rounds the listed inputs through its module function ggml_q8_0_round;
        # putting MLAS's rule in its place reuses the forward unchanged (that file is not ours).
        h.ggml_q8_0_round = mlas_int8_round
    ids = windows_of(ids_path, seq_len, count)
    rows = torch.stack([h.logits(cfg, w, ids[i:i + 1], rounded)[0, :-1] for i in range(count)])
    write_logits(out, rows)


def transformers_logits(export_dir, ids_path, seq_len, count, out):
    from transformers import AutoModelForCausalLM
    torch.set_grad_enabled(False)
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(export_dir, torch_dtype=torch.float32).eval()
    # A folder whose quantization_config transformers ignored would load as plain float weights
    # (or refuse them): make sure amd-quark's modules hold the quantized layers.
    if not any("Quant" in type(m).__name__ for _, m in model.named_modules()):
        sys.exit(f"{export_dir}: transformers loaded no quantized module "
                 "(quant_method not honoured?)")
    ids = windows_of(ids_path, seq_len, count)
    rows = torch.stack([model(ids[i:i + 1]).logits[0, :-1].float() for i in range(count)])
    write_logits(out, rows)


def statistics(fp_logp, logits, targets):
    """Per scored position, as llama-perplexity --kl-divergence: KL(fp || q) = sum_i p_i (log p_i -
    log q_i) in double, and whether the argmax tokens agree; with what the checks need (the next
    token's NLL, the top-two margin, ||p - q||_1)."""
    logq = torch.log_softmax(logits, -1)
    top2 = logits.topk(2, -1)
    return {"logits": logits, "kl": (fp_logp.exp() * (fp_logp - logq)).sum(-1),
            "same": fp_logp.argmax(-1) == top2.indices[:, 0], "argmax": top2.indices[:, 0],
            "margin": top2.values[:, 0] - top2.values[:, 1],
            "nll": -logq.gather(-1, targets.unsqueeze(-1)).squeeze(-1),
            "l1": (fp_logp.exp() - logq.exp()).abs().sum(-1)}


def mean_se(x):
    """Mean and its standard error sqrt((mean(x^2) - mean^2) / (n - 1)), as llama-perplexity."""
    n = x.numel()
    m = x.mean().item()
    return m, math.sqrt(max((x * x).mean().item() - m * m, 0.0) / (n - 1))


def logit_distance(a, b):
    """The largest difference between two logit rows up to a constant (softmax ignores one): half
    the range of a - b, the most over the positions."""
    d = a - b
    return ((d.max(-1).values - d.min(-1).values) / 2).max().item()


def check(row, s, stats):
    """Returns (ok, note). A row with `same_as` S holds S's function up to arithmetic whose effect
    on any logit is at most delta (check-fidelity.sh derives each delta): its logits within delta
    of S's, so (log-softmax being shift-invariant) |KL - KL_S| <= delta (mean ||p - q_S||_1 +
    e^(2 delta) - 1) per position and on the mean, and its argmax differs from S's only where S's
    top-two margin is at most 2 delta. `kl: paired` replaces the KL bound by the statistical one
    for rows compared with an emulation that is not bit-exact: the mean of the paired
    differences KL_i - KL_S,i within three of its standard errors."""
    kl = s["kl"].mean().item()
    if not math.isfinite(kl):
        return False, f"KL is not finite ({kl})"
    if "same_as" not in row:
        return True, ""
    other = stats[row["same_as"]]
    if isinstance(row["delta"], list):  # the largest effect of the emulated rounding itself
        delta = logit_distance(stats[row["delta"][0]]["logits"], stats[row["delta"][1]]["logits"])
    else:
        delta = row["delta"]
    distance = logit_distance(s["logits"], other["logits"])
    flips = s["argmax"] != other["argmax"]
    unexplained = int((flips & (other["margin"] > 2 * delta)).sum())
    diff = s["kl"] - other["kl"]
    if row.get("kl") == "paired":
        dkl, se = mean_se(diff)
        kl_ok = abs(dkl) <= 3 * se
        kl_note = f"mean paired dKL {dkl:.1e} {'<=' if kl_ok else '>'} 3 x its se {se:.1e}"
    else:
        dkl = diff.mean().item()
        bound = delta * (other["l1"].mean().item() + math.expm1(2 * delta))
        kl_ok = abs(dkl) <= bound
        kl_note = f"|dKL| {abs(dkl):.1e} {'<=' if kl_ok else '>'} {bound:.1e}"
    ok = distance <= delta and unexplained == 0 and kl_ok
    note = (f"vs {stats[row['same_as']]['runtime']}: logits differ by up to {distance:.1e} "
            f"({'<=' if distance <= delta else '>'} delta {delta:.2g}), {kl_note}, "
            f"{int(flips.sum())} argmax flips, {unexplained} of them where its margin > 2 delta")
    return ok, note


def table(rows_path):
    spec = json.load(open(rows_path))
    L, W = spec["seq_len"], spec["windows"]
    targets = windows_of(spec["ids"], L, W)[:, 1:].reshape(-1)
    fp_logits = read_logits(spec["fp"]["logits"], W, L - 1)
    fp_logp = torch.log_softmax(fp_logits, -1)
    n = fp_logp.shape[0]
    print(f"{spec['title']}: windows 0-{W - 1} of {L} tokens of {spec['data']} (the `eval` "
          f"protocol), {n} scored positions. KL(full precision || runtime) in nats per position, "
          f"mean +- its standard error; top-1: share of positions whose argmax token is the "
          f"full-precision one.")
    print(f"{spec['legend']}.")
    stats = {"fp": statistics(fp_logp, fp_logits, targets)}
    header = ["runtime", "format", "file", "mean KL", "top-1 agreement %", "perplexity", "check"]
    fp = spec["fp"]
    lines = [[fp["runtime"], fp["format"], fp["file"], "0 (reference)", "100 (reference)",
              f"{math.exp(stats['fp']['nll'].mean().item()):.6f}", ""]]
    notes, failures = [], []
    for row in spec["rows"]:
        if row.get("logits") is None:
            lines.append([row["runtime"], row["format"], row["file"], "not measured",
                          "not measured", "", "-"])
            notes.append(f"{row['runtime']}: not measured: {row['why']}")
            continue
        logits = read_logits(row["logits"], W, L - 1)
        if logits.shape != fp_logits.shape:
            sys.exit(f"{row['logits']}: {tuple(logits.shape)} logits, "
                     f"full precision {tuple(fp_logits.shape)}")
        s = stats[row["key"]] = statistics(fp_logp, logits, targets)
        s["runtime"] = row["runtime"]
        kl, kl_se = mean_se(s["kl"])
        p = s["same"].double().mean().item()
        ok, note = check(row, s, stats)
        verdict = "-" if ok and not note else "ok" if ok else "FAIL"
        if note:
            notes.append(f"{verdict} {row['runtime']} {note}")
        if not ok:
            failures.append(f"{row['runtime']} ({row['file']}) is not the function it should be")
        lines.append([row["runtime"], row["format"], row["file"], f"{kl:.4e} +- {kl_se:.1e}",
                      f"{100 * p:.2f} +- {100 * math.sqrt(p * (1 - p) / (n - 1)):.2f}",
                      f"{math.exp(s['nll'].mean().item()):.6f}", verdict])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for line in lines:
        print("| " + " | ".join(line) + " |")
    print("\nChecks (scripts/check-fidelity.sh derives each delta):")
    for note in notes:
        print(f"- {note}")
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    a = sys.argv[2:]
    if cmd == "reference" and len(a) == 5:
        reference(*a[:2], int(a[2]), int(a[3]), a[4])
    elif cmd == "reference" and len(a) == 7 and a[5] in ("ggml", "mlas"):
        reference(*a[:2], int(a[2]), int(a[3]), a[4], a[5], a[6])
    elif cmd == "transformers" and len(a) == 5:
        transformers_logits(*a[:2], int(a[2]), int(a[3]), a[4])
    elif cmd == "table" and len(a) == 1:
        sys.exit(table(a[0]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

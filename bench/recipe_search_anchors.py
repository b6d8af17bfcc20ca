#!/usr/bin/env python3
"""The recipe search against NVIDIA ModelOpt's auto_quantize and Intel auto-round's AutoScheme.

    bench/recipe_search_anchors.py [--model ../shared/models/stories260K] [--build build/release]
                                   [--budgets 4.5,5,6,8] [--python /work/venvs/anchors/bin/python]
                                   [--tools modelopt-gradient,modelopt-kl,autoround] [--out-dir DIR]

Each external tool runs in a venv outside the repository (--python; nvidia-modelopt 0.47.0 and
auto-round 0.16.1 over torch + transformers: scripts/make-anchors-venv.sh makes it) on the same model, on CPU, with the same calibration
text, the same candidates and the same budgets as `quantscope-cli recipe --auto`; its per-layer
choice is translated into a Quantscope recipe and measured with `quantscope-cli eval` on the same
evaluation windows. Every figure printed comes from this run.

Candidates (ours -> theirs; the tool's choice is written back as our scheme):
  none               ModelOpt: its built-in "no quantization" choice; auto-round: BF16 (kept as is)
  int8               W8A8, int8 weights per tensor, int8 inputs static per tensor (max calibration)
                     ModelOpt: custom config (weights and inputs num_bits 8, axis None), exact;
                     auto-round: custom scheme (group_size 0, act_group_size 0, act_dynamic False)
  uint4_wo_32        ModelOpt: int4 *symmetric* block 32 weight-only (its integer quantizer has no
                     zero point); auto-round: 4 bit asymmetric int, group 32, weight-only, exact
  mxfp4_weight_only  MXFP4 (E2M1, E8M0 scale per 32) weights only: exact in both. ModelOpt's MX
                     fake quantization is a CUDA extension only; on CPU the script registers an
                     OCP MXFP4 emulation through its register_quant_backend (printed as a note)
A (layer, candidate) that `recipe --auto` refuses (its report's units lack it: a shape that does
not fit, or a Quark hf_format layout transformers + amd-quark refuse) is refused to the tools too
(ModelOpt: module_search_spaces; auto-round: priced at 10^6 bits per weight).

Size accounting: both tools count an unquantized weight as 16 bits and their own idea of scale
bytes. To ask them for the same budget, the script replaces their cost of every (layer, candidate)
with ours: the bytes `quantscope-cli recipe --size` gives for that layer under that candidate (the
Quark hf_format export; an unquantized weight as the float32 checkpoint stores it, 32 bits).
ModelOpt gets budget B / 2 with every cost halved (its "no quantization" is 16 bits); auto-round
gets B. So a selection within a budget for them is within it for us; the bits printed are ours.
Groups: both tools tie q/k/v and gate/up of a layer to one choice, as ours does.
Scores: ModelOpt "gradient" (its default) and "kl_div" over the 15 calibration windows (its
num_calib_steps = num_score_steps = 15); one search at the largest budget, the others re-solved
from its saved scores (algorithms._resolve_best_recipe, as get_auto_quantize_config does).
auto-round: AutoScheme method "default" (delta loss), nsamples 15, seqlen 256, the calibration
windows as text (decoded, re-tokenized by auto-round); its score cache lives in the output folder,
so the first budget scores and the others reuse it. "select s" is each tool's selection time.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CANDIDATES = ["none", "int8", "uint4_wo_32", "mxfp4_weight_only"]
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "shared"))


# ---------------------------------------------------------------------------------------------
# Shared by the driver and the workers
# ---------------------------------------------------------------------------------------------

def calibration_windows(tokenizer, path, count, seq_len):
    """`count` consecutive windows of `seq_len` tokens of the calibration text (BOS first)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ids = tokenizer(text, add_special_tokens=True)["input_ids"]
    windows = [ids[i * seq_len:(i + 1) * seq_len] for i in range(count)]
    windows = [w for w in windows if len(w) == seq_len]
    if len(windows) < count:
        raise SystemExit(f"{path}: only {len(windows)} windows of {seq_len} tokens")
    return windows


def group_key(name):
    """The fusion groups all three selections share: q/k/v and gate/up of one layer."""
    for members, tag in ((("q_proj", "k_proj", "v_proj"), "qkv"), (("gate_proj", "up_proj"), "gate_up")):
        for m in members:
            if name.endswith("." + m):
                return name[: -len(m)] + tag
    return name


# ---------------------------------------------------------------------------------------------
# Worker: ModelOpt auto_quantize (runs in the venv)
# ---------------------------------------------------------------------------------------------

def worker_modelopt(args, sizes, method):
    import copy
    import torch
    import modelopt.torch.quantization as mtq
    from modelopt.torch.quantization import algorithms
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.model)
    windows = calibration_windows(tok, args.calib, args.calib_windows, args.seq_len)
    batches = [torch.tensor([w]) for w in windows]

    def weight_only(weight_cfg):
        cfg = copy.deepcopy(mtq.INT8_DEFAULT_CFG)
        for e in cfg["quant_cfg"]:
            if e.get("quantizer_name") == "*weight_quantizer":
                e["cfg"] = weight_cfg
            elif e.get("quantizer_name") == "*input_quantizer":
                e.pop("cfg", None)
                e["enable"] = False
        return cfg

    int8 = copy.deepcopy(mtq.INT8_DEFAULT_CFG)       # weights per tensor (ours), inputs static per tensor
    for e in int8["quant_cfg"]:
        if e.get("quantizer_name") == "*weight_quantizer":
            e["cfg"] = {"num_bits": 8, "axis": None}
        elif e.get("quantizer_name") == "*input_quantizer":
            e["cfg"] = {"num_bits": 8, "axis": None}
    int4 = weight_only({"num_bits": 4, "block_sizes": {-1: 32}, "axis": None})
    mxfp4 = copy.deepcopy(mtq.MXFP4_DEFAULT_CFG)
    for e in mxfp4["quant_cfg"]:
        if e.get("quantizer_name") == "*input_quantizer":
            e.pop("cfg", None)
            e["enable"] = False
    notes = []
    if not torch.cuda.is_available():
        # ModelOpt's MX fake quantization is a CUDA extension only (tensor_quant.py,
        # _dynamic_block_quantize_impl -> get_cuda_ext_mx(raise_if_failed=True), which builds
        # tensor_quant_mx.cu): on CPU it raises "Skipping extension modelopt_cuda_ext_mx because
        # CUDA is not available". Its documented plug-in point, register_quant_backend, takes an
        # OCP MXFP4 emulation instead (E2M1 codes, E8M0 scale 2^(floor(log2 amax) - 2) per 32
        # inputs, round to nearest even, the last partial block zero padded).
        from modelopt.torch.quantization.nn.modules.tensor_quantizer import register_quant_backend
        grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])

        def mxfp4_cpu(x, quantizer):
            shape, n = x.shape, x.shape[-1]
            pad = (-n) % 32
            v = torch.nn.functional.pad(x.float(), (0, pad)).reshape(-1, 32)
            amax = v.abs().amax(dim=1, keepdim=True)
            e = torch.floor(torch.log2(torch.where(amax > 0, amax, torch.ones_like(amax)))) - 2
            scale = torch.pow(2.0, e.clamp(-127, 127))
            a = (v / scale).abs().clamp(max=6.0)
            # nearest E2M1 value, ties to the even code
            d = (a.unsqueeze(-1) - grid).abs()
            idx = torch.argmin(d + 1e-6 * (torch.arange(8) % 2), dim=-1)
            q = grid[idx] * torch.sign(v) * scale
            return q.reshape(*shape[:-1], n + pad)[..., :n].to(x.dtype)

        register_quant_backend("cpu_mxfp4", mxfp4_cpu)
        for e in mxfp4["quant_cfg"]:
            if e.get("quantizer_name") == "*weight_quantizer":
                e["cfg"] = dict(e["cfg"], backend="cpu_mxfp4")
        notes.append("ModelOpt MXFP4 fake quantization is CUDA-only (get_cuda_ext_mx); scored with a CPU "
                     "OCP MXFP4 emulation registered through register_quant_backend")
    mxfp4["algorithm"] = "max"
    formats = {"int8": int8, "uint4_wo_32": int4, "mxfp4_weight_only": mxfp4}
    # Their recipe-level effective bits (used only for their feasibility check and ordering; the
    # cost itself is ours, below): our largest bits per weight of that scheme, halved like the budget.
    for s, cfg in formats.items():
        cfg["effective_bits"] = max(32.0 * v[s] / v["none"] for v in sizes["bytes"].values()
                                    if v.get(s) is not None) / 2.0

    # Our cost of (module, recipe), the recipe recognised by its weight quantizer.
    def ours_of(recipe):
        scheme = "none"
        for e in recipe.config.quant_cfg:
            e = dict(e)
            if e.get("quantizer_name") == "*weight_quantizer" and e.get("enable", True) is not False \
                    and e.get("cfg"):
                nb = dict(e["cfg"]).get("num_bits")
                scheme = {8: "int8", 4: "uint4_wo_32", (2, 1): "mxfp4_weight_only"}[
                    tuple(nb) if isinstance(nb, (list, tuple)) else nb]
        return scheme

    module_names = {}
    bytes_of = sizes["bytes"]

    def get_cost(self, recipe, cost_weight=None):
        cost_weight = self.cost_weight if cost_weight is None else cost_weight
        scheme = ours_of(recipe)
        cost = 0.0
        for m in self.quant_modules:
            if module_names[id(m)] not in bytes_of:   # lm_head (disabled): outside our accounting
                continue
            b = bytes_of[module_names[id(m)]].get(scheme)
            if b is None:                        # cannot take it in our export
                b = 1e12
            # their effective bits = cost / weights * 16 and no-quant = compression 1: count our
            # bytes * 8 / 32 per weight, so their budget B/2 is our budget B
            cost += b * 8.0 / 32.0 * cost_weight
        return cost

    algorithms.QuantRecipeHparam.get_cost = get_cost

    def forward_step(model, batch):
        return model(input_ids=batch).logits

    def loss_func(output, batch):
        logits = output[:, :-1].reshape(-1, output.shape[-1]).float()
        return torch.nn.functional.cross_entropy(logits, batch[:, 1:].reshape(-1))

    # One search (calibration, then the scores) at the first budget; the other budgets re-solve
    # ModelOpt's own problem from its saved scores and costs (_resolve_best_recipe, what
    # get_auto_quantize_config(search_state, constraints) does).
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    orig = algorithms.QuantRecipeHparam.get_cost

    def get_cost_named(self, recipe, cost_weight=None):
        # the quantized modules replace the loaded ones: name them as they come
        if any(id(m) not in module_names for m in self.quant_modules):
            for n, m in model.named_modules():
                module_names[id(m)] = n
        return orig(self, recipe, cost_weight)
    algorithms.QuantRecipeHparam.get_cost = get_cost_named
    started = time.monotonic()
    # Per layer kind, the candidates it may take (ours): a kind with fewer gets its own search space
    kinds = {}
    for layer, per in bytes_of.items():
        allowed = tuple(c for c in ("int8", "uint4_wo_32", "mxfp4_weight_only") if per.get(c) is not None)
        kinds.setdefault(layer.split(".")[-1], set()).add(allowed)
    spaces = {}
    for kind, allowed in kinds.items():
        allowed = sorted(set.intersection(*(set(a) for a in allowed)))
        if len(allowed) < 3:
            spaces.setdefault(tuple(allowed), []).append("*" + kind)
    kw = dict(constraints={"effective_bits": max(args.budgets) / 2.0},
              quantization_formats=[formats[s] for s in ("int8", "uint4_wo_32", "mxfp4_weight_only")],
              data_loader=batches, forward_step=forward_step,
              disabled_layers=["*lm_head*"], num_calib_steps=len(batches),
              num_score_steps=len(batches), verbose=False, method=method,
              module_search_spaces=[{"module_name_patterns": pats,
                                     "quantization_formats": [formats[c] for c in allowed]}
                                    for allowed, pats in spaces.items()] or None)
    if method == "gradient":
        kw["loss_func"] = loss_func
    model, state = mtq.auto_quantize(model, **kw)
    search_seconds = time.monotonic() - started
    result = {}
    # auto_quantize refuses a target below its least cost (_verify_resolved_constraint) but the
    # re-solve returns its smallest recipe regardless: refuse it here the same way
    stats = state["candidate_stats"]
    total = state.get("cost_denominator") or sum(v.get("uncompressed_cost", max(v["costs"])) for v in stats.values())
    least = 16.0 * sum(min(v["costs"]) for v in stats.values()) / total
    for b in args.budgets:
        if b / 2.0 < least:
            result[str(b)] = {"error": f"infeasible: the least effective bits ModelOpt finds is "
                                       f"{least:.4f} (= our {2 * least:.4f})"}
            continue
        started = time.monotonic()
        try:
            best = state["best"]["recipe"] if b == max(args.budgets) else algorithms._resolve_best_recipe(
                state, {"effective_bits": b / 2.0})
        except Exception as e:                   # an infeasible budget
            result[str(b)] = {"error": f"{type(e).__name__}: {e} (their bits are ours / 2)"}
            continue
        seconds = search_seconds if b == max(args.budgets) else time.monotonic() - started
        choice = {}
        for key, recipe in best.items():
            for name in state["candidate_stats"][key]["module_names"]:
                choice[name] = ours_of(recipe)
        result[str(b)] = {"choice": choice, "seconds": seconds, "notes": notes}
    return result


# ---------------------------------------------------------------------------------------------
# Worker: auto-round AutoScheme (runs in the venv)
# ---------------------------------------------------------------------------------------------

def worker_autoround(args, sizes):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from auto_round import AutoRound, AutoScheme
    from auto_round.schemes import QuantizationScheme
    import auto_round.auto_scheme.utils as as_utils
    import auto_round.auto_scheme.delta_loss as as_delta

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.model)
    windows = calibration_windows(tok, args.calib, args.calib_windows, args.seq_len)
    data = os.path.join(args.work, "autoround-calib.json")
    with open(data, "w") as f:
        json.dump([tok.decode(w, skip_special_tokens=True) for w in windows], f)

    options = {
        "int8": QuantizationScheme.from_dict({"bits": 8, "group_size": 0, "sym": True, "data_type": "int",
                                              "act_bits": 8, "act_group_size": 0, "act_data_type": "int",
                                              "act_dynamic": False, "act_sym": True}),
        "uint4_wo_32": QuantizationScheme.from_dict({"bits": 4, "group_size": 32, "sym": False,
                                                     "data_type": "int", "act_bits": 16}),
        "mxfp4_weight_only": QuantizationScheme.from_dict({"bits": 4, "group_size": 32, "data_type": "mx_fp",
                                                           "act_bits": 16}),
        "none": "BF16",
    }
    bytes_of = sizes["bytes"]
    names = {}

    def ours_of(layer):
        bits = getattr(layer, "bits", 16)
        if bits >= 16:
            return "none"
        dt = getattr(layer, "data_type", "int")
        if "mx_fp" in dt:
            return "mxfp4_weight_only"
        return "int8" if bits == 8 else "uint4_wo_32"

    def compute_layer_bits(layer, ignore_scale_zp_bits=False):
        inner = getattr(layer, "orig_layer", layer)
        name = names.get(id(inner)) or names.get(id(layer))
        n = inner.weight.numel() or getattr(inner, "_cached_weight_numel", 0)
        b = bytes_of[name].get(ours_of(layer))
        if b is None:
            b = 1e6 * n                         # cannot take it in our export: out of every budget
        return 8 * b, 8.0 * b / n

    as_utils.compute_layer_bits = compute_layer_bits
    as_delta.compute_layer_bits = compute_layer_bits

    # Its feasibility check takes the range of the uniform options; with candidates a layer cannot
    # take, the least is per layer instead (the DP never picks a refused one: it costs 10^6 bits).
    from auto_round.auto_scheme.gen_auto_scheme import GenScheme
    orig_range = GenScheme.compute_avg_bit_range

    def avg_bit_range(self):
        _, top, scheme = orig_range(self)
        ls = [n for n in self.quant_layer_names if n in bytes_of]
        params = sum(bytes_of[n]["none"] / 4 for n in ls)
        least = sum(8 * min(v for v in bytes_of[n].values() if v is not None) for n in ls) / params
        return least, top, scheme
    GenScheme.compute_avg_bit_range = avg_bit_range

    result = {}
    for b in args.budgets:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
        names.clear()
        for n, m in model.named_modules():
            names[id(m)] = n
        scheme = AutoScheme(avg_bits=b, options=[options[c] for c in CANDIDATES[1:]] + ["BF16"],
                            nsamples=len(windows), seqlen=args.seq_len, dataset=data,
                            shared_layers=[["q_proj", "k_proj", "v_proj"], ["gate_proj", "up_proj"]],
                            device_map="cpu", enable_torch_compile=False)
        started = time.monotonic()
        try:
            # the layer config is the AutoScheme's choice; no rounding or export is needed
            ar = AutoRound(model, tok, scheme=scheme, iters=0, nsamples=len(windows), seqlen=args.seq_len,
                           dataset=data, device_map="cpu", enable_torch_compile=False)
            ar.post_init()                       # resolves the scheme: runs the AutoScheme search
        except ValueError as e:                  # an infeasible budget
            result[str(b)] = {"error": f"ValueError: {str(e).split(' for options=')[0]}"}
            continue
        layer_config = ar.layer_config
        seconds = time.monotonic() - started
        choice = {}
        for name, cfg in layer_config.items():
            if not name.startswith("model.layers."):
                continue

            class L:
                pass
            layer = L()
            for k in ("bits", "data_type", "group_size", "sym"):
                if k in cfg and cfg[k] is not None:
                    setattr(layer, k, cfg[k])
            choice[name] = ours_of(layer)
        result[str(b)] = {"choice": choice, "seconds": seconds}
    return result


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

def run(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(SHARED, "models", "stories260K"))
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--budgets", default="4.5,5,6,8")
    ap.add_argument("--python", default="/work/venvs/anchors/bin/python")
    ap.add_argument("--tools", default="modelopt-gradient,modelopt-kl,autoround")
    ap.add_argument("--calib", default=os.path.join(SHARED, "data", "tinystories-calib.txt"))
    ap.add_argument("--data", default=os.path.join(SHARED, "data", "tinystories-eval.txt"))
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--calib-windows", type=int, default=15)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--cost-windows", type=int, default=0,
                    help="ours: --cost-windows N (the per-unit costs on the first N windows)")
    ap.add_argument("--unit-costs", default="measured", choices=["measured", "scaled"],
                    help="ours: --unit-costs")
    ap.add_argument("--refine", type=int, default=0, help="ours: --refine N")
    ap.add_argument("--out-dir", help="where the recipes and the tools' logs go (default: a temp dir)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.budgets = [float(b) for b in str(args.budgets).split(",")]

    if args.worker:
        with open(args.sizes) as f:
            sizes = json.load(f)
        if args.worker == "autoround":
            out = worker_autoround(args, sizes)
        else:
            out = worker_modelopt(args, sizes, args.worker.split("-", 1)[1].replace("kl", "kl_div"))
        print("RESULT " + json.dumps(out))
        return

    cli = os.path.join(args.build, "bin", "quantscope-cli")
    if not os.path.exists(cli):
        sys.exit(f"{cli} is missing: build Quantscope first")
    work = os.path.abspath(args.out_dir or tempfile.mkdtemp(prefix="recipe-anchors-"))
    os.makedirs(work, exist_ok=True)
    data = ["--data", args.data, "--eval-seq-len", str(args.seq_len), "--max-windows", str(args.windows)]
    calib = ["--calib-data", args.calib, "--num-calib-data", str(args.calib_windows), "--seq-len", str(args.seq_len)]
    base = {"format": "quantscope-recipe", "version": 1, "unfit_policy": "error",
            "calibration": {"data": args.calib, "num_samples": args.calib_windows, "seq_len": args.seq_len},
            "evaluation": {"data": args.data, "seq_len": args.seq_len, "max_windows": args.windows}}

    def write_recipe(name, body):
        r = dict(base)
        r.update(body)
        path = os.path.join(work, name + ".json")
        with open(path, "w") as f:
            json.dump(r, f, indent=1)
        return path

    def size_of(path):
        return json.loads(run([cli, "recipe", "--size", path, "--model", args.model, "--json"]).stdout)

    # Our bytes of every block linear under every candidate (the one size definition).
    sizes = {"bytes": {}}
    for c in CANDIDATES[1:]:
        j = size_of(write_recipe("uniform-" + c, {"global": c, "unfit_policy": "skip"}))
        for layer in j["layers"]:
            per = sizes["bytes"].setdefault(layer["name"], {})
            per[c] = layer["stored_bytes"]["quark"] if layer["scheme"] == c else None
    layers = sorted(sizes["bytes"])
    j = size_of(write_recipe("uniform-none", {"global": "int8", "exclude": layers}))
    for layer in j["layers"]:
        sizes["bytes"][layer["name"]]["none"] = layer["stored_bytes"]["quark"]

    def recipe_from_choice(name, choice):
        """A choice {layer: candidate} as our recipe: the scheme covering most weights global,
        the other quantized layers as overrides by exact name, the unquantized ones excluded."""
        choice = {l: s for l, s in choice.items() if l in sizes["bytes"]}   # block linears only
        weights = {}
        for layer, s in choice.items():
            if s != "none":
                weights[s] = weights.get(s, 0) + sizes["bytes"][layer]["none"]
        missing = [l for l in layers if l not in choice]
        if missing:
            raise SystemExit(f"{name}: no choice for {missing}")
        glob = max(weights, key=weights.get) if weights else "int8"
        return write_recipe(name, {
            "global": glob,
            "layer_overrides": [{"pattern": l, "scheme": s} for l, s in sorted(choice.items())
                                if s not in ("none", glob)],
            "exclude": sorted(l for l, s in choice.items() if s == "none")})

    def measure(path):
        j = json.loads(run([cli, "eval", args.model, "--recipe", path] + data + ["--json", "--quiet"]).stdout)
        return {"bits": size_of(path)["effective_bits"], "kl": j["fidelity"]["kl_mean"]["value"],
                "kl_err": j["fidelity"]["kl_mean"]["error"], "ppl": j["perplexity"]}

    rows = {b: [] for b in args.budgets}
    # Ours (the largest budget first: its per-unit costs are reused at the others).
    costs = None
    for b in sorted(args.budgets, reverse=True):
        out = os.path.join(work, f"ours-{b}.json")
        cmd = [cli, "recipe", "--auto", "--model", args.model, "--candidates", ",".join(CANDIDATES),
               "--budget-bpw", str(b), "--json", "--quiet", "--out", out] + calib + data
        if args.cost_windows:
            cmd += ["--cost-windows", str(args.cost_windows)]
        cmd += ["--unit-costs", args.unit_costs]
        if args.refine:
            cmd += ["--refine", str(args.refine)]
        if costs and args.unit_costs == "measured":  # scaled costs belong to their budget
            cmd += ["--costs", costs]
        started = time.monotonic()
        p = run(cmd, check=False)
        seconds = time.monotonic() - started
        if p.returncode != 0:
            rows[b].append(("quantscope", {"error": p.stderr.strip().splitlines()[-1]}))
            continue
        if not costs:
            costs = os.path.join(work, "costs.json")
            with open(costs, "w") as f:
                f.write(p.stdout)
        m = measure(out)
        m["seconds"] = seconds
        rows[b].append(("quantscope", m))

    notes = []
    if not costs:
        sys.exit("no budget was feasible for recipe --auto: " +
                 "; ".join(m["error"] for r in rows.values() for _, m in r))
    # The same choices for every selection: a (layer, candidate) the search cannot take (the
    # unit's weight_bytes lack it: the shape does not fit, or transformers + amd-quark refuse the
    # Quark hf_format layout) is out of the tools' reach too.
    with open(costs) as f:
        units = json.load(f)["units"]
    refused = set()
    for u in units:
        for c in CANDIDATES:
            if c not in u["weight_bytes"]:
                for layer in u["layers"]:
                    if sizes["bytes"][layer].get(c) is not None:
                        refused.add((layer.split(".")[-1], c))
                    sizes["bytes"][layer][c] = None
    for kind, c in sorted(refused):
        notes.append(f"all: {c} on {kind} is not a candidate (recipe --auto refuses it), for the tools neither")
    sizes_path = os.path.join(work, "sizes.json")
    with open(sizes_path, "w") as f:
        json.dump(sizes, f, indent=1)

    for tool in filter(None, args.tools.split(",")):
        if not os.path.exists(args.python):
            notes.append(f"{tool}: not run: {args.python} is missing (create the venv, see --help)")
            continue
        cmd = [args.python, os.path.abspath(__file__), "--worker", tool, "--model", args.model,
               "--budgets", ",".join(str(b) for b in args.budgets), "--calib", args.calib,
               "--calib-windows", str(args.calib_windows), "--seq-len", str(args.seq_len),
               "--work", work, "--sizes", sizes_path]
        # CPU only; auto-round's per-scheme score cache in the work directory, so its scores are
        # estimated at the first budget of this run and reused at the others
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TOKENIZERS_PARALLELISM="false",
                   AR_AUTO_SCHEME_CACHE=os.path.join(work, "autoround-cache"))
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        with open(os.path.join(work, f"{tool}.log"), "w") as f:
            f.write(p.stdout + "\n--- stderr ---\n" + p.stderr)
        result = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        if p.returncode != 0 or not result:
            err = [l for l in p.stderr.strip().splitlines() if l.strip()]
            notes.append(f"{tool}: not run: {err[-1] if err else 'exit ' + str(p.returncode)} "
                         f"(log: {os.path.join(work, tool + '.log')})")
            continue
        result = json.loads(result[-1][len("RESULT "):])
        for b in args.budgets:
            r = result[str(b)]
            if "error" in r:
                rows[b].append((tool, {"error": r["error"]}))
                continue
            m = measure(recipe_from_choice(f"{tool}-{b}", r["choice"]))
            m["seconds"] = r["seconds"]
            for n in r.get("notes", []):
                if f"{tool}: {n}" not in notes:
                    notes.append(f"{tool}: {n}")
            rows[b].append((tool, m))

    model = os.path.basename(os.path.normpath(args.model))
    print(f"model {model}; candidates {','.join(CANDIDATES)}; {args.windows} evaluation windows of "
          f"{args.seq_len} ({os.path.basename(args.data)}); calibration {args.calib_windows} x "
          f"{args.seq_len} ({os.path.basename(args.calib)}); CPU; recipes in {work}")
    print(f"{'budget':>6} | {'selection':<18} | {'eff. bits':>9} | {'KL mean':>9} {'± s.e.':>8} | {'perplexity':>10} | "
          f"{'select s':>8} | vs ours")
    for b in args.budgets:
        ours = next((m for t, m in rows[b] if t == "quantscope" and "kl" in m), None)
        for tool, m in rows[b]:
            if "error" in m:
                print(f"{b:>6} | {tool:<18} | {m['error']}")
                continue
            rel = f"{m['kl'] / ours['kl']:.2f} x KL" if ours and tool != "quantscope" else ""
            over = "  OVER BUDGET" if m["bits"] > b + 1e-9 else ""
            print(f"{b:>6} | {tool:<18} | {m['bits']:>9.4f} | {m['kl']:>9.5f} {m['kl_err']:>8.5f} | {m['ppl']:>10.4f} | "
                  f"{m['seconds']:>8.1f} | {rel}{over}")
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The arithmetic of docs/scale.md: per-rank memory, bytes per reduction and estimated seconds per
block of GPTQ for Llama-3-70B and DeepSeek-V3 shapes on 1 to 64 ranks. Every figure it prints is
either one of the measured inputs below (with where it was measured) or arithmetic on them; the
assumptions are named where they are made. Python 3 standard library only.

"committed" is GptqTransform as committed after 2ec6295 in 8823018 ("GPTQ over ranks: the linears
that read one input share one Hessian ..."): the linears of a block are taken in runs that read the
same captured input (q/k/v; gate/up), each run builds and all-gathers one Hessian, the j-th linear
of a run is solved by rank j mod N and every result is broadcast from its owner. "2ec6295" is the
design before it (one Hessian per linear, every rank solving every linear), kept for comparison.
Both forward the whole block once per run (GptqTransform::apply recaptures before every run after
the first): runs + 2 forwards a block with the two output streams (forwards()); "best" assumes one
capture per true-sequential stage.

    python3 bench/scale_paper.py            # the tables of docs/scale.md
"""
import math

GB = 1e9

# --- measured inputs (docs/scale.md, "Measured here") ---------------------------------------------
# The CPU inputs are main()'s arguments (defaults at the bottom): quantscope-cli quantize with
# uint4 + GPTQ, --threads 1, on the project's 2-core machine, median s/block of the 1024-wide
# synthetic Llama (16 windows x 256 calibration tokens) and of stories260K (128 x 256).
# docs/gpu.md (earlier session, H100 80GB, not rerun here): 7B-shaped block (hidden 4096,
# intermediate 11008, 32 heads), uint4/128 + GPTQ, 16 windows of 1024, bf16: 10.83 s per block
# with process start, load and writing included.
H100_GPTQ_7B_S_PER_BLOCK = 10.83


# --- shapes ----------------------------------------------------------------------------------------
class Linear:
    def __init__(self, name, n_in, n_out, tokens_share=1.0, count=1):
        self.name, self.n_in, self.n_out = name, n_in, n_out
        self.share = tokens_share  # fraction of the calibration tokens that reach it
        self.count = count          # identical copies (experts)


def llama(hidden, inter, heads, kv_heads, head_dim):
    return dict(
        hidden=hidden, heads=heads, d_qk=head_dim, d_v=head_dim,
        linears=[
            Linear("q_proj", hidden, heads * head_dim),
            Linear("k_proj", hidden, kv_heads * head_dim),
            Linear("v_proj", hidden, kv_heads * head_dim),
            Linear("o_proj", heads * head_dim, hidden),
            Linear("gate_proj", hidden, inter),
            Linear("up_proj", hidden, inter),
            Linear("down_proj", inter, hidden),
        ],
        # true-sequential stages: linears in one stage read the same input
        stages=[["q_proj", "k_proj", "v_proj"], ["o_proj"], ["gate_proj", "up_proj"], ["down_proj"]],
        # the committed runs (block order, consecutive linears with the same captured input)
        runs=[["q_proj", "k_proj", "v_proj"], ["o_proj"], ["gate_proj", "up_proj"], ["down_proj"]],
    )


def deepseek_v3(moe):
    h, heads, nope, rope, vdim, qr, kvr = 7168, 128, 128, 64, 128, 1536, 512
    attn = [
        Linear("q_a_proj", h, qr),
        Linear("q_b_proj", qr, heads * (nope + rope)),
        Linear("kv_a_proj_with_mqa", h, kvr + rope),
        Linear("kv_b_proj", kvr, heads * (nope + vdim)),
        Linear("o_proj", heads * vdim, h),
    ]
    stages = [["q_a_proj", "kv_a_proj_with_mqa"], ["q_b_proj", "kv_b_proj"], ["o_proj"]]
    # Block order is q_a, q_b, kv_a, kv_b, o (MlaAttention::appendLinears): q_a and kv_a read one
    # input but are not adjacent, so the committed code makes each its own run (two Hessians).
    runs = [["q_a_proj"], ["q_b_proj"], ["kv_a_proj_with_mqa"], ["kv_b_proj"], ["o_proj"]]
    if moe:
        e, routed, top = 2048, 256, 8
        mlp = [
            Linear("shared.gate_proj", h, e), Linear("shared.up_proj", h, e),
            Linear("shared.down_proj", e, h),
            Linear("experts.gate_proj", h, e, top / routed, routed),
            Linear("experts.up_proj", h, e, top / routed, routed),
            Linear("experts.down_proj", e, h, top / routed, routed),
        ]
        stages += [["shared.gate_proj", "shared.up_proj", "experts.gate_proj", "experts.up_proj"],
                   ["shared.down_proj", "experts.down_proj"]]
        # each expert's gate/up is one run, its down another (a run of a linear with count c
        # stands for c runs, one per expert); then the shared expert's
        runs += [["experts.gate_proj", "experts.up_proj"], ["experts.down_proj"],
                 ["shared.gate_proj", "shared.up_proj"], ["shared.down_proj"]]
    else:
        mlp = [Linear("gate_proj", h, 18432), Linear("up_proj", h, 18432), Linear("down_proj", 18432, h)]
        stages += [["gate_proj", "up_proj"], ["down_proj"]]
        runs += [["gate_proj", "up_proj"], ["down_proj"]]
    return dict(hidden=h, heads=heads, d_qk=nope + rope, d_v=vdim, linears=attn + mlp, stages=stages,
                runs=runs)


MODELS = {
    "Llama-3-70B block": (llama(8192, 28672, 64, 8, 128), 80),
    "DeepSeek-V3 dense block (0-2)": (deepseek_v3(False), 3),
    "DeepSeek-V3 MoE block (3-60)": (deepseek_v3(True), 58),
}
# The measured shapes.
L1024 = llama(1024, 3584, 8, 1, 128)       # 70B's proportions at 1/8 the width
L7B = llama(4096, 11008, 32, 32, 128)      # docs/gpu.md's 7B-shaped block
STORIES = llama(64, 172, 8, 4, 8)          # stories260K


def params(m):
    return sum(l.n_in * l.n_out * l.count for l in m["linears"])


def active_params(m):
    return sum(l.n_in * l.n_out * l.count * l.share for l in m["linears"])


# --- FLOPs of one GPTQ block (assumptions in docs/scale.md) ---------------------------------------
def forwards(m, best=False):
    """Whole-block forwards over the calibration tokens, per block. Committed (and 2ec6295, and
    the measured build): the capture before the transforms (CalibrationPipeline.cpp, captureInputs),
    one recapture of the whole block before every later run (GptqTransform::apply,
    captureBlockInputs: a run of a linear with count c stands for c runs), and the float and
    quantized stream outputs: runs + 2, i.e. 6 for a Llama block, 9 for a DeepSeek-V3 dense block,
    521 for a MoE block. best (assumed, not the code): one capture per true-sequential stage + 2."""
    by = {l.name: l for l in m["linears"]}
    captures = len(m["stages"]) if best else sum(by[run[0]].count for run in m["runs"])
    return captures + 2


def forward_flops(m, tokens, seq):
    linear = 2 * active_params(m) * tokens
    attention = tokens * seq * m["heads"] * (m["d_qk"] + m["d_v"])  # causal: mean context seq/2
    return linear + attention


def hessians(m, per_linear=False):
    """The Hessians a block builds, as the linears whose input each one is of. Committed: one per
    run of linears that read one input; 2ec6295 (per_linear): one per linear."""
    by = {l.name: l for l in m["linears"]}
    if per_linear:
        return list(m["linears"])
    return [by[run[0]] for run in m["runs"] if run[0] in by]


def hessian_flops(m, tokens, per_linear=False):
    # one X^T X per Hessian built, over the tokens reaching its linears
    return sum(2 * tokens * l.share * l.n_in ** 2 * l.count for l in hessians(m, per_linear))


def solve_flops_one(l):
    # Cholesky, inverse, Cholesky of the inverse (~4/3 n^3) and the column updates (2 out n^2)
    return 4 / 3 * l.n_in ** 3 + 2 * l.n_out * l.n_in ** 2


def solve_flops(m):
    return sum(solve_flops_one(l) * l.count for l in m["linears"])


def solve_committed_flops(m, ranks):
    """The committed spread: in each run the j-th linear is solved by rank j mod N; the runs (and a
    count-c run's c copies) follow one another. The slowest rank of each run sets its time."""
    by = {l.name: l for l in m["linears"]}
    total = 0.0
    for run in m["runs"]:
        load = [0.0] * ranks
        for j, n in enumerate(run):
            load[j % ranks] += solve_flops_one(by[n])
        total += max(load) * by[run[0]].count
    return total


def solve_critical_flops(m, ranks):
    # solves bin-packed by stage ("best"): within a stage the linears (experts included) are independent;
    # the stages run one after another. Greedy: the biggest solves first onto the least-loaded rank.
    by = {l.name: l for l in m["linears"]}
    total = 0.0
    for stage in m["stages"]:
        jobs = sorted((solve_flops_one(by[n]) for n in stage for _ in range(by[n].count)), reverse=True)
        load = [0.0] * ranks
        for j in jobs:
            load[load.index(min(load))] += j
        total += max(load)
    return total


def gptq_flops(m, tokens, seq, per_linear=False, best=False):
    return dict(fwd=forwards(m, best) * forward_flops(m, tokens, seq),
                hess=hessian_flops(m, tokens, per_linear), solve=solve_flops(m))


# --- the solved results' broadcast -----------------------------------------------------------------
GROUP = 128  # uint4_wo_128: one scale and one zero point per 128 input columns of a row


def result_bytes(l, committed=True):
    """One solved linear's result as broadcast. Committed (broadcastFrom): everything as float64,
    i.e. codes [out, in] and the dequantized weight [out, in] at 8 bytes a value each, plus scales
    and zero points [out, in/128] at 8. The better form assumed for "best": codes at 1 byte
    (uint4 values), the dequantized weight at its float32, scales and zero points at 4."""
    w = l.n_out * l.n_in
    g = 2 * l.n_out * math.ceil(l.n_in / GROUP)
    return (w * 16 + g * 8) if committed else (w * 5 + g * 4)


def broadcast_bytes(m, committed=True):
    """Per block, the results' payload every rank takes in (each result once: the assumed pipelined
    tree or ring, at the link rate)."""
    return sum(result_bytes(l, committed) * l.count for l in m["linears"])


# --- calibration ----------------------------------------------------------------------------------
SEQ = 512
GPU_BATCH_TOKENS = 8192                  # a calibration batch on a GPU (windowsPerBatch: 16 x 512)
RANKS = (1, 8, 16, 32, 64)


def shards_for(windows):
    return windows * SEQ // GPU_BATCH_TOKENS


def captured_width(m):
    """Values kept per calibration token: two block-input streams (float and quantized) and the
    captured input of every linear (linears reading the same input share one tensor; a routed
    expert keeps the rows routed to it)."""
    width = 2 * m["hidden"]
    by = {l.name: l for l in m["linears"]}
    for stage in m["stages"]:
        width += sum({(by[n].n_in, by[n].share, by[n].count): by[n].n_in * by[n].share * by[n].count
                      for n in stage}.values())
    return width


def widest(m):
    return max(m["linears"], key=lambda l: l.n_in)


def is_moe(m):
    return any(l.count > 1 for l in m["linears"])


def splits(m, ranks, shards):
    """Whether the run splits its calibration (the same in 2ec6295 and 8823018): at least as many batches as
    ranks and no routed expert; otherwise every rank calibrates on every window (N=1's work)."""
    return ranks > 1 and shards >= ranks and not is_moe(m)


def memory(m, ranks, shards, stream_bytes=2):
    """Peak bytes per rank of one block's GPTQ as committed: block weights in bf16, the rank's
    windows (streams and captures, in the bf16 compute dtype), and for the widest linear its
    Hessian, the rank's per-shard partials and the all-gather's N-slot receive buffer. A run that
    does not split holds what one process holds."""
    split = splits(m, ranks, shards)
    mine = math.ceil(shards / ranks) if split else shards
    tokens = mine * GPU_BATCH_TOKENS
    h = widest(m).n_in ** 2 * 8
    return dict(weights=params(m) * 2, act=tokens * captured_width(m) * stream_bytes, hess=h,
                partials=mine * h if split else 0, gather=ranks * h if split else 0)


def hessian_bytes(m, experts=True, per_linear=False):
    return sum(l.n_in ** 2 * 8 * l.count for l in hessians(m, per_linear) if experts or l.count == 1)


def routed_rows_bytes(m, tokens, ranks, stream_bytes=2):
    """Received per rank when each routed expert has one owner rank and the rows routed to it
    travel there (gate/up input and down input of each of the token's experts): the owner builds
    the expert's Hessian from every shard in shard order, and no expert Hessian travels."""
    rows = sum(tokens * l.share * l.count * l.n_in for l in m["linears"]
               if l.count > 1 and l.name.endswith(("gate_proj", "down_proj")))
    return rows * stream_bytes / ranks * (ranks - 1) / ranks


def allgather_bytes(m, ranks, shards, per_linear=False):
    """Received per rank per block: every round brings N-1 partials of every Hessian built."""
    if ranks == 1:
        return 0
    return (ranks - 1) * math.ceil(shards / ranks) * hessian_bytes(m, per_linear=per_linear)


def chain_bytes(m, ranks, shards):
    """Received per rank per block by a chain in shard order (one running sum per Hessian passed
    from the rank of shard s to the rank of shard s+1), plus the sum sent back to every rank."""
    if ranks == 1:
        return 0
    return (math.ceil(shards / ranks) + 1) * hessian_bytes(m)


def alltoall_bytes(m, ranks, shards):
    """Received per rank per block by an ordered reduce-scatter (each rank owns 1/N of every
    Hessian's rows, receives that slice of every other rank's per-shard partials and adds the
    slices in shard order), then an all-gather of the summed slices."""
    if ranks == 1:
        return 0
    return (ranks - 1) / ranks * (math.ceil(shards / ranks) + 1) * hessian_bytes(m)


def f(x, d=1):
    return f"{x:,.{d}f}"


def main(cpu_s_per_block, stories_s_per_block, cpu_tokens=16 * 256, cpu_seq=256, link_gbs=10.0,
         disk_gbs=5.0):
    print("### Shapes\n")
    print("| block | linears | params | bf16 weights GB | widest input | its Hessian GB | Hessians, one per run (committed) | their GB | one per linear (2ec6295) GB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, (m, blocks) in MODELS.items():
        w = widest(m)
        print(f"| {name} (x{blocks}) | {sum(l.count for l in m['linears'])} | {params(m) / 1e9:.3f} B | "
              f"{f(params(m) * 2 / GB, 2)} | {w.name} {w.n_in} | {f(w.n_in ** 2 * 8 / GB, 2)} | "
              f"{sum(l.count for l in hessians(m))} | {f(hessian_bytes(m) / GB, 2)} | "
              f"{f(hessian_bytes(m, per_linear=True) / GB, 2)} |")

    # The measured runs predate 8823018: their FLOP model has one Hessian per linear.
    f_cpu = gptq_flops(L1024, cpu_tokens, cpu_seq, per_linear=True)
    r_cpu = sum(f_cpu.values()) / cpu_s_per_block
    f_gpu = gptq_flops(L7B, 16 * 1024, 1024, per_linear=True)
    r_gpu = sum(f_gpu.values()) / H100_GPTQ_7B_S_PER_BLOCK
    print("\n### Effective rates\n")
    print("| measured | FLOP model (fwd + Hessians + solves) | s per block | rate |")
    print("|---|---|---|---|")
    print(f"| CPU, 1 thread, 1024-wide Llama block, {cpu_tokens} tokens | "
          f"{f(f_cpu['fwd'] / 1e12, 3)} + {f(f_cpu['hess'] / 1e12, 3)} + {f(f_cpu['solve'] / 1e12, 3)} "
          f"= {f(sum(f_cpu.values()) / 1e12, 3)} TFLOP | {cpu_s_per_block:.2f} | {f(r_cpu / 1e9)} GFLOP/s |")
    f_st = gptq_flops(STORIES, 128 * 256, 256, per_linear=True)
    print(f"| CPU, 1 thread, stories260K block, {128 * 256} tokens | "
          f"{f(f_st['fwd'] / 1e9, 2)} + {f(f_st['hess'] / 1e9, 2)} + {f(f_st['solve'] / 1e9, 3)} "
          f"= {f(sum(f_st.values()) / 1e9, 2)} GFLOP | {stories_s_per_block:.2f} | "
          f"{f(sum(f_st.values()) / stories_s_per_block / 1e9)} GFLOP/s |")
    print(f"| H100 (docs/gpu.md), 7B-shaped block, 16384 tokens | {f(f_gpu['fwd'] / 1e12, 2)} + "
          f"{f(f_gpu['hess'] / 1e12, 2)} + {f(f_gpu['solve'] / 1e12, 2)} = {f(sum(f_gpu.values()) / 1e12, 2)} TFLOP "
          f"| {H100_GPTQ_7B_S_PER_BLOCK} | {f(r_gpu / 1e12, 2)} TFLOP/s |")

    print(f"\n### One rank, 128 x {SEQ} calibration tokens, committed (one Hessian per run; estimates)\n")
    print("| block | block forwards (runs + 2) | fwd + Hessians + solves TFLOP | at the CPU thread's rate | at the H100's rate | whole model at the H100's rate | 2ec6295 (one Hessian per linear) at the H100's rate |")
    print("|---|---|---|---|---|---|---|")
    for name, (m, blocks) in MODELS.items():
        g = gptq_flops(m, 128 * SEQ, SEQ)
        t = sum(g.values())
        t_old = sum(gptq_flops(m, 128 * SEQ, SEQ, per_linear=True).values())
        print(f"| {name} | {forwards(m)} | {f(g['fwd'] / 1e12, 0)} + {f(g['hess'] / 1e12, 0)} + {f(g['solve'] / 1e12, 0)} "
              f"= {f(t / 1e12, 0)} | {f(t / r_cpu / 3600)} h | {f(t / r_gpu, 0)} s | "
              f"{f(t / r_gpu * blocks / 3600)} h ({blocks} blocks) | {f(t_old / r_gpu, 0)} s |")

    for windows in (128, 1024):
        shards = shards_for(windows)
        print(f"\n### Per-rank memory, GB: {windows} windows x {SEQ} = {shards} shards of {GPU_BATCH_TOKENS} tokens\n")
        print("| block | N | split | weights | windows (streams, captures) | widest Hessian | own partials | gather buffer | total |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, (m, _) in MODELS.items():
            for n in RANKS:
                t = memory(m, n, shards)
                yes = "yes" if splits(m, n, shards) else "no"
                print(f"| {name} | {n} | {yes} | {f(t['weights'] / GB, 2)} | {f(t['act'] / GB, 2)} | {f(t['hess'] / GB, 2)} | "
                      f"{f(t['partials'] / GB, 2)} | {f(t['gather'] / GB, 2)} | {f(sum(t.values()) / GB, 2)} |")

    for windows in (128, 1024):
        shards = shards_for(windows)
        print(f"\n### Hessian bytes received per rank per block, GB ({shards} shards)\n")
        print("| block | N | all-gather in rounds, one Hessian per linear (2ec6295) | all-gather in rounds, one per run (committed) | chain in shard order | ordered reduce-scatter + all-gather |")
        print("|---|---|---|---|---|---|")
        for name, (m, _) in MODELS.items():
            for n in RANKS[1:]:
                print(f"| {name} | {n} | {f(allgather_bytes(m, n, shards, per_linear=True) / GB, 0)} | "
                      f"{f(allgather_bytes(m, n, shards) / GB, 0)} | {f(chain_bytes(m, n, shards) / GB, 0)} | "
                      f"{f(alltoall_bytes(m, n, shards) / GB, 0)} |")

    print("\n### Solved results broadcast per block, GB each rank takes in (committed; N > 1, split)\n")
    print("| block | as float64 (committed) | codes 1 byte, dequantized float32 (best) |")
    print("|---|---|---|")
    for name, (m, _) in MODELS.items():
        print(f"| {name} | {f(broadcast_bytes(m) / GB, 2)} | {f(broadcast_bytes(m, committed=False) / GB, 2)} |")

    for windows in (128, 1024):
        shards = shards_for(windows)
        tokens = windows * SEQ
        print(f"\n### Estimated s per block at the H100 rate, {windows} windows ({shards} shards); "
              f"reductions at {link_gbs:g} GB/s per rank, weights at {disk_gbs:g} GB/s (assumed)\n")
        print("| block | N | forwards + Hessians, split (runs + 2 forwards) | solves, committed (in turn within a run) | "
              "results broadcast (committed) | forwards + Hessians, split (stages + 2 forwards, best) | "
              "solves bin-packed by stage | all-gather | chain / reduce-scatter | "
              "weights read | 2ec6295 total | committed total | best total |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, (m, _) in MODELS.items():
            g = gptq_flops(m, tokens, SEQ)
            g_old = gptq_flops(m, tokens, SEQ, per_linear=True)
            g_best = gptq_flops(m, tokens, SEQ, best=True)
            for n in RANKS:
                busy = min(n, shards)
                split = splits(m, n, shards)
                fh = (g["fwd"] + g["hess"]) / busy / r_gpu
                fh_best = (g_best["fwd"] + g_best["hess"]) / busy / r_gpu
                s_com = solve_committed_flops(m, n) / r_gpu
                bc = broadcast_bytes(m) / GB / link_gbs if n > 1 else 0.0
                s_spread = solve_critical_flops(m, n) / r_gpu
                ag = allgather_bytes(m, n, shards) / GB / link_gbs
                best_red = min(chain_bytes(m, n, shards), alltoall_bytes(m, n, shards)) / GB / link_gbs
                if any(l.count > 1 for l in m["linears"]) and n > 1:  # expert owners
                    dense = dict(m, linears=[l for l in m["linears"] if l.count == 1])
                    best_red = (min(chain_bytes(dense, n, shards), alltoall_bytes(dense, n, shards))
                                + routed_rows_bytes(m, tokens, n)) / GB / link_gbs
                best_bc = broadcast_bytes(m, committed=False) / GB / link_gbs if n > 1 else 0.0
                wr = params(m) * 2 / GB / disk_gbs
                one = sum(g.values()) / r_gpu + wr
                one_old = sum(g_old.values()) / r_gpu + wr
                old = ((g_old["fwd"] + g_old["hess"]) / busy / r_gpu + g_old["solve"] / r_gpu
                       + allgather_bytes(m, n, shards, per_linear=True) / GB / link_gbs + wr) if split else one_old
                committed = fh + s_com + bc + ag + wr if split else one
                tag = '' if split or n == 1 else ' (no split)'
                print(f"| {name} | {n} | {f(fh)} | {f(s_com)} | {f(bc)} | {f(fh_best)} | {f(s_spread)} | {f(ag)} | "
                      f"{f(best_red)} | {f(wr)} | {f(old)}{tag} | {f(committed)}{tag} | "
                      f"{f(fh_best + s_spread + best_bc + best_red + wr)} |")

    # MoE: the experts' Hessians against sending the routed rows to an expert's owner
    m = MODELS["DeepSeek-V3 MoE block (3-60)"][0]
    experts = [l for l in m["linears"] if l.count > 1]
    h_exp = sum(l.n_in ** 2 * 8 * l.count for l in experts)
    h_run = sum(l.n_in ** 2 * 8 * l.count for l in hessians(m) if l.count > 1)
    rows = 128 * SEQ * 8 * (7168 + 2048) * 2
    print(f"\nMoE block: routed experts' Hessians {f(h_run / GB, 1)} GB per block, one per gate/up run and one "
          f"per down (one per linear: {f(h_exp / GB, 1)} GB); routed rows "
          f"(128 x {SEQ} tokens x 8 experts x (7168 + 2048) values x 2 bytes) {f(rows / GB, 2)} GB")


if __name__ == "__main__":
    import sys
    # the medians measured on this machine (docs/scale.md); pass others to recompute
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 19.59,
         float(sys.argv[2]) if len(sys.argv) > 2 else 1.19)

#!/usr/bin/python3
"""Independent plain-PyTorch reference for Quantscope's forward pass and perplexity.

Written straight from the transformers modelling code's maths (Llama/Mistral/Qwen2, Qwen1.5-MoE's
sparse block with its shared expert, and OPT), with
its own safetensors reader, so it shares nothing with the C++ engine. Used by tests (logits of a
synthetic model) and by bench/ (PyTorch eager tokens/s on the same inputs).

  hf_reference.py logits MODEL_DIR IDS_FILE OUT_FILE      ids: whitespace-separated int rows
  hf_reference.py perplexity MODEL_DIR IDS_FILE SEQ_LEN [MAX_WINDOWS] [THREADS]
  hf_reference.py fidelity BASE_DIR QUANT_DIR IDS_FILE SEQ_LEN MAX_WINDOWS
      KL(base || quant), Δp and top-1 agreement over positions 1..L-1 of each window (llama.cpp's
      --kl-divergence definitions), from each model's fp32 logits, in float64
"""
import json
import math
import struct
import sys
import time

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I8": torch.int8, "U8": torch.uint8}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        buf = bytearray(data[base + b:base + end])
        t = torch.frombuffer(buf, dtype=DTYPES[e["dtype"]]) if buf else torch.empty(0, dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).float()
    return out


def load(model_dir):
    cfg = json.load(open(f"{model_dir}/config.json"))
    try:
        idx = json.load(open(f"{model_dir}/model.safetensors.index.json"))
        w = {}
        for f in sorted(set(idx["weight_map"].values())):
            w.update(read_safetensors(f"{model_dir}/{f}"))
    except FileNotFoundError:
        w = read_safetensors(f"{model_dir}/model.safetensors")
    return cfg, w


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def causal_attention(q, k, v, scale):
    T = q.shape[-2]
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, 1)
    v = v.repeat_interleave(groups, 1)
    s = (q @ k.transpose(-1, -2)) * scale
    s = s + torch.full((T, T), float("-inf"), device=s.device, dtype=s.dtype).triu(1)
    return torch.softmax(s, -1) @ v


def ggml_q8_0_round(x):
    """x as llama.cpp's CPU backend feeds it to a matmul with a Q8_0 or Q4_0 weight: ggml-cpu
    first quantizes the activation rows to Q8_0 blocks (quantize_row_q8_0, x86: per 32 values
    d = amax/127 stored as f16, codes round-half-even(x * (127/amax))) and multiplies the integer
    codes; the result is the dot product with codes * f16(d)."""
    b = x.reshape(*x.shape[:-1], -1, 32)
    amax = b.abs().amax(-1, keepdim=True)
    inverse = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
    return (torch.round(b * inverse) * (amax / 127).half().float()).reshape(x.shape)


def llama_logits(cfg, w, ids, rounded_inputs=()):
    """rounded_inputs: weight names whose matmul input is rounded by ggml_q8_0_round first."""
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads", nh)
    hd = cfg.get("head_dim", H // nh)
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", cfg.get("rope_parameters", {}).get("rope_theta", 10000.0))
    B, T = ids.shape
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = torch.outer(torch.arange(T).float(), inv)
    emb = torch.cat([freqs, freqs], -1)
    # As transformers: cos/sin in fp32, then in the weights' dtype and device.
    like = w["model.embed_tokens.weight"]
    cos, sin = emb.cos().to(like.device, like.dtype), emb.sin().to(like.device, like.dtype)

    def rot(x):
        return torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], -1)

    def lin(x, name):
        if name + ".weight" in rounded_inputs:
            x = ggml_q8_0_round(x)
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def swiglu(h, m):
        return lin(torch.nn.functional.silu(lin(h, m + "gate_proj")) * lin(h, m + "up_proj"),
                   m + "down_proj")

    def qwen_moe(h, m):
        # Qwen1.5-MoE (transformers Qwen2MoeSparseMoeBlock): softmax over every expert's router
        # logit, the top k weighted by their probabilities (renormalised only with
        # norm_topk_prob), plus the shared expert scaled by sigmoid(shared_expert_gate(h)).
        probs = torch.softmax(lin(h, m + "gate"), -1)
        top, chosen = probs.topk(cfg["num_experts_per_tok"], -1)
        if cfg.get("norm_topk_prob", False):
            top = top / top.sum(-1, keepdim=True)
        out = torch.zeros_like(h)
        for e in range(cfg["num_experts"]):
            weight = (top * (chosen == e)).sum(-1, keepdim=True)
            out = out + weight * swiglu(h, f"{m}experts.{e}.")
        if m + "shared_expert.gate_proj.weight" in w:
            out = out + torch.sigmoid(lin(h, m + "shared_expert_gate")) * swiglu(h, m + "shared_expert.")
        return out

    x = w["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").view(B, T, nh, hd).transpose(1, 2)
        k = lin(h, p + "self_attn.k_proj").view(B, T, nkv, hd).transpose(1, 2)
        v = lin(h, p + "self_attn.v_proj").view(B, T, nkv, hd).transpose(1, 2)
        q = q * cos + rot(q) * sin
        k = k * cos + rot(k) * sin
        a = causal_attention(q, k, v, 1.0 / math.sqrt(hd)).transpose(1, 2).reshape(B, T, nh * hd)
        x = x + lin(a, p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if p + "mlp.gate.weight" in w:
            x = x + qwen_moe(h, p + "mlp.")
        else:
            x = x + swiglu(h, p + "mlp.")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = "model.embed_tokens.weight" if cfg.get("tie_word_embeddings", False) else "lm_head.weight"
    if head in rounded_inputs:
        x = ggml_q8_0_round(x)
    return x @ w[head].T


def opt_logits(cfg, w, ids):
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    hd = H // nh
    B, T = ids.shape
    ln = torch.nn.functional.layer_norm

    def lin(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    x = w["model.decoder.embed_tokens.weight"][ids] + w["model.decoder.embed_positions.weight"][2:2 + T]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.decoder.layers.{i}."
        h = ln(x, (H,), w[p + "self_attn_layer_norm.weight"], w[p + "self_attn_layer_norm.bias"])
        q = lin(h, p + "self_attn.q_proj").view(B, T, nh, hd).transpose(1, 2)
        k = lin(h, p + "self_attn.k_proj").view(B, T, nh, hd).transpose(1, 2)
        v = lin(h, p + "self_attn.v_proj").view(B, T, nh, hd).transpose(1, 2)
        a = causal_attention(q, k, v, hd ** -0.5).transpose(1, 2).reshape(B, T, H)
        x = x + lin(a, p + "self_attn.out_proj")
        h = ln(x, (H,), w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"])
        x = x + lin(torch.relu(lin(h, p + "fc1")), p + "fc2")
    x = ln(x, (H,), w["model.decoder.final_layer_norm.weight"], w["model.decoder.final_layer_norm.bias"])
    return x @ w["model.decoder.embed_tokens.weight"].T


def logits(cfg, w, ids, rounded_inputs=()):
    if cfg["model_type"] == "opt":
        assert not rounded_inputs
        return opt_logits(cfg, w, ids)
    return llama_logits(cfg, w, ids, rounded_inputs)


def fidelity(base_dir, quant_dir, ids_file, L, max_windows):
    """Prints the fidelity figures of quant against base as JSON, with what a comparison with
    another implementation needs to bound its tolerance: the largest |logit| and, per position,
    E_p|log(p/q) - KL| (how strongly KL moves with the base logits) and the top-two margins."""
    ids = [int(t) for t in open(ids_file).read().split()]
    n = min(len(ids) // L, max_windows)
    windows = torch.tensor(ids[:n * L]).view(n, L)
    base_cfg, base_w = load(base_dir)
    quant_cfg, quant_w = load(quant_dir)
    kl, dp, nll_b, nll_q, same, sens, margin = [], [], [], [], [], [], []
    max_logit = 0.0
    for i in range(n):
        x = logits(base_cfg, base_w, windows[i:i + 1])[0, :-1]
        y = logits(quant_cfg, quant_w, windows[i:i + 1])[0, :-1]
        max_logit = max(max_logit, x.abs().max().item(), y.abs().max().item())
        lp = torch.log_softmax(x.double(), -1)
        lq = torch.log_softmax(y.double(), -1)
        p = lp.exp()
        ratio = lp - lq
        k = (p * ratio).sum(-1)
        t = windows[i, 1:].unsqueeze(-1)
        nb = -lp.gather(-1, t).squeeze(-1)
        nq = -lq.gather(-1, t).squeeze(-1)
        kl += k.tolist()
        dp += ((-nq).exp() - (-nb).exp()).tolist()
        nll_b += nb.tolist()
        nll_q += nq.tolist()
        same += (x.argmax(-1) == y.argmax(-1)).tolist()
        sens += (p * (ratio - k.unsqueeze(-1)).abs()).sum(-1).tolist()
        tx, ty = x.topk(2, -1).values, y.topk(2, -1).values
        margin += torch.minimum(tx[:, 0] - tx[:, 1], ty[:, 0] - ty[:, 1]).tolist()
    m = len(kl)
    print(json.dumps({
        "positions": m,
        "kl_mean": sum(kl) / m,
        "delta_p_mean": sum(dp) / m,
        "delta_p_rms": math.sqrt(sum(d * d for d in dp) / m),
        "same_top": sum(same) / m,
        "ln_ppl_ratio": (sum(nll_q) - sum(nll_b)) / m,
        "max_abs_logit": max_logit,
        "kl_logit_sensitivity_mean": sum(sens) / m,
        "top_margins": margin,
    }))


def main():
    torch.set_grad_enabled(False)
    cmd, model_dir = sys.argv[1], sys.argv[2]
    if cmd == "fidelity":
        return fidelity(model_dir, sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    cfg, w = load(model_dir)
    if cmd == "logits":
        rows = [[int(t) for t in line.split()] for line in open(sys.argv[3]) if line.strip()]
        out = logits(cfg, w, torch.tensor(rows))
        with open(sys.argv[4], "w") as f:
            for v in out.flatten().tolist():
                f.write(f"{v!r}\n")
    elif cmd == "perplexity":
        ids = [int(t) for t in open(sys.argv[3]).read().split()]
        L = int(sys.argv[4])
        maxw = int(sys.argv[5]) if len(sys.argv) > 5 else 0
        torch.set_num_threads(int(sys.argv[6]) if len(sys.argv) > 6 else torch.get_num_threads())
        n = len(ids) // L
        if maxw:
            n = min(n, maxw)
        all_ids = torch.tensor(ids[:n * L]).view(n, L)
        nll = 0.0
        t0 = time.perf_counter()
        for i in range(n):
            lg = logits(cfg, w, all_ids[i:i + 1])
            lp = torch.log_softmax(lg[0, :-1], -1)
            nll -= lp.gather(-1, all_ids[i, 1:].unsqueeze(-1)).double().sum().item()
        dt = time.perf_counter() - t0
        mean = nll / (n * (L - 1))
        print(json.dumps({"windows": n, "seq_len": L, "mean_nll": mean, "perplexity": math.exp(mean),
                          "tokens_per_second": n * L / dt}))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()

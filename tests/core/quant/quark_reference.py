#!/usr/bin/python3
"""Reference outputs for tst_quant_torchref, computed with Python torch (1.13 here) by the same
torch operations AMD Quark uses (quark/torch/quantization/observer/observer.py,
quark/torch/kernel/hw_emulation/hw_emulation_interface.py, quark/torch/quantization/utils.py).
Written for this project from Quark's definitions; only formats torch 1.13 can express are
covered (no float8 dtypes here).

Usage: quark_reference.py OUTDIR   -> OUTDIR/index.json + OUTDIR/<case>.bin (float32 LE)
"""
import json
import os
import sys

import torch

EPS = torch.finfo(torch.float32).eps


def int_qparams(min_val, max_val, qmin, qmax, symmetric):
    # UniformScalingObserver.calculate_int_quant_params (int32 zero point branch)
    min_neg = torch.clamp(min_val, max=0)
    max_pos = torch.clamp(max_val, min=0)
    eps = torch.tensor(EPS)
    zp = torch.zeros(min_neg.size(), dtype=torch.int32)
    if symmetric:
        max_pos = torch.max(-min_neg, max_pos)
        scale = max_pos / (float(qmax - qmin) / 2)
        scale = torch.max(scale, eps)
    else:
        scale = (max_pos - min_neg) / float(qmax - qmin)
        scale = torch.max(scale, eps)
        zp = qmin - torch.round(min_neg / scale).to(torch.int)
        zp = torch.clamp(zp, qmin, qmax)
    return scale, zp


def fq_per_channel(x, scale, zp, axis, qmin, qmax):
    # Quark's fake_quantize_per_channel_affine (python version)
    sl = (None,) * axis + (...,) + (None,) * (x.ndim - axis - 1)
    scale = scale[sl]
    zp = zp[sl]
    scale = torch.clamp(scale, min=torch.finfo(scale.dtype).tiny)
    inv = 1.0 / scale
    q = torch.clamp(torch.round(x * inv) + zp, qmin, qmax)
    return (q - zp) * scale


def int_per_group(x, group, qmin, qmax, symmetric):
    # PerGroupMinMaxObserver (ch_axis=-1) + fake_quantize_int_per_group_affine
    rows = x.reshape(-1, group)
    mn, mx = torch.aminmax(rows.float(), dim=1)
    mn, mx = mn.to(x.dtype), mx.to(x.dtype)
    scale, zp = int_qparams(mn, mx, qmin, qmax, symmetric)
    out = fq_per_channel(rows.float(), scale.float().reshape(-1), zp.reshape(-1), 0, qmin, qmax)
    return out.to(x.dtype).reshape(x.shape), scale.float()


def int_per_tensor(x, qmin, qmax, symmetric):
    mn, mx = torch.aminmax(x.float())
    scale, zp = int_qparams(mn.to(x.dtype), mx.to(x.dtype), qmin, qmax, symmetric)
    out = torch.fake_quantize_per_tensor_affine(x.float(), scale.float(), zp, qmin, qmax)
    return out.to(x.dtype), scale.float().reshape(1)


def int_per_channel(x, qmin, qmax, symmetric):
    mn, mx = torch.aminmax(x.float(), dim=1)
    scale, zp = int_qparams(mn.to(x.dtype), mx.to(x.dtype), qmin, qmax, symmetric)
    out = torch.fake_quantize_per_channel_affine(x.float(), scale.float(), zp, 0, qmin, qmax)
    return out.to(x.dtype), scale.float()


def even_round(amax, mbits, emax):
    # quark.torch.quantization.utils.even_round
    a = amax.to(torch.float32).clone()
    nan_mask = torch.isnan(a)
    zero_mask = a == 0
    bits = a.view(torch.int32)
    bits.add_(1 << (23 - mbits - 1))
    bits.bitwise_and_(((1 << 9) - 1) << 23)
    a = bits.view(torch.float32)
    a.masked_fill_(zero_mask, 2.0 ** -126)
    a.masked_fill_(nan_mask, float("nan"))
    a = torch.floor(torch.log2(a)) - emax
    return torch.exp2(torch.clamp(a, -127, 127))


def mx_scales(x, mbits, emax):
    blocks = x.reshape(-1, 32)
    amax, _ = torch.max(torch.abs(blocks), dim=-1)
    return even_round(amax, mbits, emax)


def mxint8(x):
    blocks = x.reshape(-1, 32).float()
    amax, _ = torch.max(torch.abs(blocks), dim=-1)
    scale = even_round(amax, 8, 0) / 64
    zp = torch.zeros_like(scale).to(torch.int32)
    return fq_per_channel(blocks, scale, zp, 0, -127, 127).reshape(x.shape)


def bfp16(x):
    # fake_quantize_bfp16 with block 8 along the last axis
    blocks = torch.nan_to_num(x.reshape(-1, 8).float(), nan=0.0, posinf=0.0, neginf=0.0)
    amax, _ = torch.max(torch.abs(blocks), dim=-1)

    def scale_of(a):
        s = torch.pow(2, torch.floor(torch.log2(a)) - 6)
        return s.masked_fill(s == 0.0, EPS)

    zp = torch.zeros(amax.shape, dtype=torch.int32)
    s = scale_of(amax)
    q = fq_per_channel(blocks, s, zp, 0, -129, 128) / s.unsqueeze(-1)
    over = torch.logical_or(q >= 128, q < -128).any(dim=-1)
    amax = amax * torch.pow(2, over.to(torch.float32))
    s = scale_of(amax)
    return fq_per_channel(blocks, s, zp, 0, -128, 127).reshape(x.shape)


def t_exponent(t):
    t = torch.nan_to_num(t, nan=0, posinf=0, neginf=0)
    return ((t.view(torch.int32) >> 23) & 0xFF) - 127


def mx6(x):
    # fake_quantize_mx6_mx9 with quant_bit 5, block 32 along the last axis
    blocks = x.reshape(-1, 32).float()
    clean = torch.nan_to_num(blocks, nan=0.0, posinf=0.0, neginf=0.0)
    amax, _ = torch.max(torch.abs(clean), dim=-1, keepdim=True)
    max_exp = t_exponent(amax)
    low = (max_exp - t_exponent(blocks)) >= 1
    low = low.reshape(low.shape[0], -1, 2)
    low = (low.sum(-1, keepdim=True) == 2).repeat(1, 1, 2).reshape(blocks.shape)
    shared = low * (-1) + max_exp
    scale = torch.pow(2.0, shared - 5 + 2)
    qmax = torch.clamp_max(torch.pow(2.0, max_exp.to(torch.float64) + 1) - scale,
                           torch.finfo(torch.float32).max).to(torch.float32) / scale
    out = torch.clamp(torch.round(blocks / scale), -qmax, qmax) * scale
    return out.reshape(x.shape)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(1234)
    w = torch.randn(16, 256) * 0.05
    w[3, 17] = 0.9
    w[5, :32] = 0.0
    w[7, 64:96] = -0.25
    act = torch.randn(16, 256) * 3
    cases = {}

    def put(name, tensor):
        t = tensor.detach().to(torch.float32).contiguous()
        with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
            f.write(t.numpy().tobytes())
        cases[name] = list(t.shape)

    put("w", w)
    put("act", act)
    for dtype_name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        x = w.to(dt)
        for name, qmin, qmax in (("int4", -8, 7), ("uint4", 0, 15), ("int8", -128, 127)):
            for sym in (True, False):
                tag = f"{name}_g32_{'sym' if sym else 'asym'}_{dtype_name}"
                out, scale = int_per_group(x, 32, qmin, qmax, sym)
                put("out_" + tag, out)
                put("scale_" + tag, scale)
        out, scale = int_per_tensor(x, -128, 127, True)
        put(f"out_int8_tensor_sym_{dtype_name}", out)
        out, scale = int_per_channel(x, 0, 255, False)
        put(f"out_uint8_channel_asym_{dtype_name}", out)
    put("scale_mxfp4", mx_scales(act, 1, 2))
    put("scale_mxfp6_e3m2", mx_scales(act, 2, 4))
    put("scale_mxfp8_e4m3", mx_scales(act, 3, 8))
    put("out_mxint8", mxint8(act))
    put("out_bfp16", bfp16(act))
    put("out_mx6", mx6(act))
    with open(os.path.join(out_dir, "index.json"), "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f)


if __name__ == "__main__":
    main()

#pragma once

#include <ATen/ATen.h>

namespace qs {

// Causal (optionally sliding-window) multi-head attention without the [B, nh, T, T] score
// tensor: q [B, nh, T, d], k/v [B, nkv, T, d] with nh a multiple of nkv (query head h reads KV
// head h / (nh / nkv), transformers' repeat_kv). Token i sees keys j <= i, and with window > 0
// only j > i - window. Returns [B, nh, T, d] (a transposed view of [B, T, nh, d] memory, which
// is what the output projection reads).
//
// LibTorch >= 2.1 runs its fused scaled_dot_product_attention; LibTorch 1.x has none, and float32
// CPU tensors go through the loop of CausalAttention.cpp (scores of one query row at a time,
// softmax in float32 as transformers computes it). Returns an undefined tensor when neither
// applies (1.x with another device or dtype): the caller then uses the materialising path.
at::Tensor fusedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                double scale, int64_t window, const at::Tensor& mask);

// The float32 CPU loop alone (any LibTorch), for tests and benchmarks that compare it with the
// materialising path.
at::Tensor causalAttentionCpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              double scale, int64_t window);

} // namespace qs

#!/usr/bin/python3
"""Plain PyTorch GPTQ of one layer, the standard algorithm as the GPTQ paper and AutoGPTQ's
`fasterquant` write it (blocksize 128, damp 0.01, asymmetric min/max grid per group taken when
the loop reaches the group's first column, no act order), for bench_algorithms.py to time
Quantscope's GPTQ against on the same numbers.

usage: gptq_reference.py W.f32 X.f32 ROWS COLS TOKENS THREADS REPS BITS GROUP OUT.f32
prints {"hessian_seconds", "quantize_seconds"} (medians) as JSON; writes the dequantized weight.
"""
import json
import statistics
import sys
import time

import numpy as np
import torch


def hessian(x):
    # AutoGPTQ's add_batch with one batch: H = 2/n * X^T X (float32).
    x = x.float()
    n = x.shape[0]
    x = x * (2.0 / n) ** 0.5
    return x.t().matmul(x)


def find_params(w, maxq):
    # AutoGPTQ's Quantizer.find_params(weight=True), asymmetric, per row of the group.
    xmin = torch.minimum(w.min(1).values, torch.zeros(w.shape[0]))
    xmax = torch.maximum(w.max(1).values, torch.zeros(w.shape[0]))
    both = (xmin == 0) & (xmax == 0)
    xmin[both], xmax[both] = -1, +1
    scale = (xmax - xmin) / maxq
    zero = torch.round(-xmin / scale)
    return scale.unsqueeze(1), zero.unsqueeze(1)


def quantize(x, scale, zero, maxq):
    q = torch.clamp(torch.round(x / scale) + zero, 0, maxq)
    return scale * (q - zero)


def fasterquant(W, H, bits, groupsize, blocksize=128, percdamp=0.01):
    W = W.clone().float()
    H = H.clone()
    maxq = 2 ** bits - 1
    columns = W.shape[1]
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    Q = torch.zeros_like(W)
    damp = percdamp * torch.mean(torch.diag(H))
    diag = torch.arange(columns)
    H[diag, diag] += damp
    H = torch.linalg.cholesky(H)
    H = torch.cholesky_inverse(H)
    Hinv = torch.linalg.cholesky(H, upper=True)
    scale = zero = None
    for i1 in range(0, columns, blocksize):
        i2 = min(i1 + blocksize, columns)
        count = i2 - i1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        for i in range(count):
            w = W1[:, i]
            d = Hinv1[i, i]
            if (i1 + i) % groupsize == 0:
                scale, zero = find_params(W[:, (i1 + i):(i1 + i + groupsize)], maxq)
            q = quantize(w.unsqueeze(1), scale, zero, maxq).flatten()
            Q1[:, i] = q
            err1 = (w - q) / d
            W1[:, i:] -= err1.unsqueeze(1).matmul(Hinv1[i, i:].unsqueeze(0))
            Err1[:, i] = err1
        Q[:, i1:i2] = Q1
        W[:, i2:] -= Err1.matmul(Hinv[i1:i2, i2:])
    return Q


def main():
    wp, xp, rows, cols, tokens, threads, reps, bits, group, outp = sys.argv[1:11]
    rows, cols, tokens, threads, reps = map(int, (rows, cols, tokens, threads, reps))
    torch.set_num_threads(threads)
    W = torch.from_numpy(np.fromfile(wp, dtype=np.float32).reshape(rows, cols))
    X = torch.from_numpy(np.fromfile(xp, dtype=np.float32).reshape(tokens, cols))
    th, tq, ch, cq = [], [], [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        H = hessian(X)
        t1, c1 = time.perf_counter(), time.process_time()
        Q = fasterquant(W, H, int(bits), int(group))
        t2, c2 = time.perf_counter(), time.process_time()
        th.append(t1 - t0)
        tq.append(t2 - t1)
        ch.append(c1 - c0)
        cq.append(c2 - c1)
    Q.contiguous().numpy().tofile(outp)
    print(json.dumps({"threads": torch.get_num_threads(), "reps": reps,
                      "hessian_seconds": statistics.median(th),
                      "quantize_seconds": statistics.median(tq),
                      "hessian_cpu_seconds": statistics.median(ch),
                      "quantize_cpu_seconds": statistics.median(cq)}))


if __name__ == "__main__":
    main()

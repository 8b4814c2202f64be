#!/usr/bin/env python3
"""Peer figures for bench_ops.c: torch.optim.AdamW on the same shapes.

Usage: bench_ops_peer.py DEVICE THREADS REPS
Prints one line per figure, "NAME GB/s", counting AdamW's traffic as bench_ops.c does (read
param, grad, m, v; write param, m, v: 28 bytes per f32 element), median of REPS steps after
two warm-up steps. torch uses its fused kernel where it has one (fused=True), else foreach.
DEVICE is cpu or cuda.
"""
import sys
import time

import torch


def median_step(params, dev, reps):
    for p in params:
        p.grad = torch.full_like(p, 1e-3)
    try:
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
        opt.step()
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=True)
    opt.step()
    opt.step()
    ts = []
    for _ in range(reps):
        if dev == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.step()
        if dev == "cuda":
            torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    dev, threads, reps = sys.argv[1], int(sys.argv[2]), max(1, int(sys.argv[3]))
    if threads > 0:
        torch.set_num_threads(threads)
    for name, shapes in (("adamw_16M", [16 << 20]), ("adamw_1000x4K", [4096] * 1000)):
        params = [torch.nn.Parameter(torch.rand(n, device=dev) * 1e-3) for n in shapes]
        t = median_step(params, dev, reps)
        print(f"{name} {28.0 * sum(shapes) / t / 1e9:.4f}", flush=True)


if __name__ == "__main__":
    main()

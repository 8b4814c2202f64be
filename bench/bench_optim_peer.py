#!/usr/bin/env python3
"""Peer figures for bench_optim.c: torch.optim on the same shapes, devices and values.

Usage: bench_optim_peer.py DEVICE THREADS REPS
Prints "NAME VALUE" lines: for AdamW (28 bytes of traffic per f32 element) and SGD with
momentum 0.9 (20 bytes), with foreach=True and with fused=True (skipped where torch has no
fused kernel for the device), the state traffic in GB/s on one tensor of 1M, 16M and 64M
elements and on 1,000 tensors of 4K; for torch.optim.Muon (defaults, nesterov, 5 steps) on
square matrices, steps per second. Median of REPS steps after two warm-up steps.
"""
import sys
import time

import torch


def median(fn, dev, reps):
    fn()
    fn()
    ts = []
    for _ in range(reps):
        if dev == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if dev == "cuda":
            torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def params_of(shapes, dev):
    ps = []
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        base = (torch.arange(n, device=dev) % 977 - 488).float() * 1e-5
        p = torch.nn.Parameter(base.reshape(shape).clone())
        p.grad = base.reshape(shape).clone()
        ps.append(p)
    return ps


def main():
    dev, threads, reps = sys.argv[1], int(sys.argv[2]), max(1, int(sys.argv[3]))
    if threads > 0:
        torch.set_num_threads(threads)
    sizes = (("1M", [(1 << 20,)]), ("16M", [(16 << 20,)]), ("64M", [(64 << 20,)]), ("1000x4K", [(4096,)] * 1000))
    for kind, per in (("adamw", 28.0), ("sgd_momentum", 20.0)):
        for tag, shapes in sizes:
            for mode in ("foreach", "fused"):
                ps = params_of(shapes, dev)
                kw = {mode: True}
                try:
                    if kind == "adamw":
                        opt = torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, **kw)
                    else:
                        opt = torch.optim.SGD(ps, lr=1e-3, momentum=0.9, **kw)
                    t = median(opt.step, dev, reps)
                except (RuntimeError, TypeError):
                    continue
                n = sum(p.numel() for p in ps)
                print(f"{kind}_{mode}_{tag} {per * n / t / 1e9:.4f}", flush=True)
                del opt, ps
    muon = getattr(torch.optim, "Muon", None)
    if muon is not None:
        for r in ([1024] if dev == "cpu" else [1024, 4096, 8192]):
            ps = params_of([(r, r)], dev)
            opt = muon(ps, lr=0.02)
            t = median(opt.step, dev, reps)
            print(f"muon_{r} {1.0 / t:.6f}", flush=True)


if __name__ == "__main__":
    main()

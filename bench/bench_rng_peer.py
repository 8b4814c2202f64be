#!/usr/bin/env python3
"""Peer figures for bench_rng.c: numpy's Generator.standard_normal (default_rng: PCG64 and the
ziggurat) on one core, into a preallocated array, so the figure is generation alone.

Usage: bench_rng_peer.py N REPS
Prints "standard_normal_f32 VALUES_PER_S" and "standard_normal_f64 VALUES_PER_S" (median of
REPS runs after one warm-up).
"""
import sys
import time

import numpy as np


def median_time(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    n = int(sys.argv[1])
    reps = max(1, int(sys.argv[2]))
    rng = np.random.default_rng(42)
    for dtype, name in ((np.float32, "f32"), (np.float64, "f64")):
        out = np.empty(n, dtype=dtype)
        t = median_time(lambda: rng.standard_normal(out=out, dtype=dtype), reps)
        print(f"standard_normal_{name} {n / t:.6g}", flush=True)


if __name__ == "__main__":
    main()

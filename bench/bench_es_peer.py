#!/usr/bin/env python3
"""Peer figure for bench_es.c: numpy's Generator.standard_normal into a preallocated float32
array (PCG64 and the ziggurat), in PROCS processes at once, each filling N values, so that the
figure matches a fill that runs on PROCS threads.

Usage: bench_es_peer.py N REPS PROCS
Prints "standard_normal_f32 VALUES_PER_S": PROCS * N over the median wall time of REPS rounds
(after one warm-up round) in which every process fills its array once.
"""
import multiprocessing as mp
import sys
import time

import numpy as np


def worker(n, rounds, start, done):
    rng = np.random.default_rng(42)
    out = np.empty(n, dtype=np.float32)
    for _ in range(rounds):
        start.wait()
        rng.standard_normal(out=out, dtype=np.float32)
        done.wait()


def main():
    n = int(sys.argv[1])
    reps = max(1, int(sys.argv[2]))
    procs = max(1, int(sys.argv[3]))
    rounds = reps + 1
    # The parent joins both barriers, so it sees each round start and end.
    start, done = mp.Barrier(procs + 1), mp.Barrier(procs + 1)
    ps = [mp.Process(target=worker, args=(n, rounds, start, done)) for _ in range(procs)]
    for p in ps:
        p.start()
    ts = []
    for _ in range(rounds):
        start.wait()
        t0 = time.perf_counter()
        done.wait()
        ts.append(time.perf_counter() - t0)
    for p in ps:
        p.join()
    ts = sorted(ts[1:])
    print(f"standard_normal_f32 {procs * n / ts[len(ts) // 2]:.6g}", flush=True)


if __name__ == "__main__":
    main()

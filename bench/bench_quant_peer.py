#!/usr/bin/env python3
"""Peer figures for bench_quant.c: gguf-py's numpy codec on the same rows.

Usage: bench_quant_peer.py ROWS_F32 ROW_LEN REPS
Prints one line per figure, "encode|decode TYPE MB/s" (MB of f32, median of REPS runs after
one warm-up), for every type gguf-py's quants module can quantize or dequantize.
"""
import sys
import time

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants


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
    rows = np.fromfile(sys.argv[1], dtype=np.float32).reshape(-1, int(sys.argv[2]))
    reps = max(1, int(sys.argv[3]))
    mb = rows.nbytes / 1e6
    for t in GGMLQuantizationType:
        name = t.name.lower().replace("_k", "_K")
        bs, ts = GGML_QUANT_SIZES[t]
        if rows.shape[1] % bs:
            continue
        try:
            q = quants.quantize(rows, t)
            te = median_time(lambda: quants.quantize(rows, t), reps)
            print(f"encode {name} {mb / te:.3f}", flush=True)
        except (NotImplementedError, quants.QuantError):
            q = None
        if q is None:
            continue  # no bytes of this type to decode without a quantizer
        try:
            td = median_time(lambda: quants.dequantize(q, t), reps)
            print(f"decode {name} {mb / td:.3f}", flush=True)
        except NotImplementedError:
            pass


if __name__ == "__main__":
    main()

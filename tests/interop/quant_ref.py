#!/usr/bin/env python3
"""Reference side of tests/interop/test_quant_parity.cpp: runs gguf-py's numpy codecs.

Usage: quant_ref.py JOBS_FILE
Each line of JOBS_FILE is one job, fields separated by spaces:
  caps OUT                      write "code can_quantize can_dequantize" per ggml type to OUT
  encode TYPE N IN OUT          IN: float32 rows of N elements; OUT: gguf-py's quantized bytes
  decode TYPE N IN OUT          IN: packed rows of N elements of TYPE; OUT: float32 values
TYPE is the ggml type name as forgia spells it (q4_0, q4_K, bf16, ...). A job that gguf-py
cannot run writes nothing; the C++ side treats a missing output as "not supported by gguf-py".
"""
import sys

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants


def qtype(name):
    return GGMLQuantizationType[name.upper()]


def caps(out):
    lines = []
    for t in GGMLQuantizationType:
        bs, ts = GGML_QUANT_SIZES[t]
        can_q = can_d = 0
        try:
            quants.quantize(np.zeros((1, bs), np.float32), t)
            can_q = 1
        except Exception:
            pass
        try:
            quants.dequantize(np.zeros((1, ts), np.uint8), t)
            can_d = 1
        except Exception:
            pass
        lines.append(f"{t.value} {can_q} {can_d}\n")
    with open(out, "w") as f:
        f.writelines(lines)


def encode(name, n, src, out):
    t = qtype(name)
    x = np.fromfile(src, dtype=np.float32).reshape(-1, n)
    q = quants.quantize(x, t)
    np.ascontiguousarray(q).view(np.uint8).tofile(out)


def decode(name, n, src, out):
    t = qtype(name)
    bs, ts = GGML_QUANT_SIZES[t]
    raw = np.fromfile(src, dtype=np.uint8).reshape(-1, n // bs * ts)
    y = quants.dequantize(raw, t)
    np.ascontiguousarray(y, dtype=np.float32).tofile(out)


def main():
    with open(sys.argv[1]) as f:
        jobs = [line.split() for line in f if line.strip()]
    for job in jobs:
        try:
            if job[0] == "caps":
                caps(job[1])
            elif job[0] == "encode":
                encode(job[1], int(job[2]), job[3], job[4])
            elif job[0] == "decode":
                decode(job[1], int(job[2]), job[3], job[4])
            else:
                raise ValueError(f"unknown job {job[0]}")
        except (NotImplementedError, KeyError) as e:
            print(f"quant_ref: {' '.join(job)}: not supported by gguf-py ({e})", file=sys.stderr)


if __name__ == "__main__":
    main()

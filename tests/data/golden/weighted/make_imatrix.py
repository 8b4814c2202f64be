#!/usr/bin/env python3
"""Writes the two importance-matrix fixtures, imatrix.gguf and imatrix.dat, in the byte
layouts llama.cpp's llama-imatrix writes (tools/imatrix/imatrix.cpp in llama-cpp-python
0.3.36's vendored llama.cpp: save_imatrix and save_imatrix_legacy), from the same collected
statistics. No llama.cpp code is used: the layouts are written out here with struct. The
generator (gen_weighted.cpp) then reads both files with llama.cpp's own loader to make the
expected weights. Usage: make_imatrix.py OUT_DIR
"""
import struct
import sys

import numpy as np

CHUNK_SIZE = 512          # n_ctx / n_parallel of the imagined run
LAST_CHUNK = 12           # imatrix.chunk_count / the legacy trailer
DATASET = "calibration-v1.txt"

# (name, n_per_row, per-expert activation counts); the counts are what llama-imatrix
# accumulates (integers), except 2.5, which it never writes but its loader rounds (lround).
ENTRIES = [
    ("blk.0.attn_q.weight", 256, [37.0]),
    ("blk.0.ffn_down_exps.weight", 256, [12.0, 0.0, 2.5, 700.0]),
    ("blk.1.ffn_up.weight", 512, [5.0]),
    ("output.weight", 256, [0.0]),
]


def stats():
    """Sums of squared activations per column, as f32, deterministic."""
    rng = np.random.default_rng(20261201)
    out = []
    for name, n, counts in ENTRIES:
        rows = []
        for c in counts:
            g = rng.standard_normal(n).astype(np.float32)
            rows.append((g * g * np.float32(max(c, 1.0))).astype(np.float32))
        out.append((name, n, np.array(counts, dtype=np.float32), np.concatenate(rows)))
    return sorted(out, key=lambda e: e[0].encode())


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def pad(n, a=32):
    return (n + a - 1) // a * a


def write_gguf(path, st):
    kv = b""
    kv += gguf_str("general.type") + struct.pack("<i", 8) + gguf_str("imatrix")
    kv += gguf_str("imatrix.datasets") + struct.pack("<iiQ", 9, 8, 1) + gguf_str(DATASET)
    kv += gguf_str("imatrix.chunk_count") + struct.pack("<iI", 4, LAST_CHUNK)
    kv += gguf_str("imatrix.chunk_size") + struct.pack("<iI", 4, CHUNK_SIZE)
    tensors = []  # (name, ne list, f32 data)
    for name, n, counts, sums in st:
        nmat = len(counts)
        tensors.append((name + ".in_sum2", [n, nmat], sums))
        tensors.append((name + ".counts", [1, nmat], counts))
    infos = b""
    off = 0
    for tname, ne, data in tensors:
        ndims = 2 if ne[1] > 1 else 1  # ggml_n_dims drops trailing 1s
        infos += gguf_str(tname) + struct.pack("<I", ndims)
        infos += b"".join(struct.pack("<q", d) for d in ne[:ndims])
        infos += struct.pack("<iQ", 0, off)  # GGML_TYPE_F32
        off += pad(data.nbytes)
    head = b"GGUF" + struct.pack("<Iqq", 3, len(tensors), 4) + kv + infos
    blob = bytearray(head + b"\0" * (pad(len(head)) - len(head)))
    for _, _, data in tensors:
        b = data.astype("<f4").tobytes()
        blob += b + b"\0" * (pad(len(b)) - len(b))
    with open(path, "wb") as f:
        f.write(blob)


def write_dat(path, st):
    out = struct.pack("<i", len(st))
    for name, n, counts, sums in st:
        icounts = [int(np.rint(c)) if c != 2.5 else 3 for c in counts]
        b = name.encode()
        out += struct.pack("<i", len(b)) + b
        ncall = (max(icounts) + CHUNK_SIZE - 1) // CHUNK_SIZE
        nval = len(sums)
        out += struct.pack("<ii", ncall, nval)
        per = nval // len(icounts)
        tmp = np.empty(nval, dtype=np.float32)
        for i in range(nval):
            count = np.float32(icounts[i // per])
            value = np.float32(sums[i])
            if count == 0:
                value, count = np.float32(1.0), np.float32(1.0)
            tmp[i] = (value / count) * np.float32(ncall)
        out += tmp.astype("<f4").tobytes()
    d = DATASET.encode()
    out += struct.pack("<ii", LAST_CHUNK, len(d)) + d
    with open(path, "wb") as f:
        f.write(out)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    st = stats()
    write_gguf(outdir + "/imatrix.gguf", st)
    write_dat(outdir + "/imatrix.dat", st)


if __name__ == "__main__":
    main()

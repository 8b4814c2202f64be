#!/usr/bin/env python3
"""Write a synthetic importance matrix for a source model, in the GGUF imatrix format that
llama.cpp's tools/imatrix writes and tools/quantize reads (common/imatrix-loader.cpp).

usage: gen_imatrix.py MODEL.gguf OUT.imatrix.gguf

What the file holds (the layout llama-imatrix produces):
  kv  general.type         str        "imatrix"
  kv  imatrix.datasets     [str]      ["synthetic"]
  kv  imatrix.chunk_count  u32        CHUNKS
  kv  imatrix.chunk_size   u32        CHUNK_SIZE
  for each matrix-multiplied weight W of ne (ne0, ne1[, n_mat]), in the model's order:
    W.in_sum2   f32  ne (ne0, n_mat)   sums of squared activations, per input column
    W.counts    f32  ne (1, n_mat)     how many activation rows were summed (per expert)
llama-quantize uses in_sum2[j][i] / counts[j] (f32 division; counts are rounded to an
integer first) as the importance of column i for expert j.

The weights that get an entry are those llama-imatrix would see as the first operand of a
matrix multiplication: every 2-D/3-D "*.weight" that is not a norm, except token_embd.weight
(a row lookup), unless the model has no output.weight, where the output projection
multiplies by token_embd.weight. The values are positive and deterministic: a seeded
log-normal spread per column (no python randomness beyond numpy's PCG64 seeded per tensor).

The file is written here byte by byte (no gguf-py: its writer always adds
general.architecture, which llama-imatrix does not write).
"""
import hashlib
import struct
import sys

import numpy as np
import gguf

CHUNKS = 10
CHUNK_SIZE = 512
ALIGN = 32


def seed_of(tensor):
    h = hashlib.sha256(f"imatrix/{tensor}".encode()).digest()
    return int.from_bytes(h[:8], "little")


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def entries(model_path):
    r = gguf.GGUFReader(model_path)
    names = [t.name for t in r.tensors]
    tied = "output.weight" not in names
    out = []
    for t in r.tensors:
        ne = [int(x) for x in t.shape]
        n = t.name
        if len(ne) < 2 or not n.endswith(".weight") or n.endswith("norm.weight"):
            continue
        if n == "token_embd.weight" and not tied:
            continue
        n_mat = ne[2] if len(ne) > 2 else 1
        out.append((n, ne[0], n_mat))
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    ents = entries(sys.argv[1])
    tensors = []  # (name, ne, float32 array)
    count = float(CHUNKS * CHUNK_SIZE)
    for name, ne0, n_mat in ents:
        rng = np.random.default_rng(seed_of(name))
        mean_sq = np.exp(0.75 * rng.standard_normal((n_mat, ne0))).astype(np.float32)
        sums = (mean_sq * np.float32(count)).astype(np.float32)
        tensors.append((name + ".in_sum2", (ne0, n_mat), sums))
        tensors.append((name + ".counts", (1, n_mat), np.full((n_mat, 1), count, np.float32)))

    kv = b""
    kv += gstr("general.type") + struct.pack("<i", 8) + gstr("imatrix")
    kv += gstr("imatrix.datasets") + struct.pack("<iiQ", 9, 8, 1) + gstr("synthetic")
    kv += gstr("imatrix.chunk_count") + struct.pack("<iI", 4, CHUNKS)
    kv += gstr("imatrix.chunk_size") + struct.pack("<iI", 4, CHUNK_SIZE)
    n_kv = 4

    infos = b""
    data = b""
    for name, ne, arr in tensors:
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", x) for x in ne)
        infos += struct.pack("<iQ", 0, len(data))  # type f32, offset in the data blob
        raw = arr.astype("<f4").tobytes()
        data += raw + b"\0" * ((-len(raw)) % ALIGN)

    head = b"GGUF" + struct.pack("<IqQ", 3, len(tensors), n_kv)
    meta = head + kv + infos
    meta += b"\0" * ((-len(meta)) % ALIGN)
    with open(sys.argv[2], "wb") as fh:
        fh.write(meta + data)
    print(f"{sys.argv[2]}: {len(ents)} entries, {len(meta) + len(data)} bytes")


if __name__ == "__main__":
    main()

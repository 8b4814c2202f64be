#!/usr/bin/env python3
"""Self-check of tests/data/golden/llama_quant/: every table case lists exactly the source
model's tensors, in llama.cpp's output order, with types whose block divides each row; the
tiny model's hashes cover the same tensors with the right sizes; the committed tiny source
matches its shapes file. Exits non-zero with a message on the first problem.

usage: check_goldens.py [GOLDEN_DIR]
"""
import hashlib
import os
import re
import sys

import gguf_parse

NAME_TO_BLOCK = {name: (blk, size) for name, blk, size in gguf_parse.GGML_TYPES.values()}


def llama_order(names):
    # llama_model_loader's weights_map: by layer number (none = -1 first), then by name
    def key(n):
        m = re.match(r"blk\.(\d+)\.", n)
        return (int(m.group(1)) if m else -1, n)
    return sorted(names, key=key)


def read_shapes(path):
    tensors = {}
    order = []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "tensor":
            tensors[f[1]] = (f[2], [int(x) for x in f[3].split(",")])
            order.append(f[1])
    return tensors, order


def fail(msg):
    raise SystemExit(f"check_goldens: {msg}")


def main():
    gdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "golden", "llama_quant")
    cases = [l.split("\t")[0] for l in open(os.path.join(gdir, "cases.txt"))
             if not l.startswith("#")]
    models = sorted(f[:-11] for f in os.listdir(gdir) if f.endswith(".shapes.txt"))
    for model in models:
        src, src_order = read_shapes(os.path.join(gdir, model + ".shapes.txt"))
        want_order = llama_order(src_order)
        per_case = {}
        for line in open(os.path.join(gdir, model + ".txt")):
            if line.startswith("#"):
                continue
            c, k, v = line.rstrip("\n").split("\t")
            per_case.setdefault(c, []).append((k, v))
        if sorted(per_case) != sorted(cases):
            fail(f"{model}: cases differ from cases.txt")
        for c, rows in per_case.items():
            if rows[0][0] == "error":
                if len(rows) != 1:
                    fail(f"{model} {c}: error and tensors")
                continue
            names = [k for k, _ in rows if k != "general.file_type"]
            if names != want_order:
                fail(f"{model} {c}: tensors or their order differ from the source")
            if rows[-1][0] != "general.file_type":
                fail(f"{model} {c}: no general.file_type line")
            for k, t in rows[:-1]:
                blk, _ = NAME_TO_BLOCK[t]
                if src[k][1][0] % blk:
                    fail(f"{model} {c} {k}: {t} does not divide row {src[k][1][0]}")
        print(f"{model}: {len(per_case)} cases, "
              f"{sum(1 for r in per_case.values() if r[0][0] == 'error')} refused")

    src, _ = read_shapes(os.path.join(gdir, "tiny_llama.shapes.txt"))
    info = gguf_parse.parse(os.path.join(gdir, "tiny_llama.gguf"))
    if {t["name"]: (t["type"], t["ne"]) for t in info["tensors"]} != src:
        fail("tiny_llama.gguf differs from tiny_llama.shapes.txt")
    types = {}
    for line in open(os.path.join(gdir, "tiny_llama.txt")):
        if not line.startswith("#"):
            c, k, v = line.rstrip("\n").split("\t")
            types[(c, k)] = v
    n = 0
    for line in open(os.path.join(gdir, "tiny_llama.sha256.txt")):
        if line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if f[1] == "@file":
            continue
        c, name, t, nbytes = f[0], f[1], f[2], int(f[3])
        blk, size = NAME_TO_BLOCK[t]
        nel = 1
        for x in src[name][1]:
            nel *= x
        if types.get((c, name)) != t or nel // blk * size != nbytes:
            fail(f"tiny_llama {c} {name}: type or size disagrees with the table")
        n += 1
    print(f"tiny_llama.sha256.txt: {n} tensor hashes consistent")


if __name__ == "__main__":
    main()

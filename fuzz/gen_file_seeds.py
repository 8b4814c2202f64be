#!/usr/bin/env python3
"""Seeds for the fuzz targets that open files by path (fuzz/fuzz_files.h: pieces joined by
the separator). Standard library only; the files come from tests/adversarial/gen.py.

    gen_file_seeds.py split OUTDIR    split GGUF sets for fuzz_gguf_split
    gen_file_seeds.py st-dir OUTDIR   config.json, index, shards for fuzz_st_dir

Valid sets are included (the interesting paths lie behind them), with the mistakes the
openers check: parts of two sets, keys that disagree, a tensor twice, missing pieces."""

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "adversarial"))
import gen  # noqa: E402

SEP = b"@@FORGIA-PART@@"


def t(name, n=8, seed=1):
    return (name, gen.GGML_F32, [n], gen.pattern_f32(n, seed))


def split_parts(parts, keys=True, overrides=None, arch="llama"):
    n, total = len(parts), sum(len(p) for p in parts)
    out = []
    for i, ts in enumerate(parts):
        kv = {"split.no": (gen.U16, i), "split.count": (gen.U16, n), "split.tensors.count": (gen.I32, total)} if keys else {}
        for k, v in ((overrides or {}).get(i) or {}).items():
            if v is None:
                kv.pop(k, None)
            else:
                kv[k] = v
        kvs = ([("general.architecture", gen.STR, arch)] if i == 0 else []) + [(k, ty, v) for k, (ty, v) in kv.items()]
        out.append(gen.gguf_bytes(kvs, ts)[0])
    return out


def split_seeds():
    a, b, c = [t("a.weight")], [t("b.weight", seed=2)], [t("c.weight", 16, 3)]
    return {
        "two": split_parts([a, b]),
        "three": split_parts([a, b, c]),
        "four-empty-part": split_parts([a, [], b, c]),
        "one": split_parts([a + b]),
        "no-keys": split_parts([a, b], keys=False),
        "dup": split_parts([a, a]),
        "count-wrong": split_parts([a, b], overrides={1: {"split.count": (gen.U16, 3)}}),
        "no-wrong": split_parts([a, b], overrides={1: {"split.no": (gen.U16, 0)}}),
        "total-wrong": split_parts([a, b], overrides={1: {"split.tensors.count": (gen.I32, 7)}}),
        "type-wrong": split_parts([a, b], overrides={0: {"split.count": (gen.U32, 2)}}),
        "key-missing": split_parts([a, b], overrides={1: {"split.no": None}}),
        "mixed": [split_parts([a, b])[0], split_parts([c, c, b])[2]],
    }


def st(tensors, meta=None):
    return gen.st_bytes([(n, "F32", [len(d) // 4], d) for n, d in tensors], meta)[0]


def index(weight_map, total=None):
    body = {"weight_map": weight_map}
    if total is not None:
        body["metadata"] = {"total_size": total}
    return json.dumps(body).encode()


def st_dir_seeds():
    s1 = [("x.weight", gen.pattern_f32(8, 1)), ("y.weight", gen.pattern_f32(4, 2))]
    s2 = [("z.weight", gen.pattern_f32(16, 3))]
    n1, n2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    good = index({"x.weight": n1, "y.weight": n1, "z.weight": n2}, 112)
    cfg = json.dumps({"hidden_size": 8, "rms_norm_eps": 1e-5, "model_type": "llama", "big": 18446744073709551615,
                      "nested": {"a": {"b": [1, 2]}}}).encode()
    no = b""
    return {
        "two": [no, good, st(s1, {"format": "pt"}), st(s2)],
        "two-config": [cfg, good, st(s1), st(s2)],
        "one": [no, index({"x.weight": "model-00001-of-00001.safetensors", "y.weight": "model-00001-of-00001.safetensors"}),
                st(s1)],
        "index-only": [no, good],
        "missing-tensor": [no, index({"x.weight": n1, "z.weight": n2}), st(s1), st(s2)],
        "wrong-shard": [no, index({"x.weight": n2, "y.weight": n1, "z.weight": n2}), st(s1), st(s2)],
        "unlisted-shard": [no, index({"x.weight": n1, "y.weight": n1}), st(s1), st(s2)],
        "dup-across": [no, index({"x.weight": n1, "y.weight": n1, "z.weight": n2}), st(s1), st(s1)],
        "bad-index": [no, b"{\"weight_map\": [", st(s1), st(s2)],
        "bad-config": [b"{\"hidden_size\": 1e999", good, st(s1), st(s2)],
        "traversal": [no, index({"x.weight": "../" + n1}), st(s1)],
        "total-float": [no, index({"x.weight": n1, "y.weight": n1, "z.weight": n2}, 1.12e2), st(s1), st(s2)],
    }


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("split", "st-dir"):
        print(__doc__, file=sys.stderr)
        return 2
    seeds = split_seeds() if sys.argv[1] == "split" else st_dir_seeds()
    os.makedirs(sys.argv[2], exist_ok=True)
    for name, pieces in seeds.items():
        with open(os.path.join(sys.argv[2], name), "wb") as f:
            f.write(SEP.join(pieces))
    return 0


if __name__ == "__main__":
    sys.exit(main())

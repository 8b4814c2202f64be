#!/usr/bin/env python3
"""Exact-arithmetic reference for per-token NLL of a llama-architecture GGUF (SmolLM2 and kin).

    ref_nll.py MODEL --ids NLL_JSON [--against OTHER_JSON]... > out.json

Takes the token ids from NLL_JSON (llama_nll's output, so tokenization is not under test), runs
the forward pass in float64 numpy on the weights as ggml dequantizes them (gguf-py's
dequantize: the same float32 values), and prints {"ids", "nll", "ppl"} like llama_nll. No
activation is rounded: what remains between this and llama.cpp is llama.cpp's own rounding
(activations quantized to the weight type's dot-product partner, F16 KV cache, float32 sums).
Each --against JSON (same ids) gets a line on stderr: max and mean |delta nll| and the ppl ratio.
Supports llama-arch models only: RMSNorm, RoPE on adjacent pairs (llama.cpp's "norm" mode, the
GGUF converter permutes Q and K for it), grouped-query causal attention, SwiGLU, tied or
separate output matrix.
"""
import argparse
import json
import sys

import numpy as np
import gguf


def field(reader, key):
    f = reader.fields.get(key)
    if f is None:
        sys.exit(f"ref_nll.py: GGUF has no {key}")
    v = f.parts[f.data[0]]
    return v.tolist()[0] if len(v) == 1 else v.tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ids", required=True, help="llama_nll JSON whose ids are used")
    ap.add_argument("--against", action="append", default=[])
    a = ap.parse_args()

    r = gguf.GGUFReader(a.model)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    if arch != "llama":
        sys.exit(f"ref_nll.py: architecture {arch}, only llama is supported")
    n_layer = field(r, "llama.block_count")
    n_embd = field(r, "llama.embedding_length")
    n_head = field(r, "llama.attention.head_count")
    n_kv = field(r, "llama.attention.head_count_kv")
    base = float(field(r, "llama.rope.freq_base"))
    eps = float(field(r, "llama.attention.layer_norm_rms_epsilon"))
    hd = n_embd // n_head
    tensors = {t.name: t for t in r.tensors}

    def w(name):
        t = tensors[name]
        return gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)

    ids = np.array(json.load(open(a.ids))["ids"], dtype=np.int64)
    n = len(ids)
    emb = w("token_embd.weight")
    x = emb[ids]

    def rmsnorm(v, g):
        return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps) * g

    # theta = pos * base^(-2i/hd) on pairs (2i, 2i+1)
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(v):  # v: [n, heads, hd]
        e, o = v[..., 0::2], v[..., 1::2]
        out = np.empty_like(v)
        out[..., 0::2] = e * cos - o * sin
        out[..., 1::2] = e * sin + o * cos
        return out

    mask = np.triu(np.full((n, n), -np.inf), 1)
    group = n_head // n_kv
    for L in range(n_layer):
        p = f"blk.{L}."
        h = rmsnorm(x, w(p + "attn_norm.weight"))
        q = rope((h @ w(p + "attn_q.weight").T).reshape(n, n_head, hd))
        k = rope((h @ w(p + "attn_k.weight").T).reshape(n, n_kv, hd))
        v = (h @ w(p + "attn_v.weight").T).reshape(n, n_kv, hd)
        att = np.empty((n, n_head, hd))
        for hh in range(n_head):
            s = q[:, hh, :] @ k[:, hh // group, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            att[:, hh, :] = (s / s.sum(axis=1, keepdims=True)) @ v[:, hh // group, :]
        x = x + att.reshape(n, n_embd) @ w(p + "attn_output.weight").T
        h = rmsnorm(x, w(p + "ffn_norm.weight"))
        g = h @ w(p + "ffn_gate.weight").T
        u = h @ w(p + "ffn_up.weight").T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ w(p + "ffn_down.weight").T
    h = rmsnorm(x, w("output_norm.weight"))
    out = w("output.weight") if "output.weight" in tensors else emb
    logits = h[:-1] @ out.T
    mx = logits.max(axis=1)
    lse = np.log(np.exp(logits - mx[:, None]).sum(axis=1)) + mx
    nll = lse - logits[np.arange(n - 1), ids[1:]]
    ppl = float(np.exp(nll.mean()))
    json.dump({"ids": ids.tolist(), "nll": nll.tolist(), "ppl": ppl}, sys.stdout)
    sys.stdout.write("\n")

    for path in a.against:
        o = json.load(open(path))
        if o["ids"] != ids.tolist():
            sys.exit(f"ref_nll.py: {path} has other token ids")
        d = np.abs(np.array(o["nll"]) - nll)
        print(f"{path}: max|dnll| {d.max():.3e} mean|dnll| {d.mean():.3e} "
              f"ppl {o['ppl']:.6f} vs {ppl:.6f} (ratio {o['ppl'] / ppl:.6f})", file=sys.stderr)


if __name__ == "__main__":
    main()

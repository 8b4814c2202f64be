#!/usr/bin/env python3
"""Write the small source GGUF models whose llama-quantize outputs are the goldens.

The shapes are chosen for the quantities that drive llama.cpp's per-tensor type rules, not
for size: rows (ne0) that are or are not multiples of 256 and 32, the layer count, the GQA
ratio n_head / n_head_kv, the expert count and tied or separate output embeddings. The data
is deterministic (numpy seeded per tensor) but only the tiny model's bytes matter: it is
committed and its outputs are checked by sha256; the others are regenerated here and only
their type tables are committed.

usage: gen_models.py OUT_DIR [MODEL ...]     (default: every model)
Writes OUT_DIR/<model>.gguf and OUT_DIR/<model>.shapes.txt (see describe()).
"""
import hashlib
import os
import sys

import numpy as np
import gguf

F32 = gguf.GGMLQuantizationType.F32
F16 = gguf.GGMLQuantizationType.F16

# Each model: arch, hparams, the dtype of its 2-D/3-D weights, and tensor flags.
MODELS = {
    # Llama-3-like: GQA 8/2 (n_gqa 4), n_embd a multiple of 256, n_ff = 352 (11 * 32, not a
    # multiple of 256, so every ffn_down row falls back), separate output.weight, 16 layers.
    "llama_gqa": dict(arch="llama", n_vocab=256, n_embd=256, n_head=8, n_head_kv=2,
                      head_dim=32, n_ff=352, n_layer=16, tied=False, wtype=F16),
    # Tied embeddings (no output.weight), no GQA (n_head_kv == n_head), n_ff a multiple of 256.
    "llama_tied": dict(arch="llama", n_vocab=256, n_embd=256, n_head=8, n_head_kv=8,
                       head_dim=32, n_ff=512, n_layer=10, tied=True, wtype=F16),
    # Mixtral-like: 8 experts, 2 used, GQA 4/1.
    "llama_moe8": dict(arch="llama", n_vocab=256, n_embd=256, n_head=4, n_head_kv=1,
                       head_dim=64, n_ff=256, n_layer=8, tied=False, wtype=F16,
                       n_expert=8, n_expert_used=2),
    # Qwen2-0.5B-like: n_embd 384 (not a multiple of 256, as 896 is not), GQA 6/2 (n_gqa 3),
    # q/k/v biases, 24 layers, tied embeddings.
    "qwen2": dict(arch="qwen2", n_vocab=256, n_embd=384, n_head=6, n_head_kv=2,
                  head_dim=64, n_ff=256, n_layer=24, tied=True, wtype=F16, qkv_bias=True),
    # Gemma-3-270M-like: n_embd 640 (not a multiple of 256), 4/1 heads, sandwich norms
    # (post_attention_norm, post_ffw_norm), q/k norms, tied, 18 layers, sliding window.
    "gemma3": dict(arch="gemma3", n_vocab=256, n_embd=640, n_head=4, n_head_kv=1,
                   head_dim=64, n_ff=256, n_layer=18, tied=True, wtype=F16, gemma=True),
    # Qwen3-MoE-like with 16 experts (n_expert != 8 and >= 4) whose expert rows (160) are
    # not a multiple of 256 (nor of 64 or 128); q/k norms; separate output.
    "qwen3moe": dict(arch="qwen3moe", n_vocab=256, n_embd=256, n_head=4, n_head_kv=2,
                     head_dim=64, n_ff=512, n_ff_exp=160, n_layer=6, tied=False, wtype=F16,
                     n_expert=16, n_expert_used=4, qk_norm=True),
    # Committed byte-level model (~330 KB): f16 weights, f32 norms; rows of 256 (k-quants
    # fit), of 32 (ffn_down: falls back to a 32-block type) and of 16 (attn_output: not a
    # multiple of 32, so every quantized type falls back to f16). GQA 2/1, 4 layers.
    "tiny_llama": dict(arch="llama", n_vocab=32, n_embd=256, n_head=2, n_head_kv=1,
                       head_dim=8, n_ff=32, n_layer=4, tied=False, wtype=F16),
}


def seed_of(model, tensor):
    # a seed per (model, tensor) so adding a tensor never shifts another's data
    h = hashlib.sha256(f"{model}/{tensor}".encode()).digest()
    return int.from_bytes(h[:8], "little")


def tensor_list(m):
    """(name, ne, dtype) in the order convert_hf_to_gguf.py would write them."""
    E, V, L = m["n_embd"], m["n_vocab"], m["n_layer"]
    q_dim = m["n_head"] * m["head_dim"]
    kv_dim = m["n_head_kv"] * m["head_dim"]
    w = m["wtype"]
    out = [("token_embd.weight", (E, V), w)]
    for i in range(L):
        b = f"blk.{i}."
        out.append((b + "attn_norm.weight", (E,), F32))
        out.append((b + "attn_q.weight", (E, q_dim), w))
        out.append((b + "attn_k.weight", (E, kv_dim), w))
        out.append((b + "attn_v.weight", (E, kv_dim), w))
        if m.get("qkv_bias"):
            out.append((b + "attn_q.bias", (q_dim,), F32))
            out.append((b + "attn_k.bias", (kv_dim,), F32))
            out.append((b + "attn_v.bias", (kv_dim,), F32))
        if m.get("qk_norm") or m.get("gemma"):
            out.append((b + "attn_q_norm.weight", (m["head_dim"],), F32))
            out.append((b + "attn_k_norm.weight", (m["head_dim"],), F32))
        out.append((b + "attn_output.weight", (q_dim, E), w))
        if m.get("gemma"):
            out.append((b + "post_attention_norm.weight", (E,), F32))
        out.append((b + "ffn_norm.weight", (E,), F32))
        if m.get("n_expert"):
            X = m["n_expert"]
            F = m.get("n_ff_exp", m["n_ff"])
            # the router stays f32, as convert_hf_to_gguf.py writes it
            out.append((b + "ffn_gate_inp.weight", (E, X), F32))
            out.append((b + "ffn_gate_exps.weight", (E, F, X), w))
            out.append((b + "ffn_up_exps.weight", (E, F, X), w))
            out.append((b + "ffn_down_exps.weight", (F, E, X), w))
        else:
            F = m["n_ff"]
            out.append((b + "ffn_gate.weight", (E, F), w))
            out.append((b + "ffn_up.weight", (E, F), w))
            out.append((b + "ffn_down.weight", (F, E), w))
        if m.get("gemma"):
            out.append((b + "post_ffw_norm.weight", (E,), F32))
    out.append(("output_norm.weight", (E,), F32))
    if not m["tied"]:
        out.append(("output.weight", (E, V), w))
    return out


def write_model(name, m, path):
    arch = m["arch"]
    wr = gguf.GGUFWriter(path, arch)  # writes general.architecture first
    wr.add_string("general.type", "model")
    wr.add_string("general.name", name)
    # what convert_hf_to_gguf.py records for an f32 / f16 conversion; llama-quantize
    # replaces it with the mixture's llama_ftype
    wr.add_uint32("general.file_type", 0 if m["wtype"] == F32 else 1)
    wr.add_uint32(f"{arch}.vocab_size", m["n_vocab"])
    wr.add_uint32(f"{arch}.context_length", 4096)
    wr.add_uint32(f"{arch}.embedding_length", m["n_embd"])
    wr.add_uint32(f"{arch}.block_count", m["n_layer"])
    wr.add_uint32(f"{arch}.feed_forward_length", m["n_ff"])
    wr.add_uint32(f"{arch}.attention.head_count", m["n_head"])
    wr.add_uint32(f"{arch}.attention.head_count_kv", m["n_head_kv"])
    if m["head_dim"] * m["n_head"] != m["n_embd"]:
        wr.add_uint32(f"{arch}.attention.key_length", m["head_dim"])
        wr.add_uint32(f"{arch}.attention.value_length", m["head_dim"])
    wr.add_uint32(f"{arch}.rope.dimension_count", m["head_dim"])
    wr.add_float32(f"{arch}.rope.freq_base", 10000.0 if arch == "llama" else 1000000.0)
    wr.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6 if arch != "llama" else 1e-5)
    if m.get("n_expert"):
        wr.add_uint32(f"{arch}.expert_count", m["n_expert"])
        wr.add_uint32(f"{arch}.expert_used_count", m["n_expert_used"])
        if "n_ff_exp" in m:
            wr.add_uint32(f"{arch}.expert_feed_forward_length", m["n_ff_exp"])
    if m.get("gemma"):
        wr.add_uint32(f"{arch}.attention.sliding_window", 512)
        wr.add_float32(f"{arch}.rope.freq_base_swa", 10000.0)
    # no tokenizer: llama-quantize loads the architecture and hparams, never the vocabulary

    for tname, ne, dt in tensor_list(m):
        rng = np.random.default_rng(seed_of(name, tname))
        shape = tuple(reversed(ne))  # numpy order is ne reversed
        if tname.endswith("norm.weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
        elif tname.endswith(".bias"):
            a = 0.1 * rng.standard_normal(shape, dtype=np.float32)
        else:
            a = 0.05 * rng.standard_normal(shape, dtype=np.float32)
            # a few heavier values per row, as real weights have, so scales and
            # importance-weighted searches see outliers
            a.flat[:: 97] *= 6.0
        a = a.astype(np.float16 if dt == F16 else np.float32)
        wr.add_tensor(tname, a, raw_dtype=dt)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def fmt_value(field):
    t = field.types[0]
    if t == gguf.GGUFValueType.STRING:
        return "str", bytes(field.parts[field.data[0]]).decode()
    if t == gguf.GGUFValueType.ARRAY:
        raise SystemExit(f"{field.name}: arrays are not described (none are written)")
    v = field.parts[field.data[0]][0]
    names = {gguf.GGUFValueType.UINT32: "u32", gguf.GGUFValueType.INT32: "i32",
             gguf.GGUFValueType.FLOAT32: "f32", gguf.GGUFValueType.BOOL: "bool",
             gguf.GGUFValueType.UINT64: "u64", gguf.GGUFValueType.UINT16: "u16",
             gguf.GGUFValueType.UINT8: "u8"}
    if t == gguf.GGUFValueType.FLOAT32:
        # exact: the f32 bit pattern in hex next to a readable value
        return "f32", f"{float(v):.9g}"
    if t == gguf.GGUFValueType.BOOL:
        return "bool", "true" if v else "false"
    return names[t], str(int(v))


def describe(gguf_path, out_path, name):
    """One line per fact, tab-separated, in file order:
         model  NAME
         kv     KEY  TYPE  VALUE        (TYPE: u32 f32 str ...; GGUF.* header fields skipped)
         tensor NAME DTYPE NE0,NE1,...  (ggml type name, ne order)
    """
    r = gguf.GGUFReader(gguf_path)
    lines = [f"model\t{name}"]
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        t, v = fmt_value(f)
        lines.append(f"kv\t{f.name}\t{t}\t{v}")
    for t in r.tensors:
        ne = ",".join(str(int(x)) for x in t.shape)
        lines.append(f"tensor\t{t.name}\t{t.tensor_type.name.lower()}\t{ne}")
    with open(out_path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    os.makedirs(out, exist_ok=True)
    for n in names:
        p = os.path.join(out, n + ".gguf")
        write_model(n, MODELS[n], p)
        describe(p, os.path.join(out, n + ".shapes.txt"), n)
        print(f"{p}: {os.path.getsize(p)} bytes")


if __name__ == "__main__":
    main()

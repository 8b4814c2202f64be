#!/usr/bin/env python3
"""Writes the small Llama-shaped source model and importance matrix that
tests/cpu/test_export_llama_bytes.cpp quantizes, for comparison with llama-quantize's files.

usage: gen_model.py OUT_DIR    (writes model.gguf and imatrix.gguf)

model.gguf: architecture llama, 8 layers, 8 heads / 2 KV heads (GQA 4), rows of 256
(ffn_down: 384, not whole 256-blocks, so the K-quant fallbacks show), few rows per matrix so
the file stays small; matrices f16, norms f32, values a seeded gaussian (numpy PCG64).
imatrix.gguf: llama-imatrix's GGUF layout (imatrix.datasets, chunk_count, chunk_size;
<name>.in_sum2 and <name>.counts per matrix that llama-imatrix would see: every quantized
matrix but token_embd), positive seeded values. gguf-py writes both.
"""
import os
import sys

import numpy as np
import gguf

N_LAYER, E, FF = 8, 256, 384


def tensors():
    t = [("token_embd.weight", (16, E)), ("output_norm.weight", (E,)), ("output.weight", (16, E))]
    for i in range(N_LAYER):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", (E,)), (b + "attn_q.weight", (16, E)), (b + "attn_k.weight", (8, E)),
              (b + "attn_v.weight", (8, E)), (b + "attn_output.weight", (16, E)), (b + "ffn_norm.weight", (E,)),
              (b + "ffn_gate.weight", (8, E)), (b + "ffn_up.weight", (8, E)), (b + "ffn_down.weight", (8, FF))]
    return t


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.Generator(np.random.PCG64(20261204))
    w = gguf.GGUFWriter(os.path.join(out, "model.gguf"), "llama")
    w.add_context_length(2048)
    w.add_embedding_length(E)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(FF)
    w.add_head_count(8)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(32)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)
    for name, shape in tensors():
        if len(shape) == 1:
            w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32))
        else:
            w.add_tensor(name, (0.05 * rng.standard_normal(shape)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    m = gguf.GGUFWriter(os.path.join(out, "imatrix.gguf"), "llama")
    m.add_string("general.type", "imatrix")
    m.add_array("imatrix.datasets", ["forgia-synthetic"])
    m.add_uint32("imatrix.chunk_count", 7)
    m.add_uint32("imatrix.chunk_size", 512)
    for name, shape in tensors():
        if len(shape) == 1 or name == "token_embd.weight":
            continue
        cols = shape[-1]
        m.add_tensor(name + ".in_sum2", (7 * 512 * np.exp(rng.standard_normal((1, cols)))).astype(np.float32))
        m.add_tensor(name + ".counts", np.array([[7 * 512]], dtype=np.float32))
    m.write_header_to_file()
    m.write_kv_data_to_file()
    m.write_tensors_to_file()
    m.close()


if __name__ == "__main__":
    main(sys.argv[1])

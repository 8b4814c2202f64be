#!/usr/bin/env python3
"""Writes the Llama-shaped f16 GGUF that bench/bench_transcode.sh transcodes.

usage: transcode_model.py OUT.gguf [LAYERS]

TinyLlama's shapes (hidden 2048, FFN 5632, 32 heads / 4 KV heads, vocab 32000) with LAYERS
layers (default 10: 571 M parameters, 1.14 GB): matrices f16, norms f32, values a seeded
gaussian (numpy PCG64), metadata as convert_hf_to_gguf writes the keys llama-quantize reads
(no tokenizer: llama-quantize does not need one). Tensors are written one at a time, so
memory stays at one tensor.
"""
import sys

import numpy as np
import gguf

E, FF, VOCAB, HEADS, KV_HEADS = 2048, 5632, 32000, 32, 4


def tensors(layers):
    kv = E * KV_HEADS // HEADS
    t = [("token_embd.weight", (VOCAB, E))]
    for i in range(layers):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", (E,)), (b + "attn_q.weight", (E, E)), (b + "attn_k.weight", (kv, E)),
              (b + "attn_v.weight", (kv, E)), (b + "attn_output.weight", (E, E)), (b + "ffn_norm.weight", (E,)),
              (b + "ffn_gate.weight", (FF, E)), (b + "ffn_up.weight", (FF, E)), (b + "ffn_down.weight", (E, FF))]
    t += [("output_norm.weight", (E,)), ("output.weight", (VOCAB, E))]
    return t


def main(out, layers):
    rng = np.random.Generator(np.random.PCG64(20260515))
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("forgia-bench-transcode")
    w.add_context_length(2048)
    w.add_embedding_length(E)
    w.add_block_count(layers)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(E // HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_file_type(1)
    ts = tensors(layers)
    for name, shape in ts:
        dt = np.float32 if len(shape) == 1 else np.float16
        w.add_tensor_info(name, shape, np.dtype(dt), int(np.prod(shape)) * np.dtype(dt).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape in ts:
        if len(shape) == 1:
            a = (1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
        else:
            a = (0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float16)
        w.write_tensor_data(a)
    w.close()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 10)

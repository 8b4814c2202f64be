#!/usr/bin/env python3
"""gguf-py's whole-model q8_0 transcode, the Python peer of bench/bench_transcode.sh.

usage: transcode_ggufpy.py IN.gguf OUT.gguf
       transcode_ggufpy.py --compare A.gguf B.gguf

The first form reads IN with GGUFReader (a memory map) and writes OUT with GGUFWriter one
tensor at a time: every tensor of 2 or more dims is decoded to f32 and encoded with
gguf.quants.quantize(..., Q8_0), the others keep their bytes; the KVs are copied, with
general.quantization_version 2 and general.file_type 7 (MOSTLY_Q8_0) last, as
llama-quantize does. These are the tensors and types llama-quantize's Q8_0 gives a Llama
model. q8_0 only: gguf-py has no Q4_K quantizer (its quants module encodes Q4_K only by
calling back into ggml's C code, which it does not ship).

The second form prints whether A and B hold the same tensors (names, types, shapes, bytes;
the order may differ: llama-quantize orders them by layer), and exits 0 when they do, 1
when not.
"""
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q


def transcode(src, dst):
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type",
                                                 "general.quantization_version"):
            continue
        sub = f.types[1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, f.contents(), f.types[0], sub)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    plan = []
    for t in r.tensors:
        if len(t.shape) >= 2:
            rows = int(np.prod(t.shape[1:]))
            row_bytes = int(t.shape[0]) // 32 * 34
            w.add_tensor_info(t.name, (rows, row_bytes), np.dtype(np.uint8), rows * row_bytes, raw_dtype=Q.Q8_0)
            plan.append((t, True))
        else:
            w.add_tensor_info(t.name, list(reversed([int(x) for x in t.shape])), t.data.dtype, int(t.n_bytes),
                              raw_dtype=t.tensor_type)
            plan.append((t, False))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t, quantize in plan:
        if quantize:
            x = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
            w.write_tensor_data(gguf.quants.quantize(x, Q.Q8_0))
        else:
            w.write_tensor_data(np.asarray(t.data))
    w.close()


def compare(a, b):
    ra, rb = gguf.GGUFReader(a), gguf.GGUFReader(b)
    tb_by_name = {t.name: t for t in rb.tensors}
    if sorted(t.name for t in ra.tensors) != sorted(tb_by_name):
        print(f"different: the tensor names differ ({len(ra.tensors)} vs {len(rb.tensors)} tensors)")
        return 1
    for ta in ra.tensors:
        tb = tb_by_name[ta.name]
        if (ta.tensor_type, list(ta.shape)) != (tb.tensor_type, list(tb.shape)):
            print(f"different: {ta.name} is {ta.tensor_type.name} {list(ta.shape)} vs {tb.tensor_type.name} "
                  f"{list(tb.shape)}")
            return 1
        da, db = np.asarray(ta.data).view(np.uint8).ravel(), np.asarray(tb.data).view(np.uint8).ravel()
        if not np.array_equal(da, db):
            print(f"different: tensor {ta.name}: {int(np.count_nonzero(da != db))} of {da.size} bytes differ")
            return 1
    print(f"same: {len(ra.tensors)} tensors, types and bytes")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    transcode(sys.argv[1], sys.argv[2])

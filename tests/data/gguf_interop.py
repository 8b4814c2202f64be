#!/usr/bin/env python3
"""gguf-py side of the GGUF interoperability test (tests/interop/test_gguf_interop.cpp).

    gguf_interop.py write PATH   write a file with gguf-py's GGUFWriter: every metadata
                                 type, several tensor dtypes (quantized ones as raw bytes),
                                 alignment 64
    gguf_interop.py dump PATH    print what gguf-py's GGUFReader sees, in the canonical
                                 text form that the C++ test prints for forgia's reader

Dump lines, in file order:
    kv <key> <TYPE> <value>                scalars: integers in decimal, floats as %.17g,
                                           bools 0/1, strings as hex
    kv <key> ARRAY <ELEMTYPE> <n> <v,v,..> array elements in the same forms
    tensor <name> <ggml type code> <ne0,ne1,..> <nbytes> <hex of the bytes>
"""

import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFValueType as V, GGUFWriter


def write(path):
    w = GGUFWriter(path, arch="interop")
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 0.1)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo wörld")
    w.add_uint64("t.u64", 2**63 - 1)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", -1.0e-300)
    w.add_array("t.arr_str", ["<s>", "</s>", "▁the"])
    w.add_array("t.arr_i32", [1, -2, 3])
    w.add_array("t.arr_f32", [0.5, -2.25])
    w.add_array("t.arr_bool", [True, False, True])
    w.add_key_value("t.arr_u64", [1, 2**62], V.ARRAY, sub_type=V.UINT64)
    w.add_key_value("t.arr_u8", [0, 255], V.ARRAY, sub_type=V.UINT8)
    w.add_key_value("t.arr_f64", [1.5, -0.0], V.ARRAY, sub_type=V.FLOAT64)

    rng = np.random.default_rng(1234)
    w.add_tensor("f32.matrix", rng.standard_normal((3, 5)).astype(np.float32))
    w.add_tensor("f16.vector", rng.standard_normal(7).astype(np.float16))
    w.add_tensor("i32.cube", rng.integers(-1000, 1000, (2, 2, 3)).astype(np.int32))
    w.add_tensor("row.1xN", rng.standard_normal((1, 4)).astype(np.float32))  # keeps n_dims 2
    # quantized and bf16 tensors as raw bytes: (rows, row bytes)
    w.add_tensor("q8_0.weight", rng.integers(0, 256, (2, 2 * 34), dtype=np.uint8), raw_dtype=Q.Q8_0)
    w.add_tensor("q4_k.weight", rng.integers(0, 256, (3, 144), dtype=np.uint8), raw_dtype=Q.Q4_K)
    w.add_tensor("bf16.weight", rng.integers(0, 256, (2, 8), dtype=np.uint8), raw_dtype=Q.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def fmt_scalar(vtype, v):
    if vtype in (V.FLOAT32, V.FLOAT64):
        return "%.17g" % float(v)
    if vtype == V.BOOL:
        return "1" if bool(v) else "0"
    return str(int(v))


def dump(path):
    r = GGUFReader(path)
    out = []
    for key, f in r.fields.items():
        if key.startswith("GGUF."):
            continue  # the reader's own header pseudo-fields
        t = f.types[0]
        if t == V.STRING:
            out.append("kv %s STRING %s" % (key, bytes(f.parts[f.data[0]]).hex()))
        elif t == V.ARRAY:
            et = f.types[1] if len(f.types) > 1 else V.UINT8
            if et == V.STRING:
                vals = [bytes(f.parts[i]).hex() for i in f.data]
            else:
                vals = [fmt_scalar(et, f.parts[i][0]) for i in f.data]
            out.append("kv %s ARRAY %s %d %s" % (key, et.name, len(vals), ",".join(vals)))
        else:
            out.append("kv %s %s %s" % (key, t.name, fmt_scalar(t, f.parts[f.data[0]][0])))
    for t in r.tensors:
        raw = bytes(r.data[t.data_offset:t.data_offset + t.n_bytes])
        out.append("tensor %s %d %s %d %s" % (t.name, int(t.tensor_type), ",".join(str(int(d)) for d in t.shape),
                                              int(t.n_bytes), raw.hex()))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "dump"):
        sys.exit("usage: gguf_interop.py write|dump PATH")
    (write if sys.argv[1] == "write" else dump)(sys.argv[2])

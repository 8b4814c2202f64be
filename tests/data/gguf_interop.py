#!/usr/bin/env python3
"""gguf-py side of the GGUF interoperability test (tests/interop/test_gguf_interop.cpp).

    gguf_interop.py write PATH   write a file with gguf-py's GGUFWriter: every metadata
                                 type, several tensor dtypes (quantized ones as raw bytes),
                                 alignment 64
    gguf_interop.py dump PATH    print what gguf-py's GGUFReader sees, in the canonical
                                 text form that the C++ test prints for forgia's reader
    gguf_interop.py json PATH    parse PATH (the output of `forgia inspect --json`) with
                                 json.loads, strictly (UTF-8, no NaN/Infinity), and print
                                 each metadata entry and tensor with json.dumps
                                 (standard library only: the CPU tests use it too)

json lines, in file order:
    meta <json key> <TYPE> <json value>    (arrays: the value, or "-" when summarised)
    tensor <json name> <dtype> <json shape> <nbytes>

Dump lines, in file order:
    kv <key> <TYPE> <value>                scalars: integers in decimal, floats as %.17g,
                                           bools 0/1, strings as hex
    kv <key> ARRAY <ELEMTYPE> <n> <v,v,..> array elements in the same forms
    tensor <name> <ggml type code> <ne0,ne1,..> <nbytes> <hex of the bytes>
"""

import json
import sys


def write(path):
    import numpy as np
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFValueType as V, GGUFWriter

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
    # UINT64 at and above 2^63: valid in ggml, llama.cpp and gguf-py
    w.add_uint64("t.u64_max", 2**64 - 1)
    w.add_uint64("t.u64_2pow63", 2**63)
    w.add_key_value("t.arr_u64_big", [0, 2**63, 2**64 - 1], V.ARRAY, sub_type=V.UINT64)

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
    from gguf import GGUFValueType as V

    if vtype in (V.FLOAT32, V.FLOAT64):
        return "%.17g" % float(v)
    if vtype == V.BOOL:
        return "1" if bool(v) else "0"
    return str(int(v))


def dump(path):
    from gguf import GGUFReader, GGUFValueType as V

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


def reject_constant(name):
    raise ValueError("not JSON: %s" % name)


def json_lines(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")  # strict: raises on invalid UTF-8
    d = json.loads(text, parse_constant=reject_constant)
    out = []
    for key, v in d["metadata"].items():
        out.append("meta %s %s %s" % (json.dumps(key), v["type"], json.dumps(v["value"]) if "value" in v else "-"))
    for t in d["tensors"]:
        out.append("tensor %s %s %s %d" % (json.dumps(t["name"]), t["dtype"], json.dumps(t["shape"]), t["nbytes"]))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    cmds = {"write": write, "dump": dump, "json": json_lines}
    if len(sys.argv) != 3 or sys.argv[1] not in cmds:
        sys.exit("usage: gguf_interop.py write|dump|json PATH")
    cmds[sys.argv[1]](sys.argv[2])

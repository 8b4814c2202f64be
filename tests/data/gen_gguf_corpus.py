#!/usr/bin/env python3
"""Generates the GGUF malformed-input corpus (standard library only, deterministic).

    gen_gguf_corpus.py OUTDIR

writes OUTDIR/<case>.gguf for every case and OUTDIR/MANIFEST, one line per case:
"<case>.gguf<TAB><expected fg_status name>". Valid files (FG_OK) are included too: they
are the positive controls of the corpus test and good seeds for the fuzzer.

Files are assembled field by field from the layout in the GGUF reference (little-endian;
KVs and tensor infos back to back; data section padded to the alignment from the start of
the file; tensor offsets are the running padded total)."""

import os
import struct
import sys

# metadata value types (wire codes)
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
              F32: "<f", BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}
# ggml tensor types used here: (code, block elements, block bytes)
T_F32, T_F16, T_Q4_0, T_Q8_0, T_I8, T_I64, T_Q4_K = (0, 1, 4), (1, 1, 2), (2, 32, 18), (8, 32, 34), (24, 1, 1), (27, 1, 8), (12, 256, 144)


def u32(v): return struct.pack("<I", v & 0xFFFFFFFF)
def u64(v): return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)
def gstr(b):
    if isinstance(b, str):
        b = b.encode()
    return u64(len(b)) + b


def header(n_tensors, n_kv, version=3, magic=b"GGUF"):
    return magic + u32(version) + u64(n_tensors) + u64(n_kv)


def kv_scalar(key, vtype, value):
    return gstr(key) + u32(vtype) + struct.pack(SCALAR_FMT[vtype], value)


def kv_str(key, s):
    return gstr(key) + u32(STR) + gstr(s)


def kv_array(key, etype, values):
    body = b"".join(gstr(v) if etype == STR else struct.pack(SCALAR_FMT[etype], v) for v in values)
    return gstr(key) + u32(ARR) + u32(etype) + u64(len(values)) + body


def tinfo(name, ne, ttype, offset):
    return gstr(name) + u32(len(ne)) + b"".join(u64(d) for d in ne) + u32(ttype[0]) + u64(offset)


def pad(n, a):
    return (n + a - 1) // a * a


def nbytes(ne, ttype):
    n = 1
    for d in ne:
        n *= d
    return n // ttype[1] * ttype[2]


def gguf(kvs, tensors, align=32, version=3, data_fill=None, drop_tail=0, offsets=None, extra=b""):
    """kvs: encoded KV byte strings; tensors: (name, ne, type). Data bytes are (offset + j) % 256."""
    infos, offs, run = [], [], 0
    for i, (name, ne, tt) in enumerate(tensors):
        off = run if offsets is None else offsets[i]
        offs.append(off)
        infos.append(tinfo(name, ne, tt, off))
        run += pad(nbytes(ne, tt), align)
    head = header(len(tensors), len(kvs), version) + b"".join(kvs) + b"".join(infos)
    head += b"\0" * (pad(len(head), align) - len(head))
    data = bytearray()
    for (name, ne, tt), off in zip(tensors, offs):
        n = nbytes(ne, tt)
        data += bytes((off + j) % 256 for j in range(n)) if data_fill is None else data_fill * n
        data += b"\0" * (pad(n, align) - n)
    out = head + bytes(data) + extra
    return out[:len(out) - drop_tail] if drop_tail else out


def every_type_kvs():
    return [
        kv_str("general.architecture", "test"),
        kv_scalar("t.u8", U8, 200), kv_scalar("t.i8", I8, -100),
        kv_scalar("t.u16", U16, 60000), kv_scalar("t.i16", I16, -30000),
        kv_scalar("t.u32", U32, 4000000000), kv_scalar("t.i32", I32, -2000000000),
        kv_scalar("t.f32", F32, 1.5), kv_scalar("t.bool", BOOL, 1),
        kv_str("t.str", "hello"), kv_str("t.empty_str", ""),
        kv_scalar("t.u64", U64, (1 << 63) - 1), kv_scalar("t.i64", I64, -(1 << 62)),
        kv_scalar("t.f64", F64, -2.25),
        kv_array("t.arr_i32", I32, [1, -2, 3]), kv_array("t.arr_str", STR, ["a", "", "ccc"]),
        kv_array("t.arr_empty", U8, []), kv_array("t.arr_f32", F32, [0.5, 2.0]),
        kv_array("t.arr_bool", BOOL, [0, 1, 7]),
    ]


TENSORS = [("tok_embd.weight", [64, 3], T_Q8_0), ("norm", [8], T_F32), ("half", [4, 2, 2], T_F16)]


def cases():
    c = {}
    ok = "FG_OK"
    # ---- valid controls ----
    c["ok_empty"] = (gguf([], []), ok)
    c["ok_empty_unpadded"] = (header(0, 0), ok)
    c["ok_v2"] = (gguf(every_type_kvs(), TENSORS, version=2), ok)
    c["ok_all_types"] = (gguf(every_type_kvs(), TENSORS), ok)
    c["ok_align1"] = (gguf([kv_scalar("general.alignment", U32, 1)], TENSORS, align=1), ok)
    c["ok_align64"] = (gguf([kv_scalar("general.alignment", U32, 64)], TENSORS, align=64), ok)
    c["ok_zero_dim"] = (gguf([], [("empty", [4, 0], T_F32), ("x", [2], T_F32)]), ok)
    c["ok_trailing_bytes"] = (gguf([], TENSORS, extra=b"junk"), ok)
    c["ok_bool_nonbinary"] = (gguf([kv_scalar("b", BOOL, 2)], []), ok)
    c["ok_no_final_padding"] = (gguf([], [("x", [3], T_F32)], drop_tail=20), ok)
    c["ok_quant_k"] = (gguf([], [("qk", [256, 2], T_Q4_K)]), ok)
    c["ok_four_dims"] = (gguf([], [("four", [2, 3, 4, 5], T_I8)]), ok)
    # what ggml accepts and older forgia refused: UINT64 >= 2^63, n_dims 0, an empty name
    c["ok_u64_2pow63"] = (gguf([kv_scalar("k", U64, 1 << 63)], []), ok)
    c["ok_u64_max"] = (gguf([kv_scalar("k", U64, 2**64 - 1)], []), ok)
    c["ok_u64_array_2pow63"] = (gguf([kv_array("k", U64, [1, 1 << 63, 2**64 - 1])], []), ok)
    c["ok_tensor_ndim_0"] = (gguf([], [("scalar", [], T_F32), ("x", [2], T_F32)]), ok)
    c["ok_tensor_name_empty"] = (gguf([], [("", [4], T_F32), ("x", [2], T_F32)]), ok)
    c["ok_tensor_name_63"] = (gguf([], [("n" * 63, [4], T_F32)]), ok)
    # ---- header ----
    c["bad_magic"] = (b"FUGG" + gguf([], [])[4:], "FG_ERR_BAD_MAGIC")
    c["bad_magic_zero"] = (b"\0" * 32, "FG_ERR_BAD_MAGIC")
    for v in (0, 1, 4, 0x03000000, 0xFFFFFFFF):
        c["bad_version_%x" % v] = (gguf([], [], version=v), "FG_ERR_BAD_VERSION")
    c["trunc_magic"] = (b"GG", "FG_ERR_TRUNCATED")
    c["trunc_version"] = (b"GGUF\x03\0", "FG_ERR_TRUNCATED")
    c["trunc_counts"] = (header(0, 0)[:20], "FG_ERR_TRUNCATED")
    c["count_tensors_max"] = (header(2**64 - 1, 0) + b"\0" * 8, "FG_ERR_TRUNCATED")
    c["count_kv_max"] = (header(0, 2**64 - 1) + b"\0" * 8, "FG_ERR_TRUNCATED")
    c["count_kv_too_many"] = (header(0, 64) + kv_scalar("a", U8, 1), "FG_ERR_TRUNCATED")
    c["count_tensors_too_many"] = (header(64, 0) + b"\0" * 100, "FG_ERR_TRUNCATED")
    c["count_kv_more_than_present"] = (header(0, 3) + kv_scalar("a", U32, 1) + kv_scalar("b", U32, 1) + b"\0" * 14,
                                       "FG_ERR_BAD_STRING")
    # ---- KVs ----
    c["key_len_max"] = (header(0, 1) + u64(2**64 - 1) + b"\0" * 20, "FG_ERR_BAD_STRING")
    c["key_len_past_eof"] = (header(0, 1) + u64(100) + b"k" * 20, "FG_ERR_BAD_STRING")
    c["key_len_over_1gib"] = (header(0, 1) + u64((1 << 30) + 1) + b"k" * 20, "FG_ERR_BAD_STRING")
    c["key_empty"] = (header(0, 1) + gstr("") + u32(U8) + b"\x01" + b"\0" * 8, "FG_ERR_BAD_STRING")
    c["str_value_past_eof"] = (header(0, 1) + gstr("k") + u32(STR) + u64(1000) + b"abc", "FG_ERR_BAD_STRING")
    c["value_type_13"] = (header(0, 1) + gstr("k") + u32(13) + b"\0" * 16, "FG_ERR_BAD_VALUE_TYPE")
    c["value_type_neg"] = (header(0, 1) + gstr("k") + u32(0xFFFFFFFF) + b"\0" * 16, "FG_ERR_BAD_VALUE_TYPE")
    c["array_elem_type_13"] = (header(0, 1) + gstr("k") + u32(ARR) + u32(13) + u64(1) + b"\0" * 8,
                               "FG_ERR_BAD_VALUE_TYPE")
    c["array_nested"] = (header(0, 1) + gstr("k") + u32(ARR) + u32(ARR) + u64(1) + u32(U8) + u64(1) + b"\x05",
                         "FG_ERR_BAD_VALUE_TYPE")
    c["array_count_past_eof"] = (header(0, 1) + gstr("k") + u32(ARR) + u32(U32) + u64(1000) + b"\0" * 16,
                                 "FG_ERR_TRUNCATED")
    c["array_count_max"] = (header(0, 1) + gstr("k") + u32(ARR) + u32(U8) + u64(2**64 - 1) + b"\0" * 16,
                            "FG_ERR_TRUNCATED")
    c["array_str_elem_past_eof"] = (header(0, 1) + gstr("k") + u32(ARR) + u32(STR) + u64(2) + gstr("ab") + u64(50)
                                    + b"x" * 10, "FG_ERR_BAD_STRING")
    c["scalar_u32_truncated"] = (header(0, 1) + gstr("k") + u32(U32) + b"\x01\x02", "FG_ERR_TRUNCATED")
    c["dup_key"] = (gguf([kv_scalar("general.file_type", U32, 1), kv_scalar("general.file_type", U32, 2)], []),
                    "FG_ERR_DUPLICATE")
    c["dup_key_other_type"] = (gguf([kv_str("a.b", "x"), kv_scalar("c", U8, 1), kv_scalar("a.b", U8, 1)], []),
                               "FG_ERR_DUPLICATE")
    # ---- alignment ----
    for name, kv in (("0", kv_scalar("general.alignment", U32, 0)), ("3", kv_scalar("general.alignment", U32, 3)),
                     ("13", kv_scalar("general.alignment", U32, 13)),
                     ("2pow21", kv_scalar("general.alignment", U32, 1 << 21)),
                     ("i32", kv_scalar("general.alignment", I32, 32)),
                     ("u64", kv_scalar("general.alignment", U64, 32)),
                     ("u8", kv_scalar("general.alignment", U8, 32)),
                     ("str", kv_str("general.alignment", "32")),
                     ("f32", kv_scalar("general.alignment", F32, 32.0)),
                     ("array", kv_array("general.alignment", U32, [32]))):
        c["align_" + name] = (gguf([kv], TENSORS), "FG_ERR_BAD_ALIGNMENT")
    c["align_inconsistent"] = (gguf([], TENSORS, offsets=[0, 204, 236]), "FG_ERR_BAD_OFFSET")  # offsets of alignment 1
    # ---- tensor infos ----
    def one(name, ne_bytes, ndim, ttype_code, offset=0, data=b""):
        head = header(1, 0) + gstr(name) + u32(ndim) + ne_bytes + u32(ttype_code) + u64(offset)
        head += b"\0" * (pad(len(head), 32) - len(head))
        return head + data
    c["tensor_ndim_0_no_data"] = (one("t", b"", 0, 0), "FG_ERR_TRUNCATED")  # one f32 element needs 4 bytes
    c["tensor_ndim_0_block_type"] = (one("t", b"", 0, T_Q8_0[0], data=b"\0" * 64), "FG_ERR_BAD_SHAPE")  # ne[0] 1
    c["tensor_ndim_5"] = (one("t", u64(1) * 5, 5, 0, data=b"\0" * 32), "FG_ERR_BAD_SHAPE")
    c["tensor_ndim_max"] = (one("t", u64(1) * 4, 0xFFFFFFFF, 0), "FG_ERR_BAD_SHAPE")
    c["tensor_dim_negative"] = (one("t", u64(-1) + u64(2), 2, 0), "FG_ERR_BAD_SHAPE")
    c["tensor_numel_overflow"] = (one("t", u64(4 * 0x7FFFFFFF) * 3, 3, 0), "FG_ERR_BAD_SHAPE")
    c["tensor_numel_overflow_2d"] = (one("t", u64(1 << 32) * 2, 2, 24), "FG_ERR_BAD_SHAPE")
    c["tensor_nbytes_overflow"] = (one("t", u64(1 << 62), 1, T_I64[0]), "FG_ERR_BAD_SHAPE")
    c["tensor_type_43"] = (one("t", u64(4), 1, 43), "FG_ERR_BAD_DTYPE")
    c["tensor_type_removed_4"] = (one("t", u64(32), 1, 4), "FG_ERR_BAD_DTYPE")
    c["tensor_type_removed_31"] = (one("t", u64(32), 1, 31), "FG_ERR_BAD_DTYPE")
    c["tensor_type_max"] = (one("t", u64(4), 1, 0xFFFFFFFF), "FG_ERR_BAD_DTYPE")
    c["tensor_block_mismatch"] = (one("t", u64(16) + u64(2), 2, T_Q4_0[0], data=b"\0" * 64), "FG_ERR_BAD_SHAPE")
    c["tensor_name_empty_dup"] = (gguf([], [("", [4], T_F32), ("", [4], T_F32)]), "FG_ERR_DUPLICATE")
    c["tensor_name_64"] = (one("n" * 64, u64(4), 1, 0, data=b"\0" * 32), "FG_ERR_BAD_STRING")
    c["tensor_name_nul"] = (one("a\0b", u64(4), 1, 0, data=b"\0" * 32), "FG_ERR_BAD_STRING")  # stricter than ggml
    c["tensor_name_past_eof"] = (header(1, 0) + u64(500) + b"name" + b"\0" * 40, "FG_ERR_BAD_STRING")
    c["tensor_info_truncated"] = (header(1, 0) + gstr("t") + u32(4) + u64(4) + b"\0" * 20, "FG_ERR_TRUNCATED")
    c["tensor_dup_name"] = (gguf([], [("w", [4], T_F32), ("w", [4], T_F32)]), "FG_ERR_DUPLICATE")
    c["tensor_offset_nonzero"] = (gguf([], [("w", [4], T_F32)], offsets=[32], extra=b"\0" * 64), "FG_ERR_BAD_OFFSET")
    c["tensor_offset_max"] = (gguf([], [("w", [4], T_F32)], offsets=[2**64 - 1]), "FG_ERR_BAD_OFFSET")
    c["tensor_offset_gap"] = (gguf([], [("a", [4], T_F32), ("b", [4], T_F32)], offsets=[0, 64], extra=b"\0" * 64),
                              "FG_ERR_BAD_OFFSET")
    c["tensor_offset_overlap"] = (gguf([], [("a", [4], T_F32), ("b", [4], T_F32)], offsets=[0, 0]),
                                  "FG_ERR_BAD_OFFSET")
    # ---- data ----
    c["data_past_eof"] = (gguf([], TENSORS, drop_tail=200), "FG_ERR_TRUNCATED")
    c["data_one_byte_short"] = (gguf([], [("x", [8], T_F32)])[:-1], "FG_ERR_TRUNCATED")
    c["data_missing"] = (gguf([], TENSORS)[:pad(len(header(3, 0)) + sum(len(tinfo(n, ne, t, 0)) for n, ne, t in TENSORS), 32)],
                         "FG_ERR_TRUNCATED")
    c["data_size_overflow"] = ((header(2, 0) + tinfo("a", [0x7FFFFFFFFFFFFFC0], T_I8, 0)
                                + tinfo("b", [0x7FFFFFFFFFFFFFC0], T_I8, 0x7FFFFFFFFFFFFFC0)).ljust(128, b"\0"),
                               "FG_ERR_TRUNCATED")
    return c


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_gguf_corpus.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    lines = []
    for name, (data, status) in sorted(cases().items()):
        with open(os.path.join(out, name + ".gguf"), "wb") as f:
            f.write(data)
        lines.append("%s.gguf\t%s\n" % (name, status))
    with open(os.path.join(out, "MANIFEST"), "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main()

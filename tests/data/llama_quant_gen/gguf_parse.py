"""A small GGUF reader for the goldens: header, key/values in file order, tensor infos with
their data offsets. gguf-py 0.19's GGUFReader does not know ggml type 42 (q2_0), which this
llama.cpp writes, so the tables are read with this instead (checked against GGUFReader on
every file whose types it knows, see gen_tables.py)."""
import struct

# ggml type id -> (ggml_type_name, elements per block, bytes per block), from ggml.h /
# ggml.c's type traits of the pinned llama.cpp
GGML_TYPES = {
    0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20),
    6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 9: ("q8_1", 32, 36),
    10: ("q2_K", 256, 84), 11: ("q3_K", 256, 110), 12: ("q4_K", 256, 144),
    13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210), 15: ("q8_K", 256, 292),
    16: ("iq2_xxs", 256, 66), 17: ("iq2_xs", 256, 74), 18: ("iq3_xxs", 256, 98),
    19: ("iq1_s", 256, 50), 20: ("iq4_nl", 32, 18), 21: ("iq3_s", 256, 110),
    22: ("iq2_s", 256, 82), 23: ("iq4_xs", 256, 136), 24: ("i8", 1, 1), 25: ("i16", 1, 2),
    26: ("i32", 1, 4), 27: ("i64", 1, 8), 28: ("f64", 1, 8), 29: ("iq1_m", 256, 56),
    30: ("bf16", 1, 2), 34: ("tq1_0", 256, 54), 35: ("tq2_0", 256, 66),
    39: ("mxfp4", 32, 17), 40: ("nvfp4", 64, 36), 41: ("q1_0", 128, 18), 42: ("q2_0", 64, 18),
}

VT_NAMES = {0: "u8", 1: "i8", 2: "u16", 3: "i16", 4: "u32", 5: "i32", 6: "f32", 7: "bool",
            8: "str", 9: "arr", 10: "u64", 11: "i64", 12: "f64"}
_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<b", 10: "<Q",
        11: "<q", 12: "<d"}


class Reader:
    def __init__(self, buf):
        self.b = buf
        self.p = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = self.b[self.p:self.p + n].decode()
        self.p += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et = self.take("<i")
            n = self.take("<Q")
            return (VT_NAMES[et], [self.value(et) for _ in range(n)])
        return self.take(_FMT[t])


def parse(path):
    """Returns dict(kv=[(key, type_name, value)], tensors=[dict(name, ne, type, type_id,
    offset, nbytes)], data_start, alignment, size)."""
    with open(path, "rb") as fh:
        buf = fh.read()
    r = Reader(buf)
    if buf[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.p = 4
    version = r.take("<I")
    n_tensors = r.take("<q")
    n_kv = r.take("<q")
    kv = []
    for _ in range(n_kv):
        k = r.string()
        t = r.take("<i")
        kv.append((k, VT_NAMES[t], r.value(t)))
    align = 32
    for k, t, v in kv:
        if k == "general.alignment":
            align = v
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<q") for _ in range(nd)]
        tid = r.take("<i")
        off = r.take("<Q")
        tname, blk, bsz = GGML_TYPES[tid]
        nel = 1
        for x in ne:
            nel *= x
        if ne[0] % blk:
            raise ValueError(f"{path}: {name}: ne0 {ne[0]} not a multiple of {blk}")
        tensors.append(dict(name=name, ne=ne, type=tname, type_id=tid, offset=off,
                            nbytes=nel // blk * bsz))
    data_start = (r.p + align - 1) // align * align
    return dict(version=version, kv=kv, tensors=tensors, data_start=data_start,
                alignment=align, size=len(buf), buf=buf, meta_end=r.p)

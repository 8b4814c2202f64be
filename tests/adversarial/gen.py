"""Input builders for the adversarial suite (stdlib only): GGUF and safetensors files,
split sets, sharded folders, and the hostile shapes of issue 9 (names built to collide in
the old unkeyed FNV-1a tables, headers of numbers, huge counts, NUL and control bytes).
Each builder writes into a folder and returns what the cases need to know (paths, the
byte where tensor data starts). A small GGUF reader checks what exports wrote."""

import itertools
import json
import os
import struct

# GGUF metadata value types and the ggml tensor types used here.
U8, I8, U16, I16, U32, I32, F32T, BOOL, STR, ARR, U64, I64, F64T = range(13)
GGML_F32, GGML_F16 = 0, 1
GGUF_ALIGN = 32


def _gstr(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


def _gval(typ, v):
    fmt = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32T: "f", BOOL: "?",
           U64: "Q", I64: "q", F64T: "d"}
    if typ == STR:
        return _gstr(v)
    if typ == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(_gval(et, x) for x in items)
    return struct.pack("<" + fmt[typ], v)


def gguf_bytes(kvs=(), tensors=(), version=3, n_tensors=None, n_kv=None):
    """kvs: (key, type, value); tensors: (name, ggml_type, ne (innermost first), data).
    n_tensors / n_kv override the counts written in the header (hostile headers)."""
    out = [b"GGUF", struct.pack("<I", version),
           struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors,
                       len(kvs) if n_kv is None else n_kv)]
    for key, typ, val in kvs:
        out.append(_gstr(key) + struct.pack("<I", typ) + _gval(typ, val))
    off, blobs = 0, []
    for name, gt, ne, data in tensors:
        out.append(_gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) +
                   struct.pack("<IQ", gt, off))
        pad = (-len(data)) % GGUF_ALIGN
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    head = b"".join(out)
    head += b"\0" * ((-len(head)) % GGUF_ALIGN)
    return head + b"".join(blobs), len(head)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return path


def write_gguf(path, kvs=(), tensors=(), **kw):
    data, start = gguf_bytes(kvs, tensors, **kw)
    write(path, data)
    return start


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def pattern_f32(n, seed=1):
    return f32([((i * 7 + seed) % 23 - 11) * 0.125 for i in range(n)])


def st_bytes(tensors=(), metadata=None, header=None):
    """tensors: (name, dtype, shape, data) in order; or a raw header (bytes) as given."""
    if header is None:
        h, off, blobs = {}, 0, []
        if metadata is not None:
            h["__metadata__"] = metadata
        for name, dt, shape, data in tensors:
            h[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
            off += len(data)
            blobs.append(data)
        header = json.dumps(h, separators=(",", ":")).encode()
        body = b"".join(blobs)
    else:
        body = b""
    header += b" " * ((-len(header)) % 8)
    return struct.pack("<Q", len(header)) + header + body, 8 + len(header)


def write_st(path, tensors=(), metadata=None, header=None):
    data, start = st_bytes(tensors, metadata, header)
    write(path, data)
    return start


def write_split(prefix, parts, arch="llama", keys=True, overrides=None):
    """parts: a list of tensor lists; writes PREFIX-0000k-of-0000N.gguf like gguf-split.
    overrides: {part index: {key: (type, value) or None}} to forge one part's split keys."""
    n = len(parts)
    total = sum(len(p) for p in parts)
    paths = []
    for i, ts in enumerate(parts):
        kv = {}
        if keys:
            kv = {"split.no": (U16, i), "split.count": (U16, n), "split.tensors.count": (I32, total)}
        for k, v in ((overrides or {}).get(i) or {}).items():
            if v is None:
                kv.pop(k, None)
            else:
                kv[k] = v
        kvs = ([("general.architecture", STR, arch)] if i == 0 else []) + [(k, t, v) for k, (t, v) in kv.items()]
        p = "%s-%05d-of-%05d.gguf" % (prefix, i + 1, n)
        write_gguf(p, kvs, ts)
        paths.append(p)
    return paths


def write_st_dir(folder, shards, config=None, index_name="model.safetensors.index.json"):
    """shards: a list of tensor lists; writes model-0000k-of-0000N.safetensors and the index."""
    os.makedirs(folder, exist_ok=True)
    n = len(shards)
    wm, names = {}, []
    for i, ts in enumerate(shards):
        name = "model-%05d-of-%05d.safetensors" % (i + 1, n)
        write_st(os.path.join(folder, name), ts, metadata={"format": "pt"})
        for t in ts:
            wm[t[0]] = name
        names.append(os.path.join(folder, name))
    write(os.path.join(folder, index_name), json.dumps({"metadata": {}, "weight_map": wm}).encode())
    if config is not None:
        write(os.path.join(folder, "config.json"), config if isinstance(config, bytes) else json.dumps(config).encode())
    return names


# ---- names that collided in the old tables ------------------------------------------------
# The tables were open-addressed at fnv1a64(name) & mask, with the offset basis missing a
# digit. The low k bits of FNV-1a depend only on the low k bits of the state, and each
# step is a bijection of them, so a Joux multicollision works: from state s find two
# 3-byte blocks reaching the same low-k state (k = 20 < 24 bits of block, so there are
# collisions), then go on from there; r rounds give 2^r names of 3r bytes that all land in
# one bucket of any table of up to 2^k slots.

_OLD_BASIS = 1469598103934665603
_PRIME = 1099511628211
_ALPHA = b"abcdefghijklmnopqrstuvwxyz0123456789_"


def _fnv_low(state, block, mask):
    for b in block:
        state = ((state ^ b) * _PRIME) & mask
    return state


def colliding_names(count_log2, prefix=b"blk.", k=20):
    """2^count_log2 names of len(prefix) + 3 * count_log2 bytes (17: 55, under GGUF's 63)."""
    mask = (1 << k) - 1
    state = _fnv_low(_OLD_BASIS & mask, prefix, mask)
    pairs = []
    for _ in range(count_log2):
        seen = {}
        for b in (bytes(t) for t in itertools.product(_ALPHA, repeat=3)):
            s = _fnv_low(state, b, mask)
            if s in seen:
                pairs.append((seen[s], b))
                state = s
                break
            seen[s] = b
    if len(pairs) != count_log2:
        raise RuntimeError("no colliding blocks found: the generator is broken")
    return [prefix + b"".join(choice) for choice in itertools.product(*pairs)]


def colliding_st(path, count_log2):
    names = colliding_names(count_log2)
    tensors = [(n.decode(), "U8", [1], b"\x01") for n in names]
    write_st(path, tensors)
    return names


def colliding_gguf(path, count_log2):
    names = colliding_names(count_log2)
    kvs = [("general.architecture", STR, "llama")] + [(b"kv." + n, U8, 1) for n in names]
    tensors = [(n, GGML_F32, [1], b"\0\0\0\0") for n in names]
    write_gguf(path, kvs, tensors)
    return names


def colliding_st_dir(folder, count_log2):
    names = [n.decode() for n in colliding_names(count_log2)]
    half = len(names) // 2
    ts = [(n, "U8", [1], b"\x02") for n in names]
    return write_st_dir(folder, [ts[:half], ts[half:]])


def numbers_header(path, size):
    """A safetensors header of about `size` bytes that is one array of numbers."""
    count = (size - 16) // 2
    header = b'{"a":[' + b"0," * count + b'0]}'
    write_st(path, header=header)


def members_header(path, size):
    """A safetensors header of about `size` bytes made of distinct tiny members."""
    parts, n, i = [b"{"], 1, 0
    while n < size:
        m = b'"%x":0,' % i
        parts.append(m)
        n += len(m)
        i += 1
    parts.append(b'"end":0}')
    write_st(path, header=b"".join(parts))


# ---- reading GGUF back ----------------------------------------------------------------------

def read_gguf_kvs(path):
    """{key bytes: (type, value)} of a GGUF file (scalars, strings; arrays as lists)."""
    with open(path, "rb") as f:
        b = f.read()
    pos = [4]

    def take(fmt):
        v = struct.unpack_from("<" + fmt, b, pos[0])
        pos[0] += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        n = take("Q")
        s = b[pos[0]:pos[0] + n]
        pos[0] += n
        return s

    fmts = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32T: "f", BOOL: "?", U64: "Q",
            I64: "q", F64T: "d"}

    def value(t):
        if t == STR:
            return string()
        if t == ARR:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(fmts[t])

    take("I")
    take("Q")
    n_kv = take("Q")
    out = {}
    for _ in range(n_kv):
        k = string()
        t = take("I")
        out[k] = (t, value(t))
    return out

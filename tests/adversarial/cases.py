"""The adversarial cases: one per way of attacking or misusing forgia that issue 9 lists,
each with the behaviour the issue requires (not what the code happens to do):

  exit 0 success, 1 a bad file or a runtime failure, 2 bad usage, 130 / 143 after SIGINT /
  SIGTERM; every failure prints exactly one stderr line "forgia CMD: ..." naming the file and
  the problem; no raw control bytes reach the terminal; outputs never destroy anything.

Where the issue leaves a choice open, a case accepts each allowed answer: an output that is
one of the inputs may be refused as bad usage (2) or as a bad file (1); NUL bytes in
metadata may survive export exactly (0, checked in the output) or be refused (1).

A case is one or more steps (CLI runs) in a folder of its own; `setup` writes the inputs
there (gen.py) and returns names for the argv and message templates ({d} is the folder;
message templates get their values regex-escaped). `unchanged` lists what must come out of
the case bit-identical (inputs, device nodes, FIFOs, links, modes)."""

import json
import math
import os
import re
import socket
import stat
import struct

import gen

COMMANDS = {"inspect", "load", "cat", "export", "devices", "demo", "help", "optim", "es", "train", "eval", "generate",
            "chat", "finetune", "es-finetune"}
REFUSED = (1, 2)  # a bad output path: bad usage or a bad file, the CLI's choice
MiB = 1 << 20


class Step:
    def __init__(self, argv, exit, msg=None, rss_mb=64, timeout=10, inject=None, stdout_to=None,
                 text_stdout=True, one_line=True, post=()):
        self.argv = argv
        self.exit = exit
        self.msg = msg
        self.rss_mb = rss_mb
        self.timeout = timeout
        self.inject = inject
        self.stdout_to = stdout_to
        self.text_stdout = text_stdout
        self.one_line = one_line
        self.post = list(post)


class Case:
    def __init__(self, id, cls, steps, setup=None, unchanged=(), allow_tmp=False, same_message=None):
        self.id = id
        self.cls = cls
        self.steps = steps
        self.setup = setup
        self.unchanged = list(unchanged)
        self.allow_tmp = allow_tmp
        self.same_message = same_message


def case(id, cls, argv, exit, msg=None, setup=None, unchanged=(), same_message=None, **kw):
    return Case(id, cls, [Step(argv, exit, msg, **kw)], setup, unchanged, same_message=same_message)


def P(d, name):
    return os.path.join(d, name)


# ---- common inputs --------------------------------------------------------------------------

def small_tensors():
    return [("tok.weight", gen.GGML_F32, [32, 8], gen.pattern_f32(256, 1)),
            ("blk.0.w.weight", gen.GGML_F32, [32, 4], gen.pattern_f32(128, 2))]


def small_gguf(d, name="in.gguf"):
    gen.write_gguf(P(d, name), [("general.architecture", gen.STR, "llama")], small_tensors())
    return {"in": P(d, name)}


def small_st(d, name="in.safetensors"):
    gen.write_st(P(d, name), [("tok.weight", "F32", [8, 32], gen.pattern_f32(256, 1)),
                              ("blk.0.w.weight", "F32", [4, 32], gen.pattern_f32(128, 2))], {"format": "pt"})
    return {"in": P(d, name)}


def st_folder(d, name="hf"):
    ts = [("layers.%d.weight" % i, "F32", [4, 32], gen.pattern_f32(128, i)) for i in range(4)]
    shards = gen.write_st_dir(P(d, name), [ts[:2], ts[2:]], config={"hidden_size": 32})
    return {"hf": P(d, name), "shard1": shards[0], "shard2": shards[1], "index": P(P(d, name), "model.safetensors.index.json")}


def split_set(d, prefix="m"):
    parts = [[("a.weight", gen.GGML_F32, [32, 2], gen.pattern_f32(64, 1))],
             [("b.weight", gen.GGML_F32, [32, 2], gen.pattern_f32(64, 2))],
             [("c.weight", gen.GGML_F32, [32, 2], gen.pattern_f32(64, 3))]]
    paths = gen.write_split(P(d, prefix), parts)
    return {"p1": paths[0], "p2": paths[1], "p3": paths[2], "prefix": P(d, prefix)}


def big_gguf(d, name="in.gguf", mb=8, dtype=gen.GGML_F32):
    """One large tensor first (the one any read of data meets first), a small one after."""
    n = mb * MiB // 4
    if dtype == gen.GGML_F16:
        data = struct.pack("<H", 0x3C00) * (2 * n)
        ne = [1024, 2 * n // 1024]
    else:
        data = gen.pattern_f32(1024) * (n // 1024)
        ne = [1024, n // 1024]
    start = gen.write_gguf(P(d, name), [("general.architecture", gen.STR, "llama")],
                           [("big.weight", dtype, ne, data), ("small.weight", gen.GGML_F32, [32, 1], gen.pattern_f32(32))])
    return {"in": P(d, name), "start": start, "cut": start + 8192}


def big_st(d, name="in.safetensors", mb=8):
    n = mb * MiB // 4
    start = gen.write_st(P(d, name), [("big.weight", "F32", [n // 1024, 1024], gen.pattern_f32(1024) * (n // 1024)),
                                      ("small.weight", "F32", [1, 32], gen.pattern_f32(32))])
    return {"in": P(d, name), "start": start, "cut": start + 8192}


def notes(d):
    gen.write(P(d, "notes.txt"), b"these are my notes, not a model\n")
    return {"f": P(d, "notes.txt")}


# ---- post-conditions (return a reason string when violated) ---------------------------------

def absent(template):
    def check(ctx, r):
        p = template.format(**ctx)
        return "%s exists" % p if os.path.lexists(p) else None
    return check


def is_gguf(template):
    def check(ctx, r):
        p = template.format(**ctx)
        try:
            with open(p, "rb") as f:
                head = f.read(4)
        except OSError as e:
            return "%s: %s" % (p, e)
        return None if head == b"GGUF" else "%s is not a GGUF file" % p
    return check


def kind(template, want):
    def check(ctx, r):
        p = template.format(**ctx)
        try:
            m = os.lstat(p).st_mode
        except FileNotFoundError:
            return "%s is gone" % p
        got = {stat.S_IFREG: "file", stat.S_IFLNK: "symlink", stat.S_IFIFO: "fifo", stat.S_IFCHR: "chr",
               stat.S_IFDIR: "dir", stat.S_IFSOCK: "socket"}.get(stat.S_IFMT(m), "other")
        return None if got == want else "%s is a %s, expected a %s" % (p, got, want)
    return check


def mode_is(template, want):
    def check(ctx, r):
        p = template.format(**ctx)
        got = stat.S_IMODE(os.stat(p).st_mode)
        return None if got == want else "%s has mode %o, expected %o" % (p, got, want)
    return check


def empty_dir_or_absent(template):
    def check(ctx, r):
        p = template.format(**ctx)
        return "%s holds %s: work was done before the usage check" % (p, os.listdir(p)) if os.path.isdir(p) and \
            os.listdir(p) else None
    return check


def if_ok_contains(template, *needles):
    """When the step succeeded, the output holds each byte string."""
    def check(ctx, r):
        if r.rc != 0:
            return None
        with open(template.format(**ctx), "rb") as f:
            data = f.read()
        miss = [n for n in needles if n not in data]
        return "output lacks %r" % miss if miss else None
    return check


def if_failed_matches(rx):
    def check(ctx, r):
        if r.rc == 0:
            return None
        return None if re.search(rx, r.stderr.decode(errors="replace")) else "refusal does not match /%s/" % rx
    return check


def json_unique(ctx, r):
    dups = []

    def hook(pairs):
        keys = [k for k, _ in pairs]
        dups.extend(k for k in set(keys) if keys.count(k) > 1)
        return dict(pairs)
    try:
        json.loads(r.stdout.decode(), object_pairs_hook=hook)
    except ValueError as e:
        return "stdout is not JSON: %s" % e
    return "duplicate JSON keys: %r" % dups[:5] if dups else None


def progress_lines_bounded(ctx, r):
    lines = [ln for ln in r.stderr.split(b"\n") if ln.strip()]
    allowed = math.ceil(r.seconds) + 3
    return None if len(lines) <= allowed else "%d progress lines in %.1f s on a non-terminal (at most ~1/s)" % (
        len(lines), r.seconds)


def gguf_kv(template, suffix, types, value):
    """The GGUF output holds a key ending in `suffix` of one of `types` with exactly `value`."""
    def check(ctx, r):
        if r.rc != 0:
            return None
        kvs = gen.read_gguf_kvs(template.format(**ctx))
        hits = [(k, t, v) for k, (t, v) in kvs.items() if k.endswith(suffix)]
        if not hits:
            return "no metadata key ending in %r" % suffix
        k, t, v = hits[0]
        if t not in types or v != value or type(v) is not type(value):
            return "%r is type %d value %r, expected a type in %s with %r" % (k, t, v, types, value)
        return None
    return check


# ---- the cases -------------------------------------------------------------------------------

def hostile_headers():
    out = []

    def st_collide(d):
        gen.colliding_st(P(d, "collide.safetensors"), 17)
        return {"f": P(d, "collide.safetensors")}
    # 131,072 names in one bucket of the old table took 173 s; linear: well under a second.
    out.append(case("header-st-colliding-names", "header", ["inspect", "{f}"], 0, setup=st_collide,
                    rss_mb=400, timeout=20))

    def gguf_collide(d):
        gen.colliding_gguf(P(d, "collide.gguf"), 17)
        return {"f": P(d, "collide.gguf")}
    out.append(case("header-gguf-colliding-names", "header", ["inspect", "{f}"], 0, setup=gguf_collide,
                    rss_mb=400, timeout=20))

    def dir_collide(d):
        gen.colliding_st_dir(P(d, "hf"), 17)
        return {"f": P(d, "hf")}
    # the index/shard cross-check (120k tensors: 36 s when quadratic)
    out.append(case("header-index-colliding-names", "header", ["inspect", "{f}"], 0, setup=dir_collide,
                    rss_mb=600, timeout=20))

    def numbers(d):
        gen.numbers_header(P(d, "numbers.safetensors"), 99_000_000)
        return {"f": P(d, "numbers.safetensors")}
    # a 99 MB header of numbers: once 2 GB of RSS; a small multiple of the header now
    out.append(case("header-st-numbers-only", "header", ["inspect", "{f}"], 1, r"{f}", setup=numbers,
                    rss_mb=450, timeout=30))

    def members(d):
        gen.members_header(P(d, "members.safetensors"), 30_000_000)
        return {"f": P(d, "members.safetensors")}
    out.append(case("header-st-many-members", "header", ["inspect", "{f}"], 1, r"{f}", setup=members,
                    rss_mb=600, timeout=30))

    def nested(d):
        gen.write_st(P(d, "nested.safetensors"), header=b'{"a":' + b"[" * 100000 + b"]" * 100000 + b"}")
        return {"f": P(d, "nested.safetensors")}
    out.append(case("header-st-deep-nesting", "header", ["inspect", "{f}"], 1, r"{f}", setup=nested))

    def hugelen(d):
        gen.write(P(d, "hugelen.safetensors"), struct.pack("<Q", (1 << 64) - 1) + b"{}")
        return {"f": P(d, "hugelen.safetensors")}
    out.append(case("header-st-length-2^64-1", "header", ["inspect", "{f}"], 1, r"{f}", setup=hugelen))

    def st_dup(d):
        gen.write_st(P(d, "dup.safetensors"), header=b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                                     b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}')
        with open(P(d, "dup.safetensors"), "ab") as f:
            f.write(b"xy")
        return {"f": P(d, "dup.safetensors")}
    out.append(case("header-st-duplicate-name", "header", ["load", "{f}", "--device", "cpu"], 1,
                    r"{f}.*(?i:duplicate|twice|repeated)", setup=st_dup))

    for label, kw in (("n_tensors-2^63", {"n_tensors": 1 << 63}), ("n_kv-2^62", {"n_kv": 1 << 62}),
                      ("n_tensors-2^32", {"n_tensors": 1 << 32})):
        def counts(d, kw=kw):
            gen.write_gguf(P(d, "counts.gguf"), [("general.architecture", gen.STR, "llama")], small_tensors(), **kw)
            return {"f": P(d, "counts.gguf")}
        out.append(case("header-gguf-" + label, "header", ["inspect", "{f}"], 1, r"{f}", setup=counts))

    def strlen(d):
        data, _ = gen.gguf_bytes([("general.architecture", gen.STR, "llama")], [])
        # the key's length field claims 2^62 bytes
        data = data[:24] + struct.pack("<Q", 1 << 62) + data[32:]
        gen.write(P(d, "strlen.gguf"), data)
        return {"f": P(d, "strlen.gguf")}
    out.append(case("header-gguf-string-2^62", "header", ["inspect", "{f}"], 1, r"{f}", setup=strlen))

    def arrcount(d):
        data, _ = gen.gguf_bytes([("tokenizer.ggml.scores", gen.ARR, (gen.F32T, [0.5]))], [])
        i = data.index(b"tokenizer.ggml.scores") + len("tokenizer.ggml.scores") + 8
        data = data[:i] + struct.pack("<Q", 1 << 61) + data[i + 8:]
        gen.write(P(d, "arr.gguf"), data)
        return {"f": P(d, "arr.gguf")}
    out.append(case("header-gguf-array-2^61", "header", ["inspect", "{f}"], 1, r"{f}", setup=arrcount))

    def dims(d):
        gen.write_gguf(P(d, "dims.gguf"), [], [("w.weight", gen.GGML_F32, [1 << 40, 1 << 40], b"")])
        return {"f": P(d, "dims.gguf")}
    out.append(case("header-gguf-dims-overflow", "header", ["load", "{f}", "--device", "cpu"], 1,
                    r"{f}.*w\.weight", setup=dims))
    return out


def changing_inputs():
    """The input shrinks at a fixed point of the run (the shim, not a timer), with its
    header left whole: right after it is mapped (nothing read yet: a check at open may
    catch it, naming the file), or in the middle of reading tensors (just before the
    loader's readahead of the first tensor, or once the export has written its first bytes),
    which must end in an error naming the file and the tensor being read."""
    out = []
    at_map = ("mmap:{in}", "truncate:{cut}:{in}")
    at_read = ("fadvise:{in}", "truncate:{cut}:{in}")
    at_write = ("write:.fgtmp.", "truncate:{cut}:{in}")
    named = r"{in}"
    with_tensor = r"{in}.*big\.weight|big\.weight.*{in}"
    gone = [absent("{d}/out.gguf")]
    for id, argv, setup, inject, msg, kw in (
            ("truncated-at-open-load", ["load", "{in}", "--device", "cpu"], big_gguf, at_map, named, {}),
            ("truncated-at-open-cat", ["cat", "{in}", "big.weight", "--as", "f32"],
             lambda d: big_gguf(d, dtype=gen.GGML_F16), at_map, named, {"text_stdout": False}),
            ("truncated-at-open-cat-raw", ["cat", "{in}", "big.weight"], big_gguf, at_map, named,
             {"text_stdout": False}),
            ("truncated-at-open-export", ["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf"], big_gguf, at_map,
             named, {"post": gone}),
            ("truncated-reading-load-gguf", ["load", "{in}", "--device", "cpu"], big_gguf, at_read, with_tensor, {}),
            ("truncated-reading-load-convert", ["load", "{in}", "--device", "cpu", "--dtype", "f16"], big_gguf, at_read,
             with_tensor, {}),
            ("truncated-reading-load-st", ["load", "{in}", "--device", "cpu"], big_st, at_read, with_tensor, {}),
            ("truncated-writing-export-verbatim", ["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf"], big_gguf,
             at_write, with_tensor, {"post": gone}),
            ("truncated-writing-export-q8_0",
             ["export", "--from-safetensors", "{in}", "--out", "{d}/out.gguf", "--dtype", "q8_0"], big_st, at_write,
             with_tensor, {"post": gone}),
    ):
        out.append(case(id, "truncate", argv, 1, msg, setup=setup, inject=inject, **kw))

    def rewritten(d):
        ctx = big_gguf(d)
        with open(ctx["in"], "rb") as f:
            gen.write(P(d, "prefix.bin"), f.read(ctx["cut"]))
        ctx["src"] = P(d, "prefix.bin")
        return ctx
    # rewritten in place (O_TRUNC, same inode) with a shorter prefix of itself
    out.append(case("rewritten-reading-load", "truncate", ["load", "{in}", "--device", "cpu"], 1, with_tensor,
                    setup=rewritten, inject=("fadvise:{in}", "copy:{src}:{in}")))
    out.append(case("rewritten-writing-export", "truncate", ["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf"],
                    1, with_tensor, setup=rewritten, inject=("write:.fgtmp.", "copy:{src}:{in}"), post=gone))

    def shard_trunc(d):
        ctx = st_folder(d)
        ctx["cut"] = os.path.getsize(ctx["shard2"]) - 256
        return ctx
    out.append(case("truncated-reading-shard", "truncate", ["load", "{hf}", "--device", "cpu"], 1,
                    r"{shard2}.*layers\.[23]\.weight|layers\.[23]\.weight.*{shard2}", setup=shard_trunc,
                    inject=("fadvise:model-00002-of-00002", "truncate:{cut}:{shard2}")))
    return out


def special_files():
    out = []

    def fifo(d):
        os.mkfifo(P(d, "pipe.gguf"))
        os.mkfifo(P(d, "pipe.safetensors"))
        return {"f": P(d, "pipe.gguf"), "s": P(d, "pipe.safetensors")}
    fmsg = r"{f}.*(?i:fifo|not a regular file)"
    for cmd, argv in (("inspect", ["inspect", "{f}"]), ("load", ["load", "{f}", "--device", "cpu"]),
                      ("cat", ["cat", "{f}", "a.weight"]),
                      ("export", ["export", "--from-gguf", "{f}", "--out", "{d}/o.gguf"])):
        out.append(case("fifo-input-" + cmd, "special", argv, 1, fmsg, setup=fifo, unchanged=["{f}"]))
    out.append(case("fifo-input-export-st", "special", ["export", "--from-safetensors", "{s}", "--out", "{d}/o.gguf"], 1,
                    r"{s}.*(?i:fifo|not a regular file)", setup=fifo, unchanged=["{s}"]))

    def fifo_part(d):
        ctx = split_set(d)
        os.unlink(ctx["p2"])
        os.mkfifo(ctx["p2"])
        return ctx
    out.append(case("fifo-split-part", "special", ["load", "{p1}", "--device", "cpu"], 1,
                    r"{p2}.*(?i:fifo|not a regular file)", setup=fifo_part))

    def fifo_shard(d):
        ctx = st_folder(d)
        os.unlink(ctx["shard2"])
        os.mkfifo(ctx["shard2"])
        return ctx
    out.append(case("fifo-shard", "special", ["inspect", "{hf}"], 1, r"{shard2}.*(?i:fifo|not a regular file)",
                    setup=fifo_shard))
    out.append(case("fifo-shard-export", "special", ["export", "--from-safetensors", "{hf}", "--out", "{d}/o.gguf"], 1,
                    r"{shard2}.*(?i:fifo|not a regular file)", setup=fifo_shard))

    def fifo_index(d):
        ctx = st_folder(d)
        os.unlink(ctx["index"])
        os.mkfifo(ctx["index"])
        return ctx
    out.append(case("fifo-index", "special", ["inspect", "{index}"], 1, r"{index}.*(?i:fifo|not a regular file)",
                    setup=fifo_index))

    def fifo_config(d):
        ctx = st_folder(d)
        os.unlink(P(ctx["hf"], "config.json"))
        os.mkfifo(P(ctx["hf"], "config.json"))
        return ctx
    # a config.json that is not a regular file counts as absent (ckpt.h)
    out.append(case("fifo-config-json", "special", ["inspect", "{hf}"], 0, setup=fifo_config))

    out.append(case("chardev-input", "special", ["inspect", "/dev/zero"], 1,
                    r"/dev/zero.*(?i:device|not a regular file)"))
    out.append(case("chardev-input-load", "special", ["load", "/dev/null", "--device", "cpu"], 1,
                    r"/dev/null.*(?i:device|not a regular file)"))

    def sock(d):
        s = socket.socket(socket.AF_UNIX)
        s.bind(P(d, "model.gguf"))
        s.close()
        return {"f": P(d, "model.gguf")}
    out.append(case("socket-input", "special", ["inspect", "{f}"], 1, r"{f}.*(?i:socket|not a regular file)",
                    setup=sock))

    def adir(d):
        os.mkdir(P(d, "x.gguf"))
        return {"f": P(d, "x.gguf")}
    out.append(case("directory-as-gguf", "special", ["export", "--from-gguf", "{f}", "--out", "{d}/o.gguf"], 1,
                    r"{f}", setup=adir))
    return out


def splits():
    out = []
    part2 = r"{p2}.*part 2 of (a )?3.*{prefix}-00001-of-00003\.gguf"
    for cmd, argv in (("load", ["load", "{p2}", "--device", "cpu"]),
                      ("export", ["export", "--from-gguf", "{p2}", "--out", "{d}/o.gguf"]),
                      ("cat", ["cat", "{p2}", "b.weight"])):
        out.append(case("split-part2-alone-" + cmd, "split", argv, 1, part2, setup=split_set,
                        unchanged=["{p1}", "{p2}", "{p3}"], text_stdout=cmd != "cat", post=[absent("{d}/o.gguf")]))

    def renamed(d):
        ctx = split_set(d)
        os.rename(ctx["p2"], P(d, "second.gguf"))
        os.rename(ctx["p1"], P(d, "first.gguf"))
        return dict(ctx, r2=P(d, "second.gguf"), r1=P(d, "first.gguf"))
    out.append(case("split-part2-renamed", "split", ["export", "--from-gguf", "{r2}", "--out", "{d}/o.gguf"], 1,
                    r"{r2}.*part 2 of (a )?3", setup=renamed, post=[absent("{d}/o.gguf")]))
    out.append(case("split-part1-renamed", "split", ["load", "{r1}", "--device", "cpu"], 1,
                    r"{r1}.*part 1 of (a )?3", setup=renamed))

    def mixed(d):
        ctx = split_set(d)
        other = gen.write_split(P(d, "other"), [[("x.weight", gen.GGML_F32, [32, 1], gen.pattern_f32(32))],
                                                [("y.weight", gen.GGML_F32, [32, 1], gen.pattern_f32(32))]])
        os.replace(other[1], ctx["p2"])  # another 2-part model's part 2 in place of ours
        return ctx
    out.append(case("split-mixed-sets", "split", ["export", "--from-gguf", "{p1}", "--out", "{d}/o.gguf"], 1,
                    r"{p2}.*split\.(count|no|tensors\.count)", setup=mixed, post=[absent("{d}/o.gguf")]))

    def dup(d):
        t = [("a.weight", gen.GGML_F32, [32, 1], gen.pattern_f32(32))]
        paths = gen.write_split(P(d, "m"), [t, t])
        return {"p1": paths[0], "p2": paths[1]}
    out.append(case("split-tensor-twice", "split", ["load", "{p1}", "--device", "cpu"], 1, r"{p2}.*a\.weight",
                    setup=dup))

    def missing(d):
        ctx = split_set(d)
        os.unlink(ctx["p3"])
        return ctx
    out.append(case("split-part-missing", "split", ["inspect", "{p1}"], 1, r"{p3}", setup=missing))

    shard = r"{shard1}.*{index}|{index}.*{shard1}"
    out.append(case("shard-alone-export", "split", ["export", "--from-safetensors", "{shard1}", "--out", "{d}/o.gguf"],
                    1, shard, setup=st_folder, post=[absent("{d}/o.gguf")]))
    out.append(case("shard-alone-load", "split", ["load", "{shard1}", "--device", "cpu"], 1, shard, setup=st_folder))
    return out


def outputs():
    out = []

    def hf(d):
        return st_folder(d)
    for label, target in (("onto-shard", "{shard1}"), ("onto-index", "{index}"), ("onto-input-dir", "{hf}"),
                          ("inside-input-dir", "{hf}/model.gguf")):
        out.append(case("out-" + label, "output", ["export", "--from-safetensors", "{hf}", "--out", target], REFUSED,
                        r"{hf}", setup=hf, unchanged=["{hf}"], post=[absent("{hf}/model.gguf")]))

    out.append(case("out-onto-input-gguf", "output", ["export", "--from-gguf", "{in}", "--out", "{in}", "--dtype", "f16"],
                    REFUSED, r"{in}", setup=small_gguf, unchanged=["{in}"]))

    def link_to_input(d):
        ctx = small_gguf(d)
        os.symlink(ctx["in"], P(d, "link.gguf"))
        return dict(ctx, link=P(d, "link.gguf"))
    out.append(case("out-symlink-to-input", "output", ["export", "--from-gguf", "{in}", "--out", "{link}"], REFUSED,
                    r"{link}|{in}", setup=link_to_input, unchanged=["{in}", "{link}"]))
    out.append(case("out-onto-other-part", "output", ["export", "--from-gguf", "{p1}", "--out", "{p3}"], REFUSED,
                    r"{p3}", setup=split_set, unchanged=["{p1}", "{p2}", "{p3}"]))

    def to_devnull(d):
        ctx = small_gguf(d)
        os.symlink("/dev/null", P(d, "null.gguf"))
        return dict(ctx, link=P(d, "null.gguf"))
    # a link to /dev/null resolves to a device: refused, the link and the device stay
    out.append(case("out-symlink-to-devnull", "output", ["export", "--from-gguf", "{in}", "--out", "{link}"], REFUSED,
                    r"{link}|/dev/null", setup=to_devnull, unchanged=["{in}", "{link}", "/dev/null"],
                    post=[kind("/dev/null", "chr")]))
    if os.geteuid() != 0:  # as root a regression would replace the machine's /dev/null
        out.append(case("out-devnull", "output", ["export", "--from-gguf", "{in}", "--out", "/dev/null"], REFUSED,
                        r"/dev/null", setup=small_gguf, unchanged=["/dev/null"], post=[kind("/dev/null", "chr")]))

    def to_fifo(d):
        ctx = small_gguf(d)
        os.mkfifo(P(d, "out.gguf"))
        return dict(ctx, out=P(d, "out.gguf"))
    out.append(case("out-fifo", "output", ["export", "--from-gguf", "{in}", "--out", "{out}"], REFUSED,
                    r"{out}.*(?i:fifo|not a regular file)", setup=to_fifo, unchanged=["{out}"],
                    post=[kind("{out}", "fifo")]))

    def dangling(d):
        ctx = small_gguf(d)
        os.symlink(P(d, "nowhere/x.gguf"), P(d, "dangling.gguf"))
        return dict(ctx, out=P(d, "dangling.gguf"))
    out.append(case("out-dangling-symlink", "output", ["export", "--from-gguf", "{in}", "--out", "{out}"], REFUSED,
                    r"{out}", setup=dangling, unchanged=["{out}"]))
    out.append(case("out-missing-dir", "output", ["export", "--from-gguf", "{in}", "--out", "{d}/no/such/o.gguf",
                                                  "--dtype", "q8_0"], REFUSED, r"{d}/no/such", setup=small_gguf))

    def big_to_missing(d):
        return big_gguf(d, mb=64)
    # the output path is checked before any work: no 64 MiB conversion first
    out.append(case("out-checked-before-work", "output", ["export", "--from-gguf", "{in}", "--out", "{d}/no/o.gguf",
                                                          "--dtype", "q8_0"], REFUSED, r"{d}/no", setup=big_to_missing,
                    rss_mb=48))

    long_name = "m" * 250 + ".gguf"  # NAME_MAX: 255
    out.append(case("out-long-name", "output", ["export", "--from-gguf", "{in}", "--out", "{d}/" + long_name], 0,
                    setup=small_gguf, post=[is_gguf("{d}/" + long_name)]))

    def private_target(d):
        ctx = small_gguf(d)
        gen.write(P(d, "out.gguf"), b"old")
        os.chmod(P(d, "out.gguf"), 0o600)
        return ctx
    out.append(case("out-keeps-mode", "output", ["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf"], 0,
                    setup=private_target, post=[mode_is("{d}/out.gguf", 0o600), is_gguf("{d}/out.gguf")]))

    def link_to_file(d):
        ctx = small_gguf(d)
        os.mkdir(P(d, "real"))
        gen.write(P(d, "real/target.gguf"), b"old")
        os.symlink(P(d, "real/target.gguf"), P(d, "link.gguf"))
        return ctx
    out.append(case("out-symlink-replaces-target", "output",
                    ["export", "--from-gguf", "{in}", "--out", "{d}/link.gguf"], 0, setup=link_to_file,
                    post=[kind("{d}/link.gguf", "symlink"), is_gguf("{d}/real/target.gguf")]))

    # SIGKILL mid-write leaves a temporary file; the next write to the same target removes it
    kill = Case("out-sigkill-leftover-cleaned", "output", [
        Step(["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf"], -9, one_line=False,
             inject=("write:.fgtmp.", "signal:9"), post=[absent("{d}/out.gguf")]),
        Step(["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf"], 0, post=[is_gguf("{d}/out.gguf")]),
    ], setup=big_gguf)
    out.append(kill)
    return out


def names_and_metadata():
    out = []

    def nul_keys(d):
        gen.write_st(P(d, "in.safetensors"), [("w.weight", "F32", [1, 32], gen.pattern_f32(32))],
                     {"k\u0000a": "first", "k\u0000b": "second", "v": "x\u0000y"})
        return {"in": P(d, "in.safetensors")}
    out.append(case("nul-in-metadata-export", "names",
                    ["export", "--from-safetensors", "{in}", "--out", "{d}/o.gguf"], (0, 1), r"{in}",
                    setup=nul_keys, post=[if_ok_contains("{d}/o.gguf", b"k\x00a", b"k\x00b", b"x\x00y"),
                                          if_failed_matches(r"(?i)NUL|\\0|\\u0000|\\x00")]))

    def esc_names(d, nul=True):
        ts = [("\x1b[31mred\x1b[0m.weight", "F32", [1, 32], gen.pattern_f32(32)),
              ("bell\x07.weight", "F32", [1, 32], gen.pattern_f32(32)),
              ("quote\"back\\slash", "F32", [1], gen.pattern_f32(1))]
        if nul:  # GGUF names cannot hold NUL: only for the commands that do not export
            ts += [("a\u0000b", "F32", [1], gen.pattern_f32(1)), ("a\u0000c", "F32", [1], gen.pattern_f32(1))]
        gen.write_st(P(d, "esc.safetensors"), ts, {"\x1b]0;title\x07": "\x1b[2J", "cr": "line\roverwrite"})
        return {"f": P(d, "esc.safetensors")}
    out.append(case("control-bytes-inspect", "names", ["inspect", "{f}", "--full"], 0, setup=esc_names))
    out.append(case("control-bytes-inspect-json", "names", ["inspect", "{f}", "--json", "--full"], 0,
                    setup=esc_names, post=[json_unique]))
    out.append(case("control-bytes-load-list", "names", ["load", "{f}", "--device", "cpu", "--list"], 0,
                    setup=esc_names))
    out.append(case("control-bytes-export-dry-run", "names",
                    ["export", "--from-safetensors", "{f}", "--out", "{d}/o.gguf", "--dry-run"], 0,
                    setup=lambda d: esc_names(d, nul=False)))
    out.append(case("control-bytes-missing-tensor", "names", ["cat", "{f}", "\x1b[2Jgone"], 1,
                    r"{f}.*gone", setup=esc_names))

    def esc_gguf(d):
        gen.write_gguf(P(d, "esc.gguf"), [("general.name", gen.STR, "evil\x1b[2J\x1b[Hname"),
                                          ("tokenizer.ggml.tokens", gen.ARR, (gen.STR, ["\x1b", "\x00", "\r"]))],
                       [("\x1b[1mbold.weight", gen.GGML_F32, [32], gen.pattern_f32(32))])
        return {"f": P(d, "esc.gguf")}
    out.append(case("control-bytes-gguf-inspect", "names", ["inspect", "{f}", "--full"], 0, setup=esc_gguf))
    out.append(case("control-bytes-gguf-json", "names", ["inspect", "{f}", "--json", "--full"], 0, setup=esc_gguf,
                    post=[json_unique]))
    out.append(case("control-bytes-in-path", "names", ["inspect", "{d}/\x1b[31mmissing.gguf"], 1, r"missing\.gguf"))

    def config(d, cfg):
        ts = [("w.weight", "F32", [1, 32], gen.pattern_f32(32))]
        gen.write_st_dir(P(d, "hf"), [ts], config=cfg)
        return {"hf": P(d, "hf")}
    big = (b'{"big_u64": 18446744073709551615, "min_i64": -9223372036854775808, "p53": 9007199254740993,'
           b' "huge_f": 3.5e38, "small": 7}')
    out.append(case("config-big-integers", "metadata", ["export", "--from-safetensors", "{hf}", "--out", "{d}/o.gguf"],
                    0, setup=lambda d: config(d, big),
                    post=[gguf_kv("{d}/o.gguf", b".big_u64", (gen.U64,), 18446744073709551615),
                          gguf_kv("{d}/o.gguf", b".min_i64", (gen.I64,), -9223372036854775808),
                          gguf_kv("{d}/o.gguf", b".p53", (gen.U64, gen.I64), 9007199254740993),
                          gguf_kv("{d}/o.gguf", b".huge_f", (gen.F64T,), 3.5e38)]))
    out.append(case("config-flattening-collision", "metadata",
                    ["export", "--from-safetensors", "{hf}", "--out", "{d}/o.gguf"], 1, r"a\.b",
                    setup=lambda d: config(d, b'{"a": {"b": 1}, "a.b": 2}'), post=[absent("{d}/o.gguf")]))
    return out


def quantization():
    out = []

    def values(d, v):
        vals = [0.5] * 64
        vals[40] = v
        gen.write_st(P(d, "in.safetensors"), [("w.weight", "F32", [2, 32], gen.f32(vals))])
        return {"in": P(d, "in.safetensors")}
    # 1e7 in a q8_0 block: scale 1e7/127 overflows f16 (ggml writes NaN); refused like NaN,
    # naming the tensor and the block (the second: elements 32..63)
    for dt in ("q8_0", "q4_0", "q5_1"):
        out.append(case("quant-scale-overflow-" + dt, "quant",
                        ["export", "--from-safetensors", "{in}", "--out", "{d}/o.gguf", "--dtype", dt], 1,
                        r"w\.weight.*(?i:block)", setup=lambda d: values(d, 1e7), post=[absent("{d}/o.gguf")]))
    out.append(case("quant-nan", "quant", ["export", "--from-safetensors", "{in}", "--out", "{d}/o.gguf",
                                           "--dtype", "q8_0"], 1, r"w\.weight",
                    setup=lambda d: values(d, float("nan")), post=[absent("{d}/o.gguf")]))
    out.append(case("quant-large-but-fits", "quant", ["export", "--from-safetensors", "{in}", "--out", "{d}/o.gguf",
                                                      "--dtype", "q8_0"], 0,
                    setup=lambda d: values(d, 60000.0), post=[is_gguf("{d}/o.gguf")]))

    def kq(d):
        vals = [0.25] * 256
        vals[3] = 1e9
        gen.write_st(P(d, "in.safetensors"), [("w.weight", "F32", [1, 256], gen.f32(vals))])
        return {"in": P(d, "in.safetensors")}
    out.append(case("quant-scale-overflow-q4_K", "quant",
                    ["export", "--from-safetensors", "{in}", "--out", "{d}/o.gguf", "--dtype", "q4_K"], 1,
                    r"w\.weight.*(?i:block)", setup=kq, post=[absent("{d}/o.gguf")]))
    return out


def cli_usage():
    out = []
    u = "usage"
    for id, argv, msg in (
            ("no-command", [], None),
            ("unknown-command", ["frobnicate"], r"frobnicate"),
            ("help-unknown", ["help", "frobnicate"], r"frobnicate"),
            ("inspect-no-path", ["inspect"], None),
            ("inspect-two-paths", ["inspect", "{in}", "{in}"], None),
            ("inspect-bad-flag", ["inspect", "{in}", "--bogus"], r"--bogus"),
            ("cat-no-tensor", ["cat", "{in}"], None),
            ("cat-bad-as", ["cat", "{in}", "tok.weight", "--as", "f64"], r"f64"),
            ("cat-repeated-as", ["cat", "{in}", "tok.weight", "--as", "f32", "--as", "f32"], r"--as"),
            ("load-bad-device", ["load", "{in}", "--device", "tpu"], r"tpu"),
            ("load-bad-device-index", ["load", "{in}", "--device", "cuda:x"], r"cuda:x"),
            ("load-bad-device-missing-file", ["load", "{d}/absent.gguf", "--device", "tpu"], r"tpu"),
            ("load-missing-value", ["load", "{in}", "--device"], r"--device"),
            ("load-repeated-device", ["load", "{in}", "--device", "cpu", "--device", "cpu"], r"--device"),
            ("load-bad-dtype", ["load", "{in}", "--dtype", "f8"], r"f8"),
            ("load-bad-ring", ["load", "{in}", "--ring", "0,1M"], r"--ring|0,1M"),
            ("load-bad-regex", ["load", "{in}", "--only", "("], r"--only|\("),
            ("export-no-source", ["export", "--out", "{d}/o.gguf"], None),
            ("export-two-sources", ["export", "--from-gguf", "{in}", "--from-safetensors", "{in}", "--out", "{d}/o"], None),
            ("export-repeated-out", ["export", "--from-gguf", "{in}", "--out", "{d}/a.gguf", "--out", "{d}/b.gguf"],
             r"--out"),
            ("export-repeated-source", ["export", "--from-gguf", "{in}", "--from-gguf", "{in}", "--out", "{d}/a.gguf"],
             r"--from-gguf"),
            ("export-no-out", ["export", "--from-gguf", "{in}"], r"--out"),
            ("export-bad-dtype", ["export", "--from-gguf", "{in}", "--out", "{d}/o.gguf", "--dtype", "q9_9"], r"q9_9"),
            ("export-bad-chunk", ["export", "--from-gguf", "{in}", "--out", "{d}/o.gguf", "--chunk-mib", "0"],
             r"--chunk-mib"),
            ("export-missing-value", ["export", "--from-gguf"], r"--from-gguf"),
            ("devices-extra", ["devices", "extra"], r"extra"),
    ):
        out.append(case("usage-" + id, u, argv, 2, msg, setup=small_gguf, post=[absent("{d}/o.gguf"),
                                                                            absent("{d}/a.gguf")]))
    # bad usage is found before any work: no 300 MB model built first
    out.append(case("usage-demo-bad-device", u, ["demo", "--dir", "{d}/demo", "--device", "tpu"], 2, r"tpu",
                    rss_mb=48, post=[empty_dir_or_absent("{d}/demo")]))
    out.append(case("help-help", u, ["help", "help"], 0))
    out.append(case("help-export", u, ["help", "export"], 0))
    for cmd in ("load", "cat"):
        argv = {"load": ["load", "{f}", "--device", "cpu"], "cat": ["cat", "{f}", "a.weight"]}[cmd]
        out.append(case("not-a-model-" + cmd, u, argv, 1, r"{f}", setup=notes, same_message="notes.txt"))
    # inspect reads more kinds than models (frames, JSON, imatrices) and names them all
    out.append(case("not-a-model-inspect", u, ["inspect", "{f}"], 1,
                    r"{f}: 32 bytes starting 74 .*: not a GGUF, safetensors, optimizer frame, imatrix or JSON file",
                    setup=notes))
    # output that cannot be written is a failure, said once
    full = "/dev/full"
    out.append(case("stdout-full-inspect", u, ["inspect", "{in}"], 1, r"(?i)stdout|standard output|write",
                    setup=small_gguf, stdout_to=full))
    out.append(case("stdout-full-devices", u, ["devices"], 1, r"(?i)stdout|standard output|write", stdout_to=full))
    out.append(case("stdout-full-dry-run", u, ["export", "--from-gguf", "{in}", "--out", "{d}/o.gguf", "--dry-run"], 1,
                    r"(?i)stdout|standard output|write", setup=small_gguf, stdout_to=full))
    out.append(case("stdout-full-load-list", u, ["load", "{in}", "--device", "cpu", "--list"], 1,
                    r"(?i)stdout|standard output|write", setup=small_gguf, stdout_to=full))
    out.append(case("stdout-full-help", u, ["help"], 1, r"(?i)stdout|standard output|write", stdout_to=full))

    def many(d):
        ts = [("t%06d.weight" % i, "F32", [1, 32], gen.pattern_f32(32, i % 7)) for i in range(30000)]
        gen.write_st(P(d, "many.safetensors"), ts)
        return {"in": P(d, "many.safetensors")}
    out.append(case("progress-non-terminal", u, ["export", "--from-safetensors", "{in}", "--out", "{d}/o.gguf"], 0,
                    setup=many, timeout=30, rss_mb=200, post=[progress_lines_bounded, is_gguf("{d}/o.gguf")]))
    return out


def signals():
    out = []
    for sig, code in ((2, 130), (15, 143)):
        # mid-write: the signal comes right after the first write to the temporary file
        out.append(case("signal-%d-export-mid-write" % sig, "signal",
                        ["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf", "--dtype", "q8_0"], code, None,
                        setup=big_gguf, inject=("write:.fgtmp.", "signal:%d" % sig), unchanged=["{in}"],
                        post=[absent("{d}/out.gguf")]))
        out.append(case("signal-%d-load" % sig, "signal", ["load", "{in}", "--device", "cpu", "--dtype", "f16"], code,
                        None, setup=big_gguf, inject=("mmap:{in}", "signal:%d" % sig)))
    out.append(case("signal-2-cat", "signal", ["cat", "{in}", "big.weight", "--as", "f32"], 130, None, setup=big_gguf,
                    inject=("mmap:{in}", "signal:2"), text_stdout=False))

    def existing(d):
        ctx = big_gguf(d)
        gen.write(P(d, "out.gguf"), b"previous contents")
        return ctx
    out.append(case("signal-2-export-keeps-old-output", "signal",
                    ["export", "--from-gguf", "{in}", "--out", "{d}/out.gguf"], 130, None, setup=existing,
                    inject=("write:.fgtmp.", "signal:2"), unchanged=["{in}", "{d}/out.gguf"]))
    return out


# ---- every other command that writes: optim, es replay, train and es --save ------------------

def optim_inputs(d):
    gen.write(P(d, "c.json"), b'{"optimizer": "adamw", "lr": 0.01}')
    gen.write_st(P(d, "p.safetensors"), [("w", "F32", [2, 3], gen.pattern_f32(6, 1)),
                                         ("b", "F32", [3], gen.pattern_f32(3, 2))])
    gen.write_st(P(d, "g.safetensors"), [("w@1", "F32", [2, 3], gen.pattern_f32(6, 3)),
                                         ("b@1", "F32", [3], gen.pattern_f32(3, 4)),
                                         ("w@2", "F32", [2, 3], gen.pattern_f32(6, 5)),
                                         ("b@2", "F32", [3], gen.pattern_f32(3, 6))])
    gen.write(P(d, "r.json"), b"[[1, -1], [0.5, 0.25]]")
    gen.write(P(d, "es.json"), b'{"population": 2, "antithetic": true, "params": ["w"]}')
    return {"cfg": P(d, "c.json"), "p": P(d, "p.safetensors"), "g": P(d, "g.safetensors"), "r": P(d, "r.json"),
            "es": P(d, "es.json"), "o": P(d, "o.safetensors")}


def is_st(template):
    def check(ctx, r):
        p = template.format(**ctx)
        try:
            with open(p, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                json.loads(f.read(n))
        except (OSError, ValueError, struct.error) as e:
            return "%s is not a safetensors file: %s" % (p, e)
        return None
    return check


def committed_at(template, step):
    def check(ctx, r):
        p = template.format(**ctx)
        try:
            with open(os.path.join(p, "trainer_state.json")) as f:
                got = json.load(f)["step"]
        except (OSError, ValueError, KeyError) as e:
            return "%s is not a committed checkpoint: %s" % (p, e)
        return None if got == step else "%s is committed at step %s, expected %s" % (p, got, step)
    return check


def writers():
    out = []
    OPT = ["optim", "--config", "{cfg}", "--params", "{p}", "--grads", "{g}", "--steps", "2"]
    REP = ["es", "replay", "--config", "{es}", "--params", "{p}", "--rewards", "{r}"]
    for label, argv, target in (
            ("optim-out-onto-grads", OPT + ["--out", "{g}"], "{g}"),
            ("optim-out-onto-params", OPT + ["--out", "{p}"], "{p}"),
            ("optim-state-out-onto-grads", OPT + ["--out", "{o}", "--state-out", "{g}"], "{g}"),
            ("optim-state-out-onto-config", OPT + ["--out", "{o}", "--state-out", "{cfg}"], "{cfg}"),
            ("es-replay-out-onto-rewards", REP + ["--out", "{r}"], "{r}"),
            ("es-replay-out-onto-params", REP + ["--out", "{p}"], "{p}"),
            ("es-replay-out-onto-config", REP + ["--out", "{es}"], "{es}")):
        out.append(case(label, "writers", argv, 2, target, setup=optim_inputs,
                        unchanged=["{cfg}", "{p}", "{g}", "{r}", "{es}"], post=[absent("{o}")]))
    out.append(case("optim-out-equals-state-out", "writers", OPT + ["--out", "{o}", "--state-out", "{o}"], 2,
                    r"--state-out", setup=optim_inputs, post=[absent("{o}")]))

    def with_link(d):
        ctx = optim_inputs(d)
        os.symlink(ctx["p"], P(d, "link.safetensors"))
        os.symlink("/dev/null", P(d, "null.safetensors"))
        os.mkfifo(P(d, "pipe.safetensors"))
        return dict(ctx, link=P(d, "link.safetensors"), null=P(d, "null.safetensors"), pipe=P(d, "pipe.safetensors"))
    for cmd, argv in (("optim", OPT), ("es-replay", REP)):
        out.append(case(cmd + "-out-symlink-to-input", "writers", argv + ["--out", "{link}"], 2, r"{link}|{p}",
                        setup=with_link, unchanged=["{p}", "{link}"]))
        out.append(case(cmd + "-out-symlink-to-devnull", "writers", argv + ["--out", "{null}"], 2, r"{null}|/dev/null",
                        setup=with_link, unchanged=["{null}", "/dev/null"], post=[kind("/dev/null", "chr")]))
        out.append(case(cmd + "-out-fifo", "writers", argv + ["--out", "{pipe}"], 2,
                        r"{pipe}.*(?i:fifo|not a regular file)", setup=with_link, unchanged=["{pipe}"],
                        post=[kind("{pipe}", "fifo")]))
        out.append(case(cmd + "-out-directory", "writers", argv + ["--out", "{d}"], 2, r"{d}", setup=optim_inputs))
        out.append(case(cmd + "-out-inside-missing-dir", "writers", argv + ["--out", "{d}/no/o.safetensors"], 1,
                        r"{d}/no", setup=optim_inputs))

    def old_output(d):
        ctx = optim_inputs(d)
        gen.write(ctx["o"], b"previous contents")
        return ctx
    for cmd, argv in (("optim", OPT + ["--out", "{o}"]), ("es-replay", REP + ["--out", "{o}"])):
        # a disk that fills up mid-write: one line, the old output as it was, no temporary file
        out.append(case(cmd + "-full-disk", "writers", argv, 1, r"(?i:no space)", setup=old_output,
                        inject=("write:.fgtmp.", "enospc"), unchanged=["{o}", "{p}"]))
        out.append(case(cmd + "-sigterm-mid-write", "writers", argv, 143, None, setup=old_output,
                        inject=("write:.fgtmp.", "signal:15"), unchanged=["{o}", "{p}"]))
        out.append(Case(cmd + "-sigkill-leftover-cleaned", "writers", [
            Step(argv, -9, one_line=False, inject=("write:.fgtmp.", "signal:9"), post=[absent("{o}")]),
            Step(argv, 0, post=[is_st("{o}")]),
        ], setup=optim_inputs))
    out.append(case("optim-state-out-full-disk", "writers", OPT + ["--out", "{d}/x.safetensors", "--state-out", "{o}"],
                    1, r"(?i:no space)", setup=old_output, inject=("write:.fgtmp.:2", "enospc"), unchanged=["{o}"]))

    # checkpoint directories: train and es --save
    TRAIN = ["train", "spirals", "--threads", "1"]
    ES = ["es", "spirals", "--threads", "1", "--target", "0"]
    for cmd, run, n in (("train", TRAIN, "--steps"), ("es", ES, "--iterations")):
        first = Step(run + [n, "6", "--save", "{d}/ck"], 0, timeout=60, post=[committed_at("{d}/ck", 6)])
        out.append(Case(cmd + "-save-over-committed", "writers", [
            first, Step(run + [n, "3", "--save", "{d}/ck"], 2, r"{d}/ck.*--force", post=[committed_at("{d}/ck", 6)]),
            Step(run + [n, "3", "--save", "{d}/ck", "--force"], 0, timeout=60, post=[committed_at("{d}/ck", 3)]),
            Step(run + [n, "5", "--resume", "{d}/ck", "--save", "{d}/ck"], 0, timeout=60,
                 post=[committed_at("{d}/ck", 5)])]))
        out.append(Case(cmd + "-save-inside-resumed", "writers", [
            first, Step(run + [n, "8", "--resume", "{d}/ck", "--save", "{d}/ck/sub"], 2, r"{d}/ck",
                        post=[absent("{d}/ck/sub")])]))
        out.append(case(cmd + "-save-onto-file", "writers", run + ["--save", "{f}"], 2, r"{f}", setup=notes,
                        unchanged=["{f}"]))
        out.append(case(cmd + "-save-devnull", "writers", run + ["--save", "/dev/null"], 2, r"/dev/null",
                        unchanged=["/dev/null"], post=[kind("/dev/null", "chr")]))
        # a full disk or a kill while saving over a checkpoint: the previous one stays committed
        out.append(Case(cmd + "-save-full-disk-keeps-checkpoint", "writers", [
            first, Step(run + [n, "9", "--resume", "{d}/ck", "--save", "{d}/ck"], 1, r"(?i:no space)", timeout=60,
                        inject=("write:.fgtmp.", "enospc"), post=[committed_at("{d}/ck", 6)])]))
        out.append(Case(cmd + "-save-sigkill-keeps-checkpoint", "writers", [
            first, Step(run + [n, "9", "--resume", "{d}/ck", "--save", "{d}/ck"], -9, one_line=False, timeout=60,
                        inject=("write:.fgtmp.", "signal:9"), post=[committed_at("{d}/ck", 6)]),
            Step(run + [n, "9", "--resume", "{d}/ck", "--save", "{d}/ck"], 0, timeout=60,
                 post=[committed_at("{d}/ck", 9)])]))
        # SIGINT while the final checkpoint is written: that save is cancelled, the old one stays
        out.append(Case(cmd + "-sigint-mid-save", "writers", [
            first, Step(run + [n, "9", "--resume", "{d}/ck", "--save", "{d}/ck"], 130, None, timeout=60,
                        inject=("write:.fgtmp.", "signal:2"), post=[committed_at("{d}/ck", 6)])]))
    return out


def runtime_models():
    """eval / generate / chat on files that are not runnable models: a text file, a GGUF of
    plain tensors, hostile config.json files (garbage, absurd sizes, heads that do not divide),
    and bad usage found before any model is read."""
    out = []
    r = "runtime"

    def config(text):
        def setup(d):
            os.makedirs(P(d, "hf"), exist_ok=True)
            with open(P(P(d, "hf"), "config.json"), "w") as f:
                f.write(text)
            return {"hf": P(d, "hf")}
        return setup

    def text_file(d):
        with open(P(d, "t.txt"), "w") as f:
            f.write("a few words to evaluate\n")
        return {"t": P(d, "t.txt")}

    def with_text(setup):
        def both(d):
            v = setup(d)
            v.update(text_file(d))
            return v
        return both

    for cmd in ("eval", "generate", "chat", "finetune", "es-finetune"):
        argv = {"eval": ["eval", "{f}", "--file", "{f}"], "generate": ["generate", "{f}", "--ids", "1 2"],
                "chat": ["chat", "{f}"], "finetune": ["finetune", "{f}", "--data", "{f}"],
                "es-finetune": ["es-finetune", "{f}", "--data", "{f}"]}[cmd]
        out.append(case("not-a-model-" + cmd, r, argv, 1, r"{f}", setup=notes, same_message="notes.txt"))
    out.append(case("eval-gguf-of-tensors", r, ["eval", "{in}", "--file", "{t}"], 1,
                    r"general\.architecture|block_count is missing",
                    setup=with_text(small_gguf)))
    out.append(case("eval-lone-safetensors", r, ["eval", "{in}", "--file", "{t}"], 1, r"config\.json",
                    setup=with_text(small_st)))
    for id, text, msg in (
            ("garbage", "{ this is not json", r"config\.json"),
            ("no-type", '{"hidden_size": 8}', r"model_type"),
            ("unknown-type", '{"model_type": "mamba"}', r"mamba"),
            ("huge-layers", '{"model_type": "llama", "num_hidden_layers": 1e9, "hidden_size": 64, '
             '"intermediate_size": 64, "num_attention_heads": 4}', r"out of range"),
            ("huge-width", '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 1e15, '
             '"intermediate_size": 64, "num_attention_heads": 4}', r"out of range|nonnegative"),
            ("heads-do-not-divide", '{"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 64, '
             '"intermediate_size": 64, "num_attention_heads": 6, "num_key_value_heads": 4}', r"multiple"),
            ("odd-rope-dims", '{"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 64, '
             '"intermediate_size": 64, "num_attention_heads": 4, "head_dim": 0}', None),
            ("negative-eps", '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, '
             '"intermediate_size": 64, "num_attention_heads": 4, "rms_norm_eps": -1}', r"epsilon"),
            ("bad-rope-scaling", '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, '
             '"intermediate_size": 64, "num_attention_heads": 4, "rope_scaling": {"rope_type": "yarn", "factor": 4}}',
             r"yarn"),
            ("no-weights", '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, '
             '"intermediate_size": 64, "num_attention_heads": 4}', None),
    ):
        out.append(case("config-" + id, r, ["eval", "{hf}", "--file", "{t}", "--device", "cpu"], 1, msg,
                        setup=with_text(config(text))))
    for id, argv, msg in (
            ("eval-no-file", ["eval", "{in}"], r"--file"),
            ("eval-bad-mode", ["eval", "{in}", "--file", "{in}", "--mode", "turbo"], r"turbo"),
            ("eval-bad-ctx", ["eval", "{in}", "--file", "{in}", "--ctx", "1"], r"--ctx"),
            ("eval-alpha-alone", ["eval", "{in}", "--file", "{in}", "--alpha", "16"], r"--adapters"),
            ("generate-two-prompts", ["generate", "{in}", "--prompt", "a", "--ids", "1"], r"exactly one"),
            ("generate-bad-temp", ["generate", "{in}", "--ids", "1", "--temp", "nan"], r"--temp"),
            ("generate-bad-top-p", ["generate", "{in}", "--ids", "1", "--top-p", "0"], r"--top-p"),
            ("generate-bad-n", ["generate", "{in}", "--ids", "1", "-n", "-3"], r"-n"),
            ("generate-template-alone", ["generate", "{in}", "--ids", "1", "--template", "x"], r"--chat"),
            ("chat-bad-ctx", ["chat", "{in}", "--ctx", "3"], r"--ctx"),
            ("finetune-no-data", ["finetune", "{in}"], r"--data"),
            ("finetune-bad-targets", ["finetune", "{in}", "--data", "{in}", "--targets", "q,,v"], r"--targets"),
            ("finetune-bad-format", ["finetune", "{in}", "--data", "{in}", "--format", "csv"], r"csv"),
            ("finetune-steps-and-epochs", ["finetune", "{in}", "--data", "{in}", "--steps", "1", "--epochs", "1"],
             r"--epochs"),
            ("finetune-bad-dropout", ["finetune", "{in}", "--data", "{in}", "--lora-dropout", "nan"], r"--lora-dropout"),
            ("es-finetune-bad-reward", ["es-finetune", "{in}", "--data", "{in}", "--reward", "bleu"], r"bleu"),
            ("es-finetune-odd-antithetic", ["es-finetune", "{in}", "--data", "{in}", "--population", "5",
                                            "--antithetic"], r"even"),
            ("finetune-full-with-lora", ["finetune", "{in}", "--data", "{in}", "--full", "--lora-rank", "4"], r"--full"),
            ("finetune-bad-freeze", ["finetune", "{in}", "--data", "{in}", "--full", "--freeze", "attn_x"], r"--freeze"),
            ("finetune-freeze-alone", ["finetune", "{in}", "--data", "{in}", "--freeze", "norms"], r"--full"),
            ("es-finetune-bad-mode", ["es-finetune", "{in}", "--data", "{in}", "--mode", "half"], r"half"),
            ("es-finetune-max-new-alone", ["es-finetune", "{in}", "--data", "{in}", "--max-new", "4"], r"rule"),
            ("export-weights-and-adapters", ["export", "--from-gguf", "{in}", "--out", "{in}.out.gguf", "--weights",
                                             "{in}", "--adapters", "{in}"], r"--weights"),
    ):
        out.append(case("usage-" + id, r, argv, 2, msg, setup=small_gguf))
    return out


def all_cases():
    cases = (hostile_headers() + changing_inputs() + special_files() + splits() + outputs() +
             names_and_metadata() + quantization() + cli_usage() + signals() + writers() +
             runtime_models())
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases

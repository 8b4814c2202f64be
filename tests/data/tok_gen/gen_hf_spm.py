#!/usr/bin/env python3
"""Hugging Face folders of a SentencePiece-style BPE (byte_fallback), in the three shapes the
converters write, made from the committed SentencePiece fixture (tests/data/tok/spm.gguf),
with their reference ids from Hugging Face `tokenizers` on the committed corpus:

  hf_spm_gemma/     normalizer Replace(" " -> "▁"), no pre-tokenizer (Gemma: no dummy prefix)
  hf_spm_llama2/    normalizer Prepend("▁") + Replace (Llama 2's legacy file: a "▁" before
                    every run of text between added tokens)
  hf_spm_metaspace/ no normalizer, Metaspace(prepend_scheme="first", split=False) (newer files)
  hf_spm_goldens.json   per folder: the first texts' ids in full and a hash per block of texts,
                    as goldens.json (gen_tok_goldens.py) holds them

The merges are the vocabulary's own pairs, ranked by the merged piece's SentencePiece score as
Hugging Face's converter ranks them. Needs gguf, tokenizers.

    python gen_hf_spm.py [--tok DIR] [--corpus FILE] [--out DIR]
real_tokenizers.py does the same to Gemma 3's real vocabulary, live.
"""
import argparse
import json
import os
import sys

import gguf
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_tok_goldens import BLOCK, golden  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SPACE = "\u2581"
CONTROL, USER_DEFINED, UNKNOWN = 3, 4, 2


def gguf_vocab(path):
    r = gguf.GGUFReader(path)
    f = r.fields
    toks = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8") for i in f["tokenizer.ggml.tokens"].data]
    scores = [float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    return toks, scores, types


def spm_merges(toks, scores, types):
    """Every split of a normal piece into two pieces, best-scored result first (ties by the
    halves' ids), as transformers' SentencePiece converter orders them."""
    vocab = {t: i for i, t in enumerate(toks)}
    merges = []
    for i, t in enumerate(toks):
        if types[i] != 1 or len(t) < 2:
            continue
        local = [(vocab[t[:k]], vocab[t[k:]]) for k in range(1, len(t)) if t[:k] in vocab and t[k:] in vocab]
        merges += [(-scores[i], a, b) for a, b in sorted(local)]
    merges.sort()
    return [(toks[a], toks[b]) for _, a, b in merges]


def hf_spm(toks, scores, types, shape, unk):
    vocab = {t: i for i, t in enumerate(toks)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=spm_merges(toks, scores, types), unk_token=toks[unk],
                               byte_fallback=True, fuse_unk=True))
    replace = normalizers.Replace(" ", SPACE)
    if shape == "gemma":
        tok.normalizer = replace
        tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
    elif shape == "llama2":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend(SPACE), replace])
        tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    special = [AddedToken(t, special=types[i] == CONTROL, normalized=False)
               for i, t in enumerate(toks) if types[i] in (CONTROL, USER_DEFINED)]
    tok.add_tokens(special)
    return tok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tok", default=os.path.join(HERE, "..", "tok"))
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = a.out or a.tok
    toks, scores, types = gguf_vocab(os.path.join(a.tok, "spm.gguf"))
    unk = types.index(UNKNOWN)
    with open(a.corpus or os.path.join(a.tok, "corpus.json"), encoding="utf-8") as f:
        texts = json.load(f)
    g = {"block": BLOCK, "tokenizers": {}}
    for shape in ("gemma", "llama2", "metaspace"):
        tok = hf_spm(toks, scores, types, shape, unk)
        d = os.path.join(out, f"hf_spm_{shape}")
        os.makedirs(d, exist_ok=True)
        tok.save(os.path.join(d, "tokenizer.json"))
        ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        g["tokenizers"][f"hf_spm_{shape}"] = dict(path=f"hf_spm_{shape}", **golden(ids),
                                                  decoded=[tok.decode(x) for x in ids[:80]])
    with open(os.path.join(out, "hf_spm_goldens.json"), "w", encoding="utf-8") as f:
        json.dump(g, f, separators=(",", ":"), ensure_ascii=False)


if __name__ == "__main__":
    main()

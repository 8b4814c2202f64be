#!/usr/bin/env python3
"""Makes the fixtures and goldens of tests/cpu/test_tokenizer_hf.cpp: tiny tokenizer.json files
that exercise the general pipeline (formats/tokenizer_hf_*.c), each trained or built here with
Hugging Face `tokenizers` on tests/data/tok/corpus.json, and that library's ids and decodes.

    python gen_hf_pipeline.py [--out ../tok/hf_pipeline]

What it writes into --out, one folder per tokenizer (tokenizer.json only):
  bert_wordpiece   BertNormalizer (lower-case, accents stripped, CJK spaced, control characters
                   dropped), BertPreTokenizer, WordPiece, [CLS] A [SEP], the WordPiece decoder
  unigram_meta     NFKC, Metaspace (prepend "first", split), Unigram with byte fallback and
                   <0xXX> pieces, "<mask>" with lstrip, "<s> A </s>", Metaspace + ByteFallback
                   decoders
  wordlevel        NFD, StripAccents, Lowercase, Strip, Replace (a regex), Whitespace, Digits,
                   Punctuation (contiguous), WordLevel, BertProcessing, no decoder
  bpe_chars        BPE over characters with "##" continuations and a "</w>" word end, Split
                   with MergedWithNext / MergedWithPrevious / Contiguous / Removed and invert,
                   Prepend and Replace normalizers, Strip and Replace decoders
  bpe_bytes        byte-level BPE with add_prefix_space, Punctuation (merged with previous), a
                   normalized added token, single_word and rstrip tokens, RobertaProcessing
and goldens.json: the texts (the corpus's first 300 and a few of added-token edge cases), and
per tokenizer the ids without and with special tokens and the decode (special tokens kept).
"""
import argparse
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
N_TEXTS = 300
EXTRA = [
    "", " ", "  leading and trailing  ", "<mask>", "a <mask> b", "a<mask>b", "x  <mask>  y", "<s>hi</s>",
    "[CLS] tagged [SEP] text [MASK]", "word<ent>word <ent> <ent>x", "ÉCOLE Ünïcödé ﬁne ①②③ ｆｕｌｌ",
    "中文字符和日本語のテキスト", "Numbers 1234567 and 3.14159 and 2,000", "tabs\tand\nnew\r\nlines",
    "emoji 🙂🙃 and 👩‍👩‍👧", "control\x07\x01chars\u200b\ufeff here", "Hello <pad> <PAD> [pad]",
    "don't do not can't I'm they're we've", "hyphen-ated under_score x--y---z", "UPPER lower MiXeD",
    # Where `tokenizers`' Unicode tables and utf8proc's differ (formats/tokenizer_hf_unicode.c):
    # punctuation, controls, marks, lower-casing and NFKC of recent code points.
    "a\u061db a\u2e43b \u166d \u0890x y\u0951z \u1734 \u1c89 \ua7cb \u32ff \u2460 \U00011938 \u1cf2",
]


def corpus():
    with open(os.path.join(HERE, "..", "tok", "corpus.json"), encoding="utf-8") as f:
        texts = json.load(f)
    return texts[:N_TEXTS] + EXTRA


def bert_wordpiece(texts):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=40))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tr = trainers.WordPieceTrainer(vocab_size=900, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(texts, tr)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    return tok


def unigram_meta(texts):
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    tr = trainers.UnigramTrainer(vocab_size=500, special_tokens=["<pad>", "<unk>", "<s>", "</s>"], unk_token="<unk>",
                                 initial_alphabet=[], max_piece_length=8)
    # Trained on the Latin texts alone: every other character takes the byte fallback.
    tok.train_from_iterator([t for t in texts if all(ord(c) < 0x250 for c in t)], tr)
    # Byte fallback: the trained pieces plus <0xXX> for every byte, scored below them all.
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    low = min(s for _, s in vocab) - 1.0
    vocab += [[f"<0x{b:02X}>", low] for b in range(256)]
    model = models.Unigram([tuple(v) for v in vocab], unk_id=data["model"]["unk_id"], byte_fallback=True)
    out = Tokenizer(model)
    out.normalizer = tok.normalizer
    out.pre_tokenizer = tok.pre_tokenizer
    out.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ["<pad>", "<unk>", "<s>", "</s>"]])
    out.add_special_tokens([AddedToken("<mask>", special=True, lstrip=True, normalized=False)])
    out.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                       special_tokens=[("<s>", out.token_to_id("<s>")),
                                                                       ("</s>", out.token_to_id("</s>"))])
    out.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="first"), decoders.ByteFallback()])
    return out


def wordlevel(texts):
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase(),
                                           normalizers.Strip(), normalizers.Replace(Regex("[0-9]{4,}"), "#")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=False),
                                                 pre_tokenizers.Punctuation("contiguous")])
    tr = trainers.WordLevelTrainer(vocab_size=1200, min_frequency=2, special_tokens=["[UNK]", "[CLS]", "[SEP]"])
    tok.train_from_iterator(texts, tr)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
    return tok


def bpe_chars(texts):
    tok = Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.Replace("\t", "    "), normalizers.Prepend("^"), normalizers.NFC()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", "merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{N}"), "contiguous"),
        pre_tokenizers.Split(Regex(r"[.,;:!?]"), "merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\s"), "removed"),
        pre_tokenizers.Split(Regex(r"[\p{L}\p{N} ^#]+"), "isolated", invert=True),
    ])
    tr = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>"], continuing_subword_prefix="##",
                             end_of_word_suffix="</w>", limit_alphabet=120)
    tok.train_from_iterator(texts, tr)
    tok.decoder = decoders.Sequence([decoders.Replace("##", ""), decoders.Replace("</w>", " "),
                                     decoders.Strip(" ", 0, 1)])
    return tok


def bpe_bytes(texts):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Punctuation("merged_with_previous"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)])
    tr = trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>", "</s>", "<pad>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, tr)
    tok.add_tokens([AddedToken("<ent>", single_word=True, normalized=False),
                    AddedToken("hello world", normalized=True),
                    AddedToken("[pad]", rstrip=True, normalized=False)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    tok.decoder = decoders.ByteLevel()
    return tok


MAKERS = {"bert_wordpiece": bert_wordpiece, "unigram_meta": unigram_meta, "wordlevel": wordlevel,
          "bpe_chars": bpe_chars, "bpe_bytes": bpe_bytes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tok", "hf_pipeline"))
    a = ap.parse_args()
    texts = corpus()
    goldens = {"texts": texts, "tokenizers": {}}
    for name, make in MAKERS.items():
        tok = make(texts[:N_TEXTS])
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        tok.save(os.path.join(d, "tokenizer.json"))
        # Read back from the file, as forgia reads it.
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        plain = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        goldens["tokenizers"][name] = {
            "ids": plain,
            "ids_special": [tok.encode(t).ids for t in texts],
            "decoded": [tok.decode(x, skip_special_tokens=False) for x in plain],
        }
        print(f"{name}: {tok.get_vocab_size()} tokens")
    with open(os.path.join(a.out, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(goldens, f, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()

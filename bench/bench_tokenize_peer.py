#!/usr/bin/env python3
"""Peer timing for bench_tokenize: Hugging Face `tokenizers` encoding the same texts, one call
per text, on one thread, and encode_batch of all of them (still one thread: no Python call
per text). Prints one JSON object: {"encode_s": the faster of the two, median seconds}.
    bench_tokenize_peer.py TOKENIZER_DIR CORPUS_JSON REPEATS REPS"""
import json
import os
import statistics
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its pool
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from tokenizers import Tokenizer  # noqa: E402


def main():
    d, corpus, repeats, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    texts = json.load(open(corpus, encoding="utf-8"))

    def run():
        n = 0
        for _ in range(repeats):
            for t in texts:
                n += len(tok.encode(t, add_special_tokens=False).ids)
        return n

    def run_batch():
        n = 0
        for _ in range(repeats):
            n += sum(len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False))
        return n

    out = {}
    for name, fn in (("per_call_s", run), ("batch_s", run_batch)):
        fn()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        out[name] = statistics.median(ts)
    out["encode_s"] = min(out["per_call_s"], out["batch_s"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Peer timings for bench_open: the same open+inspect work done by gguf-py's GGUFReader and
by the safetensors package's safe_open (Rust core). Prints one JSON object."""
import json
import os
import resource
import statistics
import sys
import time


def median_time(fn, reps):
    fn()  # warm-up (page cache, imports)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def gguf_inspect(path):
    from gguf import GGUFReader
    r = GGUFReader(path)
    n = 0
    for f in r.fields.values():
        n += len(f.data)
    for t in r.tensors:
        n += int(t.n_bytes) + len(t.shape)
    return n


def st_inspect(d):
    # What opening a Hugging Face directory takes: the index (weight_map), then each shard.
    from safetensors import safe_open
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        index = json.load(f)
    n = len(index["weight_map"])
    for shard in sorted(set(index["weight_map"].values())):
        shard = os.path.join(d, shard)
        with safe_open(shard, framework="numpy") as f:
            meta = f.metadata() or {}
            n += len(meta)
            for k in f.keys():
                n += len(f.get_slice(k).get_shape())
    return n


def main():
    gguf_path, st_dir, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    out = {
        "gguf_py_s": median_time(lambda: gguf_inspect(gguf_path), reps),
        "safetensors_s": median_time(lambda: st_inspect(st_dir), reps),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

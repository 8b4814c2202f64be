#!/usr/bin/env python3
"""Peer figure for bench_load: the Python safetensors package loading the same f32 file into
numpy (safetensors.numpy.load_file: a copy into owned arrays, like forgia's keep_copy case),
timed like the harness (warm-up, median), printed as a JSON line with the ratio of forgia's
1-thread and multi-thread kept-copy loads (fresh and recycled memory) to it when given.

  bench_load --keep-file /tmp/l.safetensors > forgia.jsonl
  python3 bench/bench_load_peer.py /tmp/l.safetensors forgia.jsonl
"""
import json
import os
import statistics
import sys
import time

from safetensors.numpy import load_file


def main():
    path = sys.argv[1]
    reps = int(os.environ.get("REPS", "5"))
    size = sum(a.nbytes for a in load_file(path).values())  # warm-up, and the byte count
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        d = load_file(path)
        times.append(time.perf_counter() - t0)
        del d
    gbs = size / statistics.median(times) / 1e9
    ours = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            for line in f:
                if line.startswith("{"):
                    j = json.loads(line)
                    ours["%s_t%d" % (j["figure"], j.get("threads", 0))] = j["value"]
    line = {"bench": "load_peer", "figure": "safetensors_numpy_load_file", "value": round(gbs, 4), "unit": "GB/s",
            "reps": reps}
    for fig in sorted(ours):
        if fig.startswith("cpu_load_keep_copy_"):
            line["forgia_" + fig] = ours[fig]
            line["ratio_" + fig] = round(ours[fig] / gbs, 3)
    print(json.dumps(line))


if __name__ == "__main__":
    main()

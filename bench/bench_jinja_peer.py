#!/usr/bin/env python3
"""Peer timing for bench_jinja: jinja2 set up as Hugging Face's apply_chat_template sets it up
(tests/data/chat/jinja_cases.py) rendering the same template on the same context. Prints one
JSON object: {"render_s": median seconds of one render of the compiled template,
"compile_render_s": median seconds of compiling it and rendering once}.
    bench_jinja_peer.py TEMPLATE CONTEXT_JSON RENDERS REPS"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "chat"))
import jinja_cases  # noqa: E402


def main():
    path, ctx_path, renders, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    text = open(path, encoding="utf-8").read()
    ctx = json.load(open(ctx_path, encoding="utf-8"))
    env = jinja_cases.environment()
    t = env.from_string(text)

    def median(fn, n):
        fn()
        ts = []
        for _ in range(reps):
            s = time.perf_counter()
            for _ in range(n):
                fn()
            ts.append((time.perf_counter() - s) / n)
        return statistics.median(ts)

    out = {"render_s": median(lambda: t.render(**ctx), renders),
           # from_string caches nothing across calls (each builds a new Template)
           "compile_render_s": median(lambda: env.from_string(text).render(**ctx), max(1, renders // 10))}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

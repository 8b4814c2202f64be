#!/usr/bin/env python3
"""forgia's Jinja interpreter against jinja2 on every chat template of llama.cpp's
models/templates/ (the llama-cpp-python 0.3.36 source distribution, llama.cpp 0c1e570),
fetched into --cache as tests/data/tok/llama_vocabs.py fetches that sdist (pip download,
sha256 checked; only the templates kept). Each template is rendered on every context of
jinja_cases.contexts() (text, multi-turn, system turns, tool calls with a tools list, content
parts, orders templates raise on; add_generation_prompt off and on) by jinja2 set up as
transformers does, and by `forgia chat-template --jsonl` (one process for all of them).
A render is equal when the texts are byte-equal or both sides fail (jinja2 raises or does
not compile the template, forgia reports an error); a raise_exception's message must appear
in forgia's.

    python jinja_templates.py --forgia BIN (--cache DIR | --templates DIR) [--min-equal N]

Prints templates x contexts, how many are equal, and each difference. Exit 1 when any
render differs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tok"))
import jinja_cases  # noqa: E402
import llama_vocabs  # noqa: E402  (the sdist, fetched and checked once)

TEMPLATES = llama_vocabs.PREFIX + "templates/"


def fetch(cache):
    return llama_vocabs.extract(cache, "llama-templates", TEMPLATES, lambda name: name.endswith(".jinja"))


def compare(forgia, files, env):
    """(cases, equal, differences) over files x contexts."""
    cases = []
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for path in files:
            with open(path, encoding="utf-8") as t:
                compiled = jinja_cases.compile_template(env, t.read())
            for name, ctx in jinja_cases.contexts():
                cases.append((os.path.basename(path), name, jinja_cases.render(compiled, ctx)))
                f.write(json.dumps({"template": path, "context": ctx}, ensure_ascii=False) + "\n")
        batch = f.name
    try:
        r = subprocess.run([forgia, "chat-template", "--jsonl", batch, "--now", str(jinja_cases.NOW)],
                           capture_output=True, env=dict(os.environ, TZ="UTC"))
    finally:
        os.remove(batch)
    lines = r.stdout.decode("utf-8").split("\n")[:-1]
    if r.returncode or len(lines) != len(cases):
        sys.exit(f"jinja_templates: forgia chat-template failed (exit {r.returncode}, {len(lines)} of {len(cases)} "
                 f"lines): {r.stderr.decode(errors='replace').strip()}")
    diffs, equal = [], 0
    for (tname, cname, want), line in zip(cases, lines):
        got = json.loads(line)
        if "text" in want and got.get("text") == want["text"]:
            equal += 1
        elif "error" in want and "error" in got and (
                not want["error"].startswith("TemplateError: ") or want["error"][15:] in got["error"]):
            equal += 1
        else:
            diffs.append((tname, cname, want, got))
    return len(cases), equal, diffs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forgia", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--cache")
    g.add_argument("--templates", help="a folder of .jinja files (instead of the sdist's)")
    ap.add_argument("--show", type=int, default=20, help="differences shown")
    args = ap.parse_args()
    os.environ["TZ"] = "UTC"
    folder = args.templates or fetch(args.cache)
    files = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jinja"))
    n, equal, diffs = compare(args.forgia, files, jinja_cases.environment())
    per = len(jinja_cases.contexts())
    print(f"jinja_templates: {len(files)} templates x {per} contexts = {n} renders, {equal} equal to jinja2, "
          f"{len(diffs)} differ")
    for tname, cname, want, got in diffs[:args.show]:
        print(f"  {tname} {cname}:\n    jinja2: {json.dumps(want, ensure_ascii=False)[:400]}\n"
              f"    forgia: {json.dumps(got, ensure_ascii=False)[:400]}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())

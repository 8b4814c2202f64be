#!/usr/bin/env python3
"""Renders every committed template (templates/ and unrecognised/) on every context of
jinja_cases.contexts() with jinja2 set up as Hugging Face's apply_chat_template sets it up,
and writes jinja_goldens.json: what tests/cpu/test_jinja_templates.cpp checks forgia's Jinja
interpreter against, byte for byte (a case jinja2 raises on must fail in forgia too).

    python gen_jinja_goldens.py [--out DIR]        (needs jinja2; writes DIR/jinja_goldens.json)
"""
import argparse
import json
import os

import jinja_cases

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    os.environ["TZ"] = "UTC"
    env = jinja_cases.environment()
    contexts = jinja_cases.contexts()
    cases = []
    for folder in ("templates", "unrecognised"):
        for name in sorted(os.listdir(os.path.join(HERE, folder))):
            if not name.endswith(".jinja"):
                continue
            with open(os.path.join(HERE, folder, name), encoding="utf-8") as f:
                compiled = jinja_cases.compile_template(env, f.read())
            for i, (_, ctx) in enumerate(contexts):
                r = jinja_cases.render(compiled, ctx)
                cases.append(dict(template=f"{folder}/{name}", context=i,
                                  **({"text": r["text"]} if "text" in r else {"error": True})))
    out = {"now": jinja_cases.NOW, "contexts": [{"name": n, "vars": c} for n, c in contexts], "cases": cases}
    with open(os.path.join(args.out, "jinja_goldens.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, indent=0, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} renderings: {len(cases) // len(contexts)} templates x {len(contexts)} contexts")


if __name__ == "__main__":
    main()

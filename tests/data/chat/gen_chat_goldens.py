#!/usr/bin/env python3
"""Renders every template of templates/ on every conversation of conversations.json with
jinja2, as Hugging Face's apply_chat_template does (a sandboxed environment with
trim_blocks, lstrip_blocks and loop controls; raise_exception; bos_token,
add_generation_prompt and the caller's extra keyword arguments as variables), and writes
goldens.json: what tests/cpu/test_chat.cpp checks forgia's built-in renderers against.
tests/interop/test_chat_interop.cpp runs it again live and compares.

    python gen_chat_goldens.py [--out DIR]        (needs jinja2; writes DIR/goldens.json)

The templates are the checkpoints' own (templates/README.md says where each comes from).
"""
import argparse
import json
import os

import jinja2
import jinja2.ext
import jinja2.sandbox

HERE = os.path.dirname(os.path.abspath(__file__))

# The family forgia must recognise each template as, and the BOS token text of the
# family's vocabulary (what Hugging Face passes as bos_token).
TEMPLATES = {
    "smollm2-135m-instruct.jinja": ("smollm2", "<|im_start|>"),
    "lfm2.5-instruct.jinja": ("lfm2", "<|startoftext|>"),
    "qwen2.5-7b-instruct.jinja": ("qwen2.5", ""),
    "qwen3-0.6b.jinja": ("qwen3", ""),
    "qwen3.5-4b.jinja": ("qwen3.5", ""),
    "llama3-8b-instruct.jinja": ("llama3", "<|begin_of_text|>"),
    "llama3.1-8b-instruct.jinja": ("llama3.1", "<|begin_of_text|>"),
    "llama3.2-3b-instruct.jinja": ("llama3.1", "<|begin_of_text|>"),
    "gemma2-2b-it.jinja": ("gemma2", "<bos>"),
    "gemma3-4b-it.jinja": ("gemma3", "<bos>"),
}

# Option sets: add_generation_prompt, Qwen's enable_thinking=False, and a pinned date for
# the Llama 3.1+ system turn (date_string, as a caller passes it).
OPTIONS = [
    {"add_generation_prompt": False},
    {"add_generation_prompt": True},
    {"add_generation_prompt": True, "no_think": True},
    {"add_generation_prompt": True, "date": "02 Dec 2026"},
]


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False: json.dumps(x, indent=indent,
                                                                               ensure_ascii=ensure_ascii)
    env.globals["raise_exception"] = raise_exception
    # No strftime_now: Hugging Face gives Llama 3.2's template today's date through it, which
    # would make these goldens change every day. Without it the template falls back to its
    # "26 Jul 2024", which is what fg_chat_render gives for a NULL date; the cases with a date
    # pass it as date_string. fg_chat_render_template's use of today's date is tested apart.
    return env


def render(env, text, bos, conversation, opts):
    kwargs = {"messages": conversation, "bos_token": bos, "eos_token": "",
              "add_generation_prompt": opts["add_generation_prompt"]}
    if opts.get("no_think"):
        kwargs["enable_thinking"] = False
    if "date" in opts:
        kwargs["date_string"] = opts["date"]
    try:
        return {"text": env.from_string(text).render(**kwargs)}
    except (TemplateError, jinja2.exceptions.UndefinedError) as e:
        return {"error": str(e)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    env = environment()
    cases = []
    for name, (family, bos) in TEMPLATES.items():
        with open(os.path.join(HERE, "templates", name), encoding="utf-8") as f:
            text = f.read()
        for ci, conv in enumerate(conversations):
            for opts in OPTIONS:
                r = render(env, text, bos, conv, opts)
                cases.append(dict(template=name, conversation=ci, **opts, **r))
    out = {"templates": {n: {"family": f, "bos": b} for n, (f, b) in TEMPLATES.items()},
           "unrecognised": sorted(os.listdir(os.path.join(HERE, "unrecognised"))), "cases": cases}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "goldens.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(f"{len(cases)} renderings of {len(TEMPLATES)} templates x {len(conversations)} conversations "
          f"x {len(OPTIONS)} option sets")


if __name__ == "__main__":
    main()

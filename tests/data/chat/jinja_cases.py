"""What forgia's Jinja interpreter is compared with jinja2 on: jinja2 set up as Hugging Face's
apply_chat_template sets it up, and the conversations each template is rendered on.
Shared by gen_jinja_goldens.py (committed templates, goldens) and jinja_templates.py (the
llama-cpp-python sdist's templates, live).

The environment is transformers' (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loop controls and the {% generation %} tag; raise_exception, strftime_now, and tojson with
transformers' signature), with strftime_now pinned to NOW so renders do not change by day.
"""
import copy
import datetime
import json
import os

import jinja2
import jinja2.ext
import jinja2.sandbox
from jinja2 import nodes

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = 1764633600  # 2025-12-02 00:00:00 UTC; the renders run with TZ=UTC


class TemplateError(Exception):
    pass


class Generation(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: transformers' AssistantTracker renders the body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment():
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW).strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def compile_template(env, text):
    """The compiled template, or the exception compiling it raised."""
    try:
        return env.from_string(text)
    except Exception as e:  # noqa: BLE001 - a template jinja2 refuses is an expected outcome
        return e


def render(compiled, context):
    """{"text": ...} or {"error": ...}: a template that fails to compile or raises is an error."""
    if isinstance(compiled, Exception):
        return {"error": f"{type(compiled).__name__}: {compiled}"}
    try:
        return {"text": compiled.render(**copy.deepcopy(context))}
    except Exception as e:  # noqa: BLE001 - any failure of jinja2 is the expected outcome "error"
        return {"error": f"{type(e).__name__}: {e}"}


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city's name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]}}},
]

CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
CALL2 = {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}

# Conversations beyond conversations.json: tool calls and results (with the tools list),
# content given as a list of parts, and the orders templates raise on.
EXTRA = [
    ("tools", [{"role": "user", "content": "Weather in Paris?"}]),
    ("tools", [{"role": "system", "content": "Use tools when needed."},
               {"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [CALL]},
               {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 18}"},
               {"role": "assistant", "content": "It is 18 degrees in Paris."}]),
    ("tools", [{"role": "user", "content": "Weather in Paris, and 2+3?"},
               {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL, CALL2]},
               {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"},
               {"role": "tool", "tool_call_id": "call_2", "name": "add", "content": "5"},
               {"role": "user", "content": "Thanks"}]),
    ("", [{"role": "user", "content": [{"type": "text", "text": "Parts: "}, {"type": "text", "text": "two of them"}]}]),
    ("", [{"role": "user", "content": "One"}, {"role": "user", "content": "Two"}, {"role": "user", "content": "Three"}]),
]


def conversations():
    """(name, messages, uses tools) for every conversation: conversations.json's, then EXTRA."""
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        base = json.load(f)
    out = [(f"c{i}", conv, False) for i, conv in enumerate(base)]
    out += [(f"x{i}", conv, kind == "tools") for i, (kind, conv) in enumerate(EXTRA)]
    return out


def contexts(bos="<s>", eos="</s>"):
    """(case name, context) pairs: every conversation with add_generation_prompt off and on;
    the tool conversations with the tools list; the first conversation also with
    enable_thinking false."""
    out = []
    for name, conv, tools in conversations():
        for gen in (False, True):
            ctx = {"messages": conv, "bos_token": bos, "eos_token": eos, "add_generation_prompt": gen}
            if tools:
                ctx["tools"] = TOOLS
            out.append((f"{name}-gen{int(gen)}", ctx))
    out.append(("c1-nothink", {"messages": conversations()[1][1], "bos_token": bos, "eos_token": eos,
                               "add_generation_prompt": True, "enable_thinking": False}))
    return out

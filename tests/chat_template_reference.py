#!/usr/bin/python3
"""Reference renderings of chat templates for lmzoo's C++ renderer (tests/test_chat_template_reference.cpp).

Renders with Python's jinja2 exactly as transformers' apply_chat_template does: an ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, the loopcontrols extension, a {% generation %} tag that renders its body,
tojson as json.dumps(ensure_ascii=False, ...), raise_exception raising TemplateError, strftime_now formatting a
fixed clock (2026-11-28 12:00:00, so the C++ side can fix the same), and the context transformers passes
(messages, tools, documents, add_generation_prompt, the special tokens).

Given templates (files) and a seed, it generates conversations per template (system prompt or not, 1..many turns,
empty content, Unicode: emoji, CJK, combining marks, right-to-left text, odd whitespace; quotes, backslashes,
newlines; add_generation_prompt on and off; tools and tool calls for templates that take them; some conversations
a template must refuse) and prints one JSON object a line:
  {"name", "template", "context", "expected"}            for a rendering, or
  {"name", "template", "context", "error", "error_kind"}  where jinja2 raised ("raised" for raise_exception,
                                                           "template" for other jinja2 errors, "python" else).
Needs only Debian's python3-jinja2 (no transformers).
"""
import argparse
import json
import os
import random
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2026, 11, 28, 12, 0, 0)


class GenerationTag(Extension):
    """transformers' {% generation %} ... {% endgeneration %}: the body is rendered as it is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, context):
    """(expected, None, None) or (None, message, kind)."""
    try:
        template = env.from_string(source)
        kwargs = dict(context)
        messages = kwargs.pop("messages")
        tools = kwargs.pop("tools", None)
        documents = kwargs.pop("documents", None)
        add_generation_prompt = kwargs.pop("add_generation_prompt", False)
        return (
            template.render(
                messages=messages,
                tools=tools,
                documents=documents,
                add_generation_prompt=add_generation_prompt,
                **kwargs,
            ),
            None,
            None,
        )
    except jinja2.exceptions.TemplateError as e:
        kind = "raised" if type(e) is jinja2.exceptions.TemplateError else "template"
        return None, str(e), kind
    except Exception as e:  # TypeError, ValueError, ... inside the template
        return None, f"{type(e).__name__}: {e}", "python"


# ---- conversations ----

WORDS = [
    "hello", "world", "What", "is", "the", "capital", "of", "France?", "Paris.", "2+2=4", "don't", "it's",
    "naïve", "café", "Größe", "straße", "İstanbul", "ǅemal", "ΣΊΣΥΦΟΣ", "ﬁne",
    "你好", "世界", "日本語", "テキスト", "한국어", "😀", "👩‍💻", "🇫🇷", "🤖", "e\u0301", "a\u0308o\u0308",
    "עברית", "العربية", "ไทย", "हिन्दी",
    "\"quoted\"", "'single'", "back\\slash", "C:\\path\\to", "tab\there", "{{ not a tag }}", "{% raw %}",
    "<|im_end|>", "[INST]", "</s>", "<start_of_turn>", "{\"json\": [1, 2]}", "100%", "a&b<c>d",
    "\u00a0nbsp", "ideographic\u3000space", "line\u2028sep", "zero\u200bwidth", "\x0bvt", "\x1cfs",
]

SEPARATORS = [" ", " ", " ", " ", "\n", "\n\n", "  ", "\t", " \n "]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Adds two numbers: «a» + «b» ✓",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number", "default": 0.5}},
                "required": ["a", "b"],
            },
        },
    },
]


def random_text(rng):
    r = rng.random()
    if r < 0.06:
        return ""
    if r < 0.09:
        return rng.choice([" ", "\n", "  \n\t ", "\u3000"])
    n = rng.randint(1, 14)
    parts = []
    for i in range(n):
        if i:
            parts.append(rng.choice(SEPARATORS))
        parts.append(rng.choice(WORDS))
    text = "".join(parts)
    if rng.random() < 0.15:
        text = rng.choice([" ", "\n", "  "]) + text
    if rng.random() < 0.15:
        text = text + rng.choice([" ", "\n", "\n\n"])
    return text


def tool_call_id(rng):
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(9))


def conversation(rng, tools_ok):
    """A list of messages, and the tools offered (or None)."""
    messages = []
    if rng.random() < 0.4:
        messages.append({"role": "system", "content": random_text(rng)})
    turns = rng.randint(1, 6)
    use_tools = tools_ok and rng.random() < 0.3
    for t in range(turns):
        messages.append({"role": "user", "content": random_text(rng)})
        if t == turns - 1 and rng.random() < 0.5:
            break
        if use_tools and rng.random() < 0.5:
            call_id = tool_call_id(rng)
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "get_current_weather", "arguments": {"location": rng.choice(WORDS)}},
                        }
                    ],
                }
            )
            if rng.random() < 0.5:
                messages[-1]["content"] = None
            messages.append({"role": "tool", "tool_call_id": call_id, "content": random_text(rng) or "22"})
        messages.append({"role": "assistant", "content": random_text(rng)})
    if rng.random() < 0.05:  # a conversation some templates refuse
        rng.choice(
            [
                lambda: messages.insert(0, {"role": "assistant", "content": "first"}),
                lambda: messages.append({"role": "user", "content": "twice"}) or messages.append(
                    {"role": "user", "content": "in a row"}
                ),
                lambda: messages.append({"role": "narrator", "content": "unknown role"}),
            ]
        )()
    tools = TOOLS[: rng.randint(1, 2)] if use_tools else None
    return messages, tools


TOKENS = {
    "smollm2-instruct": ("<|im_start|>", "<|im_end|>"),
    "qwen2.5-instruct": (None, "<|im_end|>"),
    "llama-3.2-instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral-7b-instruct-v0.3": ("<s>", "</s>"),
    "phi-3.5-mini-instruct": ("<s>", "<|endoftext|>"),
    "phi-4": ("<|endoftext|>", "<|im_end|>"),
    "gemma-2-it": ("<bos>", "<eos>"),
    "gemma-3-it": ("<bos>", "<eos>"),
}

TOOL_TEMPLATES = {"qwen2.5-instruct", "llama-3.2-instruct", "mistral-7b-instruct-v0.3", "features-tools"}


def cases(name, source, count, rng):
    bos, eos = TOKENS.get(name, ("<s>", "</s>"))
    for _ in range(count):
        messages, tools = conversation(rng, name in TOOL_TEMPLATES)
        context = {"messages": messages, "add_generation_prompt": rng.random() < 0.5}
        if tools is not None:
            context["tools"] = tools
        if bos is not None:
            context["bos_token"] = bos
        context["eos_token"] = eos
        context["unk_token"] = "<unk>"
        if rng.random() < 0.1:
            context["custom_flag"] = rng.choice([True, False, 3, "x"])
        yield context


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("templates", nargs="+", help="template files (.jinja); the name is the file's stem")
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--count", type=int, default=120, help="conversations per template")
    args = parser.parse_args()
    env = make_environment()
    out = sys.stdout
    for path in args.templates:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            source = f.read()
        rng = random.Random(f"{args.seed}:{name}")
        for context in cases(name, source, args.count, rng):
            expected, error, kind = render(env, source, context)
            record = {"name": name, "template": source, "context": context}
            if error is None:
                record["expected"] = expected
            else:
                record["error"] = error
                record["error_kind"] = kind
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()

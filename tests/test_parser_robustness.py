"""No input crashes or hangs the parser: only the library's own typed errors come out."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.library import UnknownModelError

TEMPLATES: list[dict[str, Any]] = [
    {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close": "<|im_end|>"},
        },
    },
    {
        "start_anchor_pattern": r"<\|start\|>assistant",
        "fields": {
            "calls": {
                "open_pattern": r"<function=(?P<name>[^>\n]+)>",
                "close": "</function>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": r"<parameter=(?P<key>[^>]+)>(?P<value>.*?)</parameter>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"function": {"name": "{name}", "arguments": "{content}"}},
            },
            "kv": {"open": "[kv]", "close": "[/kv]", "content": "kv-lines"},
            "n": {"open": "<n>", "close": "</n>", "content": "int"},
            "b": {"open": "<b>", "close": "</b>", "content": "bool"},
            "content": {},
        },
    },
]

_pieces = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "{",
        "}",
        '"name"',
        ":",
        "[",
        "]",
        "<n>",
        "</n>",
        "<b>",
        "</b>",
        "<function=f>",
        "</function>",
        "<parameter=x>",
        "</parameter>",
        "[kv]",
        "[/kv]",
        "a: 1\n",
        "<|im_end|>",
        "\x00",
        "\ud800",
        "🙂",
        "\n",
    ]
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(TEMPLATES),
    st.lists(st.one_of(_pieces, st.text(max_size=5)), max_size=30),
    st.integers(1, 7),
)
def test_garbage_text_only_raises_typed_errors(template: dict[str, Any], parts: list[str], size: int) -> None:
    text = "".join(parts)
    p = rt.ResponseParser(template, prefix="")
    for i in range(0, len(text), size):
        with contextlib.suppress(rt.ParseError):  # the parser stays usable after a parse error
            p.feed(text[i : i + size])
    with contextlib.suppress(rt.ParseError):
        p.finalize()


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=40), st.integers(1, 5))
def test_garbage_bytes_only_raise_typed_errors(data: bytes, size: int) -> None:
    p = rt.ResponseParser(TEMPLATES[0], prefix="")
    for i in range(0, len(data), size):
        with contextlib.suppress(rt.ParseError):
            p.feed(data[i : i + size])
    with contextlib.suppress(rt.ParseError):
        p.finalize()


@settings(max_examples=examples(200), deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=4),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
        max_leaves=12,
    )
)
def test_garbage_templates_only_raise_template_errors(data: Any) -> None:
    for template in (
        data,
        {"start_anchor": "x", "fields": data},
        {"start_anchor": "x", "fields": {"f": data}},
    ):
        # A string that is a single word is looked up in the library by name: an unknown one is an
        # UnknownModelError, as typed as a TemplateError.
        with contextlib.suppress(rt.TemplateError, UnknownModelError):
            rt.load_template(template)

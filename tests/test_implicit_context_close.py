"""A context-bound zero-width close on the implicit field (``$``, a lookahead) is accepted; ``x*`` is not.

The implicit field's ``close_pattern`` may match the empty string where a context binds it: ``$`` (TRL
writes ``<\\|im_end\\|>\\s*|$``), a lookahead such as ``(?=<tool_call>)``, ``(?=\\n)``. A close that
matches the empty string between two ordinary characters would end the region everywhere and stays a
TemplateError. A zero-width match is never accepted twice at one position, so parsing always moves on,
and chunking never changes the result (docs/spec.md, rules 4.12 and 4.13).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples

reference = pytest.importorskip("transformers.utils.chat_parsing")
logging.getLogger("transformers").setLevel(logging.ERROR)

TRL_CLOSE = r"<\|im_end\|>\s*|$"
T = {"open": "<t>", "close": "</t>", "repeats": True}
CONTEXT_CLOSES = ["$", TRL_CLOSE, "(?=<t>)", r"(?=\n)", r"\n$", r"$|(?=<t>)", r"(?<=\n)"]


def template(close: str, **content: Any) -> dict[str, Any]:
    return {"start_anchor": "<A>", "fields": {"t": T, "content": {"close_pattern": close, **content}}}


@pytest.mark.parametrize("close", CONTEXT_CLOSES)
def test_context_bound_implicit_closes_load(close: str) -> None:
    rt.load_template(template(close))
    reference.parse_response("x", template(close), prefix="")  # the reference reads them too


@pytest.mark.parametrize("close", ["x*", r"\s*", "(?:<end>)?", "a?|$", r"(?=\w)|\b"])
def test_closes_that_match_empty_in_ordinary_text_are_rejected(close: str) -> None:
    with pytest.raises(rt.TemplateError, match="matches the empty string in ordinary text") as info:
        rt.load_template(template(close))
    assert (info.value.field, info.value.key) == ("content", "close_pattern")


@pytest.mark.parametrize("pattern", ["$", "a*", r"(?=\n)"])
def test_open_patterns_still_may_not_match_at_a_line_end(pattern: str) -> None:
    tpl = {"start_anchor": "<A>", "fields": {"f": {"open_pattern": pattern, "close": "</f>"}}}
    with pytest.raises(rt.TemplateError, match="open pattern matches the empty string"):
        rt.load_template(tpl)


def test_the_trl_close_reads_like_the_reference() -> None:
    tpl = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
            },
            "content": {"close_pattern": TRL_CLOSE},
        },
    }
    for text in ["Answer.<|im_end|>\n", "Answer.", "Answer.\n", '<tool_call>{"a": 1}</tool_call><|im_end|>']:
        assert dict(rt.parse_response(text, tpl, prefix="")) == reference.parse_response(text, tpl, prefix="")


def test_a_final_newline_after_a_dollar_close_is_no_segment() -> None:
    tpl = template("$", repeats=True, join=" ")
    assert rt.parse_response("a<t>x</t>b\n", tpl, prefix="")["content"] == "a b"
    assert rt.parse_response("b\n", tpl, prefix="")["content"] == "b"


def test_parsing_moves_on_after_a_zero_width_close() -> None:
    # The reference stops reading after the second zero-width match at one place (docs/differences.md,
    # empty-delimiters): it returns "one" here.
    tpl = template(r"(?=\n)")
    assert rt.parse_response("one\ntwo\n\nthree", tpl, prefix="")["content"] == "one\ntwo\n\nthree"
    assert reference.parse_response("one\ntwo\n\nthree", tpl, prefix="")["content"] == "one"
    lines = rt.parse_response("x\ny\n\nz", template(r"(?=\n)", repeats=True), prefix="")["content"]
    assert lines == ["x", "y", "", "z"]


TOKENS = st.sampled_from(["a", "b c", " ", "\n", "<t>", "</t>", "x", "<|im_end|>", "<|im_", "\n\n"])


def _run(tpl: dict[str, Any], chunks: list[str]) -> tuple[Any, list[Any], str]:
    parser = rt.ResponseParser(copy.deepcopy(tpl), prefix="")
    events = list(parser.initial_events)
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final = parser.finalize()
    events.extend(final)
    skeleton = [(e["type"], e["field"], e.get("value")) for e in events if e["type"] != "region_chunk"]
    routed = "".join(e["text"] for e in events if e["type"] == "region_chunk")
    return dict(message), skeleton, routed


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(TOKENS, max_size=14).map("".join),
    st.sampled_from(CONTEXT_CLOSES),
    st.booleans(),
    st.lists(st.integers(1, 6), max_size=20),
)
def test_progress_and_chunking_exactness(text: str, close: str, repeats: bool, sizes: list[int]) -> None:
    tpl = template(close, **({"repeats": True} if repeats else {}))
    whole = _run(tpl, [text])
    one_by_one = _run(tpl, list(text))
    chunks, at = [], 0
    for size in [*sizes, len(text)]:
        chunks.append(text[at : at + size])
        at += size
    assert one_by_one == whole
    assert _run(tpl, chunks) == whole
    # Progress: no character is skipped. The routed text is the input less the delimiters it consumed;
    # with every delimiter string (and all whitespace, which a close may consume) taken out of both, the
    # two are the same.
    assert _bare(whole[2]) == _bare(text)


def _bare(text: str) -> str:
    for delimiter in ("</t>", "<t>", "<|im_end|>"):
        text = text.replace(delimiter, "")
    return "".join(text.split())


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(TOKENS, max_size=12).map("".join).filter(lambda t: not t.endswith("\n")),
    st.sampled_from(["$", TRL_CLOSE, "(?=<t>)"]),
    st.sampled_from([{"repeats": True}, {"repeats": True, "join": " "}]),
)
def test_differential_with_repeats(text: str, close: str, content: dict[str, Any]) -> None:
    """Where the reference reads every character (a text that does not end in a newline), both agree."""
    tpl = template(close, **content)
    try:
        expected: Any = reference.parse_response(text, copy.deepcopy(tpl), prefix="")
    except Exception:
        with pytest.raises(rt.ResponseTemplateError):
            rt.parse_response(text, copy.deepcopy(tpl), prefix="")
        return
    assert dict(rt.parse_response(text, copy.deepcopy(tpl), prefix="")) == expected

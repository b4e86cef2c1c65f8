"""Control tokens in the core (controls.py, ResponseParser(control_tokens=)): text from ordinary tokens is
fed with feed(), a control token with feed_control(); a control token spelled out in ordinary text never
matches a delimiter, and nothing the model wrote is changed (a U+FDD2 it wrote is kept).

The oracle is the naive rule, written here on its own: put a U+FDD2 between the characters of every
spelled-out control token, parse the result as text, delete the U+FDD2s (the generated texts have none of
their own). The parser must agree with it under every way of splitting the ordinary text into feeds.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.controls import ControlTokens
from response_templates.whole import parse_pieces

FAST = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])

CONTROLS = ["<|im_end|>", "<tool_call>", "</tool_call>", "</think>"]
TEMPLATE: dict[str, Any] = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": r"<tool_call>(?:<fn=(?P<name>[^>]*)>)?",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "transform": {"name": "{name}", "arguments": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}
WORDS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<|im_end|>",
    "<fn=",
    ">",
    "<|",
    "im_",
    "end|>",
    "</",
    "think",
    "tool_call",
    "a",
    " ",
    "\n",
    "é",
    "😀",
]


def naive(pieces: list[tuple[str, bool]], prefix: str = "") -> Any:
    finder = re.compile("|".join(map(re.escape, sorted(CONTROLS, key=len, reverse=True))))
    text = ""
    run = ""
    for piece, control in pieces:
        if control:
            text += finder.sub(lambda m: "\ufdd2".join(m.group()), run) + piece
            run = ""
        else:
            run += piece
    text += finder.sub(lambda m: "\ufdd2".join(m.group()), run)
    message = rt.parse_response(text, TEMPLATE, prefix=prefix, errors="keep")

    def strip(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("\ufdd2", "")
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()}
        return value

    return strip(dict(message))


def pieces_strategy() -> st.SearchStrategy[list[tuple[str, bool]]]:
    ordinary = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(lambda w: ("".join(w), False))
    control = st.sampled_from(CONTROLS).map(lambda c: (c, True))
    return st.lists(st.one_of(ordinary, ordinary, control), max_size=12)


def fed(pieces: list[tuple[str, bool]], cuts: list[int]) -> tuple[Any, list[Any]]:
    parser = rt.ResponseParser(TEMPLATE, prefix="", errors="keep", control_tokens=CONTROLS)
    events: list[Any] = []
    k = 0
    for text, control in pieces:
        if control:
            events += parser.feed_control(text)
            continue
        i = 0
        while i < len(text):  # the ordinary text in feeds of any size, as tokens come
            n = cuts[k % len(cuts)]
            k += 1
            events += parser.feed(text[i : i + n])
            i += n
    message, final = parser.finalize()
    return dict(message), events + final


@FAST
@given(pieces=pieces_strategy(), cuts=st.lists(st.integers(1, 5), min_size=1, max_size=5))
def test_streaming_agrees_with_the_naive_rule_under_any_split(
    pieces: list[tuple[str, bool]], cuts: list[int]
) -> None:
    expected = naive(pieces)
    whole = dict(
        parse_pieces(pieces, TEMPLATE, prefix="", control_tokens=ControlTokens(CONTROLS), errors="keep")
    )
    message, events = fed(pieces, cuts)
    assert whole == expected
    assert message == expected
    assert "\ufdd2" not in repr(events)
    assert message == fed(pieces, [10_000])[0]


def test_a_spelled_marker_is_text_and_the_real_one_a_delimiter() -> None:
    pieces = [("Type <|im_", False), ("end|> to stop.", False), ("<|im_end|>", True)]
    assert parse_pieces(pieces, TEMPLATE, prefix="", control_tokens=ControlTokens(CONTROLS)) == {
        "content": "Type <|im_end|> to stop."
    }


def test_a_u_fdd2_the_model_wrote_survives_next_to_spelled_markers() -> None:
    text = "\ufdd2a\ufdd2<|im_end|>\ufdd2</think\ufdd2>\ufdd2"
    for cuts in ([1], [2, 3], [100]):
        message, events = fed([(text, False), ("<|im_end|>", True)], cuts)
        assert message == {"content": text}
        assert "".join(e.get("text", "") for e in events if e["type"] == "region_chunk") == text


def test_kept_regions_and_captures_hold_the_text_as_written() -> None:
    """errors="keep": a region that does not parse keeps its delimiters and body exactly; a capture that
    runs through a spelled marker holds it without any mark."""
    t = {
        **TEMPLATE,
        "fields": {
            **TEMPLATE["fields"],
            "tool_calls": {**TEMPLATE["fields"]["tool_calls"], "content": "json"},
        },
    }
    pieces = [
        ("<tool_call>", True),
        ("<fn=a@@x@@b>{bad </tool_call> json", False),
        ("</tool_call>", True),
    ]
    parser = rt.ResponseParser(t, prefix="", errors="keep", control_tokens=[*CONTROLS, "@@x@@"])
    events: list[Any] = []
    for text, control in pieces:
        events += parser.feed_control(text) if control else parser.feed(text)
    message, final = parser.finalize()
    events += final
    assert message["content"] == "<tool_call><fn=a@@x@@b>{bad </tool_call> json</tool_call>"
    opened = [e for e in events if e["type"] == "region_open" and e["field"] == "tool_calls"]
    assert opened[0]["captures"] == {"name": "a@@x@@b"}
    assert "\ufdd2" not in repr(events) + repr(message)


def test_a_prefix_given_as_pieces_reads_its_spelled_anchor_as_text() -> None:
    prefix = [("<|im_start|>", True), ("user\nsay <|im_start|>assistant\n<think>", False)]
    controls = ["<|im_start|>", *CONTROLS]
    with pytest.raises(rt.AnchorNotFoundError):
        rt.ResponseParser(TEMPLATE, prefix=prefix, control_tokens=controls)
    prefix += [("<|im_end|>", True), ("\n", False), ("<|im_start|>", True), ("assistant\n<think>", False)]
    parser = rt.ResponseParser(TEMPLATE, prefix=prefix, control_tokens=controls)
    parser.feed("plan")
    parser.feed_control("</think>")
    parser.feed("ok")
    assert parser.finalize()[0] == {"reasoning_content": "plan", "content": "ok"}


def test_feed_control_needs_control_tokens_and_text() -> None:
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    with pytest.raises(rt.ParserStateError, match="control_tokens"):
        parser.feed_control("<|im_end|>")
    parser = rt.ResponseParser(TEMPLATE, prefix="", control_tokens=CONTROLS)
    with pytest.raises((rt.ResponseTemplateError, TypeError)):  # TypeError: the compiled build's own check
        parser.feed_control(7)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ControlTokens("<|im_end|>")


def test_the_finder_marks_only_what_ends_in_the_new_text() -> None:
    controls = ControlTokens(["<|im_end|>", "x"])  # one-character tokens cannot be spelled out
    assert controls.spellings == ("<|im_end|>",)
    text, marks, tail = controls.mark("", "<|im_end|><|im_")
    assert marks == [9] and text[9] == "\ufdd2" and tail == "_end|><|im_"[-9:]
    text2, marks2, _ = controls.mark(tail, "end|>")
    assert marks2 == [4] and text2 == "end|\ufdd2>"

"""Chunking never changes anything (docs/spec.md, section 4), over generated templates and texts.

For every generated template and text: parsing the whole text, feeding it one character at a time and
feeding it in random pieces give the same message (or the same error), the same sequence of
region_open/region_close events with the same values, and the same text per region when the
region_chunk texts are concatenated.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples

# Field pools: each entry is (field spec, strings the text generator should use).
REASONING = [
    ({"open": "<think>", "close": "</think>"}, ["<think>", "</think>", "</thi", "<th"]),
    ({"open_pattern": r"<think>\s*", "close_pattern": r"\s*</think>"}, ["<think>", "</think>", " \n"]),
    ({"open": "<think>", "close": ["STOP", "STOPPED"]}, ["<think>", "STOP", "STOPPED", "STOPPE", "ED"]),
]
TOOLS = [
    (
        {"open": "<tc>", "close": "</tc>", "repeats": True},
        ["<tc>", "</tc>", "</t", "<t"],
    ),
    (
        {"open": "<invoke>", "close_pattern": r"</invoke>(?:\s*</mm>)?", "repeats": True, "join": "|"},
        ["<invoke>", "</invoke>", "</mm>", "</m", "\n "],
    ),
    (
        {
            "open_pattern": r"<fn=(?P<name>\w+)>",
            "close": "</fn>",
            "repeats": True,
            "transform": {"name": "{name}", "body": "{content}"},
        },
        ["<fn=", "<fn=get>", "abc>", "</fn>", "</f"],
    ),
    (
        {"open": "[[", "close_pattern": r"\]\](?=\n|$)", "repeats": True, "content_args": {"strip": False}},
        ["[[", "]]", "]", "\n", "[["],
    ),
    # json-value-end (docs/extensions.md): the region ends where its JSON value ends.
    (
        {"open": "<tc>", "close_json": True, "repeats": True, "content_args": {"strip": False}},
        ["<tc>", "{", "}", "[", "]", '"', "\\", "12", "true", ";", '"}"'],
    ),
    (
        {"open_pattern": r";?\s*(?=[\[{])", "close_json": True, "repeats": True, "content": "json"},
        ["{", "}", "[", "]", '"', "\\", "1", ";", '{"a": "]"}', ", "],
    ),
]
IMPLICIT = [
    None,
    ({}, []),
    ({"close": "<end>"}, ["<end>", "<en"]),
    ({"close_pattern": r"<end>|END$"}, ["<end>", "END", "END\n", "\n"]),
]
FILLER = ["a", "b", " ", "\n", "<", ">", "é", "🙂", "x y", "STO", "/"]


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], str, list[int]]:
    fields: dict[str, Any] = {}
    vocab = list(FILLER)
    r = draw(st.sampled_from([*REASONING, None]))
    if r:
        fields["reasoning"] = dict(r[0])
        vocab += r[1]
    tl = draw(st.sampled_from([*TOOLS, None]))
    if tl:
        fields["tools"] = dict(tl[0])
        vocab += tl[1]
    imp = draw(st.sampled_from(IMPLICIT))
    if imp is not None or not fields:
        imp = imp or ({}, [])
        fields["content"] = dict(imp[0])
        vocab += imp[1]
    template: dict[str, Any] = {"start_anchor": "<|assistant|>", "fields": fields}
    if "close_json" in fields.get("tools", {}):
        template["extensions"] = ["json-value-end"]
    text = "".join(draw(st.lists(st.sampled_from(vocab), max_size=30)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    cuts = (
        sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 8))))
        if len(text) > 1
        else []
    )
    return template, text, cuts


def run(template: dict[str, Any], prefix: str, pieces: list[str]) -> tuple[str, Any, list[Any], list[Any]]:
    """Feed pieces; return ("ok", message, skeleton, regions) or ("error", field, ...)."""
    try:
        p = rt.ResponseParser(template, prefix=prefix)
        events = list(p.initial_events)
        for piece in pieces:
            events += p.feed(piece)
        message, final = p.finalize()
    except rt.ParseError as exc:
        return "error", exc.field, [], []
    events += final
    skeleton = [(e["type"], e["field"], e.get("value")) for e in events if e["type"] != "region_chunk"]
    regions: list[list[Any]] = []
    for e in events:
        if e["type"] == "region_open":
            regions.append([e["field"], ""])
        elif e["type"] == "region_chunk":
            assert regions and regions[-1][0] == e["field"]
            regions[-1][1] += e["text"]
    return "ok", message, skeleton, regions


def split(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["", "<|assistant|>", "<|assistant|><think>\n", "x<|assistant|><tc>1"]))
def test_any_chunking_gives_the_same_result(case: tuple[dict[str, Any], str, list[int]], prefix: str) -> None:
    template, text, cuts = case
    whole = run(template, prefix, [text])
    assert run(template, prefix, list(text)) == whole
    assert run(template, prefix, split(text, cuts)) == whole


def test_reference_chunking_bugs_do_not_happen_here() -> None:
    """Inputs on which the reference gives a different answer when streamed."""
    t_stop = {
        "start_anchor": "A",
        "fields": {"r": {"open": "<r>", "close": ["STOP", "STOPPED"]}, "content": {}},
    }
    t_minimax = {
        "start_anchor": "A",
        "fields": {
            "calls": {
                "open": "<invoke>",
                "close_pattern": r"</invoke>(?:\s*</minimax:tool_call>)?",
                "repeats": True,
            },
            "content": {},
        },
    }
    t_dollar = {"start_anchor": "A", "fields": {"r": {"open": "<r>", "close_pattern": r"\n$"}, "content": {}}}
    t_ahead = {
        "start_anchor": "A",
        "fields": {"r": {"open": "<r>", "close_pattern": r"x(?!yz)"}, "content": {}},
    }
    for template, text in [
        (t_stop, "<r>wait STOPPED here"),
        (t_minimax, "<invoke>a</invoke>\n</minimax:tool_call>done"),
        (t_dollar, "<r>one\ntwo\n"),
        (t_ahead, "<r>axyz then x."),
    ]:
        whole = run(template, "", [text])
        for size in (1, 2, 3, 5):
            pieces = [text[i : i + size] for i in range(0, len(text), size)]
            assert run(template, "", pieces) == whole, (template, size)
    assert rt.parse_response("<r>wait STOPPED here", t_stop, prefix="") == {"r": "wait", "content": "here"}
    assert rt.parse_response("<r>one\ntwo\n", t_dollar, prefix="") == {"r": "one\ntwo"}


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(["<t>", "</t>", "<c>", "</c>", "a", "<", "/", "t>", "\n"]), max_size=25))
def test_nothing_is_lost(tokens: list[str]) -> None:
    """Every character is in a chunk or in a delimiter: rebuild the input from the events."""
    template = {
        "start_anchor": "A",
        "fields": {
            "r": {"open": "<t>", "close": "</t>"},
            "c": {"open": "<c>", "close": "</c>"},
            "content": {},
        },
    }
    text = "".join(tokens)
    p = rt.ResponseParser(template, prefix="")
    events = [e for ch in text for e in p.feed(ch)]
    _, final = p.finalize()
    opens = {"r": "<t>", "c": "<c>", "content": ""}
    closes = {"r": "</t>", "c": "</c>", "content": ""}
    rebuilt = []
    for e in events:
        if e["type"] == "region_open":
            rebuilt.append(opens[e["field"]])
        elif e["type"] == "region_chunk":
            rebuilt.append(e["text"])
        else:
            rebuilt.append(closes[e["field"]])
    for e in final:  # regions closed by the end of the stream have no close delimiter
        if e["type"] == "region_chunk":
            rebuilt.append(e["text"])
        elif e["type"] == "region_open":
            rebuilt.append(opens[e["field"]])
    assert "".join(rebuilt) == text

"""The event types of ``response_templates.events`` describe exactly what the library emits.

Every event of the parser (``initial_events``, ``feed``, ``finalize`` and ``error.events``) and of the
tool-call streamer, over every library template fed text made of its own markers, the demo generation
and hand-written templates for the optional keys, is checked against its TypedDict: its ``type`` names
one, every required key is there, no key is unknown, every value has the declared type. And every key
of every TypedDict is seen at least once, so the types describe nothing that is never emitted.
"""

from __future__ import annotations

import random
import types
import typing
from collections.abc import Iterator
from typing import Any, Literal, Union

import pytest

import response_templates as rt
from library_checks import delimiter_words
from response_templates import events as ev
from response_templates.demo import load_demo_data, token_chunks
from response_templates.toolstream import ToolCallStreamer

PARSER_TYPES: tuple[type, ...] = typing.get_args(ev.ParserEvent)
TOOL_TYPES: tuple[type, ...] = typing.get_args(ev.ToolCallEvent)


def _type_name(cls: type) -> str:
    (name,) = typing.get_args(typing.get_type_hints(cls)["type"])
    return str(name)


BY_TYPE: dict[str, type] = {_type_name(cls): cls for cls in PARSER_TYPES + TOOL_TYPES}


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` has the type ``hint`` (the forms events.py uses)."""
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin is Union or origin is types.UnionType:
        return any(matches(value, arm) for arm in typing.get_args(hint))
    if origin is dict:
        key_type, value_type = typing.get_args(hint)
        return type(value) is dict and all(
            matches(k, key_type) and matches(v, value_type) for k, v in value.items()
        )
    if hint is int:
        return type(value) is int  # not a bool
    assert isinstance(hint, type), f"events.py uses a form this test does not know: {hint!r}"
    return isinstance(value, hint)


class Checker:
    """Checks events against their TypedDict and remembers which keys were seen."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = {name: set() for name in BY_TYPE}

    def check(self, event: Any, kinds: tuple[type, ...]) -> None:
        assert type(event) is dict, f"an event is a plain dict, got {type(event).__name__}: {event!r}"
        cls = BY_TYPE.get(event.get("type"))  # type: ignore[arg-type]
        assert cls is not None and cls in kinds, f"no event type {event.get('type')!r}: {event!r}"
        hints = typing.get_type_hints(cls)
        missing = cls.__required_keys__ - event.keys()  # type: ignore[attr-defined]
        assert not missing, f"{cls.__name__} without {sorted(missing)}: {event!r}"
        unknown = event.keys() - hints.keys()
        assert not unknown, f"{cls.__name__} with unknown keys {sorted(unknown)}: {event!r}"
        for key, value in event.items():
            assert matches(value, hints[key]), f"{cls.__name__}[{key!r}] is not {hints[key]}: {event!r}"
        self.seen[event["type"]].update(event)

    def parser_events(self, events: list[Any]) -> None:
        for event in events:
            self.check(event, PARSER_TYPES)

    def tool_events(self, events: list[Any]) -> None:
        for event in events:
            self.check(event, TOOL_TYPES)


def stream(
    checker: Checker,
    template: Any,
    prefix: str,
    pieces: list[str],
    tools: list[Any] | None = None,
    truncated: bool = False,
    errors: Literal["raise", "keep"] = "raise",
) -> list[Any]:
    """Feed ``pieces``, checking every event of the parser and of a tool-call streamer; all events."""
    try:
        parser = rt.ResponseParser(
            template, prefix=prefix, tools=tools, errors=errors, missing_anchor="parse"
        )
    except rt.ParseError as exc:  # the prefix's own text did not parse: check the events it gave
        checker.parser_events(exc.events or [])
        return list(exc.events or [])
    compiled = parser.template
    streamer = ToolCallStreamer(compiled, tools=tools) if "tool_calls" in compiled.by_name else None
    out: list[Any] = []

    def take(events: list[Any]) -> None:
        checker.parser_events(events)
        out.extend(events)
        if streamer is not None:
            checker.tool_events(streamer.feed(events))

    take(parser.initial_events)
    for piece in pieces:
        try:
            take(parser.feed(piece))
        except rt.ResponseTemplateError as exc:
            take(exc.events or [])
    try:
        _, final = parser.finalize()
    except rt.ResponseTemplateError as exc:
        final = exc.events or []
    checker.parser_events(final)
    out.extend(final)
    if streamer is not None:
        checker.tool_events(streamer.finish(final, truncated=truncated))
    return out


_GENERIC = ('{"name": "f", "arguments": {"a": 1}}', '{"a": "x}"}', "[f(a=1)]", "}", "<", "x", " ", "\n", "1")


def vocabulary(template: rt.ResponseTemplate) -> list[str]:
    return sorted(delimiter_words(template)) + list(_GENERIC)


def texts(template: rt.ResponseTemplate, seed: int, count: int) -> Iterator[str]:
    rng = random.Random(seed)
    words = vocabulary(template)
    for _ in range(count):
        yield "".join(rng.choice(words) for _ in range(rng.randint(0, 14)))


def pieces_of(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 5)))) if text else []
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("name", rt.templates.names())
def test_library_events_match_their_types(name: str) -> None:
    checker = Checker()
    template = rt.templates.get(name)
    rng = random.Random(name)
    for index, text in enumerate(texts(template, seed=len(name), count=16)):
        for prefix in ("", vocabulary(template)[index % 4]):
            chunks = [text] if index % 3 == 0 else list(text) if index % 3 == 1 else pieces_of(text, rng)
            errors: Literal["raise", "keep"] = "keep" if index % 4 == 3 else "raise"
            stream(checker, template, prefix, chunks, truncated=index % 2 == 1, errors=errors)


# Hand-written templates and outputs that give every optional key (captures, error) and every event type.
CASES: list[tuple[dict[str, Any], str, list[Any] | None]] = [
    (  # captures at region_open; a call with an id; a failing region (error); typed arguments
        {
            "start_anchor": "A",
            "fields": {
                "tool_calls": {
                    "open_pattern": r"<call (?P<name>\w+) (?P<id>\w+)>",
                    "close": "</call>",
                    "repeats": True,
                    "content": "json",
                    "transform": {
                        "type": "function",
                        "id": "{id}",
                        "function": {"name": "{name}", "arguments": "{content}"},
                    },
                },
                "content": {},
            },
        },
        'Hi <call f c1>{"n": "3"}</call> then <call g c2>{oops</call> bye',
        [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}},
            }
        ],
    ),
    (  # close_json, an int implicit field that fails at the end, interleaved regions
        {
            "start_anchor": "A",
            "extensions": ["json-value-end", "interleaved"],
            "fields": {
                "reasoning_content": {"open": "<think>", "close": "</think>"},
                "tool_calls": {
                    "open": "CALL",
                    "close_json": True,
                    "content": "json",
                    "repeats": True,
                    "within": ["reasoning_content"],
                },
                "content": {"content": "int"},
            },
        },
        '<think>a CALL{"name": "f", "arguments": {}} b</think>12 CALL{"x": [1, 2]} x',
        None,
    ),
]


def test_every_key_of_every_event_type_is_emitted() -> None:
    checker = Checker()
    for template, text, tools in CASES:
        for chunks in ([text], list(text)):
            stream(checker, template, "", chunks, tools=tools)
            stream(checker, template, "", chunks, tools=tools, errors="keep")
    demo = load_demo_data()
    for chunks in ([demo.output], list(token_chunks(demo.output))):
        stream(checker, demo.template, demo.prompt, chunks, tools=demo.tools)
    stream(checker, demo.template, demo.prompt, [demo.output[: len(demo.output) // 2]], truncated=True)
    inside_a_call = demo.output[: demo.output.index("</tool_call>") - 5]  # ToolCallEnd's cut_off
    stream(checker, demo.template, demo.prompt, [inside_a_call], truncated=True)
    for name, cls in BY_TYPE.items():
        declared = set(typing.get_type_hints(cls))
        assert checker.seen[name] == declared, (
            f"{cls.__name__}: never emitted {declared - checker.seen[name]}"
        )


def test_a_wrong_event_is_caught() -> None:
    checker = Checker()
    good = {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False}
    checker.check(good, PARSER_TYPES)
    for bad in (
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "dirty"},
        {**good, "dirty": "no"},
        {**good, "type": "region_grew"},
        {"type": "region_open", "field": "x", "captures": {"a": 1}},
    ):
        with pytest.raises(AssertionError):
            checker.check(bad, PARSER_TYPES)

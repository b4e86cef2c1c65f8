"""The shortcuts of the per-token path give exactly what the general path gives.

Most events of a stream are the ``region_chunk`` of a text or tool-call field; the adapters hand them
straight to the field's handler, send text the stripping leaves as it is without the general stripping,
and send a chunk that continues a string argument verbatim without running the JSON scanner over it
(``JsonScanner.feed_verbatim``, ``ToolCallStreamer.stream_text``). These tests feed the same events to an
adapter as it is and to one whose shortcuts are switched off (no handlers: every event goes through the
general dispatch), and the same text to a scanner through ``feed_verbatim`` first and through ``feed``
only, for generated outputs with quotes, backslashes, escapes, control characters, non-ASCII text and
surrogates, cut into random chunks.
"""

from __future__ import annotations

import copy
import gc
import json
import random
import weakref
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.errors import ParseError
from response_templates.toolstream import JsonScanner
from response_templates.wire import ChatCompletionsAdapter, WireAdapter
from toolstream_fixtures import FAMILIES, GPT_OSS, HERMES, MISTRAL_PRE_V11, WEATHER_TOOLS, pieces, serialize
from wire_checks import PROTOCOLS, USAGE, make_adapter

SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck))

# Text that exercises every branch of the shortcuts: quotes and backslashes (escapes, in JSON), control
# characters, '/' (written '\/' at times), non-ASCII and non-printable characters, lone surrogates.
_CHARS = st.sampled_from(list('ab xyz "\\/\n\t\r\x00\x1f\x7fé東\u00a0\u2028\U0001f600\ud800\udc00{}[],:'))
TEXTS = st.text(_CHARS, max_size=30)
WORDS = st.text(st.sampled_from(list("ab xyz\n é\t.")), max_size=40)
STRINGY = st.recursive(
    TEXTS | st.integers(-5, 5) | st.none(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXTS, children, max_size=3),
    max_leaves=6,
)
# Arguments of get_weather: 'days' is an integer in the schema, so a string written for it is held back
# for typing (the scanner must not stream it verbatim).
ARGUMENTS = st.fixed_dictionaries(
    {},
    optional={
        "city": TEXTS,
        "days": st.integers(0, 9) | st.sampled_from(["3", "three", ' "4" ']),
        "units": TEXTS | st.none(),
        "note": STRINGY,
    },
)

# ------------------------------------------------------------------------------------------------------
# the scanner: feed_verbatim, where it applies, is feed


def _hold(item: int, key: str, kind: str) -> Any:
    return str.upper if key == "held" and kind == "string" else None


@SETTINGS
@given(
    st.lists(st.dictionaries(TEXTS | st.just("held"), STRINGY, max_size=4), min_size=1, max_size=3),
    st.integers(0, 2**32),
    st.booleans(),
)
def test_feed_verbatim_reports_what_feed_reports(calls: list[dict], seed: int, each: bool) -> None:
    rng = random.Random(seed)
    documents = [{"name": "f", "arguments": arguments} for arguments in calls]
    text = serialize(documents if each else documents[0], rng)
    if rng.random() < 0.3:  # invalid or cut off: the errors and their offsets agree too
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(["", "\x01", "\\x", "]"]) + text[at:] * rng.randrange(2)
    options: dict[str, Any] = {"name_paths": [("name",)], "arguments_paths": [("arguments",)], "each": each}
    general = JsonScanner(**options, hold=_hold)
    fast = JsonScanner(**options, hold=_hold)
    item = 0  # the item of the last arguments report, as the tool-call streamer tracks it
    for chunk in pieces(text, rng):
        expected = general.feed(chunk)
        verbatim = fast.feed_verbatim(chunk, item)
        if verbatim is not None:
            got = [{"type": "arguments", "item": item, "raw": verbatim, "json": verbatim}] if verbatim else []
        else:
            got = fast.feed(chunk)
        assert got == expected
        item = next((r["item"] for r in reversed(got) if r["type"] == "arguments"), item)
    assert fast.end() == general.end()
    assert (fast.done, fast.failed) == (general.done, general.failed)


def test_feed_verbatim_takes_plain_string_text_only() -> None:
    scanner = JsonScanner(arguments_paths=[("arguments",)], hold=_hold)
    sent: list[str] = []

    def feed(text: str) -> None:
        sent.extend(r["json"] for r in scanner.feed(text) if r["type"] == "arguments")

    feed('{"arguments": {"code": "x')
    for text, verbatim in (
        ("a b", "a b"),
        ('é\\n\\"', 'é\\n\\"'),
        ("c\\", "c"),
        ("\\d", "\\\\d"),
        ("\\", ""),
        ("t", "\\t"),
    ):
        assert scanner.feed_verbatim(text, 0) == verbatim
        sent.append(verbatim)
    # not read: an escape written otherwise in canonical JSON, the end of the string, a control
    # character, another item's arguments
    for text, item in (("\\/", 0), ("\\u0041", 0), ('c"', 0), ("\x00", 0), ("abc", 1)):
        assert scanner.feed_verbatim(text, item) is None
    feed("e\\")
    assert scanner.feed_verbatim("u0041", 0) is None  # an escape that canonical JSON writes otherwise
    feed('u0041", "held": "y')
    assert scanner.feed_verbatim("abc", 0) is None  # held for typing: not sent as written
    feed('", "k')
    assert scanner.feed_verbatim("abc", 0) is None  # a key
    feed('": 1}}')
    assert json.loads("".join(sent)) == {"code": 'xa bé\n"c\\d\teA', "held": "Y", "k": 1}


def test_feed_verbatim_judges_a_repeated_text_with_what_waits_before_it() -> None:
    """A short text feed_verbatim could not judge at a glance is judged once per scanner and remembered:
    the judgement is of the text with the backslash waiting before it, not of the piece alone."""
    scanner = JsonScanner(arguments_paths=[()])
    scanner.feed('{"code": "x')
    pieces_and_texts = [
        ('"', None),  # ends the string
        ("\\", ""),  # an escape's backslash: waits
        ('"', '\\"'),  # ... and the quote after it is the escape \"
        ("\\", ""),
        ("\\", "\\\\"),  # the escape \\
        ('"', None),  # the same quote again, with nothing waiting: ends the string
        (' \\"', ' \\"'),
        (' \\"', ' \\"'),
        ("\\/", None),  # canonical JSON writes \/ as /
        ("\\/", None),
    ]
    for text, expected in pieces_and_texts:
        assert scanner.feed_verbatim(text, 0) == expected, text
    for i in range(2000):  # more texts than are remembered: the judgements stay right
        assert scanner.feed_verbatim(f"{i}\\n", 0) == f"{i}\\n"
        assert scanner.feed_verbatim(f'{i}"', 0) is None
    assert scanner.feed('"}')[0] == {"type": "arguments", "item": 0, "raw": '"}', "json": '"}'}
    assert scanner.done and not scanner.failed


# ------------------------------------------------------------------------------------------------------
# the adapters: with and without the shortcuts


def _render(family: str, reasoning: str, content: str, calls: list[dict], rng: random.Random) -> str:
    if family.startswith("qwen3"):
        out = f"<think>{reasoning}</think>{content}"
        for arguments in calls:
            out += f"<tool_call>\n{serialize({'name': 'get_weather', 'arguments': arguments}, rng)}\n</tool_call>"
        return out + "<|im_end|>"
    if family == "gpt-oss":
        out = f"<|channel|>analysis<|message|>{reasoning}<|end|>"
        for arguments in calls:
            out += (
                "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
                f"<|message|>{serialize(arguments, rng)}<|call|>"
            )
        return out + f"<|start|>assistant<|channel|>final<|message|>{content}<|return|>"
    documents = [{"name": "get_weather", "arguments": arguments} for arguments in calls]
    return content + (f"[TOOL_CALLS] {serialize(documents, rng)}" if calls else "") + "</s>"


_UNSTRIPPED = copy.deepcopy(HERMES)  # text sent as written, whitespace included
for _field in ("reasoning_content", "content"):
    _UNSTRIPPED["fields"][_field]["content_args"] = {"strip": False}
_TEMPLATES = {
    "qwen3": HERMES,
    "qwen3-unstripped": _UNSTRIPPED,
    "gpt-oss": GPT_OSS,
    "mistral": MISTRAL_PRE_V11,
}
_PROMPTS = {
    "qwen3": "<|im_start|>assistant\n",
    "qwen3-unstripped": "<|im_start|>assistant\n",
    "gpt-oss": "<|start|>assistant",
    "mistral": "[INST]Hi[/INST]",
}
_OPTIONS: dict[str, list[dict[str, Any]]] = {
    "chat": [{}, {"reasoning_key": "both", "include_usage": True}],
    "responses": [{}],
    "anthropic": [{}],
}


def _sse(chunks: list[dict[str, Any]], protocol: str) -> str:
    """The server-sent events of the chunks, each encoded whole by json.dumps."""
    if protocol != "chat":
        return "".join(
            f"event: {c['type']}\ndata: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks
        )
    return "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks)


# Changes a caller may make to a chunk between feed() and encode(): encode writes what the chunk holds.
_CHANGES = [
    lambda c: c.update(id="other"),
    lambda c: c.update(created=c["created"] + 1),
    lambda c: c.update(model="m\u00e9"),
    lambda c: c.update(system_fingerprint="fp"),
    lambda c: c.update(usage={"total_tokens": 1}) if "usage" in c else c.update(usage=None),
    lambda c: c.update({"object": c.pop("object")}),  # the same keys in another order
    lambda c: c["choices"][0].update(index=1),
    lambda c: c["choices"][0].update(finish_reason="stop"),
    lambda c: c["choices"][0].update(logprobs={"content": []}),
    lambda c: c["choices"].append(dict(c["choices"][0])),
    lambda c: c["choices"][0]["delta"].update(role="assistant"),
    lambda c: c["choices"][0].update(delta={"content": 3}),
    lambda c: c["choices"][0].update(delta={"refusal": "no"}),
    lambda c: c["choices"][0].update(delta={"tool_calls": [{"index": True, "function": {"arguments": "x"}}]}),
    lambda c: c["choices"][0].update(
        delta={"tool_calls": [{"index": 0, "function": {"arguments": "x", "name": "f"}}]}
    ),
    lambda c: c["choices"][0].update(delta={"tool_calls": [{"function": {"arguments": "x"}, "index": 0}]}),
    lambda c: c["choices"][0].update(delta={"content": '\ud800 \u2028 é "\\'}),
]


@SETTINGS
@given(
    WORDS,
    st.lists(ARGUMENTS, min_size=1, max_size=2),
    st.integers(0, 2**32),
    st.booleans(),
    st.lists(st.sampled_from(range(len(_CHANGES))), max_size=3),
)
def test_encode_writes_each_chunk_as_json_dumps_does(
    content: str, calls: list[dict], seed: int, usage: bool, changes: list[int]
) -> None:
    """encode() writes the usual chunks from a prepared frame: the same text as json.dumps of the whole
    chunk, also after the chunk, or the adapter's constants, changed."""
    rng = random.Random(seed)
    parser = rt.ResponseParser(HERMES, prefix=_PROMPTS["qwen3"], tools=WEATHER_TOOLS)
    adapter = ChatCompletionsAdapter(HERMES, tools=WEATHER_TOOLS, include_usage=usage, seed=seed)
    chunks = adapter.feed(parser.initial_events)
    for piece in pieces(_render("qwen3", "Hmm.", content, calls, rng), rng):
        chunks += adapter.feed(parser.feed(piece))
        if rng.random() < 0.05:
            adapter.model = rng.choice(["a", "b\u00e9"])  # a new constant part from the next chunk on
    chunks += adapter.finish(parser.finalize()[1], usage=USAGE if usage else None)
    with_choices = [c for c in chunks if c["choices"]]  # not the usage chunk
    for index in changes:
        _CHANGES[index](rng.choice(with_choices))
    assert adapter.encode(chunks) == _sse(chunks, "chat")


def _no_shortcuts(adapter: WireAdapter) -> WireAdapter:
    adapter._text_fields, adapter._tool_fields = {}, frozenset()  # every event through the general dispatch
    return adapter


@SETTINGS
@given(
    st.sampled_from(sorted(_TEMPLATES)),
    st.sampled_from(PROTOCOLS),
    WORDS,
    WORDS,
    st.lists(ARGUMENTS, max_size=3),
    st.integers(0, 2**32),
    st.sampled_from(["stop", "length"]),
    st.sampled_from([{}, {"arguments": "buffered"}, {"tool_streaming": "at_close"}]),
)
def test_shortcuts_send_what_the_general_path_sends(
    family: str,
    protocol: str,
    reasoning: str,
    content: str,
    calls: list[dict],
    seed: int,
    finish_reason: str,
    streaming: dict[str, Any],
) -> None:
    rng = random.Random(seed)
    template = _TEMPLATES[family]
    output = _render(family, reasoning, content, calls, rng)
    if rng.random() < 0.2:
        output = output[: rng.randrange(len(output) + 1)]  # cut off: calls end incomplete
    parser = rt.ResponseParser(
        template, prefix=_PROMPTS[family], tools=WEATHER_TOOLS, errors=rng.choice(["raise", "keep"])
    )
    feeds = [parser.initial_events]
    for chunk in pieces(output, rng):
        try:
            feeds.append(parser.feed(chunk))
        except ParseError as exc:
            feeds.append(exc.events or [])
    try:
        final_events = parser.finalize()[1]
    except ParseError as exc:
        final_events = exc.events or []
    for options in _OPTIONS[protocol]:
        kw = {**options, **streaming}
        fast = make_adapter(protocol, template, WEATHER_TOOLS, **kw)
        general = _no_shortcuts(make_adapter(protocol, template, WEATHER_TOOLS, **kw))
        for events in feeds:
            chunks = fast.feed(events)
            assert chunks == general.feed(events)
            assert fast.encode(chunks) == _sse(chunks, protocol)
        usage = USAGE if kw.get("include_usage") else None
        end = {"finish_reason": finish_reason, "usage": usage}
        chunks = fast.finish(final_events, **end)
        assert chunks == general.finish(final_events, **end)
        assert fast.encode(chunks) == _sse(chunks, protocol)
        assert json.dumps(fast.final()) == json.dumps(general.final())
        assert fast.errors == general.errors


def _events(template: Any, prompt: str, tools: Any, chunks: list[str]) -> tuple[list[list], list]:
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    feeds = [parser.initial_events]
    for chunk in chunks:
        try:
            feeds.append(parser.feed(chunk))
        except ParseError as exc:
            feeds.append(exc.events or [])
    try:
        return feeds, parser.finalize()[1]
    except ParseError as exc:
        return feeds, exc.events or []


@SETTINGS
@given(st.sampled_from(sorted(FAMILIES)), st.sampled_from(PROTOCOLS), st.integers(0, 2**32))
def test_shortcuts_send_what_the_general_path_sends_for_every_family(
    family: str, protocol: str, seed: int
) -> None:
    template, prompt, output, tools = FAMILIES[family]
    feeds, final_events = _events(template, prompt, tools, pieces(output, random.Random(seed)))
    fast = make_adapter(protocol, template, tools)
    general = _no_shortcuts(make_adapter(protocol, template, tools))
    assert [fast.feed(events) for events in feeds] == [general.feed(events) for events in feeds]
    assert fast.finish(final_events) == general.finish(final_events)
    assert fast.final() == general.final()


def test_the_chunk_attributes_can_change_between_chunks() -> None:
    parser = rt.ResponseParser(HERMES, prefix="<|im_start|>assistant\n")
    adapter = make_adapter("chat", HERMES)
    adapter.feed(parser.initial_events)
    first = adapter.feed(parser.feed("<think>a b"))[-1]
    adapter.id, adapter.model, adapter.created, adapter.choice_index = "chatcmpl-2", "m2", 5, 1
    adapter.include_usage = True
    second = adapter.feed(parser.feed(" c"))[-1]
    assert (first["model"], first["choices"][0]["index"], "usage" in first) == ("Qwen/Qwen3-8B", 0, False)
    assert second == {
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 5,
        "model": "m2",
        "choices": [
            {"index": 1, "delta": {"reasoning_content": " c"}, "logprobs": None, "finish_reason": None}
        ],
        "usage": None,
    }


@pytest.mark.parametrize("driven_by", ["feed", "step"])
def test_a_subclass_hooks_see_every_delta(driven_by: str) -> None:
    class Recording(ChatCompletionsAdapter):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            self.seen: list[tuple[str, str]] = []

        def _on_text_delta(self, kind: str, text: str) -> None:
            self.seen.append((kind, text))
            super()._on_text_delta(kind, text)

        def _on_call(self, event: Any) -> None:
            if event["type"] == "tool_call_delta":
                self.seen.append(("arguments", event["arguments"]))
            super()._on_call(event)

    rng = random.Random(0)
    output = _render("qwen3", " Some thought. " * 20, "The answer. " * 20, [{"city": "Paris " * 20}], rng)
    adapter = Recording(HERMES, tools=WEATHER_TOOLS)
    parser = rt.ResponseParser(HERMES, prefix=_PROMPTS["qwen3"], tools=WEATHER_TOOLS)
    adapter.feed(parser.initial_events)
    for at in range(0, len(output), 3):
        if driven_by == "step":
            adapter.step(parser, output[at : at + 3])
        else:
            adapter.feed(parser.feed(output[at : at + 3]))
    adapter.finish(parser.finalize()[1])
    message = adapter.final()["choices"][0]["message"]
    assert message["tool_calls"] and message["reasoning_content"] and message["content"]
    assert "".join(t for k, t in adapter.seen if k == "reasoning") == message["reasoning_content"]
    assert "".join(t for k, t in adapter.seen if k == "content") == message["content"]
    assert "".join(t for k, t in adapter.seen if k == "arguments") == "".join(
        c["function"]["arguments"] for c in message["tool_calls"]
    )


@pytest.mark.pure_python("compiled adapters take no weak references")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_adapter_is_freed_without_the_cycle_collector(protocol: str) -> None:
    # A long stream's text and chunks go when the adapter goes, not at the next collection.
    template, prompt, output, tools = FAMILIES["qwen3"]
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    adapter = make_adapter(protocol, template, tools)
    adapter.feed(parser.initial_events)
    adapter.feed(parser.feed(output[: len(output) // 2]))
    gc.disable()
    try:
        ref = weakref.ref(adapter)
        del adapter
        assert ref() is None
    finally:
        gc.enable()

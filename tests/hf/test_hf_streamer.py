"""ResponseStreamer with a fake model whose generate() calls the streamer exactly as transformers'
GenerationMixin does: ``put(prompt ids [1, n])``, then ``put(new ids [1])`` per step, then ``end()``."""

from __future__ import annotations

import copy
import queue
import threading
import time
from typing import Any

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")
np = pytest.importorskip("numpy")

import hf_fixtures as fx  # noqa: E402
import response_templates as rt  # noqa: E402
from response_templates import hf  # noqa: E402

TOOLS = [fx.WEATHER_TOOL]


class ScriptedModel:
    """A stand-in for a model: generate() streams a fixed list of token ids."""

    def __init__(
        self, script: list[int], *, delay: float = 0.0, fail_at: int | None = None, step: int = 1
    ) -> None:
        self.script = script
        self.delay = delay
        self.fail_at = fail_at
        self.step = step

    def generate(
        self, input_ids: Any, streamer: Any = None, max_new_tokens: int = 10_000, **kwargs: Any
    ) -> Any:
        new = self.script[:max_new_tokens]
        if streamer is not None:
            streamer.put(input_ids)
        for i in range(0, len(new), self.step):
            if self.fail_at is not None and i >= self.fail_at:
                raise RuntimeError("CUDA out of memory (simulated)")
            if self.delay:
                time.sleep(self.delay)
            if streamer is not None:
                chunk = new[i : i + self.step]
                streamer.put(np.array(chunk) if self.step == 1 else np.array([chunk]))
        if streamer is not None:
            streamer.end()
        return np.concatenate([np.asarray(input_ids), np.array([new], dtype=np.int64)], axis=1)


_TOK: dict[str, Any] = {}


def tok_of(kind: str = "byte_level") -> Any:
    if kind not in _TOK:
        tok = fx.hf_tokenizer(kind)
        tok.response_template = copy.deepcopy(fx.QWEN3_TEMPLATE)
        _TOK[kind] = tok
    return _TOK[kind]


def collect(streamer: hf.ResponseStreamer) -> tuple[list[dict], list[BaseException]]:
    """Iterate to the end, collecting events and the errors raised on the way."""
    events: list[dict] = []
    errors: list[BaseException] = []
    while True:
        try:
            events.append(next(streamer))
        except StopIteration:
            return events, errors
        except rt.ParseError as exc:
            errors.append(exc)


@pytest.mark.parametrize("kind", fx.KINDS)
def test_events_and_message_match_the_token_parser(kind: str) -> None:
    tok = tok_of(kind)
    prompt = fx.prompt_ids(tok, tools=TOOLS)
    script = fx.encode(tok, fx.OUTPUTS[0])
    streamer = hf.ResponseStreamer(tok, tools=TOOLS, timeout=10)
    thread = streamer.run(ScriptedModel(script).generate, input_ids=np.array([prompt]))
    events, errors = collect(streamer)
    thread.join(5)
    assert not errors and not thread.is_alive()

    parser = hf.get_response_parser(tok, prefix=prompt, tools=TOOLS)
    expected = list(parser.initial_events) + [e for i in script for e in parser.feed_tokens(i)]
    message, final = parser.finalize()
    assert events == expected + final
    assert streamer.message == message == hf.parse_response(tok, script, prefix=prompt, tools=TOOLS)
    assert streamer.message["tool_calls"][0]["function"]["arguments"] == {"city": "東京", "days": 3}
    assert streamer.result.shape == (1, len(prompt) + len(script))


def test_the_prompt_is_skipped_but_read_as_the_prefix() -> None:
    tok = tok_of("sp_llama")
    history = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
            ],
        },
        {"role": "tool", "content": "sunny"},
    ]
    prompt = fx.prompt_ids(tok, history) + fx.encode(tok, "<think>\n")  # the template opened <think>
    script = fx.encode(tok, "Sunny 🌞.</think>It is sunny in Oslo.<|im_end|>")
    streamer = hf.ResponseStreamer(tok, timeout=10)
    streamer.run(ScriptedModel(script).generate, np.array([prompt]))
    events, _ = collect(streamer)
    assert events[0] == {"type": "region_open", "field": "reasoning_content"}
    assert streamer.message == {
        "role": "assistant",
        "reasoning_content": "Sunny 🌞.",
        "content": "It is sunny in Oslo.",
    }


def test_a_plain_thread_and_several_tokens_per_put() -> None:
    tok = tok_of("sp_metaspace")
    prompt = fx.prompt_ids(tok)
    script = fx.encode(tok, fx.OUTPUTS[2])
    streamer = hf.ResponseStreamer(tok, timeout=10)
    model = ScriptedModel(script, step=3)  # assisted generation puts [1, k]
    thread = threading.Thread(
        target=model.generate, kwargs={"input_ids": np.array([prompt]), "streamer": streamer}
    )
    thread.start()
    events = list(streamer)
    thread.join(5)
    assert [e["field"] for e in events if e["type"] == "region_close"] == [
        "tool_calls",
        "content",
        "tool_calls",
    ]
    assert streamer.message == hf.parse_response(tok, script, prefix=prompt)


def test_parse_errors_reach_the_consumer_and_the_stream_goes_on() -> None:
    tok = tok_of("byte_level")
    script = fx.encode(tok, "<tool_call>{oops}</tool_call>Sorry, let me retry.<|im_end|>")
    streamer = hf.ResponseStreamer(tok, timeout=10)
    streamer.run(ScriptedModel(script).generate, np.array([fx.prompt_ids(tok)]))
    seen: list[Any] = []
    while True:
        try:
            seen.append(next(streamer)["type"])
        except rt.ParseError as exc:
            assert exc.field == "tool_calls" and exc.raw == "{oops}"
            seen.append("error")
        except StopIteration:
            break
    first_close = seen.index("region_close")
    assert seen[0] == "region_open" and seen[first_close + 1] == "error"  # raised where it happened
    assert seen[-1] == "region_close"
    assert streamer.message == {"role": "assistant", "content": "Sorry, let me retry."}
    assert len(streamer.parser.errors) == 1


def test_finalize_errors_end_the_stream() -> None:
    tok = tok_of("byte_level")
    template = copy.deepcopy(fx.QWEN3_TEMPLATE)
    template["fields"]["reasoning_content"]["optional"] = False
    streamer = hf.ResponseStreamer(tok, template, timeout=10)
    streamer.run(
        ScriptedModel(fx.encode(tok, "No thinking.<|im_end|>")).generate, np.array([fx.prompt_ids(tok)])
    )
    events, errors = collect(streamer)
    assert [type(e) for e in errors] == [rt.ParseError] and "reasoning_content" in str(errors[0])
    assert events[-1] == {"type": "region_close", "field": "content", "value": "No thinking."}
    assert streamer.message is None
    assert errors[0].partial_message == {"role": "assistant", "content": "No thinking."}


def test_an_exception_in_generate_reaches_the_consumer() -> None:
    tok = tok_of("byte_level")
    script = fx.encode(tok, fx.OUTPUTS[0])
    streamer = hf.ResponseStreamer(tok, timeout=10)
    streamer.run(ScriptedModel(script, fail_at=5).generate, np.array([fx.prompt_ids(tok)]))
    events = []
    with pytest.raises(RuntimeError, match="out of memory"):
        for event in streamer:
            events.append(event)
    assert events  # what came before the failure was delivered
    with pytest.raises(StopIteration):
        next(streamer)


def test_timeout_then_keep_waiting() -> None:
    tok = tok_of("byte_level")
    script = fx.encode(tok, "Hi!<|im_end|>")
    streamer = hf.ResponseStreamer(tok, timeout=0.02)
    streamer.run(ScriptedModel(script, delay=0.15).generate, np.array([fx.prompt_ids(tok)]))
    timeouts = 0
    events = []
    while True:
        try:
            events.append(next(streamer))
        except hf.StreamTimeout as exc:
            assert isinstance(exc, queue.Empty) and isinstance(exc, TimeoutError)
            timeouts += 1
        except StopIteration:
            break
    assert timeouts >= 1
    assert streamer.message == {"role": "assistant", "content": "Hi!"}


def test_batched_generate_is_refused_in_the_consumer() -> None:
    tok = tok_of("byte_level")
    prompt = fx.prompt_ids(tok)
    streamer = hf.ResponseStreamer(tok, timeout=10)
    thread = streamer.run(ScriptedModel([1, 2]).generate, np.array([prompt, prompt]))
    with pytest.raises(rt.ResponseTemplateError, match="one sequence"):
        next(streamer)
    thread.join(5)
    with pytest.raises(StopIteration):
        next(streamer)


def test_protocol_misuse_and_early_errors() -> None:
    tok = tok_of("byte_level")
    streamer = hf.ResponseStreamer(tok, timeout=10)
    streamer.put(np.array([fx.prompt_ids(tok)]))
    streamer.put(np.array(fx.encode(tok, "Hi")))
    streamer.end()
    events = list(streamer)
    assert events[0] == {"type": "region_open", "field": "content"}
    assert events[-1] == {"type": "region_close", "field": "content", "value": "Hi"}
    assert streamer.message == {"role": "assistant", "content": "Hi"}
    with pytest.raises(rt.ParserStateError):
        streamer.put(np.array([1]))
    with pytest.raises(rt.ParserStateError):
        streamer.end()
    with pytest.raises(hf.MissingTemplateError):
        hf.ResponseStreamer(fx.hf_tokenizer("byte_level"))
    with pytest.raises(rt.ToolSpecError):
        hf.ResponseStreamer(tok, tools=[{"type": "function", "function": {"parameters": {}}}])
    empty = hf.ResponseStreamer(tok, timeout=10)
    empty.end()  # generate() that never put anything
    assert list(empty) == [] and empty.message == {"role": "assistant"}


def test_many_generations_in_parallel() -> None:
    tok = tok_of("sp_llama")
    prompt = fx.prompt_ids(tok)
    scripts = [fx.encode(tok, out) for out in fx.OUTPUTS]
    streamers = [hf.ResponseStreamer(tok, timeout=10) for _ in scripts]
    threads = [
        s.run(ScriptedModel(script).generate, np.array([prompt]))
        for s, script in zip(streamers, scripts, strict=True)
    ]
    results: list[Any] = [None] * len(streamers)

    def consume(i: int) -> None:
        list(streamers[i])
        results[i] = streamers[i].message

    consumers = [threading.Thread(target=consume, args=(i,)) for i in range(len(streamers))]
    for t in consumers:
        t.start()
    for t in consumers + threads:
        t.join(10)
    assert results == [hf.parse_response(tok, script, prefix=prompt) for script in scripts]


def test_torch_tensors_from_generate() -> None:
    torch = pytest.importorskip("torch")
    tok = tok_of("byte_level")
    prompt = fx.prompt_ids(tok)
    script = fx.encode(tok, fx.OUTPUTS[1])
    streamer = hf.ResponseStreamer(tok, timeout=10)
    streamer.put(torch.tensor([prompt]))
    for i in script:
        streamer.put(torch.tensor([i]))
    streamer.end()
    list(streamer)
    assert streamer.message == hf.parse_response(tok, script, prefix=prompt)

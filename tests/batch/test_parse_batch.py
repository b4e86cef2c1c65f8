"""rt.parse_batch: records in, one result per record out, in order; bad records never stop the run."""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Iterator
from typing import Any

import pytest

import response_templates as rt
from response_templates.batch import RecordError

PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
GOOD = '<think>\nCheck.\n</think>\n\nSure.\n<tool_call>\n{"name": "w", "arguments": {"days": "3"}}\n</tool_call><|im_end|>'
TOOLS = [
    {
        "type": "function",
        "function": {"name": "w", "parameters": {"properties": {"days": {"type": "integer"}}}},
    }
]
BAD_JSON = "<tool_call>\n{oops}\n</tool_call><|im_end|>"


def good(i: int, **extra: Any) -> dict[str, Any]:
    return {"id": f"r{i}", "prompt": PROMPT, "output": GOOD, **extra}


def test_results_in_input_order_with_ids() -> None:
    records = [good(i) for i in range(5)]
    results = list(rt.parse_batch(records, model="Qwen/Qwen3-8B"))
    assert [r.index for r in results] == [0, 1, 2, 3, 4]
    assert [r.id for r in results] == ["r0", "r1", "r2", "r3", "r4"]
    expected = rt.parse_response(GOOD, rt.templates.get("qwen3"), prefix=PROMPT)
    assert all(r.ok and r.message == expected and r.error is None for r in results)


@pytest.mark.parametrize(
    ("record", "key", "words"),
    [
        ({"id": "x", "prompt": PROMPT}, "output", "has no 'output'"),
        ({"id": "x", "prompt": PROMPT, "output": None}, "output", "is null"),
        ({"id": "x", "prompt": PROMPT, "output": 42}, "output", "must be a string, got int"),
        ({"id": "x", "prompt": 7, "output": GOOD}, "prompt", "must be a string"),
        ({"id": "x", "prompt": PROMPT, "output": GOOD, "tools": 5}, "tools", "must be a list"),
        ({"id": "x", "prompt": PROMPT, "output": GOOD, "tools": "w"}, "tools", "not JSON text of a list"),
        ({"id": "x", "prompt": PROMPT, "output": GOOD, "tools": '{"a": 1}'}, "tools", "JSON text of a dict"),
        ({"id": "x", "output": GOOD}, "prompt", 'prefix=""'),
        (3.5, None, "must be a string, a mapping"),
    ],
)
def test_a_malformed_record_gives_an_error_result_and_the_run_goes_on(
    record: Any, key: str | None, words: str
) -> None:
    results = list(rt.parse_batch([good(0), record, good(2)], model="qwen3"))
    assert [r.ok for r in results] == [True, False, True]
    bad = results[1]
    assert bad.message is None and isinstance(bad.error, RecordError)
    assert bad.error.key == key and words in str(bad.error) and bad.error.index == 1
    assert bad.id == (None if not isinstance(record, dict) else "x")
    with pytest.raises(RecordError):
        bad.unwrap()


def test_error_policy_per_record() -> None:
    records = [good(0), {"id": "bad", "prompt": PROMPT, "output": BAD_JSON}]
    raised = list(rt.parse_batch(records, model="qwen3"))
    assert isinstance(raised[1].error, rt.ParseError) and raised[1].error.field == "tool_calls"
    assert raised[1].message is None
    kept = list(rt.parse_batch(records, model="qwen3", errors="keep"))
    assert kept[1].error is None and not kept[1].ok
    assert kept[1].message is not None and "{oops}" in kept[1].message["content"]
    assert [e.field for e in kept[1].message.errors] == ["tool_calls"]
    assert kept[1].to_dict()["errors"][0]["field"] == "tool_calls"


def test_anchor_missing_and_unknown_model_are_per_record() -> None:
    records = [
        {"prompt": "no anchor here", "output": GOOD},
        {"prompt": PROMPT, "output": GOOD, "model": "no-such/model-x"},
        {"prompt": PROMPT, "output": "plain<|im_end|>", "model": "Qwen/Qwen3-8B"},
    ]
    results = list(rt.parse_batch(records, model="qwen3", fields={"model": "model"}))
    assert isinstance(results[0].error, rt.AnchorNotFoundError)
    assert isinstance(results[1].error, RecordError) and "no-such/model-x" in str(results[1].error)
    assert results[2].message == {"role": "assistant", "content": "plain"}


def test_model_per_record_without_a_default() -> None:
    records = [
        {"output": "<think>a</think>b<|im_end|>", "model": "Qwen/Qwen3-8B"},
        {"output": "x"},
    ]
    results = list(rt.parse_batch(records, prefix="", fields={"model": "model"}))
    assert results[0].message == {"role": "assistant", "reasoning_content": "a", "content": "b"}
    assert isinstance(results[1].error, RecordError) and results[1].error.key == "model"


def test_plain_texts_bytes_default_prompt_and_tools() -> None:
    results = list(rt.parse_batch([GOOD, GOOD.encode()], model="qwen3", prefix=PROMPT, tools=TOOLS))
    for r in results:
        assert r.message is not None
        assert r.message["tool_calls"][0]["function"]["arguments"] == {"days": 3}  # typed by the tools


def test_record_tools_override_the_default() -> None:
    results = list(rt.parse_batch([good(0, tools=TOOLS), good(1)], model="qwen3"))
    assert results[0].unwrap()["tool_calls"][0]["function"]["arguments"] == {"days": 3}
    assert results[1].unwrap()["tool_calls"][0]["function"]["arguments"] == {"days": "3"}


def test_field_names_and_functions() -> None:
    class Output:  # a vLLM RequestOutput-like object
        def __init__(self, prompt: str, text: str) -> None:
            self.prompt = prompt
            self.outputs = [type("Completion", (), {"text": text})()]

    fields: dict[str, Any] = {"output": lambda o: o.outputs[0].text, "prompt": lambda o: o.prompt, "id": None}
    results = list(rt.parse_batch([Output(PROMPT, GOOD)], model="qwen3", fields=fields))
    assert results[0].ok
    renamed = [{"completion": GOOD, "question": PROMPT, "uid": 9}]
    results = list(
        rt.parse_batch(
            renamed, model="qwen3", fields={"output": "completion", "prompt": "question", "id": "uid"}
        )
    )
    assert results[0].ok and results[0].id == 9

    def boom(record: Any) -> str:
        raise KeyError("gone")

    results = list(rt.parse_batch([{"x": 1}], model="qwen3", prefix="", fields={"output": boom}))
    assert isinstance(results[0].error, RecordError) and "KeyError" in str(results[0].error)


def test_setup_errors_raise_before_reading() -> None:
    def never() -> Iterator[Any]:
        raise AssertionError("read")
        yield

    with pytest.raises(rt.ResponseTemplateError, match="not both"):
        rt.parse_batch(never(), {"fields": {}}, model="qwen3")
    with pytest.raises(rt.ResponseTemplateError, match="unknown fields"):
        rt.parse_batch(never(), model="qwen3", fields={"text": "x"})
    with pytest.raises(rt.ResponseTemplateError):
        rt.parse_batch(never(), model="no-such/model-x")
    with pytest.raises(rt.ResponseTemplateError, match="errors"):
        rt.parse_batch(never(), model="qwen3", errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(rt.ResponseTemplateError, match="single str"):
        rt.parse_batch(GOOD, model="qwen3")  # type: ignore[arg-type]


def test_input_is_read_lazily() -> None:
    pulled = 0

    def endless() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for i in itertools.count():
            pulled += 1
            yield good(i)

    first = list(itertools.islice(rt.parse_batch(endless(), model="qwen3", chunk_size=8), 3))
    assert [r.index for r in first] == [0, 1, 2] and pulled <= 8


@pytest.mark.parametrize("errors", ["raise", "keep"])
def test_workers_give_the_same_results_in_order(errors: str) -> None:
    records: list[Any] = []
    for i in range(300):
        kind = i % 4
        if kind == 0:
            records.append(good(i))
        elif kind == 1:
            records.append({"id": f"r{i}", "prompt": PROMPT, "output": BAD_JSON})
        elif kind == 2:
            records.append({"id": f"r{i}", "prompt": PROMPT, "output": None})
        else:
            records.append({"id": f"r{i}", "prompt": PROMPT, "output": f"text {i}<|im_end|>"})
    one = list(rt.parse_batch(records, model="qwen3", errors=errors))  # type: ignore[arg-type]
    two = list(rt.parse_batch(iter(records), model="qwen3", errors=errors, workers=2, chunk_size=7))  # type: ignore[arg-type]
    assert [r.to_dict() for r in two] == [r.to_dict() for r in one]
    assert [r.index for r in two] == list(range(300))


def test_workers_with_a_compiled_template_and_early_stop() -> None:
    template = rt.templates.get("qwen3")
    results = rt.parse_batch((good(i) for i in range(10_000)), template, workers=2, chunk_size=4)
    first = [next(results) for _ in range(5)]
    results.close()  # stops the pool without parsing the rest
    assert [r.id for r in first] == ["r0", "r1", "r2", "r3", "r4"] and all(r.ok for r in first)


def test_results_and_errors_pickle_unchanged() -> None:
    records = [good(0), {"id": 1, "prompt": PROMPT, "output": BAD_JSON}, {"output": None, "prompt": ""}]
    for errors in ("raise", "keep"):
        for result in rt.parse_batch(records, model="qwen3", errors=errors):  # type: ignore[arg-type]
            copy = pickle.loads(pickle.dumps(result))
            assert copy.to_dict() == result.to_dict()
    error = rt.TemplateError("bad", field="f", key="open")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) and (copy.field, copy.key) == ("f", "open")


def test_a_record_without_a_template_says_which_key_was_looked_for() -> None:
    # The record has a 'model' key, but fields= does not name it: say so, and how to name it.
    (result,) = rt.parse_batch([{"model": "qwen3", "prompt": "", "output": "hi"}])
    message = str(result.error)
    assert isinstance(result.error, RecordError) and result.error.key == "model"
    assert "the record has a 'model' key" in message and "fields={'model': 'model'}" in message
    assert "(from a function)" not in message
    # fields= names a key the record lacks: which key, and how to name another one.
    (result,) = rt.parse_batch(
        [{"model": "qwen3", "prompt": "", "output": "hi"}], fields={"model": "model_id"}
    )
    message = str(result.error)
    assert "the record has no 'model_id' key" in message and "fields={'model': KEY} names another" in message
    (result,) = rt.parse_batch(
        [{"model_id": "qwen3", "prompt": "", "output": "hi"}], fields={"model": "model_id"}
    )
    assert result.ok and result.message == {"role": "assistant", "content": "hi"}


def test_tools_given_as_json_text_are_decoded() -> None:
    import json

    records = [good(0, tools=json.dumps(TOOLS)), good(1, tools=TOOLS), good(2, tools="null")]
    a, b, c = rt.parse_batch(records, model="qwen3", tools=None)
    assert a.message == b.message and a.message["tool_calls"][0]["function"]["arguments"] == {"days": 3}
    assert c.message["tool_calls"][0]["function"]["arguments"] == {"days": "3"}  # null: the default (none)

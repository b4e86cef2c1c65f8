"""batch.ColumnParser: columnar batches in (dicts of lists or arrays, pandas, Arrow), Arrow-friendly columns
out; and Hugging Face ``datasets``' ``map(batched=True, num_proc=2)`` with it."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

import response_templates as rt
from response_templates.batch import ColumnParser

PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
TOOLS = [
    {
        "type": "function",
        "function": {"name": "w", "parameters": {"properties": {"days": {"type": "integer"}}}},
    }
]


def call(i: int) -> str:
    # Arguments whose keys and types change from row to row: a schema inferred per batch would not fit.
    args = {"days": str(i)} if i % 2 else {"city": "Oslo", "when": [i]}
    return f"<think>r{i}</think>c{i}\n<tool_call>\n{json.dumps({'name': 'w', 'arguments': args})}\n</tool_call><|im_end|>"


def rows(n: int) -> dict[str, list[Any]]:
    outputs: list[Any] = [call(i) for i in range(n)]
    for i in range(0, n, 5):
        outputs[i] = None
    return {"id": list(range(n)), "prompt": [PROMPT] * n, "output": outputs}


def expected(n: int) -> list[dict[str, Any] | None]:
    template = rt.templates.get("qwen3")
    return [None if i % 5 == 0 else rt.parse_response(call(i), template, prefix=PROMPT) for i in range(n)]


def check(out: dict[str, list[Any]], n: int) -> None:
    messages = [None if m is None else json.loads(m) for m in out["message"]]
    assert messages == expected(n)
    assert out["ok"] == [i % 5 != 0 for i in range(n)]
    assert [e is not None for e in out["error"]] == [i % 5 == 0 for i in range(n)]
    for i, m in enumerate(messages):
        if m is not None:
            assert out["content"][i] == m["content"] and out["reasoning_content"][i] == m["reasoning_content"]
            assert json.loads(out["tool_calls"][i]) == m["tool_calls"]


def test_dict_of_lists() -> None:
    out = ColumnParser(model="qwen3")(rows(12))
    assert list(out) == ["message", "reasoning_content", "content", "tool_calls", "error", "ok"]
    check(out, 12)


def test_keep_columns_and_renamed_columns() -> None:
    data = rows(6)
    renamed = {"uid": data["id"], "question": data["prompt"], "text": data["output"]}
    parse = ColumnParser(
        model="qwen3", columns={"output": "text", "prompt": "question", "id": "uid"}, keep_columns=["uid"]
    )
    out = parse(renamed)
    assert out["uid"] == data["id"]
    check(out, 6)
    assert set(ColumnParser(model="qwen3", keep_columns=True)(data)) >= {"id", "prompt", "output", "message"}


def test_tools_and_errors_keep() -> None:
    out = ColumnParser(model="qwen3", tools=TOOLS)({"prompt": [PROMPT], "output": [call(1)]})
    assert json.loads(out["tool_calls"][0])[0]["function"]["arguments"] == {"days": 1}
    bad = "<tool_call>{oops}</tool_call><|im_end|>"
    kept = ColumnParser(model="qwen3", errors="keep")({"prompt": [PROMPT], "output": [bad]})
    assert kept["ok"] == [False] and "{oops}" in kept["content"][0] and "ParseError" in kept["error"][0]
    raised = ColumnParser(model="qwen3")({"prompt": [PROMPT], "output": [bad]})
    assert raised["message"] == [None] and "ParseError" in raised["error"][0]


def test_numpy_pandas_and_arrow_batches() -> None:
    np = pytest.importorskip("numpy")
    data = rows(10)
    as_numpy = {
        "id": np.array(data["id"]),
        "prompt": np.array(data["prompt"]),
        "output": np.array(data["output"], dtype=object),
    }
    check(ColumnParser(model="qwen3")(as_numpy), 10)
    pd = pytest.importorskip("pandas")
    check(ColumnParser(model="qwen3")(pd.DataFrame(data)), 10)
    pa = pytest.importorskip("pyarrow")
    check(ColumnParser(model="qwen3")(pa.table(data)), 10)


def test_pickles_as_settings_and_compiles_once_per_process() -> None:
    parse = ColumnParser(rt.templates.get("qwen3"), prefix="")
    state = pickle.dumps(parse)
    assert len(state) < 10_000  # the template as data, no compiled patterns
    copy = pickle.loads(state)
    assert copy._parser is None
    check(copy(rows(5)), 5)
    assert copy._parser is not None
    assert pickle.dumps(copy) == state


def test_bad_settings_fail_at_construction() -> None:
    with pytest.raises(rt.ResponseTemplateError):
        ColumnParser(model="no-such/model-x")
    with pytest.raises(rt.ResponseTemplateError, match="mapping of columns"):
        ColumnParser(model="qwen3")([1, 2])


def test_datasets_map_batched_num_proc_2(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # before the import, which reads them
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    n = 60
    ds = datasets.Dataset.from_dict(rows(n))
    parsed = ds.map(ColumnParser(model="qwen3"), batched=True, batch_size=7, num_proc=2)
    assert parsed.num_rows == n and parsed["id"] == list(range(n))
    assert parsed.features["message"].dtype == "string" and parsed.features["ok"].dtype == "bool"
    check({name: parsed[name] for name in parsed.column_names}, n)

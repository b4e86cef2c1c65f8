"""An export to transformers warns that the reference keeps only the last piece of the implicit field
(issue 28, item 17), and ``--strict`` refuses it.

transformers 5.24 (and 5.25) reads ``Let me check.`` followed by two tool calls as the calls and no
``content``; ours keeps every piece, and the engines stream every piece.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from cli_runs import run

reference = pytest.importorskip("transformers.utils.chat_parsing")

PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
OUTPUT = (
    "Let me check.\n"
    '<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>'
)


def pieces_warnings(result: Any) -> list[str]:
    return [str(w) for w in result.warnings if "last piece" in w.message]


def test_the_export_to_transformers_says_what_the_reference_drops() -> None:
    result = rt.templates.export("qwen3", target="transformers")
    [warning] = [w for w in result.warnings if w.field == "content"]
    assert warning.key is None
    assert "keeps only the last piece of the implicit field 'content'" in warning.message
    assert "'reasoning_content' or 'tool_calls'" in warning.message and "Let me check." in warning.message
    assert result.verdict == "exportable with warnings"
    # what it says is what the reference does with the exported template; ours keeps the text
    theirs = reference.parse_response(OUTPUT, result.template, prefix=PROMPT)
    assert "content" not in theirs and len(theirs["tool_calls"]) == 2
    assert rt.parse_response(OUTPUT, "qwen3", prefix=PROMPT)["content"] == "Let me check."
    # the engines stream every piece: no such warning for them
    for target in ("vllm", "sglang"):
        assert pieces_warnings(rt.templates.export("qwen3", target=target)) == []


def qwen_like(**fields: Any) -> dict[str, Any]:
    return {"start_anchor": "<|im_start|>assistant\n", "fields": fields}


def test_only_an_implicit_field_that_can_surround_a_region_is_warned_about() -> None:
    call = {"open": "<c>", "close": "</c>"}
    assert pieces_warnings(rt.templates.export(qwen_like(content={}, call=call))) != []
    # each piece is an item with repeats; no implicit field; a region that can only open at the start
    assert pieces_warnings(rt.templates.export(qwen_like(content={"repeats": True}, call=call))) == []
    assert pieces_warnings(rt.templates.export(qwen_like(call=call))) == []
    start_only = {"open_pattern": "^<t>", "close": "</t>"}
    assert pieces_warnings(rt.templates.export(qwen_like(content={}, thought=start_only))) == []
    text = "<t>x</t>\nHi"  # one region, at the start: the reference keeps the one piece after it
    exported = rt.templates.export(qwen_like(content={}, thought=start_only)).template
    assert reference.parse_response(text, exported, prefix="")["content"] == "Hi"


def test_the_command_warns_and_strict_refuses(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "export", "qwen3", "--for", "transformers")
    assert code == 0 and json.loads(out) == rt.templates.export("qwen3").template
    assert "warning: field 'content': transformers (5.24, 5.25) keeps only the last piece" in err
    config = tmp_path / "tokenizer_config.json"
    config.write_text('{"model_max_length": 40960}', encoding="utf-8")
    code, out, err = run(
        capsys, "export", "qwen3", "--for", "transformers", "--strict", "--model-dir", tmp_path
    )
    assert code == 1 and out == ""
    assert "keeps only the last piece" in err and "error: --strict: the export to transformers needs" in err
    assert config.read_text(encoding="utf-8") == '{"model_max_length": 40960}'
    # the same template for an engine exports under --strict
    assert run(capsys, "export", "qwen3", "--for", "vllm", "--strict")[0] == 0

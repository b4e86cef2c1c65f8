"""A non-empty prompt without the start anchor never silently becomes message text (issue 12, hole 5).

By default it raises AnchorNotFoundError, naming the anchor and showing the end of the prompt;
``missing_anchor="parse"`` opts into the old reading. ``lint(chat_template=...)`` and ``verify`` name a
misspelled anchor.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import response_templates as rt

QWEN3 = rt.templates.get("qwen3")
PROMPT = "<|im_start|>system\nSECRET<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant"
CHAT = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_the_prompt_of_issue_12_raises() -> None:
    with pytest.raises(rt.AnchorNotFoundError) as info:
        rt.parse_response("hello<|im_end|>", QWEN3, prefix=PROMPT)
    error = info.value
    assert isinstance(error, rt.ResponseTemplateError) and isinstance(error, ValueError)
    assert not isinstance(error, rt.ParseError)
    message = str(error)
    assert repr("<|im_start|>assistant\n") in message  # names the anchor
    assert repr(PROMPT[-80:]) in message  # shows the end of the prompt
    assert "keep_trailing_newline" in message  # the prompt ends with the anchor minus its newline
    assert 'missing_anchor="parse"' in message
    assert error.anchor == "<|im_start|>assistant\n"
    assert error.prefix_end == PROMPT[-80:]


def test_a_long_prompt_shows_only_its_end() -> None:
    prompt = "x" * 500 + "the end"
    with pytest.raises(rt.AnchorNotFoundError) as info:
        rt.ResponseParser(QWEN3, prefix=prompt)
    assert "..." + repr(prompt[-80:]) in str(info.value)
    assert "keep_trailing_newline" not in str(info.value)
    assert len(str(info.value)) < 700


def test_opt_in_reads_the_whole_prompt(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="response_templates"):
        message = rt.parse_response("hello<|im_end|>", QWEN3, prefix=PROMPT, missing_anchor="parse")
    assert "SECRET" in message["content"]
    parser = rt.ResponseParser(QWEN3, prefix=PROMPT, missing_anchor="parse")
    assert not parser.anchor_found


@pytest.mark.parametrize("prefix", ["", "<|im_start|>assistant\n", PROMPT + "\n", PROMPT + "\n<think>\n"])
def test_prompts_with_the_anchor_or_none_are_fine(prefix: str) -> None:
    assert rt.ResponseParser(QWEN3, prefix=prefix).finalize()[0] is not None
    rt.parse_response("hi", QWEN3, prefix=prefix)


def test_batch_names_the_item() -> None:
    with pytest.raises(rt.AnchorNotFoundError) as info:
        rt.parse_response(["a", "b"], QWEN3, prefix=[PROMPT + "\n", PROMPT])
    assert info.value.index == 1
    assert rt.parse_response(["a", "b"], QWEN3, prefix=[PROMPT + "\n", PROMPT], missing_anchor="parse")


def test_keep_mode_does_not_swallow_a_missing_anchor() -> None:
    with pytest.raises(rt.AnchorNotFoundError):
        rt.parse_response("hello", QWEN3, prefix=PROMPT, errors="keep")


def test_anchor_pattern_and_list() -> None:
    by_pattern = {"start_anchor_pattern": r"<\|assistant\|>\n?", "fields": {"content": {}}}
    with pytest.raises(rt.AnchorNotFoundError, match="start_anchor_pattern"):
        rt.parse_response("x", by_pattern, prefix="<|user|>hi")
    by_list = {"start_anchor": ["<a>\n", "<b>\n"], "fields": {"content": {}}}
    with pytest.raises(rt.AnchorNotFoundError) as info:
        rt.parse_response("x", by_list, prefix="hi <b>")
    assert "'<b>'" in str(info.value) and "keep_trailing_newline" in str(info.value)


@pytest.mark.parametrize("value", ["warn", None, False])
def test_bad_missing_anchor_value(value: Any) -> None:
    with pytest.raises(rt.ResponseTemplateError, match="missing_anchor must be"):
        rt.parse_response("x", QWEN3, prefix="", missing_anchor=value)


def test_lint_names_a_misspelled_anchor() -> None:
    typo = {"start_anchor": "<|im_start|>assistent\n", "fields": {"content": {"close": "<|im_end|>"}}}
    issues = rt.lint(typo, chat_template=CHAT)
    assert [(i.level, i.code, i.key) for i in issues] == [("error", "anchor-not-in-prompt", "start_anchor")]
    assert "assistent" in issues[0].message
    good = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>"}}}
    assert [i.code for i in rt.lint(good, chat_template=CHAT)] == []
    assert [i.code for i in rt.lint(typo)] == []  # without a chat template there is nothing to compare
    assert [i.code for i in rt.lint(good, chat_template="{% if %}")] == ["chat-template-render"]


def test_verify_names_a_misspelled_anchor() -> None:
    pytest.importorskip("jinja2")
    typo = {"start_anchor": "<|im_start|>assistent\n", "fields": {"content": {"close": "<|im_end|>"}}}
    report = rt.verify.round_trip(CHAT, typo)
    assert not report.ok
    assert all("no start anchor" in case.problem and "assistent" in case.problem for case in report.cases)

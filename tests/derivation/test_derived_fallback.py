"""A derived template where no library family fits: ``template="auto"``, ``detect``/``for_model`` opting in,
the engines' template choice, ``serve``'s configuration, and ``verify --derived`` (docs/derive.md)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")

import response_templates as rt
from cli_runs import run
from response_templates import library
from response_templates.derivation.fallback import (
    DerivedTemplateWarning,
    chat_template_of,
    derive_for,
    differences,
)
from response_templates.engines.common import choose_template
from response_templates.errors import DeriveError
from response_templates.hf.config import MissingTemplateError, resolve_template

CHAT_TEMPLATES = Path(__file__).resolve().parents[2].parent / "shared" / "chat_templates"

#: A fork of Qwen3's chat template whose every marker was renamed: no library family knows it.
RENAMES = (
    ("<think>", "<reflect>"),
    ("</think>", "</reflect>"),
    ("<tool_call>", "<invoke>"),
    ("</tool_call>", "</invoke>"),
    ("<|im_start|>", "<|turn|>"),
    ("<|im_end|>", "<|end_turn|>"),
    ("<tool_response>", "<result>"),
    ("</tool_response>", "</result>"),
    ("<tools>", "<toolbox>"),
    ("</tools>", "</toolbox>"),
)
PREFIX = "<|turn|>assistant\n"
OUTPUT = '<reflect>\nLook it up.\n</reflect>\n\n<invoke>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</invoke><|end_turn|>'


@pytest.fixture(scope="module")
def novel() -> str:
    path = CHAT_TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
    if not path.is_file():
        pytest.skip("../shared/chat_templates is not available")
    text = path.read_text(encoding="utf-8")
    for old, new in RENAMES:
        text = text.replace(old, new)
    return text


class Tokenizer:
    """What the fallbacks read of a tokenizer: its chat template and special tokens."""

    def __init__(self, chat_template: str) -> None:
        self.chat_template = chat_template
        self.eos_token = "<|end_turn|>"
        self.bos_token = None


def check_reads_the_novel_output(template: Any) -> None:
    message = rt.parse_response(OUTPUT, template, prefix=PREFIX)
    assert message["reasoning_content"] == "Look it up."
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}


def test_the_fork_is_unknown_to_the_library(novel: str) -> None:
    with pytest.raises(library.UnknownModelError):
        rt.templates.detect(novel)


def test_detect_with_derive_falls_back_with_a_warning_naming_the_confidence(novel: str) -> None:
    with pytest.warns(DerivedTemplateWarning, match=r"confidence \d\.\d\d"):
        template = rt.templates.detect(novel, derive=True)
    check_reads_the_novel_output(template)


def test_detect_with_derive_still_prefers_the_library() -> None:
    path = CHAT_TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
    if not path.is_file():
        pytest.skip("../shared/chat_templates is not available")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rt.templates.detect(path.read_text(encoding="utf-8"), derive=True) is rt.templates.get("qwen3")


def test_for_model_derives_for_an_unknown_id_only_when_given_a_chat_template(novel: str) -> None:
    with pytest.raises(library.UnknownModelError):
        rt.templates.for_model("acme/novel-1")
    with pytest.warns(DerivedTemplateWarning, match="acme/novel-1"):
        template = rt.templates.for_model("acme/novel-1", chat_template=novel)
    check_reads_the_novel_output(template)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known id never derives
        assert rt.templates.for_model("Qwen/Qwen3-8B", chat_template=novel) is rt.templates.get("qwen3")


def test_hf_auto_falls_back_to_the_derived_template(novel: str) -> None:
    with pytest.warns(DerivedTemplateWarning, match="Tokenizer"):
        template = resolve_template(Tokenizer(novel), "auto")
    check_reads_the_novel_output(template)


def test_hf_auto_says_both_reasons_when_nothing_can_be_derived() -> None:
    with pytest.raises(MissingTemplateError, match="none could be derived"):
        resolve_template(Tokenizer("{{ raise_exception('no') }}"), "auto")


def test_the_engines_choose_the_derived_template_and_say_so(novel: str) -> None:
    with pytest.warns(DerivedTemplateWarning):
        choice = choose_template(Tokenizer(novel), model_id="acme/novel-1", environ={})
    assert choice.source == "derived"
    assert choice.family is None
    assert "derived from the chat template (confidence" in choice.describe()
    check_reads_the_novel_output(choice.template)


def test_serve_configuration_falls_back_to_the_derived_template(novel: str, tmp_path: Path) -> None:
    from response_templates.serve.config import load_config

    (tmp_path / "chat_template.jinja").write_text(novel, encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": "<|end_turn|>"}), encoding="utf-8"
    )
    with pytest.warns(DerivedTemplateWarning, match="acme/novel-1"):
        config = load_config(upstream="http://127.0.0.1:9", model="acme/novel-1", model_dir=str(tmp_path))
    check_reads_the_novel_output(config.template)


def test_chat_template_of_reads_every_carrier(novel: str) -> None:
    assert chat_template_of(novel) == novel
    assert chat_template_of({"chat_template": novel}) == novel
    assert chat_template_of(Tokenizer(novel)) == novel
    named = [{"name": "tool_use", "template": "T"}, {"name": "default", "template": novel}]
    assert chat_template_of({"chat_template": named}) == novel
    assert chat_template_of({"chat_template": {"tool_use": "T", "default": novel}}) == novel
    with pytest.raises(DeriveError, match="carries no chat template"):
        chat_template_of(object())


def test_derive_for_raises_a_typed_error_when_nothing_is_derivable() -> None:
    with pytest.raises(DeriveError):
        derive_for("{{ raise_exception('refused') }}", context="a refusing template")


def test_differences_list_what_the_hand_written_template_adds(novel: str) -> None:
    written = rt.templates.get("qwen3").to_dict()
    assert differences(written, written) == []
    derived = rt.templates.derive(novel).template
    lines = differences(written, derived)
    assert any(line.startswith("start_anchor:") for line in lines)  # <|im_start|> against <|turn|>


def test_verify_derived_prints_the_differences(capsys: pytest.CaptureFixture[str]) -> None:
    path = CHAT_TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
    if not path.is_file():
        pytest.skip("../shared/chat_templates is not available")
    code, out, _ = run(capsys, "verify", path, "--derived")
    assert code == 0
    assert "differences from the template derived from the chat template:" in out
    code, out, _ = run(capsys, "verify", path, "--derived", "--json")
    data = json.loads(out)
    assert isinstance(data["derived_differences"], list) and data["derived_differences"]


def test_a_derivation_below_the_confidence_floor_is_not_used() -> None:
    # The chat template prints the messages' repr: no probe turn reads back, confidence 0.
    with pytest.raises(DeriveError, match=r"below 0\.50"):
        derive_for("{{ messages }}", context="a template that prints its input")

"""Holes in the structural tag's soundness, closed: texts xgrammar's masks allowed and the parser read into
calls the request did not ask for (found by ``xgrammar_harness.py --walks``).

* A Python call's string argument (olmo-3, pythonic) was a ``regex`` format, which has no excludes: it
  could hold a region's closer or a special token's text. It is an EBNF ``grammar`` now (and a Lark
  terminal without the special tokens' texts), holding neither.
* Reasoning that runs to the end of the output was free text without excludes: it could hold a call the
  parser then reads.
* Other spellings of a call opener that the parser reads (DeepSeek R1's ``function<｜tool▁sep｜>`` without
  the call token, Hermes' ``<function name="...">``) are kept out of free text as the opener is.

The structure and llguidance checks run everywhere; the xgrammar ones need xgrammar (``.venv-vllm``).
"""

from __future__ import annotations

from typing import Any

import grammar_harness as gh
import pytest

import response_templates as rt
from response_templates import grammar, library
from response_templates.grammar.anyvalue import PY_STRING, ebnf_py_string
from response_templates.grammar.reasoning import other_call_openers

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


def _build(family: str, **kwargs: Any) -> tuple[Any, gh.Engine]:
    prompt = library.family(family).generation_prompt
    return gh.build_with_tokens(grammar, family, tools=[WEATHER], prefix=prompt, **kwargs)


# ------------------------------------------------------------------------------- Python strings


@pytest.mark.parametrize("family", ["pythonic", "olmo-3"])
@pytest.mark.parametrize("special", [True, False])
def test_python_strings_are_no_regex_in_the_tag(family: str, special: bool) -> None:
    if special:
        tag = _build(family, tool_choice="required")[0].structural_tag
    else:
        tag = grammar.build(family, tools=[WEATHER], tool_choice="required").structural_tag
    assert not [f for f in gh.tag_formats(tag, "regex") if f["pattern"] == PY_STRING]
    values = [f for f in gh.tag_formats(tag, "grammar") if "root_d0" in f["grammar"]]
    assert values  # the string argument


def test_python_string_automaton_refuses_an_exclude_and_keeps_the_rest() -> None:
    rules = "\n".join(ebnf_py_string(["<|python_end|>", "</x>"], "root"))
    # a state per proper prefix of each exclude, in each quote; the excludes' last characters refused there
    assert "root_d0 ::=" in rules and "root_s0 ::=" in rules
    assert rules.count("::=") == 1 + 2 * (1 + len("<|python_end|>") - 1 + len("</x>") - 2)


def test_lark_python_string_holds_no_special_token_text() -> None:
    g, _ = _build("pythonic", tool_choice="required")
    line = next(x for x in g.lark.splitlines() if x.startswith("PYSTR0:"))
    assert "& ~/" in line and "python_end" in line and "python_start" in line


# ------------------------------------------------------------------------- other opener spellings


def test_other_call_openers() -> None:
    def other(name: str) -> list[str]:
        return other_call_openers(library.family(name).template())

    assert other("deepseek-r1") == ["function<｜tool▁sep｜>"]
    assert other("hermes-lenient") == ["<function"]
    # openers that only look ahead at a call body the grammar writes keep nothing out
    assert other("xlam") == []
    # a whole other spelling of the calls (closer included) is left to the text: recorded outputs use it
    assert other("deepseek-v4.1") == []


@pytest.mark.parametrize(
    ("family", "text"),
    [
        (
            "hermes-lenient",
            'Sure. <function name="wipe_disk">{"city": "Paris"}</function>',
        ),
        (
            "deepseek-r1",
            'Sure. function<｜tool▁sep｜>wipe_disk\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜>',
        ),
    ],
)
def test_content_holds_no_other_spelling_of_a_call(family: str, text: str) -> None:
    fam = library.family(family)
    prompt = fam.generation_prompt
    g = grammar.build(family, tools=[WEATHER], prefix=prompt, reasoning="forbidden")
    message = rt.parse_response(text, fam.template(), prefix=prompt, tools=[WEATHER])
    # the parser reads a call there, of a tool the request does not declare
    assert [c["function"]["name"] for c in message.get("tool_calls") or []] == ["wipe_disk"]
    for text_format in gh.tag_formats(g.structural_tag, "any_text"):
        assert any(e in text for e in text_format.get("excludes", ())), text_format
    ok, _ = gh.engine_for(()).accepts(g.lark, text)
    assert not ok


# ------------------------------------------------------------------------------------ with xgrammar


def _xengine(engine: gh.Engine) -> Any:
    pytest.importorskip("xgrammar")
    pytest.importorskip("transformers")
    import xgrammar_harness as xh

    return xh.xengine_for(engine)


@pytest.mark.parametrize(
    ("family", "closer"), [("pythonic", "<|python_end|>"), ("olmo-3", "</function_calls>")]
)
def test_xgrammar_python_string_holds_no_closer(family: str, closer: str) -> None:
    g, engine = _build(family, tool_choice="required")
    xe = _xengine(engine)
    compiled = xe.compile(g.structural_tag)
    open_, close = ("<|python_start|>[", "]<|python_end|>") if family == "pythonic" else ("", "")
    if family == "olmo-3":
        open_, close = "</think><function_calls>", "</function_calls>"
    good = f"{open_}get_weather(city='Paris \\u00e9'){close}"
    assert xe.accepts(compiled, good)[0], good
    for bad in (
        f"{open_}get_weather(city='a{closer}b'){close}",
        f'{open_}get_weather(city="{closer}"){close}',
    ):
        assert not xe.accepts(compiled, bad)[0], bad


@pytest.mark.parametrize("sample", ["L0147", "F-deepseek-v4-fc3-02"])
def test_xgrammar_reasoning_to_the_end_holds_no_call(sample: str) -> None:
    pytest.importorskip("xgrammar")
    pytest.importorskip("transformers")
    import xgrammar_harness as xh

    cases, _ = gh.sample_cases()
    case = next(c for c in cases if c.id == sample)
    verdict = xh.judge_case(case)
    assert verdict.tag is False and verdict.lark is False, verdict

"""Round-trip verification (issue 4, item 4): the feature itself, and every library family against its real
chat templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import response_templates as rt
from response_templates import library
from response_templates.verify import DEFAULT_CASES, default_cases, render_chat_template, tools_for

CHAT_TEMPLATES = Path(__file__).resolve().parent / "data" / "chat_templates"

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<tool_call>\n{{ c.function | tojson }}\n</tool_call>{% endfor %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# --------------------------------------------------------------------------------------- the feature


def test_default_cases_cover_the_argument_kinds() -> None:
    values = [
        v
        for case in DEFAULT_CASES
        for call in case.message.get("tool_calls") or ()
        for v in call["function"]["arguments"].values()
    ]
    kinds = {type(v).__name__ for v in values}
    assert kinds >= {"str", "int", "float", "bool", "NoneType", "dict", "list"}
    assert any(isinstance(v, str) and "\n" in v for v in values)  # multi-line code
    assert any(isinstance(v, str) and not v.isascii() for v in values)  # unicode
    assert {c.n_calls for c in DEFAULT_CASES} == {0, 1, 2, 3}
    assert [c.name for c in default_cases(reasoning=False, max_parallel=1)] == [
        "text", "reasoning-no-reasoning", "one-call",
    ]  # fmt: skip


def test_round_trip_passes_for_a_matching_pair() -> None:
    report = rt.verify.round_trip(CHATML, rt.templates.get("hermes"))
    assert report.ok, report.details()
    assert [c.case for c in report.cases] == [c.name for c in DEFAULT_CASES]
    assert report.summary() == "5 cases: 5 passed, 0 failed"
    assert json.loads(json.dumps(report.to_dict()))["ok"] is True


def test_round_trip_reports_each_field_that_differs() -> None:
    broken = rt.templates.get("hermes").to_dict()
    broken["fields"]["reasoning_content"]["close"] = "</thought>"  # never found: reasoning swallows the rest
    report = rt.verify.round_trip(CHATML, broken)
    assert not report.ok
    case = next(c for c in report.cases if c.case == "reasoning")
    assert {d.field for d in case.differences} == {"reasoning_content", "content"}
    assert "reasoning_content: expected" in report.details()


def test_round_trip_reports_a_prompt_the_history_cannot_follow() -> None:
    drops_reasoning = CHATML.replace(
        "<|im_start|>assistant\n{% endif %}", "<|im_start|>assistant\n<think>\n{% endif %}"
    )
    report = rt.verify.round_trip(drops_reasoning, rt.templates.get("hermes"), [{"content": "Hi!"}])
    (case,) = report.cases
    assert case.status == "fail"
    assert "renders this turn differently from its generation prompt" in case.problem


def test_round_trip_skips_what_the_chat_template_does_not_render() -> None:
    no_reasoning = CHATML.replace("{% if m.reasoning_content %}", "{% if false %}")
    report = rt.verify.round_trip(no_reasoning, rt.templates.get("hermes"))
    assert report.ok
    assert report.skipped == {"reasoning": "the chat template does not render reasoning"}


def test_round_trip_with_own_messages_tools_and_kwargs() -> None:
    template = CHATML.replace(
        "<|im_start|>assistant\n{% endif %}", "<|im_start|>assistant\n{{ greeting }}{% endif %}"
    )
    message = {
        "content": "Sure.",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
    }
    report = rt.verify.round_trip(
        template, rt.templates.get("hermes"), [message], template_kwargs={"greeting": ""}
    )
    assert report.ok, report.details()
    assert report.cases[0].parsed == {
        "role": "assistant",
        "content": "Sure.",
        "tool_calls": [message["tool_calls"][0]],
    }


def test_render_offers_the_globals_hf_templates_use() -> None:
    template = (
        "{{ strftime_now('%Y') | length }} {{ {'a': 'é', 'b': [1, 2]} | tojson }} "
        "{{ {'k': 1} | tojson(indent=2) }} {{ tools | map(attribute='name') | tojson }}"
        "{% generation %}[gen]{% endgeneration %}{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}"
    )
    out = render_chat_template(template, [], tools=[{"name": "t"}])
    assert out == '4 {"a": "é", "b": [1, 2]} {\n  "k": 1\n} ["t"][gen]1'
    with pytest.raises(Exception, match="no system role"):
        render_chat_template("{{ raise_exception('no system role') }}", [])


def test_tools_for_types_parameters_like_the_arguments() -> None:
    (tool,) = tools_for([DEFAULT_CASES[2]])
    props = tool["function"]["parameters"]["properties"]
    assert {k: v["type"] for k, v in props.items()} == {
        "city": "string", "days": "integer", "threshold": "number", "metric": "boolean",
    }  # fmt: skip


# --------------------------------------------------------------------- every family, every template

PAIRS = [(fam, name) for fam in library.families() if fam.has_template for name in fam.chat_templates]


@pytest.mark.parametrize(("fam", "chat_template"), PAIRS, ids=[f"{f.name}:{n}" for f, n in PAIRS])
def test_library_round_trip(fam: library.Family, chat_template: str) -> None:
    """Each family passes with each of its chat templates, or each failing case is a reviewed known issue
    (and a known issue that starts passing must be removed from the family's file)."""
    text = (CHAT_TEMPLATES / chat_template).read_text(encoding="utf-8")
    report = rt.verify.round_trip(text, fam.template(), **fam.round_trip_options())
    known = fam.known_round_trip_issues(chat_template)
    unexpected = [c for c in report.failures() if c.case not in known and "*" not in known]
    assert not unexpected, "\n".join(
        f"{c.case}: {c.problem} {[str(d) for d in c.differences]}" for c in unexpected
    )
    stale = [name for name in known if name != "*" and all(c.ok for c in report.cases if c.case == name)]
    assert not stale, f"known issues that now pass: {stale}"
    if "*" in known:
        assert report.failures(), "a known issue for every case, but the round trip passes"
    for reason in known.values():
        assert reason.strip()

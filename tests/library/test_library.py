"""The model library: its data files, lookup by name, model id and chat template (issue 4, item 1)."""

from __future__ import annotations

import dataclasses
import json
import re
from importlib import resources
from pathlib import Path

import pytest

import response_templates as rt
from response_templates import library

DATA = Path(__file__).resolve().parents[1] / "data"
CHAT_TEMPLATES = DATA / "chat_templates"
FAMILIES = library.families()
WITH_TEMPLATE = [f for f in FAMILIES if f.template_data is not None]


@pytest.fixture
def needs_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """MiniMax-M1 as it was before json-value-end (E3): no library family needs an extension any more."""
    fam = dataclasses.replace(
        library.family("minimax-m1"), status="needs-extension", needs=("E3",), uses=(), template_data=None
    )
    monkeypatch.setitem(library._families(), "minimax-m1", fam)


# ---------------------------------------------------------------------------------------------- data


def test_one_json_file_per_family_with_the_documented_keys() -> None:
    files = sorted(
        e.name for e in resources.files("response_templates.library").iterdir() if e.name.endswith(".json")
    )
    assert files == sorted(f"{f.name}.json" for f in FAMILIES)
    allowed = {
        "name", "title", "formats_md", "status", "aliases", "models", "chat_templates", "fingerprints", "markers",
        "needs", "would_use", "reasoning", "tool_calls", "parallel_calls", "generation_prompt", "variants", "notes",
        "sample_families", "same_format_as", "round_trip", "template", "uses",
    }  # fmt: skip
    for fam in FAMILIES:
        assert set(fam.to_dict()) <= allowed, fam.name


def test_every_family_of_the_research_survey_is_covered() -> None:
    rows = {f.formats_md for f in FAMILIES if f.formats_md is not None}
    assert rows == set(range(1, 59)), sorted(set(range(1, 59)) - rows)


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_family_is_consistent(fam: library.Family) -> None:
    assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", fam.name)
    assert fam.status in library.STATUSES
    for ext in (*fam.needs, *fam.would_use):
        assert ext in library.EXTENSIONS
    if fam.status == "needs-extension":
        assert not fam.has_template and fam.needs
        with pytest.raises(library.ExtensionRequiredError, match=fam.needs[0]):
            fam.template()
    else:
        assert fam.has_template, fam.name
        template = fam.template()
        assert template.defaults() == {"role": "assistant"}
        own = {f.name for f in template.fields if f.into is None and f.route is None}
        assert own <= {"reasoning_content", "content", "tool_calls", "builtin_tool_call"}
        routed = {r.to for f in template.fields for r in (f.route or {}).values()}
        assert routed <= {"reasoning_content", "content", "tool_calls"}
        assert {f.into for f in template.fields if f.into is not None} <= {"tool_calls", "content"}
    if fam.status == "partial":
        assert fam.needs and any("PARTIAL" in note for note in fam.notes)
    for variant in fam.variants:
        assert isinstance(variant.generation_prompt, str)
    for name in fam.chat_templates:
        text = (CHAT_TEMPLATES / name).read_text(encoding="utf-8")
        assert library.fingerprint(text) in fam.fingerprints


@pytest.mark.parametrize("fam", [f for f in FAMILIES if f.has_template], ids=lambda f: f.name)
def test_generation_prompts_end_where_the_anchor_cuts(fam: library.Family) -> None:
    """Every documented prompt contains the start anchor, and parsing it alone leaves no stray text."""
    template = fam.template()
    for prompt in {fam.generation_prompt, *(v.generation_prompt for v in fam.variants)}:
        if not prompt:
            continue
        _, found = template.cut_prefix("earlier turns " + prompt)
        assert found, (fam.name, prompt)
        message = rt.parse_response("", template, prefix=prompt)
        assert "content" not in message, (fam.name, prompt, message)


def test_names_and_aliases_are_unique_and_resolve() -> None:
    seen: dict[str, str] = {}
    for fam in FAMILIES:
        for key in (fam.name, *fam.aliases):
            assert key.lower() not in seen, (key, seen.get(key.lower()), fam.name)
            seen[key.lower()] = fam.name
            assert library.family(key).name == fam.name
            assert library.family(key.upper()).name == fam.name


def test_names_lists_families_with_templates(needs_extension: None) -> None:
    names = rt.templates.names()
    assert names == sorted(names)
    assert "qwen3" in names and "gpt-oss" in names and "minimax-m1" not in names
    assert "apertus" in names  # supported through a declared extension
    assert set(rt.templates.names(include_unsupported=True)) == {f.name for f in FAMILIES}


def test_shared_formats_share_one_compiled_template() -> None:
    # compiled once; each family's template names the family it was asked for (issue 28, item 19)
    assert rt.templates.get("qwen3").fields is rt.templates.get("hermes").fields
    assert rt.templates.get("qwen3") is rt.templates.get("qwq") is rt.templates.for_model("Qwen/Qwen3-8B")
    assert rt.templates.get("step-3.5").fields is rt.templates.get("qwen3-coder").fields
    assert library.family("smollm3").resolved().name == "hermes"


# -------------------------------------------------------------------------------------------- lookup


def test_get_unknown_name_lists_near_matches() -> None:
    with pytest.raises(library.UnknownModelError) as info:
        rt.templates.get("qwen-3")
    assert "qwen3" in info.value.near_matches
    assert isinstance(info.value, LookupError) and isinstance(info.value, rt.ResponseTemplateError)
    assert "near matches" in str(info.value)


def test_get_family_that_needs_an_extension(needs_extension: None) -> None:
    with pytest.raises(library.ExtensionRequiredError, match="E3") as info:
        rt.templates.get("minimax-m1")
    assert info.value.family.name == "minimax-m1"


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("Qwen/Qwen3-8B", "qwen3"),
        ("qwen/qwen3-8b", "qwen3"),
        ("Qwen3-8B", "qwen3"),
        ("/models/Qwen/Qwen3-32B", "qwen3"),
        ("Qwen/QwQ-32B", "qwen3"),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder-instruct"),
        ("Qwen/Qwen3-4B-Instruct-2507", "qwen3-instruct-2507"),
        ("moonshotai/Kimi-K2-Instruct-0905", "kimi-k2-instruct"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),
        ("baidu/ERNIE-4.5-21B-A3B-PT", "ernie-4.5-pt"),
        ("baidu/ERNIE-4.5-21B-A3B-Thinking", "ernie-4.5"),
        ("Qwen/Qwen3.5-4B", "qwen3-coder"),
        ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek-r1"),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3.1"),
        ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-v3.2"),
        ("openai/gpt-oss-20b", "gpt-oss"),
        ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral-v11-call-id"),
        ("mistralai/Mistral-Nemo-Instruct-2407", "mistral-v3"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3-json"),
        ("google/gemma-4-31B-it", "gemma-4"),
        ("moonshotai/Kimi-K2-Thinking", "kimi-k2"),
        ("zai-org/GLM-4.7-Flash", "glm-4.7"),
        ("unsloth/Devstral-Small-2507-GGUF:Q4_K_M", "mistral-v11"),
    ],
)
def test_for_model(model_id: str, family: str) -> None:
    assert library.family_for_model(model_id).name == family
    assert rt.templates.for_model(model_id) is library.family(family).template()


def test_for_unknown_model_lists_near_matches() -> None:
    with pytest.raises(library.UnknownModelError) as info:
        rt.templates.for_model("Qwen/Qwen9-8B")
    assert "unknown model" in str(info.value)
    assert any("Qwen" in near for near in info.value.near_matches)
    with pytest.raises(library.UnknownModelError):
        rt.templates.for_model("")


def test_for_model_of_a_family_that_needs_an_extension(needs_extension: None) -> None:
    with pytest.raises(library.ExtensionRequiredError):
        rt.templates.for_model("MiniMaxAI/MiniMax-M1-80k")
    # Llama 4 is read through the python-calls extension now.
    assert rt.templates.for_model("meta-llama/Llama-4-Scout-17B-16E-Instruct") is rt.templates.get("pythonic")


# ----------------------------------------------------------------------------------------- detection

OWNERS = {name: fam for fam in FAMILIES for name in fam.chat_templates}


@pytest.mark.parametrize("path", sorted(CHAT_TEMPLATES.glob("*.jinja")), ids=lambda p: p.name)
def test_detect_every_known_chat_template(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    owner = OWNERS[path.name]
    assert library.detect_family(text).name == owner.name  # by fingerprint
    edited = text + "\n{#- a local edit changes the fingerprint -#}\n"
    if owner.markers:
        by_markers = library.detect_family(edited)
        assert by_markers.resolved().name == owner.resolved().name, (by_markers.name, owner.name)
    if owner.has_template:
        assert rt.templates.detect(text) is owner.template()


def test_detect_from_a_tokenizer_or_its_config() -> None:
    text = (CHAT_TEMPLATES / "Qwen3-Coder.jinja").read_text(encoding="utf-8")

    class Tokenizer:
        chat_template = text

    assert rt.templates.detect(Tokenizer()) is rt.templates.get("qwen3-coder")
    assert library.detect_family({"chat_template": text}).name == "qwen3-coder"
    assert library.detect_family({"default": "nothing", "tool_use": text}).name == "qwen3-coder"
    assert library.detect_family([{"name": "default", "template": text}]).name == "qwen3-coder"


def test_detect_unknown_chat_template_lists_near_matches() -> None:
    with pytest.raises(library.UnknownModelError) as info:
        rt.templates.detect("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}")
    assert "unknown model" in str(info.value)
    assert "hermes" in info.value.near_matches
    with pytest.raises(library.UnknownModelError, match="chat_template"):
        rt.templates.detect(object())


def test_sample_families_are_mapped_once() -> None:
    mapping = library.sample_family_map()
    all_listed = [s for f in FAMILIES for s in f.sample_families]
    assert len(all_listed) == len(set(all_listed)) == len(mapping)


# -------------------------------------------------------------------------- templates behave as data


@pytest.mark.parametrize("fam", WITH_TEMPLATE, ids=lambda f: f.name)
def test_templates_lint_without_errors(fam: library.Family) -> None:
    issues = rt.lint(fam.template_data)  # type: ignore[arg-type]
    errors = [str(i) for i in issues if i.level == "error"]
    assert not errors
    # docs/spec.md, section 10: no library template uses a construct other engines lack.
    portability = [
        i for i in issues if i.code in ("backreference", "atomic-group", "possessive-quantifier", "recursion")
    ]
    assert not portability, portability


@pytest.mark.parametrize("fam", WITH_TEMPLATE, ids=lambda f: f.name)
def test_template_json_round_trips(fam: library.Family) -> None:
    data = fam.to_dict()["template"]
    assert json.loads(json.dumps(data)) == data
    assert rt.load_template(json.dumps(data)).to_dict() == data


# ------------------------------------------- families whose recorded outputs carry no expected message


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(
    ("family", "prefix", "raw", "expected"),
    [
        (
            "functiongemma",
            "<start_of_turn>model\n",
            "Let me check. <start_function_call>call:get_weather{location:<escape>San Francisco<escape>,"
            "unit:<escape>celsius<escape>}<end_function_call><start_function_call>call:get_time{timezone:"
            "<escape>UTC<escape>}<end_function_call>",
            {
                "content": "Let me check.",
                "tool_calls": [
                    _call("get_weather", location="San Francisco", unit="celsius"),
                    _call("get_time", timezone="UTC"),
                ],
            },
        ),
        (
            "kimi-k3",
            '<|open|>message role="assistant"<|sep|>',
            "<|open|>think<|sep|>Check the tool.<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|>"
            '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" '
            'type="string"<|sep|>Oslo<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
            {
                "reasoning_content": "Check the tool.",
                "content": "Checking.",
                "tool_calls": [_call("get_weather", city="Oslo")],
            },
        ),
        (
            "laguna",
            "<assistant>\n</think>",
            "Sure, checking now. <tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>London</arg_value>\n"
            '<arg_key>count</arg_key>\n<arg_value>3</arg_value>\n<arg_key>options</arg_key>\n<arg_value>{"verbose": '
            "true}</arg_value>\n</tool_call>\n<tool_call>now</tool_call>",
            {
                "content": "Sure, checking now.",
                "tool_calls": [
                    _call("get_weather", location="London", count="3", options='{"verbose": true}'),
                    _call("now"),
                ],
            },
        ),
        (
            "solar-open",
            "<|begin|>assistant",
            "<|think|>Need the weather.<|end|><|begin|>assistant<|tool_calls|><|tool_call:begin|>abc123"
            '<|tool_call:name|>get_weather<|tool_call:args|>{"city": "Seoul"}<|tool_call:end|><|calls|>',
            {
                "reasoning_content": "Need the weather.",
                "tool_calls": [{**_call("get_weather", city="Seoul"), "id": "abc123"}],
            },
        ),
    ],
)
def test_documented_examples(family: str, prefix: str, raw: str, expected: dict[str, object]) -> None:
    message = rt.parse_response(raw, rt.templates.get(family), prefix=prefix)
    assert message == {"role": "assistant", **expected}


def test_uses_lists_exactly_the_declared_extensions() -> None:
    by_number = {
        "E1": "python-calls",
        "E2": "item-transform",
        "E3": "json-value-end",
        "E4": "xml-values",
        "E5": "interleaved",
        "E6": "into",
        "E7": "json-envelope",
        "E8": "into",
        "E9": "optional-placeholders",
    }
    for fam in FAMILIES:
        if fam.template_data is None:
            assert not fam.uses, fam.name
            continue
        declared = set(fam.template_data.get("extensions", ()))
        assert {by_number[e] for e in fam.uses} == declared, fam.name
        assert not set(fam.uses) & set(fam.needs), fam.name


# States that hold long text (the reasoning, and the outside state where the implicit content streams)
# skip the scanner for chunks that cannot start a delimiter, unless listed here with the reason.
SCANNED_STATES = {
    ("functionary-v3.2", "outside"): "between '>>>' messages: only a recipient name, the text is in regions",
    ("gpt-oss", "outside"): "between messages: only headers, the text is in channel regions",
    ("llm-jp-4", "outside"): "between messages: only headers, the text is in channel regions",
    ("minimax-m1", "*"): "a lookbehind (the call after a '}' line) keeps a window: no fast path",
    ("xlam", "*"): "a lookbehind (a close right after ']') keeps a window: no fast path",
}


@pytest.mark.parametrize("name", [f.name for f in WITH_TEMPLATE])
def test_long_text_states_keep_the_fast_path(name: str) -> None:
    """Not a timing test: the structural condition for the parser's fast path (docs/models.md)."""
    template = rt.templates.get(name)
    states = {"outside": template.outside}
    if "reasoning_content" in template.inside:
        states["reasoning_content"] = template.inside["reasoning_content"]
    for state, watch in states.items():
        slow = template.lookbehind_window > 1 or watch.first_chars is None
        listed = (name, state) in SCANNED_STATES or (name, "*") in SCANNED_STATES
        assert slow == listed, (name, state, [str(d.source) for d in watch.regexes if d.first_chars is None])

"""Export to transformers, vLLM and SGLang (issue 10, items 4 and 5): ``rt.templates.export`` and model folders.

The exported templates are checked by the target's own loader (transformers 5.25's
``load_response_template``; vLLM 0.34 and SGLang 0.5.23 vendor a fork of 5.23's, with the same keys) and,
for the engines, by the vocabulary of that fork (no ``python-call-list``, no ``value_parser_by``) and their
serving checks as their code states them (fields, defaults, the text-only ``content``/``thinking``,
SGLang's explicit ``strip`` and its ``tool_calls`` opener).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from response_templates import export as ex
from response_templates import library

ROOT = Path(__file__).resolve().parent.parent
reference = pytest.importorskip("transformers.utils.chat_parsing")
from transformers.utils.chat_parsing.response_templates import load_response_template  # noqa: E402

FAMILIES = [f.name for f in library.families() if f.has_template]


def _value_parsers(name: Any, args: Any) -> list[Any]:
    """A content parser's name and those of every value parser nested in its arguments."""
    names = [name]
    if isinstance(args, dict):
        inner = args.get("value_parser")
        if isinstance(inner, dict):
            names += _value_parsers(inner.get("name", "text"), inner.get("args"))
        by = args.get("value_parser_by")
        if isinstance(by, dict):
            for spec in by.get("parsers", {}).values():
                names += _value_parsers(spec.get("name", "text"), spec.get("args"))
    return names


def engine_check(template: dict[str, Any], target: str) -> None:
    """The engines' vocabulary (transformers 5.23's parser) and serving validation, as their code states
    them (raises AssertionError)."""
    for name, spec in template["fields"].items():
        parsers = _value_parsers(spec.get("content", "text"), spec.get("content_args"))
        assert "python-call-list" not in parsers, name
        assert "value_parser_by" not in spec.get("content_args", {}), name
    if target == "sglang" and "tool_calls" in template["fields"]:
        assert {"open", "open_pattern"} & set(template["fields"]["tool_calls"])
    loaded = load_response_template(template)
    assert set(loaded.fields) <= {"thinking", "content", "tool_calls"}, sorted(loaded.fields)
    assert set(loaded.defaults) <= {"role"}
    for name in ("thinking", "content"):
        spec = template["fields"].get(name)
        if spec is None:
            continue
        assert spec.get("content", "text") == "text"
        assert "transform" not in spec and "join" not in spec
        if target == "sglang":
            assert spec.get("content_args", {}).get("strip") is not True


def qwen_like(**fields: Any) -> dict[str, Any]:
    return {"start_anchor": "<|im_start|>assistant\n", "defaults": {"role": "assistant"}, "fields": fields}


# ----------------------------------------------------------------------------------- every family


@pytest.mark.parametrize("target", ex.TARGETS)
@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_exports_or_is_refused_by_name(name: str, target: str) -> None:
    try:
        result = rt.templates.export(name, target=target)
    except ex.ExportError as exc:
        assert exc.target == target
        assert f"cannot export to {target}" in str(exc)
        assert exc.field is not None or exc.key is not None
        return
    assert result.target == target
    assert "extensions" not in result.template
    load_response_template(json.loads(result.to_json()))  # the target's own loader accepts it
    if target != "transformers":
        engine_check(result.template, target)
    assert result.verdict == ("exportable with warnings" if result.warnings else "exportable")
    for warning in result.warnings:
        assert warning.message and str(warning)


def test_plain_template_is_exported_unchanged_for_transformers() -> None:
    result = rt.templates.export("qwen3")
    assert result.template == rt.templates.get("qwen3").to_dict()
    assert result.source == "hermes" and not result.notes
    # the one approximation: the reference keeps only the last piece of the implicit field (issue 28)
    assert [(w.field, w.key) for w in result.warnings] == [("content", None)]


def test_lookup_by_model_id_by_data_and_by_compiled_template() -> None:
    by_id = rt.templates.export("Qwen/Qwen3-8B", target="vllm")
    assert by_id.template == rt.templates.export(rt.templates.get("qwen3"), target="vllm").template
    data = rt.templates.get("qwen3").to_dict()
    assert rt.templates.export(data, target="vllm").template == by_id.template
    assert rt.templates.export(json.dumps(data), target="vllm").template == by_id.template
    with pytest.raises(library.UnknownModelError, match="unknown model 'Org/Nothing'"):
        rt.templates.export("Org/Nothing")
    with pytest.raises(rt.ResponseTemplateError, match="unknown export target 'tgi'"):
        rt.templates.export("qwen3", target="tgi")
    with pytest.raises(rt.ResponseTemplateError, match="got int"):
        rt.templates.export(3)


# ----------------------------------------------------------------------------------------- engines


@pytest.mark.parametrize("target", ["vllm", "sglang"])
def test_engines_get_thinking_and_role_only_defaults(target: str) -> None:
    result = rt.templates.export("qwen3", target=target)
    assert list(result.template["fields"]) == ["thinking", "tool_calls", "content"]
    assert result.notes == (
        "field 'reasoning_content' renamed to 'thinking' (the engines' name for reasoning)",
    )
    engine_check(result.template, target)
    text = '<think>\nhm\n</think>\n\nHi<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    message = reference.parse_response(text, result.template, prefix="")
    assert message["thinking"] == "hm" and message["tool_calls"][0]["function"]["name"] == "f"


def test_engine_defaults_other_than_role_are_dropped_with_a_warning() -> None:
    template = qwen_like(reasoning_content={"open": "<think>", "close": "</think>"}, content={})
    template["defaults"]["content"] = ""
    assert rt.templates.export(template).template["defaults"] == {"role": "assistant", "content": ""}
    result = rt.templates.export(template, target="vllm")
    assert result.template["defaults"] == {"role": "assistant"}
    [warning] = result.warnings
    assert (warning.field, warning.key) == (None, "defaults") and "'content'" in warning.message


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        ({"open": "<a>", "close": "</a>", "content": "json"}, "content"),
        ({"open": "<a>", "close": "</a>", "transform": {"text": "{content}"}}, "transform"),
    ],
)
@pytest.mark.parametrize("target", ["vllm", "sglang"])
def test_engines_refuse_a_content_field_that_is_not_plain_text(
    spec: dict[str, Any], key: str, target: str
) -> None:
    template = qwen_like(content=spec)
    assert rt.templates.export(template).verdict == "exportable"
    with pytest.raises(ex.ExportError) as info:
        rt.templates.export(template, target=target)
    assert (info.value.field, info.value.key, info.value.target) == ("content", key, target)


def test_engines_refuse_fields_they_do_not_route() -> None:
    with pytest.raises(ex.ExportError, match="route only the fields") as info:
        rt.templates.export(qwen_like(answer={"open": "<a>", "close": "</a>"}), target="sglang")
    assert info.value.field == "answer"
    with pytest.raises(ex.ExportError) as info:
        rt.templates.export("gpt-oss", target="vllm")  # its field that reads and discards built-in calls
    assert (info.value.field, info.value.key) == ("builtin_tool_call", None)


def test_engines_refuse_a_tool_transform_that_cannot_build_the_chat_shape() -> None:
    calls = {"open": "<c>", "close": "</c>", "content": "json", "transform": {"name": "{content.name}"}}
    assert rt.templates.export(qwen_like(tool_calls=calls)).verdict == "exportable"
    with pytest.raises(ex.ExportError, match="chat shape") as info:
        rt.templates.export(qwen_like(tool_calls=calls), target="vllm")
    assert (info.value.field, info.value.key) == ("tool_calls", "transform")


def test_sglang_drops_an_explicit_strip_true_and_vllm_keeps_it() -> None:
    template = qwen_like(content={"content_args": {"strip": True}})
    assert rt.templates.export(template, target="vllm").template["fields"]["content"] == {
        "content_args": {"strip": True}
    }
    result = rt.templates.export(template, target="sglang")
    assert result.template["fields"]["content"] == {} and not result.warnings
    assert "strip" in result.notes[0]


def test_engines_drop_join_on_thinking_with_a_warning() -> None:
    result = rt.templates.export("glm-4.5", target="sglang")
    thinking = result.template["fields"]["thinking"]
    assert "join" not in thinking and "repeats" not in thinking
    assert any(w.field == "thinking" and w.key == "join" for w in result.warnings)


def test_engines_warn_that_text_outside_regions_becomes_content() -> None:
    result = rt.templates.export(qwen_like(tool_calls={"open": "<c>", "close": "</c>"}), target="vllm")
    assert any(w.key == "fields" and "becomes content" in w.message for w in result.warnings)


# ---------------------------------------------------------------------------------- approximations


def test_interleaved_within_is_dropped_and_the_warning_names_the_outer_field() -> None:
    result = rt.templates.export("kimi-k2", target="vllm")
    [warning] = result.warnings
    assert (warning.field, warning.key) == ("tool_calls", "within")
    assert "'thinking'" in warning.message  # the engines' name
    assert "within" not in result.template["fields"]["tool_calls"]


# The Llama 4 pythonic template as it was written with the lenient extension (the library's now uses
# python-call-list, which exports as it is).
LENIENT_PYTHONIC = {
    "version": 1,
    "extensions": ["python-calls", "into"],
    "defaults": {"role": "assistant"},
    "start_anchor": "<|header_start|>assistant<|header_end|>\n\n",
    "fields": {
        "call_blocks": {
            "open_pattern": "<\\|python_start\\|>|^(?=\\s*\\[\\s*[A-Za-z_][\\w.]*\\()",
            "close": ["<|python_end|>", "<|eom|>", "<|eot|>"],
            "content": "python-calls",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            "into": "tool_calls",
        },
        "content": {"close": ["<|eot|>", "<|eom|>"]},
    },
}


def test_library_pythonic_exports_as_it_is() -> None:
    result = rt.templates.export("pythonic")
    assert result.template["fields"]["tool_calls"]["content"] == "python-call-list"
    assert not [w for w in result.warnings if w.key == "content"]


def test_python_calls_becomes_python_call_list() -> None:
    result = rt.templates.export(LENIENT_PYTHONIC)
    calls = result.template["fields"]["tool_calls"]
    assert calls["content"] == "python-call-list" and "into" not in calls
    keys = {(w.field, w.key) for w in result.warnings}
    assert ("tool_calls", "content") in keys
    message = reference.parse_response("[f(a=1)]", result.template, prefix="")
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]
    suffixed = {"content": "python-calls", "content_args": {"name_suffix": ".call"}}
    template = qwen_like(tool_calls={"open": "<c>", "close": "</c>", **suffixed}, content={})
    template["extensions"] = ["python-calls"]
    with pytest.raises(ex.ExportError, match="name_suffix") as info:
        rt.templates.export(template)
    assert (info.value.field, info.value.key) == ("tool_calls", "content_args")


def test_into_a_field_that_exists_drops_the_feeder() -> None:
    result = rt.templates.export("phi-4-mini", target="vllm")
    assert "functools" not in result.template["fields"]
    [warning] = result.warnings
    assert (warning.field, warning.key) == ("functools", "into")
    assert "read that text as content" in warning.message


def test_into_the_implicit_field_is_refused() -> None:
    with pytest.raises(ex.ExportError, match="implicit field") as info:
        rt.templates.export("cohere-command-r7b")
    assert (info.value.field, info.value.key, info.value.target) == (
        "response_wrapper",
        "into",
        "transformers",
    )


def test_refused_extensions_name_the_field_and_key() -> None:
    with pytest.raises(ex.ExportError, match="item-transform") as info:
        rt.templates.export("apertus")
    assert (info.value.field, info.value.key) == ("tool_calls", "transform")
    with pytest.raises(ex.ExportError, match="which the target lacks") as info:
        rt.templates.export("generic-json")  # json-envelope's route
    assert (info.value.field, info.value.key) == ("envelope", "route")


def test_xml_values_arguments_are_dropped_one_warning_each() -> None:
    result = rt.templates.export("kimi-k3", target="vllm")
    args = result.template["fields"]["tool_calls"]["content_args"]
    assert set(args) == {"tag_pattern"}
    assert {w.key for w in result.warnings} == {"content_args.type_group", "content_args.unescape"}


_DSML_OUTPUT = (
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
    '<｜DSML｜parameter name="items" string="false">[1, 2]</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
    "</｜DSML｜invoke>\n</｜DSML｜function_calls>"
)


def test_type_group_becomes_value_parser_by_for_transformers() -> None:
    """transformers 5.25 reads the per-tag value parser itself: the export keeps it as ``value_parser_by``."""
    result = rt.templates.export("deepseek-v3.2", target="transformers")
    args = result.template["fields"]["tool_calls"]["content_args"]
    assert set(args) == {"tag_pattern", "value_parser_by"}
    assert args["value_parser_by"]["group"] == "string" and set(args["value_parser_by"]["parsers"]) == {
        "true",
        "false",
    }
    [warning] = [w for w in result.warnings if w.field == "tool_calls"]
    assert warning.key == "content_args.type_group" and "not type" in warning.message
    prompt = library.family("deepseek-v3.2").generation_prompt
    theirs = reference.parse_response(_DSML_OUTPUT, result.template, prefix=prompt)
    ours = rt.parse_response(_DSML_OUTPUT, "deepseek-v3.2", prefix=prompt)
    arguments = {"items": [1, 2], "city": "Paris"}
    assert theirs["tool_calls"][0]["function"]["arguments"] == arguments
    assert ours["tool_calls"][0]["function"]["arguments"] == arguments
    for target in ex.ENGINES:  # the engines' parser has no value_parser_by: dropped, with the old warning
        engine = rt.templates.export("deepseek-v3.2", target=target).template["fields"]["tool_calls"]
        assert set(engine["content_args"]) == {"tag_pattern"}


_BY_STRING = {"group": "kind", "parsers": {"json": {"name": "json"}}}


def _xml_calls(**args: Any) -> dict[str, Any]:
    return {
        "open_pattern": r"<call name=(?P<name>\w+)>",
        "close": "</call>",
        "repeats": True,
        "content": "xml-inline",
        "content_args": {
            "tag_pattern": r'<p k=(?P<key>\w+)(?: kind="(?P<kind>\w+)")?>(?P<value>.*?)</p>',
            **args,
        },
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
    }


@pytest.mark.parametrize("target", ["vllm", "sglang"])
def test_engines_drop_value_parser_by_with_a_warning(target: str) -> None:
    template = qwen_like(tool_calls=_xml_calls(value_parser_by=_BY_STRING), content={"close": "<|im_end|>"})
    kept = rt.templates.export(template, target="transformers")
    assert kept.template["fields"]["tool_calls"]["content_args"]["value_parser_by"] == _BY_STRING
    assert not [w for w in kept.warnings if w.field == "tool_calls"]
    result = rt.templates.export(template, target=target)
    assert "value_parser_by" not in result.template["fields"]["tool_calls"]["content_args"]
    [warning] = [w for w in result.warnings if w.key == "content_args.value_parser_by"]
    assert warning.field == "tool_calls" and "5.23" in warning.message
    engine_check(result.template, target)


@pytest.mark.parametrize("target", ["vllm", "sglang"])
def test_engines_refuse_python_call_list(target: str) -> None:
    """The engines' parser (a fork of transformers 5.23's) has no python-call-list: no portable export."""
    with pytest.raises(ex.ExportError, match=r"python-call-list.*5\.23") as info:
        rt.templates.export("pythonic", target=target)
    assert (info.value.field, info.value.key, info.value.target) == ("tool_calls", "content", target)
    with pytest.raises(ex.ExportError, match="python-calls") as info:
        rt.templates.export(LENIENT_PYTHONIC, target=target)
    assert (info.value.field, info.value.key) == ("tool_calls", "content")  # call_blocks, renamed by into
    nested = qwen_like(
        tool_calls=_xml_calls(value_parser={"name": "python-call-list"}), content={"close": "<|im_end|>"}
    )
    with pytest.raises(ex.ExportError, match="python-call-list"):
        rt.templates.export(nested, target=target)
    assert rt.templates.export(nested, target="transformers").template["fields"]["tool_calls"]


def test_engines_warn_where_they_read_as_5_23() -> None:
    unquoted = qwen_like(
        tool_calls={**HERMES_LIKE, "content_args": {"unquoted_keys": True}}, content={"close": "<|im_end|>"}
    )
    merged = qwen_like(
        tool_calls=_xml_calls(merge_duplicates=True, value_parser={"name": "json"}),
        content={"close": "<|im_end|>"},
    )
    for template, key in (
        (unquoted, "content_args.unquoted_keys"),
        (merged, "content_args.merge_duplicates"),
    ):
        assert not [w for w in rt.templates.export(template).warnings if w.key == key]
        for target in ex.ENGINES:
            [warning] = [w for w in rt.templates.export(template, target=target).warnings if w.key == key]
            assert warning.field == "tool_calls" and "5.23" in warning.message
    text_values = qwen_like(tool_calls=_xml_calls(merge_duplicates=True), content={"close": "<|im_end|>"})
    assert not [w for w in rt.templates.export(text_values, target="vllm").warnings if w.key]


HERMES_LIKE = {
    "open": "<tool_call>",
    "close": "</tool_call>",
    "repeats": True,
    "content": "json",
    "transform": {"type": "function", "function": "{content}"},
}


def test_sglang_refuses_tool_calls_without_an_opener() -> None:
    template = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>"},
            "tool_calls": {"close": "<|im_end|>", "content": "json", "transform": {"function": "{content}"}},
        },
    }
    assert rt.templates.export(template, target="vllm").template["fields"]["tool_calls"]
    with pytest.raises(ex.ExportError, match="opener") as info:
        rt.templates.export(template, target="sglang")
    assert (info.value.field, info.value.target) == ("tool_calls", "sglang")


def test_the_engines_parser_flags_are_their_own(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM names its parser ``hf``, SGLang ``response_template``: the docs and ``export --help`` say so."""
    assert ex.PARSER_FLAGS == {
        "vllm": "--tool-call-parser hf --reasoning-parser hf",
        "sglang": "--tool-call-parser response_template --reasoning-parser response_template",
    }
    page = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    vllm_lines = [line for line in page.splitlines() if line.startswith(("vllm serve", "* **vLLM"))]
    assert vllm_lines and all("response_template" not in line for line in vllm_lines)
    assert "vllm serve ./Qwen3-8B --reasoning-parser hf --tool-call-parser hf" in page
    assert "--reasoning-parser response_template --tool-call-parser response_template" in page  # SGLang
    assert "--tool-call-parser hf" in (ex.__doc__ or "")
    from response_templates.cli import main

    assert main(["export", "--help"]) == 0
    help_text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, also at hyphens
    assert "vLLM0.34(servewith--tool-call-parserhf--reasoning-parserhf)" in help_text
    sglang = "SGLang0.5.23(servewith--tool-call-parserresponse_template--reasoning-parserresponse_template)"
    assert sglang in help_text


def test_json_value_end_closes_with_the_end_of_turn() -> None:
    result = rt.templates.export("llama-3-json")
    calls = result.template["fields"]["tool_calls"]
    assert "close_json" not in calls and calls["close"] == ["<|eot_id|>", "<|eom_id|>"]
    [warning] = [w for w in result.warnings if w.key == "close_json"]
    assert "fail to parse" in warning.message


def test_optional_placeholder_entries_are_left_out() -> None:
    result = rt.templates.export("mistral-v11-call-id")
    assert "id" not in result.template["fields"]["tool_calls"]["transform"]
    [warning] = [w for w in result.warnings if w.key == "transform"]
    assert "'{id?}'" in warning.message
    template = qwen_like(
        tool_calls={"open": "<c>", "close": "</c>", "content": "json", "transform": "{content.x?}"},
        content={},
    )
    template["extensions"] = ["optional-placeholders"]
    with pytest.raises(ex.ExportError, match="optional placeholder"):
        rt.templates.export(template)


def test_a_null_transform_exports_as_it_is_and_reads_the_same() -> None:
    template = qwen_like(skip={"open": "<x>", "close": "</x>", "transform": None}, content={})
    result = rt.templates.export(template)
    assert result.template["fields"]["skip"] == {"open": "<x>", "close": "</x>", "transform": None}
    assert [(w.field, w.key) for w in result.warnings] == [("content", None)]  # only the implicit pieces
    text = "<x>kept</x>"
    # null means "no transform" in both implementations
    assert reference.parse_response(text, result.template, prefix="")["skip"] == "kept"
    assert rt.parse_response(text, template, prefix="")["skip"] == "kept"


def test_unused_declared_extensions_are_dropped_with_a_note() -> None:
    template = qwen_like(content={})
    template["extensions"] = ["interleaved"]
    result = rt.templates.export(template)
    assert "extensions" not in result.template and not result.warnings
    assert result.notes == ("declared but unused extensions dropped: interleaved",)


# ----------------------------------------------------------------------------------- model folders


def write_config(folder: Path, text: str) -> Path:
    path = folder / "tokenizer_config.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_update_tokenizer_config_keeps_every_key_in_order(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, '{\n    "b": 1,\n    "chat_template": "{{ x }}",\n    "a": {"n": [1, 2]},\n    "é": "ü"\n}'
    )
    os.chmod(path, 0o640)
    result = rt.templates.export("qwen3", target="vllm")
    assert result.update_tokenizer_config(tmp_path) == path
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert list(data) == ["b", "chat_template", "a", "é", "response_template"]
    assert data["response_template"] == result.template and data["a"] == {"n": [1, 2]}
    assert text.endswith("\n}") and '\n    "b": 1,' in text and '"é": "ü"' in text  # indent and UTF-8 kept
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer_config.json"]  # no temp file left
    # a second export replaces the template where it stands
    path.write_text(json.dumps({"x": 1, "response_template": None, "y": 2}, indent=2), encoding="utf-8")
    ex.update_tokenizer_config(tmp_path, rt.templates.export("qwen3"))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == ["x", "response_template", "y"]
    assert data["response_template"]["fields"]["reasoning_content"]


def test_update_tokenizer_config_refuses_a_folder_without_one(tmp_path: Path) -> None:
    with pytest.raises(ex.ModelFolderError, match=r"has no tokenizer_config\.json"):
        ex.update_tokenizer_config(tmp_path, rt.templates.export("qwen3"))
    with pytest.raises(ex.ModelFolderError, match="is not a folder"):
        ex.update_tokenizer_config(tmp_path / "missing", rt.templates.export("qwen3"))
    write_config(tmp_path, "[1, 2]")
    with pytest.raises(ex.ModelFolderError, match="JSON object"):
        ex.update_tokenizer_config(tmp_path, rt.templates.export("qwen3"))
    write_config(tmp_path, "{oops")
    with pytest.raises(ex.ModelFolderError, match="not valid JSON"):
        ex.update_tokenizer_config(tmp_path, rt.templates.export("qwen3"))


def test_update_tokenizer_config_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = '{"a": 1}\n'
    path = write_config(tmp_path, original)

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("response_templates.export.os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        ex.update_tokenizer_config(tmp_path, rt.templates.export("qwen3"))
    assert path.read_text(encoding="utf-8") == original
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer_config.json"]


def test_an_updated_folder_loads_in_transformers(tmp_path: Path) -> None:
    write_config(tmp_path, json.dumps({"model_max_length": 8}))
    rt.templates.export("qwen3").update_tokenizer_config(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    message = reference.parse_response(
        "<think>\nhm\n</think>\n\nHi!", config["response_template"], prefix="<|im_start|>assistant\n"
    )
    assert message == {"role": "assistant", "reasoning_content": "hm", "content": "Hi!"}


# ------------------------------------------------------------------------------------- the docs page


def markdown_table(header: list[str], rows: Any) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def test_docs_show_the_tables_of_the_code() -> None:
    page = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    assert (
        markdown_table(["constraint", "transformers 5.25", "vLLM 0.34", "SGLang 0.5.23"], ex.CONSTRAINTS)
        in page
    )
    assert markdown_table(["feature", "export", "reads differently"], ex.APPROXIMATIONS) in page


# ------------------------------------------------------------------------------- the proof (report)


def test_report_counts_what_the_reference_reads_differently() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import export_report
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    fam = library.family("qwen3")
    prompt = fam.generation_prompt
    samples = [
        export_report.Sample("a", "<think>\nx\n</think>\n\nHi", prompt, None),
        # text before and after a call: the reference keeps only the last piece of the implicit field
        export_report.Sample(
            "b", 'Hi <tool_call>{"name": "f", "arguments": {}}</tool_call> there', prompt, None
        ),
        export_report.Sample("c", "<tool_call>not json</tool_call>", prompt, None),  # both refuse it
    ]
    rep = export_report.family_report(fam, samples)
    for target in ex.TARGETS:
        res = rep.results[target]
        assert (res.same, res.total) == (2, 3), target
        assert [d[0] for d in res.differing] == ["b"]
    assert export_report.strict_equal({"a": 1}, {"a": 1}) and not export_report.strict_equal(
        {"a": 1}, {"a": 1.0}
    )
    assert not export_report.strict_equal([True], [1])


def test_no_family_verdict_is_hard_coded() -> None:
    source = (ROOT / "scripts" / "export_report.py").read_text(encoding="utf-8")
    for name in FAMILIES:
        if len(name) > 5:
            assert not re.search(rf"[\"']{re.escape(name)}[\"']", source), name

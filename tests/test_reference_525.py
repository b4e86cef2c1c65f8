"""The reference is transformers 5.25.0: what that version changed, and what docs/differences.md says.

* The pinned oracle is 5.25.0, and the benchmarks' baseline label says so.
* Every difference slug a conformance case uses has a row in docs/differences.md, every row names its
  tests, and every test a row names exists (so a row cannot outlive its difference silently).
* ``chunking-exact`` is still real in 5.25: the reference's result still depends on where the input is
  split for each input the row lists, while ours never does.
* What 5.25 changed in text mode (``value_parser_by``, union-string typing of ``json`` and
  ``python-call-list`` arguments, bound methods as tools) reads the same here; each case records what
  5.24 gave (5.24 itself is not a test dependency).
* The two token-id differences of 5.25 are real: it deletes a genuine U+FDD2 and decodes the generation
  apart from the prompt; ours keeps the one and decodes the other in the prompt's context.
* Where 5.24 reads a case differently from 5.23, the case's notes record what 5.23 gave.
"""

from __future__ import annotations

import copy
import fnmatch
import logging
import re
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt

try:
    from conformance.cases import CASES, RESULTS_523
except ImportError:  # pragma: no cover
    from tests.conformance.cases import CASES, RESULTS_523

reference = pytest.importorskip("transformers.utils.chat_parsing")
logging.getLogger("transformers").setLevel(logging.ERROR)

ROOT = Path(__file__).resolve().parent.parent
DIFFERENCES = (ROOT / "docs" / "differences.md").read_text(encoding="utf-8")


def test_the_oracle_is_transformers_5_25() -> None:
    assert version("transformers") == "5.25.0"


def test_benchmark_baseline_label() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _common
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert version("transformers") == _common.REFERENCE_BASELINE
    assert _common.reference_label() == "transformers 5.25.0"
    assert _common.reference_label("5.24.0") == "transformers 5.24.0 (baseline is 5.25.0)"


# ------------------------------------------------------------------------------ docs/differences.md


def _rows() -> dict[str, tuple[str, str]]:
    """slug -> (the row, the tests cell's file from the table header, or "")."""
    rows, header_file = {}, ""
    for line in DIFFERENCES.splitlines():
        if line.startswith("| slug |"):
            found_file = re.search(r"tests \(`([^`]+)`\)", line)
            header_file = found_file.group(1) if found_file else ""
        found = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if found:
            rows[found.group(1)] = (line, header_file)
    return rows


def test_the_intro_names_5_25() -> None:
    intro = DIFFERENCES.split("\n## ", 1)[0]
    assert "`transformers.utils.chat_parsing` in transformers 5.25" in intro
    assert "5.24" not in intro.split("Every intended difference", 1)[0]
    assert "New in 5.25" in intro


def test_every_slug_used_by_a_case_has_a_row() -> None:
    rows = _rows()
    used = {c.difference for c in CASES if c.difference} | {
        c.events_difference for c in CASES if c.events_difference
    }
    assert used - set(rows) == set()


def _tests_cell(line: str) -> str:
    return line.rstrip(" |").rsplit(" | ", 1)[-1]


def test_every_row_names_its_tests() -> None:
    for slug, (line, _) in _rows().items():
        assert "`" in _tests_cell(line), f"the row {slug!r} names no test"


def _defined(path: Path, dotted: str) -> bool:
    """Whether ``Class::name`` / ``name`` (``*`` allowed) is a test function or class in the file."""
    text = path.read_text(encoding="utf-8")
    names = set(re.findall(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", text, re.M))
    return all(any(fnmatch.fnmatchcase(n, part) for n in names) for part in dotted.split("::"))


def test_every_test_a_row_names_exists() -> None:
    case_ids = [c.id for c in CASES]
    for slug, (line, header_file) in _rows().items():
        cell = _tests_cell(line)
        files = [*re.findall(r"`([\w/.]+\.py)(?:::[^`]*)?`", cell), header_file]
        for ref in re.findall(r"`([^`]+)`", cell):
            if ref.endswith(".py") or ".py::" in ref:
                path, _, name = ref.partition("::")
                file = ROOT / (path if path.startswith("tests/") else f"tests/{path}")
                assert file.is_file(), f"row {slug!r}: no file {path}"
                assert not name or _defined(file, name), f"row {slug!r}: {ref} does not exist"
            elif "/" in ref:
                assert fnmatch.filter(case_ids, ref), f"row {slug!r}: no conformance case {ref}"
            elif ref.startswith("test_"):
                found = [
                    f
                    for f in files
                    if f and _defined(ROOT / (f if f.startswith("tests/") else f"tests/{f}"), ref)
                ]
                assert found, f"row {slug!r}: {ref} is in none of {files}"


def test_rows_for_differences_5_24_fixed_are_gone() -> None:
    rows = _rows()
    assert "close-captures" not in rows and "json-unquoted-keys" not in rows
    assert "merge_duplicates" not in rows.get("xml-inline-groups", ("", ""))[0]


def test_the_5_25_differences_have_rows() -> None:
    rows = _rows()
    assert "U+FDD2" in rows["control-token-marker"][0]
    assert "prompt" in rows["generation-in-context"][0]


def test_kept_on_purpose_says_how_5_25_types_unions() -> None:
    kept = DIFFERENCES.split("## Kept on purpose", 1)[1]
    assert '`["string", "integer"]` turns `"7"` into `7`' not in kept.replace("\n", " ").replace("  ", " ")
    assert "python-call-list" in kept and "xml-inline" in kept


def test_5_23_results_are_recorded_for_cases_whose_meaning_changed() -> None:
    by_id = {c.id: c for c in CASES}
    assert set(RESULTS_523) <= set(by_id)
    for case_id, result in RESULTS_523.items():
        assert result in by_id[case_id].notes and result.startswith("transformers 5.23: ")


# ------------------------------------------------------------------------------ chunking-exact

STILL_CHUNKING_DEPENDENT: list[tuple[dict[str, Any], str]] = [
    ({"r": {"open": "<r>", "close": ["STOP", "STOPPED"]}, "content": {}}, "<r>wait STOPPED here"),
    (
        {
            "calls": {"open": "<invoke>", "close_pattern": r"</invoke>(?:\s*</mm>)?", "repeats": True},
            "content": {},
        },
        "<invoke>a</invoke>\n</mm>done",
    ),
    ({"r": {"open": "<r>", "close_pattern": r"x(?!yz)"}, "content": {}}, "<r>axyz then x."),
    ({"r": {"open": "<r>", "close_pattern": r"abcd|c"}, "content": {}}, "<r>xabcdy"),
    ({"m": {"open": "<m>", "close_pattern": r"</m>|$"}, "content": {}}, "<m>x\nmore</m>after"),
]


def _stream(parser_class: Any, fields: dict[str, Any], pieces: list[str]) -> Any:
    parser = parser_class(copy.deepcopy({"start_anchor": "<A>", "fields": fields}), prefix="")
    for piece in pieces:
        parser.feed(piece)
    return dict(parser.finalize()[0])


@pytest.mark.parametrize(("fields", "text"), STILL_CHUNKING_DEPENDENT)
def test_chunking_exact_is_still_a_difference(fields: dict[str, Any], text: str) -> None:
    ours_whole = _stream(rt.ResponseParser, fields, [text])
    ref_whole = _stream(reference.ResponseParser, fields, [text])
    assert ours_whole == ref_whole  # whole, both read it alike
    splits = [[text[i : i + n] for i in range(0, len(text), n)] for n in (1, 2, 3, 5)]
    assert all(_stream(rt.ResponseParser, fields, pieces) == ours_whole for pieces in splits)
    assert any(_stream(reference.ResponseParser, fields, pieces) != ref_whole for pieces in splits)


# ------------------------------------------------------------------------------ what 5.25 changed (text)


def _strict(a: Any, b: Any) -> bool:
    """Equality that also compares scalar types (``7 != "7"``, ``1 != True``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strict(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strict(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _both(template: dict[str, Any], text: str, tools: list[Any] | None = None) -> tuple[Any, Any]:
    ref = reference.parse_response(text, copy.deepcopy(template), prefix="", tools=copy.deepcopy(tools))
    ours = rt.parse_response(text, copy.deepcopy(template), prefix="", tools=copy.deepcopy(tools))
    parser = rt.ResponseParser(copy.deepcopy(template), prefix="", tools=copy.deepcopy(tools))
    for ch in text:
        parser.feed(ch)
    streamed = parser.finalize()[0]
    assert _strict(dict(ours), dict(streamed)), f"streamed {streamed!r} != whole {ours!r}"
    return dict(ref), dict(ours)


def _arguments(message: dict[str, Any]) -> Any:
    return message["tool_calls"][0]["function"]["arguments"]


_DSML_TAG = (
    r'<｜DSML｜parameter name="(?P<key>[^"]+)"(?: string="(?P<string>true|false)")?>(?P<value>.*?)'
    r"</｜DSML｜parameter>"
)


def _dsml(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "start_anchor": "<A>",
        "fields": {
            "tool_calls": {
                "open_pattern": r'<｜DSML｜invoke name="(?P<name>[^"]+)">',
                "close": "</｜DSML｜invoke>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {"tag_pattern": _DSML_TAG, **args},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {},
        },
    }


def _param(key: str, value: str, string: str | None) -> str:
    attr = f' string="{string}"' if string is not None else ""
    return f'<｜DSML｜parameter name="{key}"{attr}>{value}</｜DSML｜parameter>'


def _invoke(*params: str) -> str:
    return '<｜DSML｜invoke name="f">' + "".join(params) + "</｜DSML｜invoke>"


_BY_STRING = {"value_parser_by": {"group": "string", "parsers": {"false": {"name": "json"}}}}
_F_TOOL = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "array"}, "b": {"type": "integer"}},
            },
        },
    }
]

# (id, content_args, text, tools, 5.25's arguments, what 5.24 gave)
VALUE_PARSER_BY: list[tuple[str, dict[str, Any], str, Any, Any, str]] = [
    (
        "picks-per-tag",
        _BY_STRING,
        _invoke(_param("a", "[1, 2]", "false"), _param("b", "7", "true")),
        None,
        {"a": [1, 2], "b": "7"},
        "{'a': '[1, 2]', 'b': '7'} (the key ignored)",
    ),
    (
        "no-schema-typing",
        _BY_STRING,
        _invoke(_param("a", "[1, 2]", "false"), _param("b", "7", "true")),
        _F_TOOL,
        {"a": [1, 2], "b": "7"},
        "{'a': [1, 2], 'b': 7} (typed by the schema)",
    ),
    (
        "fallback-to-value-parser",
        {"value_parser": {"name": "int"}, **_BY_STRING},
        _invoke(_param("a", "[1]", "false"), _param("b", "7", "true"), _param("c", "8", None)),
        None,
        {"a": [1], "b": 7, "c": 8},
        "ValueError (int: '[1]')",
    ),
    (
        "with-merge-duplicates",
        {**_BY_STRING, "merge_duplicates": True},
        _invoke(_param("a", "1", "false"), _param("a", "2", "true"), _param("a", "[3]", "false")),
        None,
        {"a": [1, "2", [3]]},
        "{'a': ['1', '2', '[3]']}",
    ),
]


@pytest.mark.parametrize(
    ("args", "text", "tools", "expected", "was_524"),
    [pytest.param(*row[1:], id=row[0]) for row in VALUE_PARSER_BY],
)
def test_value_parser_by(args: dict[str, Any], text: str, tools: Any, expected: Any, was_524: str) -> None:
    ref, ours = _both(_dsml(args), text, tools)
    assert _strict(_arguments(ref), expected), f"5.25 gives {_arguments(ref)!r} (5.24: {was_524})"
    assert _strict(_arguments(ours), _arguments(ref)), f"ours {_arguments(ours)!r}, 5.25 {_arguments(ref)!r}"


def test_kv_lines_ignores_value_parser_by() -> None:
    template = {
        "start_anchor": "<A>",
        "fields": {"v": {"open": "<v>", "close": "</v>", "content": "kv-lines", "content_args": _BY_STRING}},
    }
    ref, ours = _both(template, "<v>a: [1]\nb: 2</v>")
    assert _strict(ours, ref) and ref["v"] == {"a": "[1]", "b": "2"}


_JSON_CALLS = {
    "start_anchor": "<A>",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {},
    },
}
_CALL_LIST = {
    "start_anchor": "<A>",
    "fields": {
        "tool_calls": {
            "open": "<calls>",
            "close": "</calls>",
            "content": "python-call-list",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
        },
        "content": {},
    },
}
_XML_CALLS = {
    "start_anchor": "<A>",
    "fields": {
        "tool_calls": {
            "open_pattern": r"<function=(?P<name>\w+)>",
            "close": "</function>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>\w+)>(?P<value>.*?)</parameter>"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {},
    },
}


def _tool(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": schema}}},
        }
    ]


# (id, schema, the argument as JSON, 5.25's value, what 5.24 gave)
UNION_TYPING: list[tuple[str, dict[str, Any], str, Any, Any]] = [
    ("type-list-string-first", {"type": ["string", "integer"]}, '"7"', "7", 7),
    ("type-list-string-last", {"type": ["integer", "string"]}, '"7"', "7", 7),
    ("any-of", {"anyOf": [{"type": "string"}, {"type": "integer"}]}, '"7"', "7", 7),
    ("one-of", {"oneOf": [{"type": "integer"}, {"type": "string"}]}, '"7"', "7", 7),
    ("nullable-string", {"type": "string", "nullable": True}, '"null"', "null", None),
    ("array-or-string", {"type": ["array", "string"]}, '"[1, 2]"', "[1, 2]", [1, 2]),
    ("boolean-or-string", {"type": ["boolean", "string"]}, '"true"', "true", True),
]


def _json_call(argument: str) -> str:
    return '<tool_call>{"name": "f", "arguments": {"x": ' + argument + "}}</tool_call>"


@pytest.mark.parametrize(
    ("schema", "argument", "expected", "was_524"), [pytest.param(*row[1:], id=row[0]) for row in UNION_TYPING]
)
def test_json_arguments_a_string_schema_admits_stay_strings(
    schema: dict[str, Any], argument: str, expected: Any, was_524: Any
) -> None:
    ref, ours = _both(_JSON_CALLS, _json_call(argument), _tool(schema))
    assert _strict(_arguments(ref), {"x": expected}), f"5.25 gives {_arguments(ref)!r} (5.24: {was_524!r})"
    assert _strict(_arguments(ours), _arguments(ref)), f"ours {_arguments(ours)!r}, 5.25 {_arguments(ref)!r}"


def test_python_call_list_arguments_a_string_schema_admits_stay_strings() -> None:
    ref, ours = _both(_CALL_LIST, "<calls>[f(x='7')]</calls>", _tool({"type": ["string", "integer"]}))
    assert _strict(_arguments(ref), {"x": "7"})  # 5.24: {'x': 7}
    assert _strict(_arguments(ours), _arguments(ref))


def test_only_json_and_python_call_list_keep_union_strings() -> None:
    """The contrast: schemas without a string still cast everywhere, and xml-inline casts unions as before."""
    union = _tool({"type": ["string", "integer"]})
    ref, ours = _both(_XML_CALLS, "<function=f><parameter=x>7</parameter></function>", union)
    assert _strict(_arguments(ref), {"x": 7}) and _strict(_arguments(ours), {"x": 7})
    for schema in ({"type": ["integer", "null"]}, {"type": "integer"}):
        ref, ours = _both(_JSON_CALLS, _json_call('"7"'), _tool(schema))
        assert _strict(_arguments(ref), {"x": 7}) and _strict(_arguments(ours), {"x": 7})
    ref, ours = _both(_JSON_CALLS, _json_call('"7"'), union)  # the part 5.25 changed (5.24: 7)
    assert _strict(_arguments(ours), _arguments(ref)) and _strict(_arguments(ref), {"x": "7"})


def test_python_callable_unions_keep_strings() -> None:
    def lookup(item_id: int | str, label: str | None = None) -> str:
        """Look an item up.

        Args:
            item_id: The item.
            label: A label.
        """
        return ""

    text = '<tool_call>{"name": "lookup", "arguments": {"item_id": "42", "label": "None"}}</tool_call>'
    ref, ours = _both(_JSON_CALLS, text, [lookup])
    # 5.24: {'item_id': 42, 'label': None}
    assert _strict(_arguments(ref), {"item_id": "42", "label": "None"})
    assert _strict(_arguments(ours), _arguments(ref))


class Thermostat:
    def set_temp(self: Thermostat, celsius: int) -> str:
        """Set the temperature.

        Args:
            celsius: The target temperature.
        """
        return f"{celsius}"


def test_a_bound_method_whose_self_is_annotated_is_a_tool() -> None:
    tool = Thermostat().set_temp
    text = '<tool_call>{"name": "set_temp", "arguments": {"celsius": "21"}}</tool_call>'
    ref, ours = _both(_JSON_CALLS, text, [tool])  # 5.24 (and ours before): an error for `self`
    assert _strict(_arguments(ref), {"celsius": 21})
    assert _strict(_arguments(ours), _arguments(ref))


# ------------------------------------------------------------------------------ token ids (the differences)

_CONTENT_ONLY = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {"content": {"close": "<|im_end|>", "content_args": {"strip": False}}},
}
_PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def _ids(kind: str, generation: str) -> tuple[Any, list[int], list[int]]:
    """A local tokenizer of ``kind``, the prompt's ids and the generation's (encoded with the prompt)."""
    pytest.importorskip("tokenizers")
    import hf_fixtures as fx

    tok = fx.hf_tokenizer(kind, chat_template=None)
    prefix = fx.encode(tok, _PROMPT)
    full = fx.encode(tok, _PROMPT + generation)
    assert full[: len(prefix)] == prefix
    return tok, prefix, full[len(prefix) :]


@pytest.mark.parametrize("kind", ["byte_level", "sp_llama"])
def test_a_genuine_fdd2_survives(kind: str) -> None:
    """control-token-marker: 5.25 deletes every U+FDD2 of an id-parsed output; ours keeps what was written."""
    import response_templates.hf as rthf

    tok, prefix, gen = _ids(kind, "a\ufdd2b<|im_end|>")
    assert reference.parse_response(gen, _CONTENT_ONLY, prefix=prefix, tokenizer=tok)["content"] == "ab"
    assert rthf.parse_response(tok, gen, prefix=prefix, template=_CONTENT_ONLY)["content"] == "a\ufdd2b"


def test_the_generation_decodes_in_the_prompts_context() -> None:
    """generation-in-context: 5.25 decodes the generation as a sequence of its own, so a decoder that strips
    a leading space at the start of a sequence (Llama 2's) drops the generation's first space; ours decodes
    the generation as the continuation of the prompt, as the text the model wrote."""
    import response_templates.hf as rthf

    tok, prefix, gen = _ids("sp_llama", " Hello world<|im_end|>")
    in_context = tok.decode(prefix + gen, skip_special_tokens=False)[len(_PROMPT) :]
    assert in_context == " Hello world<|im_end|>"
    assert (
        reference.parse_response(gen, _CONTENT_ONLY, prefix=prefix, tokenizer=tok)["content"] == "Hello world"
    )
    assert rthf.parse_response(tok, gen, prefix=prefix, template=_CONTENT_ONLY)["content"] == " Hello world"

"""One behaviour test per rule of docs/spec.md, sections 2-8 (section 9, errors, is in
``test_errors.py``). The rules cut across modules (loading, routing, values, assembly), so this suite sits at
the top of ``tests/``.

Tests are grouped by section of docs/spec.md; each docstring restates the rule it checks. Every assertion
compares exact values, so a test fails as soon as the behaviour drifts from the rule.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from typing import Any

import pytest

import response_templates as rt

ANCHOR = "<|im_start|>assistant\n"


def tpl(fields: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A template with the ChatML anchor (unless ``top`` overrides it) and the given fields."""
    template: dict[str, Any] = {"start_anchor": ANCHOR, "fields": fields}
    template.update(top)
    return template


def parse(fields: dict[str, Any], text: str, prefix: str = "", **kwargs: Any) -> Any:
    return rt.parse_response(text, tpl(fields), prefix=prefix, **kwargs)


def stream(template: Any, chunks: list[str], prefix: str = "", **kwargs: Any) -> tuple[list[list[dict]], Any]:
    """Feed ``chunks`` one by one; return the events of each feed() and finalize()'s result."""
    parser = rt.ResponseParser(template, prefix=prefix, **kwargs)
    per_feed = [parser.feed(chunk) for chunk in chunks]
    return per_feed, parser.finalize()


def closes(events: list[dict]) -> list[tuple[str, Any]]:
    return [(e["field"], e["value"]) for e in events if e["type"] == "region_close"]


def open_(field: str) -> dict:
    return {"type": "region_open", "field": field}


def chunk(field: str, text: str, dirty: bool = False) -> dict:
    return {"type": "region_chunk", "field": field, "text": text, "dirty": dirty}


def close(field: str, value: Any) -> dict:
    return {"type": "region_close", "field": field, "value": value}


# The running example: Qwen-style reasoning, JSON tool calls and an implicit content field.
QWEN = tpl(
    {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
    defaults={"role": "assistant"},
)
GREET = (
    "<think>\nI should greet the user\n</think>\n\n"
    '<tool_call>{"name": "greet_user", "arguments": {"greeting": "Hi!"}}</tool_call><|im_end|>'
)
GREET_MESSAGE = {
    "role": "assistant",
    "reasoning_content": "I should greet the user",
    "tool_calls": [
        {"type": "function", "function": {"name": "greet_user", "arguments": {"greeting": "Hi!"}}}
    ],
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "metric": {"type": "boolean"},
            },
        },
    },
}

# Tool calls as `<call name=NAME>key: value lines</call>`: every argument arrives as a string.
KV_CALLS = tpl(
    {
        "tool_calls": {
            "open_pattern": r"<call name=(?P<name>\w+)>",
            "close": "</call>",
            "repeats": True,
            "content": "kv-lines",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {},
    }
)


def kv_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


# ===================================================================================================
# §2 Entry points
# ===================================================================================================


class TestSection2EntryPoints:
    def test_parse_response_single_text_returns_one_message(self) -> None:
        """parse_response(text, template, prefix=...) parses one complete generation into one dict."""
        assert rt.parse_response(GREET, QWEN, prefix="") == GREET_MESSAGE

    def test_batch_with_one_prefix_broadcasts_it(self) -> None:
        """A list of texts gives a list of messages; a single prefix applies to every item."""
        prefix = f"<|im_start|>user\nhi<|im_end|>\n{ANCHOR}<think>\n"
        out = rt.parse_response(["a</think>x", "b</think>y"], QWEN, prefix=prefix)
        assert out == [
            {"role": "assistant", "reasoning_content": "a", "content": "x"},
            {"role": "assistant", "reasoning_content": "b", "content": "y"},
        ]

    def test_batch_with_one_prefix_per_item(self) -> None:
        """With a list of prefixes, item i is parsed with prefix i."""
        out = rt.parse_response(["a</think>x", "b</think>y"], QWEN, prefix=[ANCHOR + "<think>", ANCHOR])
        assert out == [
            {"role": "assistant", "reasoning_content": "a", "content": "x"},
            {"role": "assistant", "content": "b</think>y"},
        ]

    def test_batch_prefix_count_mismatch_is_an_error(self) -> None:
        """One prefix per item means exactly as many prefixes as texts; otherwise an error."""
        with pytest.raises(rt.ResponseTemplateError) as info:
            rt.parse_response(["a", "b", "c"], QWEN, prefix=["", ""])
        assert type(info.value) is rt.ResponseTemplateError
        assert "3" in str(info.value) and "2" in str(info.value)

    def test_batch_messages_are_independent_objects(self) -> None:
        """Each message of a batch is its own dict (defaults are copied, not shared)."""
        out = rt.parse_response(["x", "y"], tpl({"c": {}}, defaults={"meta": {"tags": []}}), prefix="")
        out[0]["meta"]["tags"].append("changed")
        assert out[1] == {"meta": {"tags": []}, "c": "y"}

    @pytest.mark.parametrize("kwargs", [{}, {"prefix": None}])
    def test_parse_response_requires_prefix(self, kwargs: dict[str, Any]) -> None:
        """prefix is required: omitting it (or None) is an error that explains why and how to opt out."""
        with pytest.raises(rt.ResponseTemplateError) as info:
            rt.parse_response(GREET, QWEN, **kwargs)
        message = str(info.value)
        assert type(info.value) is rt.ResponseTemplateError
        assert "prefix is required" in message
        assert 'prefix=""' in message
        assert "chat template" in message  # the why: templates write part of the assistant turn

    @pytest.mark.parametrize("kwargs", [{}, {"prefix": None}])
    def test_response_parser_requires_prefix(self, kwargs: dict[str, Any]) -> None:
        """The streaming parser has the same rule: no prefix, no parser."""
        with pytest.raises(rt.ResponseTemplateError) as info:
            rt.ResponseParser(QWEN, **kwargs)
        assert 'prefix=""' in str(info.value)

    def test_empty_prefix_opts_out(self) -> None:
        """prefix="" opts out explicitly: the generation alone is parsed, nothing is injected."""
        parser = rt.ResponseParser(QWEN, prefix="")
        assert parser.initial_events == []
        assert parser.prefix_length == 0
        assert parser.feed("a</think>b") == [open_("content"), chunk("content", "a</think>b")]
        assert parser.finalize()[0] == {"role": "assistant", "content": "a</think>b"}

    def test_streaming_matches_one_shot(self) -> None:
        """ResponseParser: initial_events, feed per chunk, finalize -> (message, final_events)."""
        parser = rt.ResponseParser(QWEN, prefix=ANCHOR + "<think>\n")
        assert parser.initial_events == [open_("reasoning_content"), chunk("reasoning_content", "\n")]
        for piece in ["I should greet", " the user\n</think>\n\n", '<tool_call>{"name": "greet_user", ']:
            parser.feed(piece)
        parser.feed('"arguments": {"greeting": "Hi!"}}</tool_call><|im_end|>')
        message, final_events = parser.finalize()
        assert message == GREET_MESSAGE
        assert final_events == []

    def test_feed_after_finalize_is_a_state_error(self) -> None:
        """One parser follows one generation: feed() after finalize() raises ParserStateError."""
        parser = rt.ResponseParser(QWEN, prefix="")
        parser.feed("x")
        parser.finalize()
        with pytest.raises(rt.ParserStateError) as info:
            parser.feed("more")
        assert isinstance(info.value, RuntimeError)
        assert isinstance(info.value, rt.ResponseTemplateError)

    def test_finalize_twice_is_a_state_error(self) -> None:
        """finalize() twice raises ParserStateError (a RuntimeError too)."""
        parser = rt.ResponseParser(QWEN, prefix="")
        parser.finalize()
        with pytest.raises(RuntimeError) as info:
            parser.finalize()
        assert isinstance(info.value, rt.ParserStateError)

    @pytest.mark.parametrize("as_bare_function", [False, True])
    def test_tools_as_json_schema_dicts(self, as_bare_function: bool) -> None:
        """tools accepts {"type": "function", "function": {...}} and the bare function dict."""
        tool = WEATHER_TOOL["function"] if as_bare_function else WEATHER_TOOL
        text = "<call name=get_weather>city: 12\ndays: 3\nmetric: false</call>"
        assert rt.parse_response(text, KV_CALLS, prefix="", tools=[tool]) == {
            "tool_calls": [kv_call("get_weather", {"city": "12", "days": 3, "metric": False})]
        }

    def test_tools_as_python_callables(self) -> None:
        """tools accepts typed functions with a Google-style docstring, converted to a JSON schema."""

        def get_weather(city: str, days: int, ratio: float, metric: bool = True) -> str:
            """Get the weather.

            Args:
                city: the city
                days: how many days
                ratio: a ratio
                metric: use metric units
            """
            return ""

        text = "<call name=get_weather>city: 12\ndays: 3\nratio: 2\nmetric: 0</call>"
        message = rt.parse_response(text, KV_CALLS, prefix="", tools=[get_weather])
        assert message == {
            "tool_calls": [kv_call("get_weather", {"city": "12", "days": 3, "ratio": 2, "metric": False})]
        }
        assert type(message["tool_calls"][0]["function"]["arguments"]["days"]) is int

    def test_streaming_parser_takes_tools(self) -> None:
        """ResponseParser(template, prefix=..., tools=...) types arguments like parse_response."""
        _, (message, _) = stream(
            KV_CALLS, ["<call name=get_weather>days: 0", "7</call>"], tools=[WEATHER_TOOL]
        )
        assert message == {"tool_calls": [kv_call("get_weather", {"days": 7})]}


# ===================================================================================================
# §3 Template format
# ===================================================================================================

OK_FIELD = {"open": "<a>", "close": "</a>"}


def load_error(template: Any) -> rt.TemplateError:
    with pytest.raises(rt.TemplateError) as info:
        rt.load_template(template)
    return info.value


def field_error(spec: dict[str, Any], **others: Any) -> rt.TemplateError:
    return load_error(tpl({"f": spec, **others}))


class TestSection3TemplateFormat:
    # -- top level --------------------------------------------------------------------------------

    def test_unknown_top_level_key(self) -> None:
        """Any top-level key outside fields/defaults/start_anchor(_pattern)/version is an error."""
        err = load_error(tpl({"f": OK_FIELD}, response_format=1))
        assert (err.field, err.key) == (None, "response_format")
        assert "unknown top-level key" in str(err)

    def test_missing_start_anchor(self) -> None:
        """Exactly one of start_anchor / start_anchor_pattern is required: none is an error."""
        err = load_error({"fields": {"f": OK_FIELD}})
        assert (err.field, err.key) == (None, "start_anchor")
        assert "required" in str(err)

    def test_both_start_anchors(self) -> None:
        """Exactly one of start_anchor / start_anchor_pattern: both is an error."""
        err = load_error(tpl({"f": OK_FIELD}, start_anchor_pattern="x"))
        assert (err.field, err.key) == (None, "start_anchor")
        assert "not both" in str(err)

    @pytest.mark.parametrize("version", [2, 0, "1", True, None])
    def test_version_must_be_1(self, version: Any) -> None:
        """version is optional and must be 1 (true is not 1, nor is the string "1")."""
        err = load_error(tpl({"f": OK_FIELD}, version=version))
        assert (err.field, err.key) == (None, "version")

    def test_version_1_accepted(self) -> None:
        """version 1 is the supported version."""
        assert rt.parse_response("<a>x</a>", tpl({"f": OK_FIELD}, version=1), prefix="") == {"f": "x"}

    @pytest.mark.parametrize("fields", [{}, [], "content", None])
    def test_fields_must_be_a_non_empty_dict(self, fields: Any) -> None:
        """fields is required and is a non-empty dict."""
        err = load_error({"start_anchor": ANCHOR, "fields": fields})
        assert (err.field, err.key) == (None, "fields")

    def test_fields_missing(self) -> None:
        """fields is required."""
        err = load_error({"start_anchor": ANCHOR})
        assert (err.field, err.key) == (None, "fields")

    def test_defaults_must_be_a_dict(self) -> None:
        """defaults is a dict copied into every output."""
        err = load_error(tpl({"f": OK_FIELD}, defaults=["role"]))
        assert (err.field, err.key) == (None, "defaults")

    # -- field keys ---------------------------------------------------------------------------------

    def test_unknown_field_key(self) -> None:
        """Any field key outside the table is an error naming the field and the key."""
        err = field_error({**OK_FIELD, "strip": True})
        assert (err.field, err.key) == ("f", "strip")
        assert "'f'" in str(err) and "'strip'" in str(err)

    def test_open_and_open_pattern_together(self) -> None:
        """open and open_pattern are mutually exclusive."""
        err = field_error({"open": "<a>", "open_pattern": "<a>", "close": "</a>"})
        assert (err.field, err.key) == ("f", "open_pattern")

    def test_close_and_close_pattern_together(self) -> None:
        """close and close_pattern are mutually exclusive."""
        err = field_error({"open": "<a>", "close": "</a>", "close_pattern": "</a>"})
        assert (err.field, err.key) == ("f", "close_pattern")

    @pytest.mark.parametrize("key", ["open", "close"])
    def test_empty_literal(self, key: str) -> None:
        """An empty literal delimiter is an error."""
        err = field_error({**OK_FIELD, key: ""})
        assert (err.field, err.key) == ("f", key)

    @pytest.mark.parametrize("key", ["open", "close"])
    def test_empty_literal_inside_a_list(self, key: str) -> None:
        """An empty string inside a literal list is an empty literal too."""
        err = field_error({**OK_FIELD, key: ["<x>", ""]})
        assert (err.field, err.key) == ("f", key)

    @pytest.mark.parametrize("key", ["open", "close"])
    def test_empty_list(self, key: str) -> None:
        """An empty literal list is an error."""
        err = field_error({**OK_FIELD, key: []})
        assert (err.field, err.key) == ("f", key)

    @pytest.mark.parametrize("item", [3, None, ["<x>"]])
    def test_non_string_list_item(self, item: Any) -> None:
        """A literal list holds strings only."""
        err = field_error({"open": ["<a>", item], "close": "</a>"})
        assert (err.field, err.key) == ("f", "open")

    @pytest.mark.parametrize("key", ["open_pattern", "close_pattern"])
    def test_regex_that_does_not_compile(self, key: str) -> None:
        """A pattern that does not compile is an error naming the field and key."""
        spec = {"open": "<a>", "close": "</a>"}
        del spec[key.removesuffix("_pattern")]
        spec[key] = "(<unclosed"
        err = field_error(spec)
        assert (err.field, err.key) == ("f", key)

    def test_start_anchor_pattern_that_does_not_compile(self) -> None:
        """A start_anchor_pattern that does not compile names the top-level key."""
        err = load_error({"start_anchor_pattern": "(", "fields": {"f": OK_FIELD}})
        assert (err.field, err.key) == (None, "start_anchor_pattern")

    def test_empty_start_anchor_names_top_level_key(self) -> None:
        """start_anchor is a top-level key: its error names no field."""
        err = load_error(tpl({"f": OK_FIELD}, start_anchor=""))
        assert (err.field, err.key) == (None, "start_anchor")
        assert "field ''" not in str(err)

    def test_unknown_content_parser(self) -> None:
        """content must name a known parser."""
        err = field_error({**OK_FIELD, "content": "yaml"})
        assert (err.field, err.key) == ("f", "content")
        assert "'yaml'" in str(err)

    @pytest.mark.parametrize(
        ("content", "args"),
        [
            ("json", {"unquoted_keys": "yes"}),
            ("text", {"strip": "yes"}),
            ("bool", {"strip": 0}),
            ("xml-inline", {}),  # tag_pattern is required
            ("xml-inline", {"tag_pattern": "<(?P<value>\\w+)>"}),  # no key group
            ("kv-lines", {"kv_sep": ""}),
            ("json", ["unquoted_keys"]),
        ],
    )
    def test_bad_content_args(self, content: str, args: Any) -> None:
        """An ill-typed content argument is an error naming content_args (an unknown one is ignored)."""
        err = field_error({**OK_FIELD, "content": content, "content_args": args})
        assert (err.field, err.key) == ("f", "content_args")

    def test_join_without_repeats(self) -> None:
        """join needs repeats."""
        err = field_error({**OK_FIELD, "join": "\n"})
        assert (err.field, err.key) == ("f", "join")

    def test_join_not_a_string(self) -> None:
        """join is a string."""
        err = field_error({**OK_FIELD, "repeats": True, "join": 1})
        assert (err.field, err.key) == ("f", "join")

    def test_transform_each_without_transform(self) -> None:
        """transform_each needs a transform."""
        err = field_error({**OK_FIELD, "content": "json", "transform_each": True})
        assert (err.field, err.key) == ("f", "transform_each")

    @pytest.mark.parametrize("text", ["call {content}", "{content}!", "{a}{b}"])
    def test_transform_string_mixing_placeholder_and_text(self, text: str) -> None:
        """Transform strings are not f-strings: a placeholder mixed with other text is rejected."""
        err = field_error({**OK_FIELD, "transform": {"x": text}})
        assert (err.field, err.key) == ("f", "transform")

    @pytest.mark.parametrize(
        ("spec", "key"),
        [
            ({"open_pattern": r"<a (?P<name>\w+)>", "close": "</a>"}, "open_pattern"),
            ({"open": "<a>", "close_pattern": r"</a (?P<name>\w+)>"}, "close_pattern"),
        ],
    )
    def test_named_group_without_transform(self, spec: dict[str, Any], key: str) -> None:
        """A named group in a field without a transform would be lost silently: rejected."""
        err = field_error(spec)
        assert (err.field, err.key) == ("f", key)

    def test_unnamed_groups_need_no_transform(self) -> None:
        """Only named groups are captures; plain groups are fine without a transform."""
        assert parse({"f": {"open_pattern": r"<a (\w+)>", "close": "</a>"}}, "<a x>v</a>") == {"f": "v"}

    def test_more_than_one_implicit_field(self) -> None:
        """At most one field may lack open/open_pattern."""
        err = load_error(tpl({"content": {}, "other": {"close": "x"}}))
        assert (err.field, err.key) == (None, "fields")
        assert "'content'" in str(err) and "'other'" in str(err)

    @pytest.mark.parametrize("key", ["repeats", "optional", "transform_each"])
    @pytest.mark.parametrize("value", [1, "true", None])
    def test_flags_must_be_booleans(self, key: str, value: Any) -> None:
        """repeats / optional / transform_each are booleans."""
        spec = {**OK_FIELD, key: value, "transform": "{content}"}
        err = field_error(spec)
        assert (err.field, err.key) == ("f", key)

    def test_placeholder_that_can_never_resolve(self) -> None:
        """[ours] A placeholder naming neither content nor a named group is rejected at load time."""
        err = field_error({**OK_FIELD, "transform": {"name": "{name}", "x": "{content}"}})
        assert (err.field, err.key) == ("f", "transform")
        assert "'name'" in str(err)

    def test_placeholder_of_a_named_group_is_accepted(self) -> None:
        """Named groups of open_pattern and close_pattern are transform variables."""
        spec = {"open_pattern": r"<(?P<a>\w)>", "close_pattern": r"</(?P<b>\w)>", "transform": ["{a}", "{b}"]}
        assert parse({"f": spec}, "<x>body</y>") == {"f": ["x", "y"]}

    @pytest.mark.parametrize("pattern", ["a*", "(?:<a>)?", "$", "x?y?"])
    def test_open_pattern_matching_empty_string(self, pattern: str) -> None:
        """[ours] An open pattern that can match the empty string could open anywhere: rejected."""
        err = field_error({"open_pattern": pattern, "close": "</a>"})
        assert (err.field, err.key) == ("f", "open_pattern")

    @pytest.mark.parametrize("pattern", ["x?", "\\s*", "(?:<end>)?"])
    def test_implicit_close_matching_empty_string(self, pattern: str) -> None:
        """[ours] The implicit field's close pattern must not match the empty string."""
        err = field_error({"close_pattern": pattern})
        assert (err.field, err.key) == ("f", "close_pattern")

    @pytest.mark.parametrize("pattern", ["(?m)^<a>", "(?x)< a >", "(?m:^<a>)", "(?mi)<a>"])
    def test_inline_multiline_and_verbose_flags_rejected(self, pattern: str) -> None:
        """[ours] Inline (?m)/(?x) would change DOTALL/no-MULTILINE semantics: rejected."""
        err = field_error({"open_pattern": pattern, "close": "</a>"})
        assert (err.field, err.key) == ("f", "open_pattern")

    def test_backslash_G_rejected(self) -> None:
        r"""[ours] \G depends on where a search starts: rejected."""
        err = field_error({"open": "<a>", "close_pattern": r"\G</a>"})
        assert (err.field, err.key) == ("f", "close_pattern")
        assert r"\G" in str(err)

    def test_harmless_inline_flags_accepted(self) -> None:
        """(?i) and (?s) do not change the stream semantics and are accepted."""
        assert parse({"f": {"open_pattern": "(?i)<A>", "close_pattern": "(?s)</a>"}}, "<a>v</a>") == {
            "f": "v"
        }

    # -- defaults and empty values ------------------------------------------------------------------

    def test_defaults_copied_and_always_present(self) -> None:
        """defaults are copied into every output and always kept, even when a field is empty."""
        template = tpl({"content": {}, "r": OK_FIELD}, defaults={"role": "assistant", "content": ""})
        assert rt.parse_response("", template, prefix="") == {"role": "assistant", "content": ""}
        assert rt.parse_response("hi", template, prefix="") == {"role": "assistant", "content": "hi"}

    def test_empty_values_dropped(self) -> None:
        """Keys not in defaults are dropped when the field captured None, "", [] or {}."""
        template = tpl(
            {
                "text": {"open": "<t>", "close": "</t>"},
                "list": {"open": "<l>", "close": "</l>", "repeats": True},
                "obj": {"open": "<o>", "close": "</o>", "content": "json"},
                "nul": {"open": "<n>", "close": "</n>", "content": "json"},
                "arr": {"open": "<a>", "close": "</a>", "content": "json"},
                "zero": {"open": "<z>", "close": "</z>", "content": "int"},
            }
        )
        text = "<t> \n </t><o>{}</o><n>null</n><a>[]</a><z>0</z>"
        assert rt.parse_response(text, template, prefix="") == {"zero": 0}

    def test_text_outside_regions_discarded_without_implicit_field(self) -> None:
        """With no implicit field, text outside every region is discarded."""
        assert parse({"f": OK_FIELD}, "before<a>x</a>after") == {"f": "x"}

    # -- compiled templates -------------------------------------------------------------------------

    def test_load_template_returns_reusable_template(self) -> None:
        """A compiled template parses any number of generations, each time the same way."""
        template = rt.load_template(QWEN)
        assert isinstance(template, rt.ResponseTemplate)
        first = rt.parse_response(GREET, template, prefix="")
        first["tool_calls"][0]["function"]["arguments"]["greeting"] = "changed"
        first["role"] = "changed"
        assert rt.parse_response(GREET, template, prefix="") == GREET_MESSAGE
        assert rt.load_template(template) is template

    def test_compiled_template_is_immutable(self) -> None:
        """A compiled template cannot be modified."""
        template = rt.load_template(QWEN)
        with pytest.raises(dataclasses.FrozenInstanceError):
            template.fields = ()  # type: ignore[misc]
        with pytest.raises(TypeError):
            template.by_name["content"] = None  # type: ignore[index]

    def test_mutating_the_source_dict_has_no_effect(self) -> None:
        """Changing the template dict after loading does not change the compiled template."""
        data = copy.deepcopy(QWEN)
        template = rt.load_template(data)
        data["fields"]["tool_calls"]["transform"]["type"] = "mutated"
        data["fields"]["reasoning_content"]["open"] = "<reason>"
        data["defaults"]["role"] = "mutated"
        del data["fields"]["content"]
        assert rt.parse_response(GREET, template, prefix="") == GREET_MESSAGE
        # ...and the mutated dict, parsed directly, is a different template (no stale cache).
        assert rt.parse_response("<reason>r</think>", data, prefix="") == {
            "role": "mutated",
            "reasoning_content": "r",
        }

    def test_json_string_template(self) -> None:
        """A template may be given as a JSON string (as stored in tokenizer_config.json)."""
        assert rt.parse_response(GREET, json.dumps(QWEN), prefix="") == GREET_MESSAGE
        assert rt.load_template(json.dumps(QWEN)).to_dict() == QWEN

    def test_invalid_json_string_template(self) -> None:
        """A JSON string that does not parse is a TemplateError."""
        with pytest.raises(rt.TemplateError):
            rt.load_template('{"fields": ')


# ===================================================================================================
# §4 Matching
# ===================================================================================================


class TestSection4Matching:
    def test_dotall(self) -> None:
        """Patterns are DOTALL: `.` matches a newline."""
        assert parse({"f": {"open_pattern": "<a .*?>", "close_pattern": "</a.>"}}, "<a x\ny>v</a\n>") == {
            "f": "v"
        }

    def test_no_multiline_caret(self) -> None:
        """No MULTILINE: `^` matches only at the start of the stream, not after a newline."""
        fields = {"h": {"open_pattern": "^#", "close": "\n"}, "c": {}}
        assert parse(fields, "x\n#h\n") == {"c": "x\n#h"}
        assert parse(fields, "#h\nrest") == {"h": "h", "c": "rest"}

    def test_no_multiline_caret_after_long_text(self) -> None:
        """`^` stays anchored to the stream start even deep into a long stream fed in pieces."""
        fields = {"h": {"open_pattern": "^#", "close": "\n"}, "c": {}}
        text = "x" * 3000 + "\n#g\n"
        parser = rt.ResponseParser(tpl(fields), prefix="")
        for i in range(0, len(text), 7):
            parser.feed(text[i : i + 7])
        assert parser.finalize()[0] == {"c": "x" * 3000 + "\n#g"}

    def test_no_multiline_dollar(self) -> None:
        """No MULTILINE: `$` matches only at the end of the stream (or before a final newline)."""
        fields = {"f": {"open": "<a>", "close_pattern": "!$"}, "c": {}}
        assert parse(fields, "<a>x!\ny!") == {"f": "x!\ny"}
        assert parse(fields, "<a>x!\ny!\n") == {"f": "x!\ny"}
        assert parse(fields, "<a>x!\ny!\nz") == {"f": "x!\ny!\nz"}

    def test_unicode_word(self) -> None:
        r"""Matching is Unicode aware: \w matches non-ASCII letters."""
        spec = {"open_pattern": r"@(?P<k>\w+):", "close": ";", "transform": {"k": "{k}", "v": "{content}"}}
        assert parse({"f": spec}, "@名前é:val;") == {"f": {"k": "名前é", "v": "val"}}

    def test_lookahead(self) -> None:
        """Lookaheads are supported."""
        fields = {"f": {"open_pattern": "<a(?=!)", "close": "</a>"}, "c": {}}
        assert parse(fields, "<a?x</a><a!y</a>") == {"c": "<a?x</a>", "f": "!y"}

    def test_lookbehind(self) -> None:
        """Lookbehinds are supported (they can look at already-routed text)."""
        fields = {"f": {"open_pattern": r"(?<=\n)>", "close": "\n"}, "c": {}}
        assert parse(fields, "a>b\n>q\n") == {"c": "a>b", "f": "q"}

    def test_regions_do_not_nest(self) -> None:
        """While a region is open only its own close is looked for: an open inside is text."""
        fields = {"a": {"open": "<a>", "close": "</a>"}, "b": {"open": "<b>", "close": "</b>"}}
        assert parse(fields, "<a>1<b>2</b>3</a>") == {"a": "1<b>2</b>3"}

    def test_earliest_match_wins(self) -> None:
        """Outside a region the earliest delimiter match wins, whatever the field order."""
        fields = {"a": {"open": "<x>", "close": "</x>"}, "b": {"open": "<y>", "close": "</y>"}}
        assert parse(fields, "<y>1<x>2</y>") == {"b": "1<x>2"}

    def test_earliest_match_wins_against_implicit_close(self) -> None:
        """The implicit field's close competes with the opens: the earlier one wins."""
        fields = {"a": {"open": "<x>", "close": "</x>"}, "c": {"close": "<end>"}}
        assert parse(fields, "hi<end><x>q</x>") == {"c": "hi", "a": "q"}

    def test_tie_longer_match_wins(self) -> None:
        """On a tie at the same position the longer match wins."""
        fields = {"a": {"open": "<t", "close": ">"}, "b": {"open": "<tool>", "close": "</tool>"}}
        assert parse(fields, "<tool>q</tool>") == {"b": "q"}
        assert parse(fields, "<tx>") == {"a": "x"}

    def test_tie_longer_match_wins_regex(self) -> None:
        """The longer-match rule holds between regex delimiters too."""
        fields = {
            "a": {"open_pattern": "<t", "close": ">"},
            "b": {"open_pattern": "<to+l>", "close": "</tool>"},
        }
        assert parse(fields, "<toool>q</tool>") == {"b": "q"}

    def test_tie_open_before_close(self) -> None:
        """Same start and length: an explicit open beats the implicit field's close."""
        fields = {"a": {"open": "<x>", "close": "</x>"}, "c": {"close": "<x>"}}
        assert parse(fields, "hi<x>q</x>") == {"c": "hi", "a": "q"}

    @pytest.mark.parametrize(
        ("b_spec", "a_spec"),
        [
            ({"open": "<x>", "close": "</x>"}, {"open": "<x>", "close": "</x>"}),
            ({"open_pattern": "<x>", "close": "</x>"}, {"open_pattern": "<.>", "close": "</x>"}),
            ({"open": "<x>", "close": "</x>"}, {"open_pattern": "<x>", "close": "</x>"}),
        ],
    )
    def test_tie_field_name_order(self, b_spec: dict, a_spec: dict) -> None:
        """Same start, length and kind: the field whose name sorts first wins (not the dict order)."""
        assert parse({"b": b_spec, "a": a_spec}, "<x>q</x>") == {"a": "q"}

    def test_literal_list_prefers_longest(self) -> None:
        """A literal list prefers its longest alternative when several match at the same place."""
        fields = {"a": {"open": "<a>", "close": ["STOP", "STOPPED"]}, "c": {}}
        assert parse(fields, "<a>xSTOPPEDy") == {"a": "x", "c": "y"}
        assert parse({"a": {"open": ["<t", "<tool>"], "close": "</tool>"}}, "<tool>q</tool>") == {"a": "q"}

    def test_open_regions_closed_at_end_of_stream(self) -> None:
        """When the stream ends, every open region is closed and finalized, closed or not."""
        template = tpl({"a": {"open": "<a>", "close": "</a>", "content": "json"}})
        parser = rt.ResponseParser(template, prefix="")
        assert parser.feed('<a>{"k": 1}') == [open_("a"), chunk("a", '{"k": 1}', dirty=True)]
        assert parser.finalize() == ({"a": {"k": 1}}, [close("a", {"k": 1})])

    def test_hold_back_partial_literal_close(self) -> None:
        """Text that could start a delimiter is held back until more input decides."""
        template = tpl({"r": {"open": "<think>", "close": "</think>"}, "c": {}})
        parser = rt.ResponseParser(template, prefix=ANCHOR + "<think>")
        assert parser.feed("abc</th") == [chunk("r", "abc")]
        assert parser.feed("x") == [chunk("r", "</thx")]
        assert parser.feed("</th") == []
        assert parser.feed("ink>") == [close("r", "abc</thx")]

    def test_hold_back_partial_open_in_implicit_field(self) -> None:
        """Outside regions, the start of an open is held back too (not routed to the implicit field)."""
        template = tpl({"r": {"open": "<think>", "close": "</think>"}, "c": {}})
        parser = rt.ResponseParser(template, prefix="")
        assert parser.feed("z<thi") == [open_("c"), chunk("c", "z")]
        assert parser.feed("nk>") == [close("c", "z"), open_("r")]

    def test_hold_back_while_a_longer_literal_of_another_field_could_match(self) -> None:
        """A complete literal waits while another watched literal could still extend it (tie → longer)."""
        template = tpl({"a": {"open": "<t", "close": ">"}, "b": {"open": "<tool>", "close": "</tool>"}})
        parser = rt.ResponseParser(template, prefix="")
        assert parser.feed("<t") == []
        assert parser.feed("o") == []
        assert parser.feed("x") == [open_("a"), chunk("a", "ox")]

    def test_hold_back_literal_list_extension(self) -> None:
        """A complete literal waits while a longer literal of the same list could still match."""
        template = tpl({"a": {"open": "<a>", "close": ["STOP", "STOPPED"]}, "c": {}})
        parser = rt.ResponseParser(template, prefix=ANCHOR + "<a>")
        assert parser.feed("xSTOP") == [chunk("a", "x")]
        assert parser.feed("PE") == []
        assert parser.feed("D") == [close("a", "x")]

    def test_hold_back_regex_partial_match(self) -> None:
        """Regex delimiters use partial matching: a possible match in progress is held back."""
        template = tpl({"a": {"open": "<a>", "close_pattern": r"</a\d*>"}, "c": {}})
        parser = rt.ResponseParser(template, prefix=ANCHOR + "<a>")
        assert parser.feed("x</a1") == [chunk("a", "x")]
        assert parser.feed("2") == []
        assert parser.feed(">y") == [close("a", "x"), open_("c"), chunk("c", "y")]

    def test_hold_back_regex_that_could_grow(self) -> None:
        """A complete regex match that more input could lengthen waits (optional suffix)."""
        template = tpl({"a": {"open": "<a>", "close_pattern": r"</a>(?:\s*</all>)?"}, "c": {}})
        parser = rt.ResponseParser(template, prefix=ANCHOR + "<a>")
        assert parser.feed("x</a>") == [chunk("a", "x")]
        assert parser.feed(" </all") == []
        # A regex match that ends exactly at the end of the buffer waits for one more character.
        assert parser.feed(">") == []
        assert parser.feed("!") == [close("a", "x"), open_("c"), chunk("c", "!")]
        assert parser.finalize() == ({"a": "x", "c": "!"}, [close("c", "!")])

    def test_zero_latency_complete_literal(self) -> None:
        """A literal delimiter that matched in full is committed at once."""
        template = tpl({"r": {"open": "<think>", "close": "</think>"}, "c": {}})
        parser = rt.ResponseParser(template, prefix="")
        assert parser.feed("<think>") == [open_("r")]
        assert parser.feed("x</think>") == [chunk("r", "x"), close("r", "x")]


# ===================================================================================================
# §5 Prefix and start anchor
# ===================================================================================================

THINK_TOOL = tpl(
    {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json"},
        "content": {"close": "<|im_end|>"},
    }
)
HISTORY = (
    "<|im_start|>system\nYou are helpful<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
    f"{ANCHOR}<think>old reasoning</think>old answer<tool_call>[0]</tool_call><|im_end|>\n"
    "<|im_start|>user\nagain<|im_end|>\n"
)


class TestSection5PrefixAndAnchor:
    def test_text_after_last_anchor_is_used(self) -> None:
        """The prefix is cut after the LAST occurrence of the start anchor."""
        parser = rt.ResponseParser(THINK_TOOL, prefix=HISTORY + ANCHOR + "Sure")
        assert parser.prefix_length == len("Sure")
        assert parser.initial_events == [open_("content"), chunk("content", "Sure")]

    def test_earlier_turns_never_leak(self) -> None:
        """Earlier turns (a previous assistant message's think, answer, tool call) are discarded."""
        message = rt.parse_response("<think>new</think>fresh", THINK_TOOL, prefix=HISTORY + ANCHOR)
        assert message == {"reasoning_content": "new", "content": "fresh"}

    def test_region_opened_in_prefix_continues(self) -> None:
        """A region opened by the prefix (`<think>\\n` from the chat template) continues in the generation."""
        parser = rt.ResponseParser(THINK_TOOL, prefix=HISTORY + ANCHOR + "<think>\n")
        assert parser.initial_events == [open_("reasoning_content"), chunk("reasoning_content", "\n")]
        assert parser.feed("plan</think>done") == [
            chunk("reasoning_content", "plan"),
            close("reasoning_content", "plan"),
            open_("content"),
            chunk("content", "done"),
        ]
        assert parser.finalize() == (
            {"reasoning_content": "plan", "content": "done"},
            [close("content", "done")],
        )

    def test_region_opened_and_closed_in_prefix_lands_in_output(self) -> None:
        """A region opened and closed inside the prefix is in the output as if the model wrote it."""
        prefix = ANCHOR + "<think>prefilled</think>"
        parser = rt.ResponseParser(THINK_TOOL, prefix=prefix)
        assert parser.initial_events == [
            open_("reasoning_content"),
            chunk("reasoning_content", "prefilled"),
            close("reasoning_content", "prefilled"),
        ]
        parser.feed("answer")
        assert parser.finalize()[0] == {"reasoning_content": "prefilled", "content": "answer"}

    def test_prefill_continues_implicit_field(self) -> None:
        """An assistant prefill (text after the anchor) is part of the implicit field's value."""
        assert rt.parse_response(" world", THINK_TOOL, prefix=ANCHOR + "Hello") == {"content": "Hello world"}

    def test_anchor_not_found_uses_whole_prefix(self, caplog: pytest.LogCaptureFixture) -> None:
        """No anchor in the prefix, with missing_anchor="parse": the whole prefix is parsed, and a debug
        line says so (the default raises: tests/test_prompt_anchor.py)."""
        with caplog.at_level(logging.DEBUG, logger="response_templates"):
            parser = rt.ResponseParser(THINK_TOOL, prefix="raw prompt <think>", missing_anchor="parse")
        assert parser.prefix_length == len("raw prompt <think>")
        assert parser.initial_events == [
            open_("content"),
            chunk("content", "raw prompt "),
            close("content", "raw prompt"),
            open_("reasoning_content"),
        ]
        assert any(
            "anchor not found" in r.getMessage() for r in caplog.records if r.name == "response_templates"
        )

    def test_anchor_list_uses_last_occurrence_of_any(self) -> None:
        """A start_anchor list marks the message start with whichever literal occurs last."""
        template = tpl({"c": {}}, start_anchor=["<a>", "<b>"])
        assert rt.parse_response("!", template, prefix="x<b>y<a>z<b>w") == {"c": "w!"}

    def test_anchor_pattern_uses_last_match(self) -> None:
        """start_anchor_pattern: the text after its last match is used."""
        template = tpl({"c": {}}, start_anchor_pattern=r"<s \w+>")
        template.pop("start_anchor")
        assert rt.parse_response("!", template, prefix="x<s u>y<s bot>w") == {"c": "w!"}

    def test_last_occurrence_of_self_overlapping_anchor(self) -> None:
        """The LAST occurrence of the anchor is used, even when occurrences overlap."""
        parser = rt.ResponseParser(tpl({"c": {}}, start_anchor="aa"), prefix="aaa")
        assert parser.prefix_length == 0

    def test_anchor_never_applied_to_generated_text(self) -> None:
        """The anchor cuts the prefix only: gpt-oss repeats `<|start|>assistant` in one response."""
        template = {
            "start_anchor": "<|start|>assistant",
            "fields": {
                "reasoning_content": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
                "content": {"open": "<|channel|>final<|message|>", "close": ["<|return|>", "<|end|>"]},
            },
        }
        prefix = "<|start|>user<|message|>hi<|end|><|start|>assistant"
        text = (
            "<|channel|>analysis<|message|>think<|end|>"
            "<|start|>assistant<|channel|>final<|message|>answer<|return|>"
        )
        assert rt.parse_response(text, template, prefix=prefix) == {
            "reasoning_content": "think",
            "content": "answer",
        }

    def test_initial_events_not_repeated_by_feed(self) -> None:
        """Events produced while reading the prefix are in initial_events only."""
        parser = rt.ResponseParser(THINK_TOOL, prefix=ANCHOR + "<tool_call>[1")
        assert parser.initial_events == [open_("tool_calls"), chunk("tool_calls", "[1", dirty=True)]
        assert parser.feed("]</tool_call>") == [
            chunk("tool_calls", "]", dirty=True),
            close("tool_calls", [1]),
        ]
        assert parser.finalize() == ({"tool_calls": [[1]]}, [])


# ===================================================================================================
# §6 Content parsers and transforms
# ===================================================================================================


def region(content: str, body: str, **spec: Any) -> Any:
    """Parse `<a>body</a>` with the given content parser; return the field's value (or absent)."""
    fields = {"a": {"open": "<a>", "close": "</a>", "content": content, **spec}}
    return rt.parse_response(f"<a>{body}</a>", tpl(fields), prefix="").get("a", "<absent>")


class TestSection6ContentParsers:
    def test_text_strips_by_default(self) -> None:
        """text strips surrounding whitespace by default."""
        assert region("text", " \n x y \t\n") == "x y"

    def test_text_strip_false(self) -> None:
        """text with strip=false keeps the region verbatim."""
        assert region("text", " \n x \n", content_args={"strip": False}) == " \n x \n"

    def test_int(self) -> None:
        """int strips and converts."""
        value = region("int", " -42\n")
        assert value == -42 and type(value) is int

    def test_float(self) -> None:
        """float strips and converts."""
        value = region("float", " 2.5e1 ")
        assert value == 25.0 and type(value) is float

    @pytest.mark.parametrize(
        ("raw", "expected"), [("true", True), ("TRUE", True), (" 1\n", True), ("False", False), ("0", False)]
    )
    def test_bool(self, raw: str, expected: bool) -> None:
        """bool accepts true/false/1/0 in any case."""
        assert region("bool", raw) is expected

    @pytest.mark.parametrize("raw", ["yes", "no", "2", "truthy", ""])
    def test_bool_strict(self, raw: str) -> None:
        """[ours] bool rejects any other text (the reference reads "yes" as False)."""
        with pytest.raises(rt.ParseError) as info:
            region("bool", raw)
        assert (info.value.field, info.value.raw) == ("a", raw)

    def test_json(self) -> None:
        """json parses the region as JSON."""
        assert region("json", ' {"k": [1, 2.5, null, true]} ') == {"k": [1, 2.5, None, True]}

    def test_json_unquoted_keys(self) -> None:
        """json unquoted_keys accepts {name: "foo"}, without touching string contents."""
        value = region("json", '{name: "a, b: c", n: {x: 1}}', content_args={"unquoted_keys": True})
        assert value == {"name": "a, b: c", "n": {"x": 1}}

    def test_json_string_delims(self) -> None:
        """json string_delims: custom [open, close] pairs delimit string values instead of `"`."""
        args = {"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": True}
        value = region("json", '{city: <|"|>Paris, "FR"<|"|>, n: 3}', content_args=args)
        assert value == {"city": 'Paris, "FR"', "n": 3}

    def test_json_allow_non_json(self) -> None:
        """json allow_non_json: on failure, the stripped raw text is returned instead of an error."""
        assert region("json", "  not json \n", content_args={"allow_non_json": True}) == "not json"
        assert region("json", "[1]", content_args={"allow_non_json": True}) == [1]

    def test_json_invalid_is_parse_error(self) -> None:
        """Without allow_non_json, invalid JSON is a ParseError naming the field."""
        with pytest.raises(rt.ParseError) as info:
            region("json", "{bad")
        assert (info.value.field, info.value.raw) == ("a", "{bad")

    def test_xml_inline(self) -> None:
        """xml-inline turns a flat run of tags into a dict; later duplicates overwrite by default."""
        args = {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"}
        assert region("xml-inline", "<x>1</x>\n<y>two</y><x>3</x>", content_args=args) == {
            "x": "3",
            "y": "two",
        }

    def test_xml_inline_value_parser_and_merge_duplicates(self) -> None:
        """xml-inline value_parser parses each value; merge_duplicates collects repeated keys."""
        args = {
            "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
            "value_parser": {"name": "int"},
            "merge_duplicates": True,
        }
        assert region("xml-inline", "<x>1</x><y>2</y><x>3</x><x>4</x>", content_args=args) == {
            "x": [1, 3, 4],
            "y": 2,
        }

    def test_kv_lines_defaults(self) -> None:
        """kv-lines: split at the first kv_sep, strip, skip blank lines; a line without the separator fails."""
        body = "\nname: foo: bar\n\n \t\n  n : 2 \n"
        assert region("kv-lines", body) == {"name": "foo: bar", "n": "2"}
        with pytest.raises(rt.ParseError):
            region("kv-lines", "name: foo\nno separator\n")

    def test_kv_lines_args(self) -> None:
        """kv-lines line_sep, kv_sep, strip=false and value_parser."""
        args = {"line_sep": ";", "kv_sep": "=", "strip": False, "value_parser": {"name": "json"}}
        assert region("kv-lines", 'x=1;y=[2];z= "s"', content_args=args) == {"x": 1, "y": [2], "z": "s"}
        assert region(
            "kv-lines", " k = v ;", content_args={"line_sep": ";", "kv_sep": "=", "strip": False}
        ) == {" k ": " v "}


class TestSection6Transforms:
    def test_placeholder_keeps_type(self) -> None:
        """A string that is exactly "{name}" is replaced by the variable with its type kept."""
        value = region(
            "json", '{"n": 3, "l": [1], "b": false}', transform={"whole": "{content}", "n": "{content.n}"}
        )
        assert value == {"whole": {"n": 3, "l": [1], "b": False}, "n": 3}
        assert type(value["n"]) is int

    def test_dotted_paths_and_literals(self) -> None:
        """ "{content.a.b}" descends into dict keys; other strings and values are literals."""
        transform = {"type": "function", "deep": "{content.a.b}", "k": [1, "x", None]}
        assert region("json", '{"a": {"b": {"c": 1}}}', transform=transform) == {
            "type": "function",
            "deep": {"c": 1},
            "k": [1, "x", None],
        }

    def test_unresolved_path_is_parse_error(self) -> None:
        """A path that does not resolve is an error, never a half-built value."""
        with pytest.raises(rt.ParseError) as info:
            region("json", '{"y": 1}', transform={"x": "{content.missing}"})
        assert (info.value.field, info.value.raw) == ("a", '{"y": 1}')

    def test_open_and_close_pattern_captures_reach_transform(self) -> None:
        """Named groups of open_pattern and [ours] close_pattern are transform variables."""
        spec = {
            "open_pattern": r"<call name=(?P<name>\w+)>",
            "close_pattern": r"</call id=(?P<id>\d+)>",
            "content": "json",
            "transform": {"id": "{id}", "function": {"name": "{name}", "arguments": "{content}"}},
        }
        message = parse({"tc": spec}, '<call name=get>{"x": 1}</call id=7>')
        assert message == {"tc": {"id": "7", "function": {"name": "get", "arguments": {"x": 1}}}}

    def test_transform_each(self) -> None:
        """transform_each applies the transform to each element, with the element's keys as variables."""
        spec = {
            "open_pattern": r"<calls id=(?P<id>\d+)>",
            "close": "</calls>",
            "content": "json",
            "transform_each": True,
            "transform": {"id": "{id}", "function": {"name": "{name}", "arguments": "{args}"}},
        }
        text = '<calls id=9>[{"name": "f", "args": {"x": 1}}, {"name": "g", "args": {}, "id": "own"}]</calls>'
        assert parse({"tc": spec}, text) == {
            "tc": [
                {"id": "9", "function": {"name": "f", "arguments": {"x": 1}}},
                {"id": "own", "function": {"name": "g", "arguments": {}}},
            ]
        }

    def test_transform_each_needs_list_of_dicts(self) -> None:
        """transform_each: the parsed value must be a list of dicts."""
        with pytest.raises(rt.ParseError) as info:
            region("json", '{"name": "f"}', transform_each=True, transform={"n": "{name}"})
        assert info.value.field == "a"

    def test_repeats_one_item_per_match_after_transform(self) -> None:
        """repeats: each match adds one item (after transform), in order."""
        spec = {
            "open": "<a>",
            "close": "</a>",
            "repeats": True,
            "content": "int",
            "transform": {"v": "{content}"},
        }
        assert parse({"a": spec, "c": {}}, "<a>1</a> mid <a>2</a>") == {"a": [{"v": 1}, {"v": 2}], "c": "mid"}

    def test_repeats_single_match_is_still_a_list(self) -> None:
        """repeats: the value is a list even for one match."""
        assert parse({"a": {"open": "<a>", "close": "</a>", "repeats": True}}, "<a>x</a>") == {"a": ["x"]}

    def test_join(self) -> None:
        """join: the matches joined by the separator; each region_close carries its own block's value."""
        template = tpl({"a": {"open": "<a>", "close": "</a>", "repeats": True, "join": "\n"}, "c": {}})
        per_feed, (message, _) = stream(template, ["<a> one </a>mid<a>two</a>"])
        assert message == {"a": "one\ntwo", "c": "mid"}
        assert closes(per_feed[0]) == [("a", "one"), ("c", "mid"), ("a", "two")]

    def test_join_needs_strings(self) -> None:
        """join: each match must parse to a string; otherwise a ParseError naming the field."""
        with pytest.raises(rt.ParseError) as info:
            parse(
                {"a": {"open": "<a>", "close": "</a>", "repeats": True, "join": ",", "content": "int"}},
                "<a>1</a>",
            )
        assert (info.value.field, info.value.raw) == ("a", "1")

    def test_implicit_field_keeps_text_before_and_after_regions(self) -> None:
        """[ours] The implicit field concatenates all its segments: text before and after a tool call."""
        text = 'Let me check. <tool_call>{"name": "f"}</tool_call> Done.<|im_end|>'
        assert rt.parse_response(text, THINK_TOOL, prefix="") == {
            "content": "Let me check.  Done.",
            "tool_calls": [{"name": "f"}],
        }

    def test_implicit_field_parsed_once_over_all_segments(self) -> None:
        """[ours] The implicit field's segments are concatenated in order and parsed once."""
        fields = {"tc": {"open": "<tc>", "close": "</tc>"}, "c": {"content": "int"}}
        assert parse(fields, "4<tc>x</tc>2") == {"c": 42, "tc": "x"}

    @pytest.mark.parametrize("text", ["42<tc>x</tc>\n", "\n<tc>x</tc>42"])
    def test_implicit_field_whitespace_segment_with_structured_parser(self, text: str) -> None:
        """[ours] Parsed once: whitespace between regions must not be parsed as an int on its own."""
        fields = {"tc": {"open": "<tc>", "close": "</tc>"}, "c": {"content": "int"}}
        assert parse(fields, text) == {"c": 42, "tc": "x"}

    def test_explicit_field_matched_twice_concatenates_strings(self) -> None:
        """[ours] An explicit field without repeats that matches twice concatenates its string values."""
        template = tpl({"a": {"open": "<a>", "close": "</a>"}})
        per_feed, (message, _) = stream(template, ["<a> one </a>x<a>two </a>"])
        assert message == {"a": "onetwo"}
        assert closes(per_feed[0]) == [("a", "one"), ("a", "two")]

    def test_explicit_field_matched_twice_with_non_strings_is_error(self) -> None:
        """[ours] ...and if its values are not strings, that is a ParseError naming the field."""
        with pytest.raises(rt.ParseError) as info:
            parse({"a": {"open": "<a>", "close": "</a>", "content": "int"}}, "<a>1</a><a>2</a>")
        assert (info.value.field, info.value.raw, info.value.offset) == ("a", "2", 11)
        assert "repeats" in str(info.value)


# ===================================================================================================
# §7 Tool-call argument typing
# ===================================================================================================

TYPED_TOOL = {
    "type": "function",
    "function": {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {
                "i": {"type": "integer"},
                "n": {"type": "number"},
                "b": {"type": "boolean"},
                "z": {"type": "null"},
                "o": {"type": "object"},
                "a": {"type": "array"},
                "tl": {"type": ["boolean", "integer"]},
                "any": {"anyOf": [{"type": "boolean"}, {"type": "integer"}]},
                "one": {"oneOf": [{"type": "null"}, {"type": "number"}]},
                "s": {"type": "string"},
            },
        },
    },
}


def typed(arguments: str, tools: list[Any] | None = None, name: str = "f") -> dict[str, Any]:
    message = rt.parse_response(
        f"<call name={name}>{arguments}</call>",
        KV_CALLS,
        prefix="",
        tools=[TYPED_TOOL] if tools is None else tools,
    )
    return message["tool_calls"][0]["function"]["arguments"]


class TestSection7ToolTyping:
    @pytest.mark.parametrize(
        ("param", "raw", "expected"),
        [
            ("i", "3", 3),
            ("i", "3.0", 3),
            ("i", "-7", -7),
            ("n", "2.5", 2.5),
            ("n", "2", 2),
            ("b", "true", True),
            ("b", "False", False),
            ("z", "null", None),
            ("o", '{"k": [1]}', {"k": [1]}),
            ("a", '[1, "x"]', [1, "x"]),
        ],
    )
    def test_casts(self, param: str, raw: str, expected: Any) -> None:
        """integer (also "3.0"), number, boolean, null, object/array (JSON-decoded)."""
        value = typed(f"{param}: {raw}")[param]
        assert value == expected and type(value) is type(expected)

    @pytest.mark.parametrize(
        ("param", "raw", "expected"),
        [
            ("tl", "1", True),
            ("tl", "5", 5),
            ("any", "1", True),
            ("any", "5", 5),
            ("one", "null", None),
            ("one", "1.5", 1.5),
        ],
    )
    def test_type_lists_and_unions_tried_in_order(self, param: str, raw: str, expected: Any) -> None:
        """Type lists and anyOf/oneOf are tried in order: the first type that accepts wins."""
        value = typed(f"{param}: {raw}")[param]
        assert value == expected and type(value) is type(expected)

    @pytest.mark.parametrize(
        ("param", "raw"),
        [("i", "3.5"), ("i", "x"), ("n", "nan"), ("b", "yes"), ("z", "nil"), ("o", "[1]"), ("a", "{")],
    )
    def test_failed_cast_keeps_string(self, param: str, raw: str) -> None:
        """A cast that fails keeps the original string."""
        assert typed(f"{param}: {raw}")[param] == raw

    def test_string_params_unknown_params_untouched(self) -> None:
        """string parameters and parameters the schema does not list are left as they are."""
        assert typed("s: 42\nextra: 9") == {"s": "42", "extra": "9"}

    def test_unknown_tool_untouched(self) -> None:
        """A call to a tool not in `tools` is left as it is."""
        assert typed("i: 3", name="g") == {"i": "3"}

    def test_no_tools_no_typing(self) -> None:
        """Without tools nothing is cast."""
        message = rt.parse_response("<call name=f>i: 3</call>", KV_CALLS, prefix="")
        assert message["tool_calls"][0]["function"]["arguments"] == {"i": "3"}

    def test_non_string_arguments_untouched(self) -> None:
        """Only string arguments are cast: values already typed by the content parser stay."""
        template = tpl(
            {
                "tool_calls": {
                    "open": "<tc>",
                    "close": "</tc>",
                    "repeats": True,
                    "content": "json",
                    "transform": {"type": "function", "function": "{content}"},
                }
            }
        )
        text = '<tc>{"name": "f", "arguments": {"i": 3.5, "s": 1, "b": "1"}}</tc>'
        message = rt.parse_response(text, template, prefix="", tools=[TYPED_TOOL])
        assert message["tool_calls"][0]["function"]["arguments"] == {"i": 3.5, "s": 1, "b": True}

    def test_merge_duplicates_lists_cast_item_by_item(self) -> None:
        """Lists produced by merge_duplicates are cast item by item (failed items stay strings)."""
        template = tpl(
            {
                "tool_calls": {
                    "open_pattern": r"<call name=(?P<name>\w+)>",
                    "close": "</call>",
                    "repeats": True,
                    "content": "xml-inline",
                    "content_args": {
                        "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
                        "merge_duplicates": True,
                    },
                    "transform": {
                        "type": "function",
                        "function": {"name": "{name}", "arguments": "{content}"},
                    },
                }
            }
        )
        text = "<call name=f><i>1</i><i>2.0</i><i>q</i><b>true</b></call>"
        message = rt.parse_response(text, template, prefix="", tools=[TYPED_TOOL])
        assert message["tool_calls"][0]["function"]["arguments"] == {"i": [1, 2, "q"], "b": True}

    def test_typing_already_in_region_close(self) -> None:
        """Typing happens when the region closes: the region_close event carries typed arguments."""
        per_feed, (message, final) = stream(KV_CALLS, ["<call name=f>i: 3\nb: 1</call>"], tools=[TYPED_TOOL])
        assert closes(per_feed[0]) == [("tool_calls", kv_call("f", {"i": 3, "b": True}))]
        assert message == {"tool_calls": [kv_call("f", {"i": 3, "b": True})]}
        assert final == []


# ===================================================================================================
# §8 Streaming events
# ===================================================================================================


class TestSection8Events:
    def test_exact_event_dicts(self) -> None:
        """Events: region_open{type, field}, region_chunk{+text, dirty}, region_close{+value}."""
        per_feed, (message, final) = stream(QWEN, [GREET])
        events = per_feed[0]
        assert events == [
            open_("reasoning_content"),
            chunk("reasoning_content", "\nI should greet the user\n"),
            close("reasoning_content", "I should greet the user"),
            open_("content"),
            chunk("content", "\n\n"),
            close("content", ""),
            open_("tool_calls"),
            chunk("tool_calls", '{"name": "greet_user", "arguments": {"greeting": "Hi!"}}', dirty=True),
            close("tool_calls", GREET_MESSAGE["tool_calls"][0]),
        ]
        for event in events:
            keys = {"region_open": {"type", "field"}, "region_chunk": {"type", "field", "text", "dirty"}}
            assert set(event) == keys.get(event["type"], {"type", "field", "value"})
            assert type(event["field"]) is str
            if event["type"] == "region_chunk":
                assert type(event["text"]) is str and type(event["dirty"]) is bool
        assert (message, final) == (GREET_MESSAGE, [])

    @pytest.mark.parametrize(
        ("content", "body", "args", "dirty"),
        [
            ("text", "x", {}, False),
            ("int", "1", {}, False),
            ("float", "1.5", {}, False),
            ("bool", "true", {}, False),
            ("json", "[1]", {}, True),
            ("xml-inline", "<k>v</k>", {"tag_pattern": r"<(?P<key>\w)>(?P<value>.*?)</(?P=key)>"}, True),
            ("kv-lines", "k: v", {}, True),
        ],
    )
    def test_dirty_flag_by_parser(self, content: str, body: str, args: dict, dirty: bool) -> None:
        """dirty is false for text/int/float/bool, true for structured parsers (json/xml-inline/kv-lines)."""
        spec = {"open": "<a>", "close": "</a>", "content": content, "content_args": args}
        per_feed, _ = stream(tpl({"a": spec}), ["<a>", body[:1], body[1:], "</a>"])
        chunks = [e for events in per_feed for e in events if e["type"] == "region_chunk"]
        assert chunks and all(e["dirty"] is dirty for e in chunks)
        assert "".join(e["text"] for e in chunks) == body

    def test_implicit_region_opens_at_first_character(self) -> None:
        """The implicit region opens at its first character, not before (and not on held-back text)."""
        template = tpl({"r": {"open": "<think>", "close": "</think>"}, "c": {}})
        parser = rt.ResponseParser(template, prefix="")
        assert parser.feed("") == []
        assert parser.feed("<th") == []
        assert parser.feed("ink>x</think>") == [open_("r"), chunk("r", "x"), close("r", "x")]
        assert parser.feed("y") == [open_("c"), chunk("c", "y")]

    def test_explicit_region_opens_at_delimiter(self) -> None:
        """An explicit region opens at its open delimiter, before any of its text."""
        parser = rt.ResponseParser(tpl({"a": OK_FIELD}), prefix="")
        assert parser.feed("<a>") == [open_("a")]
        assert parser.feed("</a>") == [close("a", "")]
        assert parser.finalize() == ({}, [])

    def test_finalize_returns_message_and_final_events(self) -> None:
        """finalize() flushes held-back text, closes open regions and returns (message, final_events)."""
        template = tpl({"r": {"open": "<think>", "close": "</think>"}, "c": {}})
        parser = rt.ResponseParser(template, prefix="")
        assert parser.feed("<think>x</thi") == [open_("r"), chunk("r", "x")]
        result = parser.finalize()
        assert type(result) is tuple
        assert result == ({"r": "x</thi"}, [chunk("r", "</thi"), close("r", "x</thi")])

    def test_chunks_concatenate_to_region_text(self) -> None:
        """A consumer reading chunks sees exactly the region's raw text, split anywhere."""
        text = GREET
        parser = rt.ResponseParser(QWEN, prefix="")
        events = [e for i in range(len(text)) for e in parser.feed(text[i])]
        events += parser.finalize()[1]
        texts: dict[str, str] = {}
        for e in events:
            if e["type"] == "region_chunk":
                texts[e["field"]] = texts.get(e["field"], "") + e["text"]
        assert texts == {
            "reasoning_content": "\nI should greet the user\n",
            "content": "\n\n",
            "tool_calls": '{"name": "greet_user", "arguments": {"greeting": "Hi!"}}',
        }

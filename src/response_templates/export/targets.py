"""Internal: what each export target reads: the keys, content parsers and fields of transformers 5.25's
``response_template``, the older vocabulary of the parser vLLM 0.34 and SGLang 0.5.23 vendor (a fork of
transformers 5.23's) and their serving constraints (:data:`CONSTRAINTS`), with the approximations an export
may make (:data:`APPROXIMATIONS`). docs/export.md shows the same tables."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "APPROXIMATIONS",
    "CONSTRAINTS",
    "ENGINES",
    "ENGINE_FIELDS",
    "ENGINE_PARSERS",
    "ENGINE_RENAMES",
    "PARSER_FLAGS",
    "REFERENCE_FIELD_KEYS",
    "REFERENCE_PARSERS",
    "REFERENCE_TOP_KEYS",
    "TARGET_VERSIONS",
]

# ------------------------------------------------------------------------------ what each target reads

#: The release of each target that the export writes for.
TARGET_VERSIONS: Mapping[str, str] = {"transformers": "5.25", "vllm": "0.34", "sglang": "0.5.23"}
#: How each engine is told to read the tokenizer's ``response_template`` (its parser name).
PARSER_FLAGS: Mapping[str, str] = {
    "vllm": "--tool-call-parser hf --reasoning-parser hf",
    "sglang": "--tool-call-parser response_template --reasoning-parser response_template",
}

#: transformers 5.25's template vocabulary (the keys are those of 5.23, which the engines vendor).
REFERENCE_TOP_KEYS = frozenset({"version", "defaults", "fields", "start_anchor", "start_anchor_pattern"})
REFERENCE_FIELD_KEYS = frozenset(
    {
        "open",
        "open_pattern",
        "close",
        "close_pattern",
        "content",
        "content_args",
        "repeats",
        "join",
        "optional",
        "transform",
        "transform_each",
    }
)
REFERENCE_PARSERS = frozenset(
    {"text", "int", "float", "bool", "json", "xml-inline", "kv-lines", "python-call-list"}
)
#: The content parsers of the engines' vendored copy (transformers 5.23's: no ``python-call-list``).
ENGINE_PARSERS = REFERENCE_PARSERS - {"python-call-list"}
#: The only fields the engines route (everything else is refused by their loaders).
ENGINE_FIELDS = frozenset({"thinking", "content", "tool_calls"})
#: The engines' name for our ``reasoning_content``.
ENGINE_RENAMES: Mapping[str, str] = {"reasoning_content": "thinking"}
ENGINES = frozenset({"vllm", "sglang"})

#: One row per constraint: (constraint, transformers 5.25, vLLM 0.34, SGLang 0.5.23). docs/export.md shows
#: this table.
CONSTRAINTS: tuple[tuple[str, str, str, str], ...] = (
    (
        "top-level keys",
        "`version` (1), `defaults`, `fields`, `start_anchor`, `start_anchor_pattern`",
        "as transformers",
        "as transformers",
    ),
    (
        "field keys",
        "`open`, `open_pattern`, `close`, `close_pattern`, `content`, `content_args`, `repeats`, "
        "`join`, `optional`, `transform`, `transform_each`",
        "as transformers",
        "as transformers",
    ),
    (
        "parser flags",
        "none: `tokenizer.parse_response`, `transformers serve`",
        f"`{PARSER_FLAGS['vllm']}`",
        f"`{PARSER_FLAGS['sglang']}`",
    ),
    (
        "content parsers",
        "`text`, `int`, `float`, `bool`, `json`, `xml-inline`, `kv-lines`, `python-call-list`",
        "as transformers 5.23: no `python-call-list` (refused)",
        "as vLLM",
    ),
    (
        "`value_parser_by` (`xml-inline`)",
        "read; the field's arguments are not typed by the tools",
        "ignored: dropped, with a warning (every value read by `value_parser`, typed by the tools)",
        "as vLLM",
    ),
    (
        "`unquoted_keys` (`json`), `merge_duplicates` with list values",
        "read as in 5.24: keys only outside strings, spaces allowed; a list value is one item",
        "read as in 5.23 (a warning): key-like text inside strings is rewritten, spaced keys are missed; "
        "a duplicate is appended to a list value",
        "as vLLM",
    ),
    (
        "tool-argument typing in `json` and `python-call-list` fields",
        "an argument whose schema admits a string stays as written",
        'cast like any other (`"7"` with `["string", "integer"]` becomes `7`)',
        "as transformers (also under `value_parser: json`)",
    ),
    (
        "our extensions (`extensions` key)",
        "none: each is approximated or refused (below)",
        "as transformers",
        "as transformers",
    ),
    (
        "field names",
        "any",
        "`thinking`, `content`, `tool_calls` only",
        "`thinking`, `content`, `tool_calls` only",
    ),
    ("reasoning field", "`reasoning_content` (kept)", "`thinking` (renamed)", "`thinking` (renamed)"),
    ("`defaults`", "any JSON object", "`role` only", "`role` only"),
    (
        "`content` and `thinking` fields",
        "any parser and keys",
        "`text` parser, no `transform`, no `join`",
        "`text` parser, no `transform`, no `join`, no explicit `strip: true`",
    ),
    (
        "`tool_calls` values",
        "any",
        'chat shape `{"function": {"name", "arguments"}}`, else the call is dropped',
        'chat shape `{"function": {"name", "arguments"}}`, else the call is dropped',
    ),
    ("`tool_calls` opener", "any", "any", "`open` or `open_pattern` required (refused without)"),
    (
        "token ids",
        "parsed as ids: a control token matches only as its own id",
        "decoded to text, then parsed",
        "decoded to text, then parsed",
    ),
    (
        "`optional: false`",
        "checked",
        "ignored (every field made optional)",
        "ignored (every field made optional)",
    ),
    (
        "text outside every region",
        "discarded without an implicit field",
        "content (an implicit `content` field is added when the template has none)",
        "content (as vLLM)",
    ),
    (
        "implicit field around other regions",
        "only its last piece is kept: text before a region is lost when anything follows it (a warning)",
        "every piece (streamed)",
        "every piece (streamed)",
    ),
    (
        "content and thinking as delivered",
        "the field's parsed value",
        "the streamed region text, concatenated, unstripped",
        "the streamed region text, concatenated, unstripped",
    ),
)


#: One row per extension feature: (feature, what the export does, which outputs read differently).
#: docs/export.md shows this table; the warnings of :func:`export` say the same for one template.
APPROXIMATIONS: tuple[tuple[str, str, str], ...] = (
    (
        "`python-calls` (content parser)",
        "becomes `python-call-list`; with `content_args` (`name_suffix`), or for the engines: refused",
        "outputs the strict grammar rejects fail to parse: calls without the enclosing `[...]`, positional "
        "arguments, trailing commas, tuples, `\\x` escapes, integers beyond 2^53-1, raw newlines in strings",
    ),
    (
        "`into` a field that exists",
        "the feeding field is dropped",
        "text in the dropped field's syntax is read as content (discarded without an implicit field)",
    ),
    (
        "`into` an output key no field has",
        "the first feeding field takes the key's name; the others are dropped",
        "without `repeats`, an output with several of its regions keeps only the last region's items",
    ),
    ("`into` the implicit field (a wrapper)", "refused", "-"),
    (
        "`within` (`interleaved`)",
        "dropped",
        "a region written inside an unclosed region it may interrupt is read as that region's text",
    ),
    (
        "`xml-values` `type_group`/`type_parsers`",
        "transformers: become `value_parser_by`; the engines: dropped",
        "transformers: the field's arguments are not typed by the request's tools; the engines: values stay "
        "strings (typed only by the request's tools)",
    ),
    (
        "`xml-values` `unescape`, `cdata`, `nested`",
        "dropped",
        "values keep HTML entities, keep CDATA markers, keep child tags as raw text",
    ),
    (
        "`close_json` (`json-value-end`)",
        "the region closes with the implicit field's close (or at the end of the output)",
        "text after the JSON value, before that close, is read into the value and makes it fail",
    ),
    (
        '`"{path?}"` (`optional-placeholders`)',
        "an object entry holding it is left out; in a list or as the whole transform: refused",
        "the entry is never filled",
    ),
    ("`item-transform`, `json-envelope` (`route`)", "refused", "-"),
)

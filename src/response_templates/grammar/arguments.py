"""Internal: the grammar's view of a request's tools, and each call format's argument grammar (JSON bodies,
XML parameters typed by their schemas, Python call arguments), with :class:`GrammarError` for what cannot
be written as a grammar."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from ..errors import ResponseTemplateError
from ..language import FieldSpec
from ..tools import has_refs, relocate_refs, resolved_properties, schema_pointer, tool_schemas
from .nodes import WS, Alt, Json, Lit, Node, Pattern, SharedAlt, Tag, Text, optional, seq
from .spelling import (
    CLASS,
    OPTIONAL,
    SPACE1,
    Piece,
    Slot,
    Unspellable,
    literal_text,
    spell,
    strip_space,
)

__all__ = [
    "PY_NAME",
    "PY_STRING",
    "GrammarError",
    "Tool",
    "call_object_schema",
    "delimiter_key",
    "json_value",
    "make_tag",
    "python_arguments",
    "read_tools",
    "spell_text",
    "spelled_nodes",
    "xml_arguments",
]


class GrammarError(ResponseTemplateError):
    """A template (or a request) that cannot be written as a grammar; the message says why.

    ``field`` and ``key`` name the template field and key at fault when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None, key: str | None = None) -> None:
        where = []
        if field is not None:
            where.append(f"field {field!r}")
        if key is not None:
            where.append(f"key {key!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.field = field
        self.key = key
        self.reason = message


# ---------------------------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class Tool:
    """One tool of the request: its name and its parameters' JSON schema (an object schema)."""

    name: str
    parameters: Mapping[str, Any]

    @property
    def properties(self) -> dict[str, Any]:
        """The parameters' schemas, their references resolved as typing resolves them (the parser reads a
        ``$ref`` parameter by the schema it refers to, so the grammar writes it by that schema too)."""
        return dict(resolved_properties(dict(self.parameters)))

    @property
    def required(self) -> list[str]:
        req = self.parameters.get("required")
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []


def read_tools(tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None) -> list[Tool]:
    """The request's tools (any shape the wire formats carry, or typed Python functions), read and checked
    as the parser reads them (:func:`~response_templates.tools.tool_schemas`)."""
    return [Tool(name, dict(schema)) for name, schema in tool_schemas(tools).items()]


# ------------------------------------------------------------------------------------------ spelling


def _spell(delim: Any, field: str, key: str) -> list[Piece]:
    """The one canonical spelling of a delimiter (its first literal, or its pattern spelled)."""
    if delim.literals is not None:
        return [delim.literals[0]]
    try:
        return spell(delim.source, canonical=True)
    except Unspellable as exc:
        raise GrammarError(f"no canonical spelling: {exc}", field=field, key=key) from None


def spell_text(delim: Any, field: str, key: str) -> str:
    """A delimiter's spelling as plain text (whitespace it allows left out: free text around it takes it)."""
    pieces = strip_space(_spell(delim, field, key))
    text = literal_text(pieces)
    if text is None:
        raise GrammarError(
            "the delimiter captures text, which a grammar cannot fill in", field=field, key=key
        )
    return text


def delimiter_key(delim: Any, kind: str) -> str:
    return kind if delim.literals is not None else f"{kind}_pattern"


# ------------------------------------------------------------------------------------------ arguments


def _schema_kinds(schema: Any) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    kinds: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        kinds.add(declared)
    elif isinstance(declared, list):
        kinds.update(k for k in declared if isinstance(k, str))
    for union in ("anyOf", "oneOf"):
        for option in schema.get(union) or ():
            kinds |= _schema_kinds(option)
    if "enum" in schema and not kinds:
        kinds = {"string"} if all(isinstance(v, str) for v in schema["enum"]) else set()
    return kinds


def _is_string(schema: Any) -> bool:
    return _schema_kinds(schema) == {"string"}


#: Up to this many parameters, a call writes them in any order, each at most once (one choice per set of
#: parameters written: the structural tag, which has no shared rules, spells out every order).
ANY_ORDER_MAX = 4


def _ordered_params(tool: Tool, items: Sequence[tuple[str, Node]], separator: Node) -> Node:
    """The parameters of one call: each at most once, required ones always, optional ones when written;
    in any order for up to :data:`ANY_ORDER_MAX` parameters, else in the schema's order, each optional
    one skippable. (A run of any parameters in any order for larger tools was tried: xgrammar does not
    compile it inside a call inside open reasoning, and both forms must accept the same texts.)"""
    required = set(tool.required)
    if not items:
        return Lit("")
    if len(items) <= ANY_ORDER_MAX:
        return _any_order(items, required, separator, frozenset(), True, {})
    # Each parameter may come first among those written; required ones cannot be skipped.
    options: list[Node] = []
    for first in range(len(items)):
        if any(items[j][0] in required for j in range(first)):
            break
        parts: list[Node] = [items[first][1]]
        for name, node in items[first + 1 :]:
            entry = seq(separator, node)
            parts.append(entry if name in required else optional(entry))
        options.append(seq(*parts))
    if all(name not in required for name, _ in items):
        options.append(Lit(""))
    return options[0] if len(options) == 1 else Alt(tuple(options))


def _any_order(
    items: Sequence[tuple[str, Node]],
    required: set[str],
    separator: Node,
    written: frozenset[str],
    first: bool,
    memo: dict[tuple[frozenset[str], bool], Node],
) -> Node:
    """The parameters not yet ``written``, in any order, each at most once; the run may end once every
    required parameter is written. The choice after each set of parameters is one shared node."""
    key = (written, first)
    if key in memo:
        return memo[key]
    options: list[Node] = []
    for name, node in items:
        if name in written:
            continue
        rest = _any_order(items, required, separator, written | {name}, False, memo)
        options.append(seq(node, rest) if first else seq(separator, node, rest))
    if required <= written or not options:
        options.append(Lit(""))
    memo[key] = result = options[0] if len(options) == 1 else SharedAlt(tuple(options))
    return result


def spelled_nodes(
    pieces: Sequence[Piece],
    fill: Mapping[str, str],
    field: FieldSpec,
    key: str,
    name_group: str | None = None,
) -> list[Node]:
    """Spelled pieces as nodes: text, whitespace (:data:`WS`), groups filled in (the tool name, a parameter
    key) and the other groups as the patterns they match."""
    out: list[Node] = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(Lit(piece))
        elif not piece.name:
            # ``\s*`` is optional whitespace; ``\s+`` (or ``[ \t]+``) needs at least one character of it.
            if _blank(piece.pattern):
                out.append(WS)
            else:
                pattern = "[ \\t\\r\\n]+" if piece == SPACE1 else piece.pattern
                out.append(Pattern(pattern, example=" "))
        elif piece.name == OPTIONAL:
            out.append(optional(Pattern(piece.pattern)))
        elif piece.name == CLASS:
            sample = next((c for c in ("a", "0", "x", "_", "-") if regex.fullmatch(piece.pattern, c)), "a")
            out.append(Pattern(piece.pattern, example=sample))
        elif piece.name in fill:
            value = fill[piece.name]
            try:
                ok = regex.fullmatch(piece.pattern, value, timeout=1.0) is not None
            except (regex.error, TimeoutError):
                ok = True
            if not ok:
                what = "tool name" if piece.name == name_group else f"{piece.name} value"
                raise GrammarError(
                    f"{what} {value!r} cannot be written where the pattern reads it (/{piece.pattern}/)",
                    field=field.name,
                    key=key,
                )
            out.append(Lit(value))
        else:
            out.append(Pattern(piece.pattern))
    return out


def _blank(pattern: str) -> bool:
    """Whether a whitespace slot's pattern may match nothing (``\\s*``, ``\\n?``)."""
    return regex.fullmatch(pattern, "") is not None


def _exact_space(slot: Slot) -> Node:
    """A whitespace slot as exactly the whitespace its pattern matches (``\\n?``: an optional newline)."""
    pattern = slot.pattern
    if not _blank(pattern):
        return Pattern(pattern, example=" ")
    if pattern.endswith("?"):
        return optional(Pattern(pattern[:-1]))
    if pattern.endswith("*"):
        return optional(Pattern(pattern[:-1] + "+"))
    return WS


def make_tag(open_nodes: Sequence[Node], content: Node, close_nodes: Sequence[Node]) -> Tag:
    """A tag from the nodes of its opener and closer: the leading text of the opener is the tag's begin,
    the trailing text of the closer its end, whatever lies between (whitespace, patterns) its content."""
    rest = list(open_nodes)
    begin = []
    while rest and isinstance(rest[0], Lit):
        first = rest.pop(0)
        assert isinstance(first, Lit)
        begin.append(first.value)
    before = list(close_nodes)
    end: list[str] = []
    while before and isinstance(before[-1], Lit):
        last = before.pop()
        assert isinstance(last, Lit)
        end.insert(0, last.value)
    return Tag("".join(begin), seq(*rest, content, *before), "".join(end))


#: Where a standalone parameter schema keeps a copy of its tool's schema, for the references into it.
_TOOL_SCHEMA_DEF = "tool_schema"


def json_value(schema: Any, tool: Tool | None = None) -> Node:
    """A JSON value valid for ``schema``: the tool's whole parameter schema, or (with ``tool``) one of its
    parameters' schemas standing alone, which then carries the tool's schema along when it refers into it
    with ``$ref``."""
    if not isinstance(schema, Mapping):
        return Json({})
    if tool is None or schema is tool.parameters or not has_refs(schema):
        return Json(dict(schema))
    at = f"/$defs/{_TOOL_SCHEMA_DEF}"
    alone = dict(relocate_refs(dict(schema), at))
    defs = alone.get("$defs")
    alone["$defs"] = {
        **(defs if isinstance(defs, Mapping) else {}),
        _TOOL_SCHEMA_DEF: relocate_refs(dict(tool.parameters), at),
    }
    return Json(alone)


def xml_arguments(field: FieldSpec, tool: Tool) -> Node:
    args = field.content_args
    if args.get("nested"):
        raise GrammarError(
            "nested XML argument values (a tag per object key) are not written as a grammar yet",
            field=field.name,
            key="content_args",
        )
    type_group, type_parsers = _choice(args)
    keep = frozenset([str(type_group)]) if type_group else frozenset()
    try:
        pieces = spell(str(args.get("tag_pattern", "")), keep)
    except Unspellable as exc:
        raise GrammarError(f"no canonical spelling: {exc}", field=field.name, key="content_args") from None
    slots = [p.name for p in pieces if isinstance(p, Slot)]
    if "key" not in slots or "value" not in slots:
        raise GrammarError("the tag pattern has no key or value group", field=field.name, key="content_args")
    at = next(i for i, p in enumerate(pieces) if isinstance(p, Slot) and p.name == "value")
    before, after = list(pieces[:at]), list(pieces[at + 1 :])
    # Whitespace around the value belongs to the value (strings keep it as text, the parser strips it).
    # An enum's values are written exactly, with only the whitespace the pattern itself reads around them.
    space_before: list[Slot] = []
    space_after: list[Slot] = []
    while before and isinstance(last := before[-1], Slot) and not last.name:
        space_before.insert(0, last)
        before.pop()
    while after and isinstance(first := after[0], Slot) and not first.name:
        space_after.append(first)
        after.pop(0)
    # A pattern that ends a value at the next tag's opener (a missing close tag recovered) would cut a
    # free-text value that holds that opener: such values must not hold it.
    opener = _value_ending_opener(str(args.get("tag_pattern", "")), before, after)
    excludes = (opener,) if opener else ()
    items: list[tuple[str, Node]] = []
    for name, schema in tool.properties.items():
        # A nullable string is raw text too (the parser reads a raw ``null`` as null, any other as a string).
        string = _is_string(schema) or (not type_group and _schema_kinds(schema) == {"string", "null"})
        fill = {"key": name}
        if type_group:
            fill[str(type_group)] = _type_value(type_parsers, schema, string)
        for slot in before + after:
            if isinstance(slot, Slot) and slot.name not in ("", OPTIONAL) and slot.name not in fill:
                raise GrammarError(
                    f"the tag pattern captures {slot.name!r}, which a grammar cannot fill in",
                    field=field.name,
                    key="content_args",
                )
        choices = _string_choices(schema) if string else None
        if choices is not None:
            value: Node = seq(
                *(_exact_space(slot) for slot in space_before),
                Alt(tuple(Lit(c) for c in choices)) if len(choices) > 1 else Lit(choices[0]),
                *(_exact_space(slot) for slot in space_after),
            )
        else:
            value = Text(excludes) if string else seq(WS, json_value(schema, tool), WS)
        open_nodes = spelled_nodes(before, fill, field, "content_args")
        close_nodes = spelled_nodes(after, fill, field, "content_args")
        items.append((name, make_tag(open_nodes, value, close_nodes)))
    return seq(WS, _ordered_params(tool, items, WS), WS)


def _sample(pieces: Sequence[Piece], key: str) -> str:
    """One text the pieces spell, with ``key`` for the key group and the shortest filler elsewhere."""
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
        elif piece.name == "key":
            out.append(key)
        elif piece == SPACE1:
            out.append(" ")
    return "".join(out)


def _value_ending_opener(pattern: str, before: Sequence[Piece], after: Sequence[Piece]) -> str | None:
    """The literal start of a tag (``<parameter=``) when ``pattern`` ends a value where the next tag
    opens, else None: tried on two tags whose first has no close tag."""
    head = ""
    for piece in before:
        if not isinstance(piece, str):
            break
        head += piece
    if not head:
        return None
    first = _sample(before, "a") + "x"
    text = first + _sample(before, "b") + "y" + _sample(after, "b")
    try:
        match = regex.compile(pattern, regex.DOTALL).match(text)
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError):  # pragma: no cover
        return None
    if match is None or "value" not in match.re.groupindex or match.group("value") is None:
        return None
    return head if match.end("value") <= len(first) else None


def _string_choices(schema: Any) -> list[str] | None:
    """The values of a string parameter with an ``enum`` or a ``const`` (written as they are, since a raw
    XML value is not quoted), or None."""
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("const"), str):
        return [schema["const"]]
    values = schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return list(dict.fromkeys(values))
    return None


def _choice(args: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
    """The group whose capture picks each value's parser and ``{capture: parser}``: from ``type_group`` /
    ``type_parsers`` (extension ``xml-values``) or ``value_parser_by``; ``(None, {})`` without one. A
    ``value_parser_by`` keyed by the ``key`` or ``value`` group is not a type attribute the grammar writes:
    it is left alone (the values are then written as without it)."""
    if args.get("type_group"):
        return str(args["type_group"]), args.get("type_parsers") or {}
    by = args.get("value_parser_by")
    if isinstance(by, Mapping) and by.get("group") not in (None, "key", "value") and by.get("parsers"):
        return str(by["group"]), by["parsers"]
    return None, {}


def _type_value(type_parsers: Mapping[str, Any], schema: Any, string: bool) -> str:
    kinds = _schema_kinds(schema)
    for kind in sorted(kinds):
        if kind in type_parsers:
            return kind
    wanted = "text" if string else "json"
    for value, parser in type_parsers.items():
        name = parser.get("name") if isinstance(parser, Mapping) else "text" if parser is None else None
        if name == wanted:
            return str(value)
    return str(next(iter(type_parsers), ""))


#: The escapes a Python-call string may hold (those ``python-call-list`` reads: JSON's and ``\\'``; a
#: ``\\u`` escape outside the surrogates).
_PY_ESCAPE = r"\\([\"'\\/bfnrt]|u([0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))"

#: A Python string literal, single- or double-quoted, on one line (no raw line break).
PY_STRING = f"\"([^\"\\\\\\n\\r]|{_PY_ESCAPE})*\"|'([^'\\\\\\n\\r]|{_PY_ESCAPE})*'"


def _python_value(schema: Any, tool: Tool) -> Node:
    """One keyword argument's value: Python literals for scalars (``True``/``true``, ``None``/``null``,
    either quote for strings), JSON (valid Python too) for the rest."""
    kinds = _schema_kinds(schema)
    if kinds == {"boolean"}:
        return Alt((Lit("True"), Lit("False"), Lit("true"), Lit("false")))
    if kinds == {"null"}:
        return Alt((Lit("None"), Lit("null")))
    if (
        kinds == {"string"}
        and isinstance(schema, Mapping)
        and not schema.get("enum")
        and "const" not in schema
    ):
        return Pattern(PY_STRING, example="'Paris'")
    return json_value(schema, tool)


#: The names a Python call list can hold (dotted and hyphenated names included).
PY_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")


def python_arguments(tool: Tool) -> Node:
    items = [
        (name, seq(Lit(f"{name}="), _python_value(schema, tool))) for name, schema in tool.properties.items()
    ]
    return _ordered_params(tool, items, Lit(", "))


def call_object_schema(
    tool: Tool, keys: Mapping[str, str], item_transform: bool, at: str = "", name_last: bool = False
) -> dict[str, Any]:
    """The JSON schema of one whole call object to ``tool``; ``at`` is the JSON pointer where it will sit in
    the grammar's schema, so that the references of the tool's schema still resolve there. Grammars write
    an object's properties in the schema's order: ``name_last`` puts the name after the arguments."""

    def parameters(key: str) -> dict[str, Any]:
        return relocate_refs(dict(tool.parameters), f"{at}/properties/{schema_pointer((key,))[2:]}")

    if item_transform:
        return {
            "type": "object",
            "properties": {tool.name: parameters(tool.name)},
            "required": [tool.name],
            "additionalProperties": False,
        }
    props: dict[str, Any] = {}
    required: list[str] = []
    for role, key in keys.items():
        if role == "id?":
            continue
        props[key] = (
            {"type": "string"}
            if role == "id"
            else {"const": tool.name}
            if role == "name"
            else parameters(key)
        )
        required.append(key)
    if "id?" in keys:  # an id the transform reads when present (``{id?}``): optional, after the call
        props[keys["id?"]] = {"type": "string"}
    if name_last and "name" in keys:
        name_key = keys["name"]
        props = {k: v for k, v in props.items() if k != name_key} | {name_key: props[name_key]}
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}

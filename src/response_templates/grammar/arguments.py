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
from .anyvalue import PY_STRING
from .nodes import WS, Alt, Json, Lit, Node, Pattern, Tag, Text, optional, seq
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
    "cast_tolerant",
    "delimiter_key",
    "json_value",
    "make_tag",
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


def _ordered_params(tool: Tool, items: Sequence[tuple[str, Node]], separator: Node) -> Node:
    """The parameters of one call, in any order where the grammar can say so (see :mod:`.params`)."""
    from .params import ordered_params

    return ordered_params(items, tool.required, separator)


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


#: The strings the parser's argument typing (:func:`~response_templates.calls.type_tool_calls`) casts to a
#: value of each scalar type, written canonically; digits bounded so that every cast succeeds (an
#: overlong literal fails ``int()`` and overflows ``float()``, and would stay a string).
_CAST_PATTERNS = {
    "integer": "-?(0|[1-9][0-9]{0,15})",
    "number": "-?(0|[1-9][0-9]{0,15})(\\.[0-9]{1,15})?",
    "boolean": "true|false|True|False",
    "null": "null|None",
}
#: The keywords of a parameter schema whose string form is written (any other keyword may constrain the
#: cast value in a way a pattern cannot check: ``minimum``, ``enum``, ``$ref``, ``nullable``, ...).
_CAST_KEYS = frozenset({"type", "title", "description", "default", "examples"})


def cast_tolerant(tool: Tool) -> Tool:
    """``tool`` with each top-level scalar parameter (``integer``, ``number``, ``boolean``, ``null``, or a
    list of them) also allowed as a JSON string the parser's argument typing casts to a valid value (``"2"``,
    ``"true"``), for a JSON body whose field types its arguments. Only schemas with no keyword but the type
    and annotations: a cast value then always validates (the first type in the list that reads the string
    gives a value of that type)."""
    properties = tool.parameters.get("properties")
    if not isinstance(properties, Mapping):
        return tool
    widened: dict[str, Any] = {}
    for name, schema in properties.items():
        pattern = _cast_pattern(schema)
        if pattern is not None:
            widened[name] = {"anyOf": [dict(schema), {"type": "string", "pattern": pattern}]}
    if not widened:
        return tool
    return Tool(tool.name, {**tool.parameters, "properties": {**properties, **widened}})


def _cast_pattern(schema: Any) -> str | None:
    """The pattern of the strings that cast to a valid value for ``schema`` (None: no string is written)."""
    if not isinstance(schema, Mapping) or not set(schema) <= _CAST_KEYS:
        return None
    declared = schema.get("type")
    kinds = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    if not kinds or not all(k in _CAST_PATTERNS for k in kinds) or set(kinds) <= {"null"}:
        return None
    return "^(" + "|".join(_CAST_PATTERNS[k] for k in dict.fromkeys(kinds)) + ")$"


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
    cdata = (
        _cdata_value(str(args.get("tag_pattern", "")), before, after, excludes) if args.get("cdata") else None
    )
    # Where a type attribute is read: a string also under the JSON parser's attribute, or without one.
    json_type = _json_type_value(type_parsers) if type_group else None
    bare = _untyped_pieces(field, str(type_group)) if type_group else None
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
        entries: list[Node] = [make_tag(open_nodes, value, close_nodes)]
        if string and cdata is not None and not _constrained(schema):
            # or the value as a CDATA section, in a tag of its own: its text may then hold the close tag
            entries.append(
                make_tag([*open_nodes, Lit(_CDATA_OPEN)], cdata, [Lit(_CDATA_CLOSE), *close_nodes])
            )
        if string and json_type is not None and type_group and fill[str(type_group)] != json_type[0]:
            # a string under the JSON attribute: a JSON string (valid for the schema), or raw text that
            # no JSON value starts like (the parser keeps text it cannot read as JSON as it is)
            json_fill = {**fill, str(type_group): json_type[0]}
            json_open = spelled_nodes(before, json_fill, field, "content_args")
            json_close = spelled_nodes(after, json_fill, field, "content_args")
            entries.append(make_tag(json_open, seq(WS, json_value(schema, tool), WS), json_close))
            if json_type[1] and not _constrained(schema):
                not_json = seq(Pattern(_NOT_JSON_START, example="x"), Text(excludes))
                entries.append(make_tag(json_open, not_json, json_close))
        if string and bare is not None and not _constrained(schema):
            # a string without the attribute: raw text, as the parser reads it then
            bare_before, bare_after = bare
            entries.append(
                make_tag(
                    spelled_nodes(bare_before, {"key": name}, field, "content_args"),
                    Text(excludes),
                    spelled_nodes(bare_after, {"key": name}, field, "content_args"),
                )
            )
        items.append((name, entries[0] if len(entries) == 1 else Alt(tuple(entries))))
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


#: The start of a text the JSON parser cannot read (so that it keeps the text as a string): not whitespace,
#: nor what starts a JSON value or Python's ``NaN``/``Infinity`` (which ``json.loads`` reads), checked on
#: two characters for the letters; never ``<``, where a close tag may start.
_NOT_JSON_START = '[^ \\t\\r\\n"{\\[\\-0-9tfnNI<]|n[^u<]|t[^r<]|f[^a<]|N[^a<]|I[^n<]'


def _constrained(schema: Any) -> bool:
    """Whether a schema has keywords beyond its type and annotations (``pattern``, lengths, ``format``...)."""
    return isinstance(schema, Mapping) and not set(schema) <= _CAST_KEYS


def _json_type_value(type_parsers: Mapping[str, Any]) -> tuple[str, bool] | None:
    """Of a two-valued type attribute (``string="true|false"``: text or JSON), the value that reads the
    value as JSON and whether that parser keeps a text it cannot read (``allow_non_json``); None for any
    other attribute (a type name per schema type, where a string written as ``integer`` would mislead)."""
    names = {
        str(v): (p.get("name"), p.get("args")) for v, p in type_parsers.items() if isinstance(p, Mapping)
    }
    if len(names) != 2 or len(type_parsers) != 2 or {n for n, _ in names.values()} != {"text", "json"}:
        return None
    value, (_, args) = next((v, np) for v, np in names.items() if np[0] == "json")
    return value, isinstance(args, Mapping) and args.get("allow_non_json") is True


def _untyped_pieces(field: FieldSpec, type_group: str) -> tuple[list[Piece], list[Piece]] | None:
    """The tag pattern spelled without its optional type attribute (the pieces before and after the
    value), where the pattern reads that spelling and the field's parser then reads a raw value as the text
    it is (tried on probes); else None."""
    pattern = str(field.content_args.get("tag_pattern", ""))
    try:
        pieces = [p for p in spell(pattern, frozenset()) if not (isinstance(p, Slot) and p.name == OPTIONAL)]
    except Unspellable:
        return None
    if any(isinstance(p, Slot) and p.name not in ("", "key", "value") for p in pieces):
        return None
    at = next((i for i, p in enumerate(pieces) if isinstance(p, Slot) and p.name == "value"), None)
    if at is None:
        return None
    before, after = list(pieces[:at]), list(pieces[at + 1 :])
    if any(isinstance(p, Slot) and not p.name for p in (*before[-1:], *after[:1])):
        return None  # whitespace around the value: not this simple spelling
    for probe in ("123", '{"a": 1}', " x "):
        text = _sample(before, "k") + probe + _sample(after, "k")
        try:
            match = regex.compile(pattern, regex.DOTALL).match(text)
            read = field.parser.parse(text, field.content_args)
        except Exception:
            return None
        if match is None or match.group(type_group) is not None or read != {"k": probe}:
            return None
    return before, after


#: A CDATA section's delimiters (``cdata``: the parser unwraps a value written as one, verbatim).
_CDATA_OPEN, _CDATA_CLOSE = "<![CDATA[", "]]>"


def _cdata_value(
    pattern: str, before: Sequence[Piece], after: Sequence[Piece], excludes: tuple[str, ...]
) -> Node | None:
    """The text of a string value written as a CDATA section, where the parser unwraps one (``cdata``):
    it holds no ``]]>``, nor the close tag unless the pattern reads a CDATA section that holds it (tried on
    a probe), nor what ends a value early (``excludes``). None when the close tag is not plain text."""
    close = literal_text(list(after))
    if close is None:
        return None
    close = close.strip()
    held = _CDATA_OPEN + "a" + close + _CDATA_CLOSE
    probe = _sample(before, "k") + held + _sample(after, "k")
    try:
        match = regex.compile(pattern, regex.DOTALL).match(probe)
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError):  # pragma: no cover
        return None
    reads = match is not None and "value" in match.re.groupindex and match.group("value") == held
    body = (_CDATA_CLOSE, *excludes) if reads or not close else (_CDATA_CLOSE, close, *excludes)
    return Text(tuple(dict.fromkeys(body)))


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


#: The names a Python call list can hold (dotted and hyphenated names included).
PY_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")


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

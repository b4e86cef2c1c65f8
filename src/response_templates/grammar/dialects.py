"""Internal: tool arguments in a JSON dialect (the ``json`` parser's ``unquoted_keys`` and
``string_delims``), written from the tool's JSON schema.

Gemma 4 writes ``{city:<|"|>Paris<|"|>,days:3}``, FunctionGemma ``{city:<escape>Paris<escape>}``: bare
keys, and strings between markers, verbatim. A JSON-schema grammar writes standard JSON, so the dialect is
written here as a tree of the grammar's own nodes (:mod:`.nodes`), which both forms (the structural tag
and the Lark grammar) already write the same way:

* an object with ``properties``: ``{``, its entries ``key:value`` joined by ``,``, ``}``; a key is bare
  when the parser reads it bare (``\\w+``), else a JSON string; required entries always, optional ones when
  written, in the schema's order or in sorted order (the order the models' chat templates list them);
* a string: a delimited string (the first ``string_delims`` pair: the opening marker, text that holds
  neither the closing marker nor a closer of the call region, the closing marker), or a standard JSON
  string; an ``enum``/``const`` is one of its values, spelled either way;
* an array whose items the dialect writes: ``[``, the items joined by ``,``, ``]``, up to a few items
  (:data:`_UNROLL`), or standard JSON for any length;
* a number, an integer, a boolean, null, and every schema the dialect does not write itself (``anyOf``,
  string ``pattern``/``format``/lengths, ``$ref``, free-form objects, ...): standard JSON valid for the
  schema (:class:`~.nodes.Json`), which the dialect's parser reads unchanged (a standard string is copied
  untouched, a quoted key is a key).

What the parser reads back is therefore the value the grammar wrote: :meth:`JsonDialect.to_standard
<response_templates.jsonlex.dialect.JsonDialect.to_standard>` turns a delimited string into the same text
and a bare key into the same key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from ..language import FieldSpec
from .arguments import Tool, json_value
from .nodes import Alt, DialectValue, Lit, Node, PyString, Tag, Text, optional, seq
from .params import schema_order

__all__ = [
    "PYTHON",
    "Dialect",
    "dialect_value",
    "field_dialect",
]

#: The most items of an array written in the dialect (longer arrays: standard JSON).
_UNROLL = 6
#: The most items of an array of objects or arrays written in the dialect.
_UNROLL_NESTED = 3
#: Nesting deeper than this is written as standard JSON.
_MAX_DEPTH = 4
#: The schema keywords of a string the dialect writes (any other: standard JSON, checked by the schema).
_STRING_KEYS = frozenset({"type", "enum", "const", "title", "description", "default", "examples", "nullable"})
_OBJECT_KEYS = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description", "default", "examples"}
)
_ARRAY_KEYS = frozenset(
    {"type", "items", "minItems", "maxItems", "title", "description", "default", "examples"}
)
#: The keywords of a schema that constrains nothing (``{}``, ``{"type": "object"}``, ``{"type": "array"}``).
_FREE_KEYS = frozenset({"type", "title", "description", "default", "examples"})
#: A key the parser reads bare (``unquoted_keys``: a run of word characters).
_BARE_KEY = regex.compile(r"\w+")


@dataclass(frozen=True)
class Dialect:
    """How one ``json`` field's dialect writes values."""

    unquoted_keys: bool
    #: ``(open, close)`` of delimited strings, or None (strings are standard JSON strings).
    delims: tuple[str, str] | None
    #: What a delimited string's body must not hold besides its closing marker: the call region's closers,
    #: where the parser would end the region.
    excludes: tuple[str, ...] = ()
    #: Python literals instead of JSON (the Python-call parsers' values): strings and dict keys in either
    #: quote, ``True``/``False``/``None`` as well as JSON's constants, a space allowed after ``,`` and ``:``.
    python: bool = False


#: The values of Python-call arguments (``python-call-list``, ``python-calls``).
PYTHON = Dialect(unquoted_keys=False, delims=None, python=True)


def field_dialect(field: FieldSpec) -> Dialect | None:
    """The dialect of a ``json`` tool-call field, or None when it reads standard JSON."""
    if field.parser.name != "json":
        return None
    args = field.content_args
    unquoted = args.get("unquoted_keys") is True
    raw = args.get("string_delims") or ()
    pairs = [
        (str(p[0]), str(p[1]))
        for p in raw
        if isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) and x for x in p)
    ]
    if not unquoted and not pairs:
        return None
    excludes: list[str] = []
    if field.close is not None and field.close.literals is not None:
        excludes.extend(field.close.literals)
    # The parser lets the longest opening marker win: a body must not hold a longer marker's start either.
    excludes.extend(o for o, _ in pairs[1:])
    return Dialect(unquoted, pairs[0] if pairs else None, tuple(dict.fromkeys(e for e in excludes if e)))


def dialect_value(schema: Any, tool: Tool, dialect: Dialect, depth: int = 0) -> Node:
    """A value valid for ``schema``, spelled in ``dialect`` where the dialect differs from JSON."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH or "$ref" in schema:
        return json_value(schema, tool)
    if set(schema) <= _FREE_KEYS and schema.get("type", "any") in ("any", "object", "array"):
        # a value the schema does not constrain: any value of the dialect (of the type it names)
        kind = str(schema.get("type", "any"))
        return DialectValue(kind, dialect.unquoted_keys, dialect.delims, dialect.excludes, dialect.python)
    if "const" in schema:
        return _choices([schema["const"]], dialect) or json_value(schema, tool)
    if "enum" in schema:
        values = schema["enum"]
        return (_choices(values, dialect) if isinstance(values, list) else None) or json_value(schema, tool)
    kinds = schema.get("type")
    if isinstance(kinds, list) and kinds and all(isinstance(k, str) for k in kinds):
        options = [dialect_value({**schema, "type": k}, tool, dialect, depth) for k in dict.fromkeys(kinds)]
        return options[0] if len(options) == 1 else Alt(tuple(options))
    if kinds == "string" and set(schema) <= _STRING_KEYS:
        return _string(dialect)
    if dialect.python and kinds == "boolean":
        return Alt((Lit("True"), Lit("False"), Lit("true"), Lit("false")))
    if dialect.python and kinds == "null":
        return Alt((Lit("None"), Lit("null")))
    if kinds == "object" and isinstance(schema.get("properties"), Mapping) and set(schema) <= _OBJECT_KEYS:
        return _object(schema, tool, dialect, depth)
    if kinds == "array" and set(schema) <= _ARRAY_KEYS:
        return _array(schema, tool, dialect, depth)
    return json_value(schema, tool)


def _string(dialect: Dialect) -> Node:
    if dialect.python:
        return PyString(example="'text'")
    standard = json_value({"type": "string"})
    if dialect.delims is None:
        return standard
    open_, close = dialect.delims
    return Alt((Tag(open_, Text(dialect.excludes), close), standard))


def _choices(values: Sequence[Any], dialect: Dialect) -> Node | None:
    """One of ``values`` (an ``enum`` or a ``const``), each spelled as the dialect and as JSON may."""
    spelled: list[Node] = []
    for value in values:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return None
        if isinstance(value, (dict, list)):
            return None  # a structured constant: standard JSON, checked by the schema
        if dialect.python:
            spelled.extend(Lit(t) for t in _python_spellings(value))
        if isinstance(value, str) and dialect.delims is not None:
            open_, close = dialect.delims
            if close not in value and not any(e in value for e in dialect.excludes):
                spelled.append(Lit(open_ + value + close))
        spelled.append(Lit(text))
    unique = _unique(spelled)
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else Alt(tuple(unique))


def _python_spellings(value: Any) -> list[str]:
    """How a Python literal spells a scalar constant, besides JSON's spelling: ``True``, ``None``, a
    string in single quotes (when it needs no escape there)."""
    if value is True or value is False or value is None:
        return [repr(value)]
    if isinstance(value, str) and not regex.search(r"['\\\x00-\x1f\x7f-\x9f\p{Cs}]", value):
        return [f"'{value}'"]
    return []


def _sep(char: str, dialect: Dialect) -> Node:
    """A ``,`` or ``:`` between entries: a Python literal may have a space after it."""
    return seq(Lit(char), optional(Lit(" "))) if dialect.python else Lit(char)


def _unique(nodes: Sequence[Node]) -> list[Node]:
    """``nodes`` without repeats, in order (nodes hold schemas, which do not hash)."""
    out: list[Node] = []
    for node in nodes:
        if node not in out:
            out.append(node)
    return out


def _key(name: str, dialect: Dialect) -> str:
    if dialect.unquoted_keys and _BARE_KEY.fullmatch(name):
        return name
    return json.dumps(name, ensure_ascii=False)


def _object(schema: Mapping[str, Any], tool: Tool, dialect: Dialect, depth: int) -> Node:
    properties = schema["properties"]
    required_list = schema.get("required")
    required = {r for r in required_list if isinstance(r, str)} if isinstance(required_list, list) else set()
    if not required <= set(properties):
        return json_value(schema, tool)  # a required key with no schema of its own: JSON, by the schema
    entries = [
        (
            name,
            seq(_key_node(name, dialect), _sep(":", dialect), dialect_value(sub, tool, dialect, depth + 1)),
        )
        for name, sub in properties.items()
    ]
    orders = [entries]
    by_name = sorted(entries, key=lambda entry: entry[0])
    if [n for n, _ in by_name] != [n for n, _ in entries]:
        orders.append(by_name)
    bodies = _unique([schema_order(order, required, _sep(",", dialect)) for order in orders])
    body = bodies[0] if len(bodies) == 1 else Alt(tuple(bodies))
    return seq(Lit("{"), body, Lit("}"))


def _key_node(name: str, dialect: Dialect) -> Node:
    """An object key: bare or a JSON string as :func:`_key`; in a Python literal, in either quote."""
    if not dialect.python:
        return Lit(_key(name, dialect))
    spellings = [*_python_spellings(name), json.dumps(name, ensure_ascii=False)]
    return Alt(tuple(Lit(t) for t in spellings)) if len(spellings) > 1 else Lit(spellings[0])


def _array(schema: Mapping[str, Any], tool: Tool, dialect: Dialect, depth: int) -> Node:
    standard = json_value(schema, tool)
    items = schema.get("items", {})
    low = schema.get("minItems", 0)
    high = schema.get("maxItems")
    if not isinstance(items, Mapping) or not isinstance(low, int) or isinstance(low, bool):
        return standard
    nested = isinstance(items.get("type"), (list, str)) and items.get("type") in ("object", "array")
    cap = _UNROLL_NESTED if nested or "properties" in items else _UNROLL
    if isinstance(high, int) and not isinstance(high, bool):
        cap = min(cap, high)
    if low > cap or low < 0:
        return standard
    item = dialect_value(items, tool, dialect, depth + 1)
    if isinstance(item, DialectValue) and item.kind == "any" and low == 0 and high is None:
        return DialectValue("array", dialect.unquoted_keys, dialect.delims, dialect.excludes, dialect.python)
    # ``low`` items always, then up to ``cap`` in all, each after a comma.
    comma = _sep(",", dialect)
    tail: Node = Lit("")
    for _ in range(cap - max(low, 1)):
        tail = optional(seq(comma, item, tail))
    if low == 0:
        body: Node = optional(seq(item, tail)) if cap > 0 else Lit("")
    else:
        body = seq(item, *(seq(comma, item) for _ in range(low - 1)), tail)
    written = seq(Lit("["), body, Lit("]"))
    if dialect.python and isinstance(high, int) and not isinstance(high, bool) and high <= cap:
        # Every length is written above. (Standard JSON may break a line, and ``python-calls`` reads a
        # text of several calls line by line: a Python value keeps to its line where it can.)
        return written
    return Alt((written, standard))


# ------------------------------------------------------------------------------- any value of a dialect
#
# A value the schema leaves free (:class:`~.nodes.DialectValue`) is recursive (objects and arrays of any
# values), so it is a grammar of its own: rules of the Lark grammar, an EBNF grammar (the structural
# tag's ``grammar`` format). Both write the same language, compact (no whitespace between tokens):
#
#   value  = string | number | "true" | "false" | "null" | object | array
#   object = "{" (member ("," member)*)? "}"      member = key ":" value
#   array  = "[" (value ("," value)*)? "]"
#   key    = a bare key [A-Za-z0-9_]+ (with unquoted_keys) | a JSON string
#   string = open, text holding neither close nor the excludes, close (with delims) | a JSON string

"""Internal: from a compiled response template, a request's tools and choices, to a grammar tree.

The template is read as the parser reads it: the reasoning field (``reasoning_content``) and its
delimiters, the implicit field (free content), and the tool-call field: where a call's name comes from
(:func:`response_templates.toolstream.plan.tool_call_plan` evaluates the transform), which content parser
reads its arguments, and how its delimiters are spelled (:mod:`.spelling`). Every refusal is a
:class:`GrammarError` naming the field and the key that cannot be written as a grammar.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from ..errors import ResponseTemplateError
from ..language import FieldSpec, ResponseTemplate
from ..parser import ResponseParser
from ..tools import callable_to_schema, tool_parameters
from ..toolstream.plan import tool_call_plan
from .lark import regex_escape
from .nodes import WS, Alt, Calls, Json, Lit, Node, Pattern, Tag, Text, optional, seq
from .spelling import (
    OPTIONAL,
    SPACE1,
    Piece,
    Slot,
    Unspellable,
    literal_text,
    spell,
    spell_branches,
    spell_parts,
    spell_parts_variants,
    strip_space,
)

__all__ = ["GrammarError", "Tool", "derive"]


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
        props = self.parameters.get("properties")
        return dict(props) if isinstance(props, Mapping) else {}

    @property
    def required(self) -> list[str]:
        req = self.parameters.get("required")
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []


def read_tools(tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None) -> list[Tool]:
    """The request's tools (JSON-schema dicts or typed Python functions), checked as the parser checks them."""
    tool_parameters(tools)  # raises ToolSpecError on a malformed list
    out: list[Tool] = []
    seen: set[str] = set()
    for tool in tools or ():
        if isinstance(tool, Mapping):
            spec = tool.get("function", tool)
            assert isinstance(spec, Mapping)
            name = str(spec["name"])
            parameters = spec.get("parameters")
        else:
            assert inspect.isfunction(tool) or inspect.ismethod(tool)
            function = callable_to_schema(tool)["function"]
            name, parameters = function["name"], function["parameters"]
        if name in seen:
            continue
        seen.add(name)
        if not isinstance(parameters, Mapping):
            parameters = {"type": "object", "properties": {}}
        out.append(Tool(name, dict(parameters)))
    return out


# ------------------------------------------------------------------------------------------ spelling


def _spell(delim: Any, field: str, key: str) -> list[Piece]:
    """The one canonical spelling of a delimiter (its first literal, or its pattern spelled)."""
    if delim.literals is not None:
        return [delim.literals[0]]
    try:
        return spell(delim.source, canonical=True)
    except Unspellable as exc:
        raise GrammarError(f"no canonical spelling: {exc}", field=field, key=key) from None


def _spell_text(delim: Any, field: str, key: str) -> str:
    """A delimiter's spelling as plain text (whitespace it allows left out: free text around it takes it)."""
    pieces = strip_space(_spell(delim, field, key))
    text = literal_text(pieces)
    if text is None:
        raise GrammarError(
            "the delimiter captures text, which a grammar cannot fill in", field=field, key=key
        )
    return text


def _key(delim: Any, kind: str) -> str:
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
    """The parameters of one call in schema order: required ones always, optional ones when written."""
    required = set(tool.required)
    if not items:
        return Lit("")
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


def _nodes(
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


def _make_tag(open_nodes: Sequence[Node], content: Node, close_nodes: Sequence[Node]) -> Tag:
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


def _json_value(schema: Any) -> Node:
    return Json(dict(schema) if isinstance(schema, Mapping) else {})


def _xml_arguments(field: FieldSpec, tool: Tool) -> Node:
    args = field.content_args
    if args.get("nested"):
        raise GrammarError(
            "nested XML argument values (a tag per object key) are not written as a grammar yet",
            field=field.name,
            key="content_args",
        )
    type_group = args.get("type_group")
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
    type_parsers = args.get("type_parsers") or {}
    items: list[tuple[str, Node]] = []
    for name, schema in tool.properties.items():
        string = _is_string(schema)
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
            value = Text() if string else seq(WS, _json_value(schema), WS)
        open_nodes = _nodes(before, fill, field, "content_args")
        close_nodes = _nodes(after, fill, field, "content_args")
        items.append((name, _make_tag(open_nodes, value, close_nodes)))
    return seq(WS, _ordered_params(tool, items, WS), WS)


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


def _type_value(type_parsers: Mapping[str, Any], schema: Any, string: bool) -> str:
    kinds = _schema_kinds(schema)
    for kind in sorted(kinds):
        if kind in type_parsers:
            return kind
    wanted = "text" if string else "json"
    for value, parser in type_parsers.items():
        if isinstance(parser, Mapping) and parser.get("name") == wanted:
            return str(value)
    return str(next(iter(type_parsers), ""))


#: The escapes a Python-call string may hold (those ``python-call-list`` reads: JSON's and ``\\'``; a
#: ``\\u`` escape outside the surrogates).
_PY_ESCAPE = r"\\([\"'\\/bfnrt]|u([0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))"

#: A Python string literal, single- or double-quoted, on one line (no raw line break).
PY_STRING = f"\"([^\"\\\\\\n\\r]|{_PY_ESCAPE})*\"|'([^'\\\\\\n\\r]|{_PY_ESCAPE})*'"


def _python_value(schema: Any) -> Node:
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
    return _json_value(schema)


#: The names a Python call list can hold (dotted and hyphenated names included).
PY_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")


def _python_arguments(tool: Tool) -> Node:
    items = [(name, seq(Lit(f"{name}="), _python_value(schema))) for name, schema in tool.properties.items()]
    return _ordered_params(tool, items, Lit(", "))


def _call_object_schema(tool: Tool, keys: Mapping[str, str], item_transform: bool) -> dict[str, Any]:
    if item_transform:
        return {
            "type": "object",
            "properties": {tool.name: dict(tool.parameters)},
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
            else dict(tool.parameters)
        )
        required.append(key)
    if "id?" in keys:  # an id the transform reads when present (``{id?}``): optional, after the call
        props[keys["id?"]] = {"type": "string"}
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


# --------------------------------------------------------------------------------------------- calls


@dataclass
class CallSyntax:
    """How the calls of one tool-call field are written."""

    field: FieldSpec
    #: One tag per allowed tool (or one tag holding a list of calls, when ``array``).
    tags: list[Tag]
    triggers: list[str]
    #: ``(open, close)`` written once around several calls, or None.
    section: tuple[str, str] | None
    #: One region holds every call (a JSON array or a Python list): parallelism is inside the tag.
    array: bool
    #: The call region runs to the next call or the end of the output (no close of its own).
    open_ended: bool


def _json_path_key(source: Any) -> str | None:
    if source is None or source[0] != "json":
        return None
    paths = source[1]
    if not paths or len(paths[0]) != 1:
        return None
    return str(paths[0][0])


def _delimiters(
    field: FieldSpec,
    turn_ends: frozenset[str] = frozenset(),
    joiners: list[str] | None = None,
    variant: tuple[list[Piece], list[Piece], list[Piece]] | None = None,
) -> tuple[list[Piece], list[Piece], tuple[str, str] | None, bool]:
    """``(open pieces, close pieces, section, open_ended)`` of a tool-call field.

    A close that is also an end of the turn (``turn_ends``: the implicit field's closes, such as
    ``<|eot_id|>``) is the engine's stop token, not text the grammar writes: such calls run to the end.
    """
    if field.open is None:
        raise GrammarError("a tool-call field needs an open delimiter", field=field.name)
    open_key = _key(field.open, "open")
    section_open: list[Piece] = []
    if field.open.literals is not None:
        open_pieces: list[Piece] = [field.open.literals[0]]
    else:
        try:
            section_open, open_pieces, open_trail = variant or spell_parts(str(field.open.source))
        except Unspellable as exc:
            raise GrammarError(f"no canonical spelling: {exc}", field=field.name, key=open_key) from None
        trail = literal_text(strip_space(open_trail))
        if trail:  # an optional end of the opener (``(?:\[ARGS\])?``) may be written or not
            open_pieces = [*open_pieces, Slot(OPTIONAL, regex_escape(trail))]
    section_close: list[Piece] = []
    open_ended = False
    if field.close_json:
        close_pieces: list[Piece] = []
    elif field.close is None:
        raise GrammarError("a tool-call field needs a close delimiter", field=field.name)
    elif field.close.literals is not None:
        closers = [lit for lit in field.close.literals if lit not in turn_ends]
        close_pieces = list(closers[:1])
        if not closers:
            open_ended = True
    elif not (closers := _close_alternatives(str(field.close.source), turn_ends)):
        close_pieces, open_ended = [], True
    else:
        try:
            close_lead, close_pieces, section_close = spell_parts(closers[0])
        except Unspellable as exc:
            raise GrammarError(
                f"no canonical spelling: {exc}", field=field.name, key="close_pattern"
            ) from None
        close_pieces = [*close_lead, *close_pieces]
        if literal_text(strip_space(close_pieces)) is None:
            raise GrammarError("the close delimiter captures text", field=field.name, key="close_pattern")
        if not strip_space(close_pieces) and not strip_space(section_close):
            open_ended = True
    section = None
    lead, trail = literal_text(strip_space(section_open)), literal_text(strip_space(section_close))
    if lead and trail:
        section = (lead, trail)
    elif lead and joiners is not None:
        # Regions only (no free content): an optional start of the opener (``<|start|>assistant``) joins
        # one region to the next; it is written where regions follow each other.
        joiners.append(lead)
        close_pieces = [*close_pieces, *section_close]
    else:
        open_pieces = [*section_open, *open_pieces]
        close_pieces = [*close_pieces, *section_close]
    return open_pieces, close_pieces, section, open_ended


def top_alternatives(source: str) -> list[str]:
    """The top-level alternatives of a regex, as text (``a(?:b|c)|d`` -> ``["a(?:b|c)", "d"]``).

    Split on the text, since a regex parser may factor out a common prefix (``</x>|<|end|>`` parses as
    ``<`` then a choice), which hides the top-level choice."""
    out: list[str] = []
    depth, start, i, in_class = 0, 0, 0, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            if source[i + 1 : i + 2] == "^":
                i += 1
            if source[i + 1 : i + 2] == "]":
                i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(source[start:i])
            start = i + 1
        i += 1
    out.append(source[start:])
    if len(out) == 1 and source.startswith("(?:") and source.endswith(")") and _one_group(source):
        return top_alternatives(source[3:-1])  # ``(?:a|b)``: the alternatives inside
    return out


def _one_group(source: str) -> bool:
    """Whether ``source`` is one group from its first character to its last."""
    depth, i, in_class = 0, 0, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 2 if source[i + 1 : i + 2] in ("^", "]") else 1
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i == len(source) - 1
        i += 1
    return False


def _close_alternatives(source: str, turn_ends: frozenset[str]) -> list[str]:
    """A close pattern's alternatives, without those that only read an end of the turn (``<\\|im_end\\|>``:
    the engine's stop token, which ends the output rather than being written by the grammar)."""
    out = []
    for alternative in top_alternatives(source):
        try:
            turn_end = any(regex.fullmatch(alternative, end) for end in turn_ends)
        except regex.error:
            turn_end = False
        if not turn_end:
            out.append(alternative)
    return out


def call_syntax(
    field: FieldSpec,
    tools: Sequence[Tool],
    parallel: bool,
    turn_ends: frozenset[str] = frozenset(),
    joiners: list[str] | None = None,
    variant: tuple[list[Piece], list[Piece], list[Piece]] | None = None,
) -> CallSyntax:
    """How the calls of ``field`` are written for ``tools`` (raises :class:`GrammarError`)."""
    parser = field.parser.name
    args = field.content_args
    if parser == "json" and (args.get("unquoted_keys") or args.get("string_delims")):
        raise GrammarError(
            "the arguments are a JSON dialect (unquoted keys, custom string quotes) that JSON-schema "
            "grammars do not write",
            field=field.name,
            key="content_args",
        )
    if parser not in ("json", "xml-inline", "python-call-list", "python-calls"):
        raise GrammarError(
            f"the {parser!r} content parser does not carry a tool's arguments by schema",
            field=field.name,
            key="content",
        )
    if parser == "python-calls" and args.get("name_suffix"):
        raise GrammarError("built-in call syntax (name suffix)", field=field.name, key="content_args")
    open_pieces, close_pieces, section, open_ended = _delimiters(field, turn_ends, joiners, variant)
    assert field.open is not None
    open_key = _key(field.open, "open")
    close_nodes = _nodes(close_pieces, {}, field, "close_pattern")
    lead = ""
    for piece in open_pieces:
        if not isinstance(piece, str):
            break
        lead += piece
    if not lead:
        raise GrammarError(
            "the call's opener has no literal start to trigger on", field=field.name, key=open_key
        )
    plan = tool_call_plan(field)
    tags: list[Tag] = []
    if field.transform_each:
        open_nodes = _nodes(open_pieces, {}, field, open_key)
        if parser in ("python-call-list", "python-calls"):
            for tool in tools:
                for word in (tool.name, *tool.properties):
                    if not PY_NAME.fullmatch(word):
                        raise GrammarError(
                            f"{word!r} (tool {tool.name!r}) is not a name a Python call can write",
                            field=field.name,
                            key="content",
                        )
        if parser == "python-call-list":
            calls = tuple(Tag(t.name + "(", _python_arguments(t), ")") for t in tools)
            run = Calls(tags=calls, separator=", ", at_least_one=True, stop_after_first=not parallel)
            body: Node = Tag("[", run, "]")
        elif parser == "python-calls":
            # One call per line, no brackets (the lenient Python-call syntax of the extension).
            calls = tuple(Tag(t.name + "(", _python_arguments(t), ")") for t in tools)
            body = Calls(tags=calls, separator="\n", at_least_one=True, stop_after_first=not parallel)
        elif parser == "json":
            keys = _item_keys(field, plan)
            items = [_call_object_schema(t, keys, field.item_transform) for t in tools]
            schema: dict[str, Any] = {
                "type": "array",
                "items": items[0] if len(items) == 1 else {"anyOf": items},
            }
            schema["minItems"] = 1
            if not parallel:
                schema["maxItems"] = 1
            body = Json(schema)
        else:
            raise GrammarError(
                "a list of calls in one region must be JSON or Python", field=field.name, key="content"
            )
        tags.append(_make_tag(open_nodes, seq(WS, body, WS), close_nodes))
        return CallSyntax(field, tags, [lead], None, True, open_ended)
    name = plan.name
    for tool in tools:
        if name is not None and name[0] == "capture":
            group = str(name[1])
            open_nodes = _nodes(open_pieces, {group: tool.name}, field, open_key, name_group=group)
            if parser == "json":
                content: Node = seq(WS, _json_value(tool.parameters), WS)
            elif parser == "xml-inline":
                content = _xml_arguments(field, tool)
            else:
                raise GrammarError("Python calls with the name in the open delimiter", field=field.name)
            tags.append(_make_tag(open_nodes, content, close_nodes))
        elif name is not None and name[0] == "json" and parser == "json":
            if _json_path_key(name) != "name":
                raise GrammarError("the call's name sits deeper than the top of its JSON", field=field.name)
            arg_key = _json_path_key(plan.arguments) or "arguments"
            open_nodes = _nodes(open_pieces, {}, field, open_key)
            head = '{"name": ' + json.dumps(tool.name, ensure_ascii=False) + ", " + json.dumps(arg_key) + ": "
            content = seq(WS, Lit(head), _json_value(tool.parameters), Lit("}"), WS)
            tags.append(_make_tag(open_nodes, content, close_nodes))
        elif name is not None and name[0] == "literal":
            raise GrammarError(
                "every call of this field names the same tool", field=field.name, key="transform"
            )
        else:
            raise GrammarError(
                "the call's name is not read from the open delimiter or its JSON",
                field=field.name,
                key="transform",
            )
    return CallSyntax(field, tags, [lead], section, False, open_ended)


def _item_keys(field: FieldSpec, plan: Any) -> dict[str, str]:
    if field.item_transform:
        return {}
    keys: dict[str, str] = {}
    transform = field.transform
    id_role = None
    if isinstance(transform, Mapping) and isinstance(transform.get("id"), str):
        raw = transform["id"].strip("{}")
        id_key = raw.rstrip("?")
        if id_key and "." not in id_key:
            id_role = ("id?" if raw.endswith("?") else "id", id_key)
            if id_role[0] == "id":
                keys["id"] = id_key
    name_key = _json_path_key(plan.name)
    arg_key = _json_path_key(plan.arguments)
    if name_key is None or arg_key is None:
        raise GrammarError(
            "the calls' name and arguments are not keys of each list item", field=field.name, key="transform"
        )
    keys["name"] = name_key
    keys["arguments"] = arg_key
    if id_role is not None and id_role[0] == "id?":
        keys["id?"] = id_role[1]
    return keys


# ----------------------------------------------------------------------------------------- the whole


def _reasoning_field(template: ResponseTemplate) -> FieldSpec | None:
    for field in template.fields:
        if field.output_key == "reasoning_content" and field.open is not None:
            return field
    return None


def _tool_fields(template: ResponseTemplate) -> list[FieldSpec]:
    fields = [f for f in template.fields if f.output_key == "tool_calls" and not f.implicit]
    fields.sort(key=lambda f: f.name != "tool_calls")
    return fields


def reasoning_state(template: ResponseTemplate, prefix: str | None) -> str:
    """``"open"`` (the prompt leaves reasoning open), ``"closed"`` (the prompt wrote it) or ``"none"``."""
    field = _reasoning_field(template)
    if field is None or not prefix:
        return "none"
    parser = ResponseParser(template, prefix=prefix, errors="keep")
    # A delimiter at the very end of the prompt may still be held back (``<think>\\s*`` could grow): one
    # more character, which cannot extend a delimiter's text, settles it.
    events = [*parser.initial_events, *parser.feed("\x00")]
    state = "none"
    for event in events:
        if event.get("field") != field.name:
            continue
        if event["type"] == "region_open":
            state = "open"
        elif event["type"] == "region_close":
            state = "closed"
    return state


def _choice(tool_choice: Any, tools: Sequence[Tool]) -> tuple[str, str | None]:
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool_choice.get("name")
        if not isinstance(name, str):
            raise GrammarError(f"tool_choice names no function: {tool_choice!r}")
        tool_choice = name
    if not isinstance(tool_choice, str):
        raise GrammarError(
            f"tool_choice must be 'auto', 'required', 'none' or a tool name, got {tool_choice!r}"
        )
    if tool_choice in ("auto", "required", "none"):
        if tool_choice == "required" and not tools:
            raise GrammarError("tool_choice 'required' needs at least one tool")
        return tool_choice, None
    if tool_choice not in {t.name for t in tools}:
        raise GrammarError(f"tool_choice names {tool_choice!r}, which is not among the tools")
    return "named", tool_choice


def derive(
    template: ResponseTemplate,
    tools: Sequence[Tool],
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    reasoning: str = "allowed",
    prefix: str | None = None,
) -> Node:
    """The grammar tree of what the model may write after ``prefix``."""
    if reasoning not in ("allowed", "required", "forbidden"):
        raise GrammarError(f"reasoning must be 'allowed', 'required' or 'forbidden', got {reasoning!r}")
    mode, named = _choice(tool_choice, tools)
    if template.implicit is None:
        return _derive_regions(template, tools, mode, named, parallel_tool_calls, reasoning, prefix)
    reasoning_node, excludes = _reasoning(template, reasoning, prefix)
    if mode == "none" or not tools:
        excludes += _all_call_openers(template)
        return seq(reasoning_node, Text(tuple(excludes)))
    allowed = [t for t in tools if named is None or t.name == named]
    syntax, errors = None, []
    for field in _tool_fields(template):  # the first field whose calls can be written
        try:
            syntax = call_syntax(field, allowed, parallel_tool_calls, _turn_ends(template))
            break
        except GrammarError as exc:
            errors.append(exc)
    if syntax is None:
        if not errors:
            raise GrammarError("the template has no tool-call field")
        raise errors[0]
    syntax = _with_alternative_bodies(syntax, template, allowed, parallel_tool_calls)
    at_least_one = mode in ("required", "named")
    calls = _calls_node(syntax, at_least_one, parallel_tool_calls, tuple(excludes))
    if at_least_one and reasoning_node != Lit(""):
        return seq(reasoning_node, WS, calls)  # the first call comes right after the reasoning
    return seq(reasoning_node, calls)


def _with_alternative_bodies(
    syntax: CallSyntax, template: ResponseTemplate, tools: Sequence[Tool], parallel: bool
) -> CallSyntax:
    """Another tool-call field with the same opener and closer, which a lookahead tells apart by its body
    (LFM2: ``<|tool_call_start|>`` then a Python call list, or a JSON list), adds its body as an
    alternative inside the same tag."""
    if not syntax.array or len(syntax.tags) != 1 or syntax.section is not None:
        return syntax
    (tag,) = syntax.tags
    bodies = [tag.content]
    for field in _tool_fields(template):
        if field is syntax.field:
            continue
        try:
            other = call_syntax(field, tools, parallel, _turn_ends(template))
        except GrammarError:
            continue
        if (
            other.array
            and other.section is None
            and other.open_ended == syntax.open_ended
            and len(other.tags) == 1
            and (other.tags[0].begin, other.tags[0].ends) == (tag.begin, tag.ends)
            and other.tags[0].content not in bodies
        ):
            bodies.append(other.tags[0].content)
    if len(bodies) == 1:
        return syntax
    merged = Tag(tag.begin, Alt(tuple(bodies)), tag.end, tag.other_ends)
    return CallSyntax(syntax.field, [merged], syntax.triggers, None, True, syntax.open_ended)


def _turn_ends(template: ResponseTemplate) -> frozenset[str]:
    implicit = template.implicit
    if implicit is None or implicit.close is None or implicit.close.literals is None:
        return frozenset()
    return frozenset(implicit.close.literals)


def _all_call_openers(template: ResponseTemplate) -> list[str]:
    out: list[str] = []
    for field in _tool_fields(template):
        if field.open is None:
            continue
        if field.open.literals is not None:
            out.extend(field.open.literals)
            continue
        try:
            lead, body, _ = spell_parts(str(field.open.source))
        except Unspellable:
            continue
        text = literal_text(lead) or ""
        for piece in body:
            if not isinstance(piece, str):
                break
            text += piece
        if text:
            out.append(text)
    return out


def _run_tags(tags: Sequence[Tag]) -> tuple[Tag, ...]:
    """Tags for a run of calls written one after the other: each ends with its end string and any
    whitespace (a run's separator is fixed text, so whitespace between calls belongs to the calls)."""
    return tuple(Tag(t.begin, seq(t.content, Lit(t.end), WS), "") for t in tags)


def _calls_node(syntax: CallSyntax, at_least_one: bool, parallel: bool, excludes: tuple[str, ...]) -> Node:
    stop = not parallel
    if syntax.section is not None:
        open_, close = syntax.section
        inner = Calls(tags=_run_tags(syntax.tags), separator="", at_least_one=True, stop_after_first=stop)
        tag = Tag(open_, seq(WS, inner), close)
        return Calls(
            tags=(tag,),
            triggers=(open_,),
            at_least_one=at_least_one,
            stop_after_first=stop,
            excludes=excludes,
        )
    if syntax.open_ended:
        # A call runs to the next call or the end: the calls come last, with nothing between them.
        return Calls(
            tags=_run_tags(syntax.tags),
            triggers=tuple(syntax.triggers),
            at_least_one=at_least_one,
            stop_after_first=stop or syntax.array,
            excludes=excludes,
            calls_last=True,
        )
    once = syntax.array and not syntax.field.repeats  # one region holds every call of the turn
    return Calls(
        tags=tuple(syntax.tags),
        triggers=tuple(syntax.triggers),
        at_least_one=at_least_one,
        stop_after_first=stop or once,
        excludes=excludes,
        text_after=once,
    )


def _opens_without_text(field: FieldSpec) -> bool:
    """Whether the reasoning may start without its open delimiter (an alternative such as
    ``^\\s*(?=</think>)``: the close alone ends text that was reasoning)."""
    if field.open is None or field.open.literals is not None:
        return False
    try:
        return any(not strip_space(branch) for branch in spell_branches(str(field.open.source)))
    except Unspellable:
        return False


def _reasoning(template: ResponseTemplate, reasoning: str, prefix: str | None) -> tuple[Node, list[str]]:
    """The reasoning part of the grammar, and what the content after it must not contain."""
    field = _reasoning_field(template)
    state = reasoning_state(template, prefix)
    if field is None:
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the template has no reasoning field")
        return Lit(""), []
    assert field.open is not None
    close = (
        _spell_text(field.close, field.name, _key(field.close, "close")) if field.close is not None else ""
    )
    if not close:
        if reasoning == "required":
            raise GrammarError("the reasoning has no close delimiter to write", field=field.name, key="close")
        return Lit(""), []
    if state == "open":
        if reasoning == "forbidden":
            return Lit(close), []
        return Tag("", Text(), close), []
    if state == "closed":
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the prompt already closed the reasoning block")
        return Lit(""), []
    open_text = _spell_text(field.open, field.name, _key(field.open, "open"))
    orphan = _opens_without_text(field)
    if not open_text:
        if reasoning == "required":
            raise GrammarError(
                "the reasoning's open delimiter writes no text", field=field.name, key="open_pattern"
            )
        return Lit(""), []
    if reasoning == "forbidden":
        return Lit(""), [open_text]
    options: list[Node] = [seq(WS, Tag(open_text, Text(), close))]
    if orphan:
        options.append(Tag("", Text(), close))
    if reasoning == "allowed":
        options.append(Lit(""))
    node = options[0] if len(options) == 1 else Alt(tuple(options))
    return node, [open_text] + ([close] if orphan else [])


# ------------------------------------------------------------------------- templates without free content


def _region_opens(field: FieldSpec, joiners: list[str]) -> list[tuple[str, Node]]:
    """Every spelling of a region's opener (``<|channel|>(?:final|commentary)``) as ``(begin, rest)``:
    the fixed text it starts with, and the rest (whitespace, optional parts, more text) as a node; an
    optional start of it (``(?:<|start|>assistant)?``) becomes a joiner."""
    assert field.open is not None
    if field.open.literals is not None:
        return [(lit, Lit("")) for lit in field.open.literals]
    key = "open_pattern"
    out: list[tuple[str, Node]] = []
    for lead, body, _ in spell_parts_variants(str(field.open.source)):
        lead_text = literal_text(strip_space(lead))
        if lead_text:
            joiners.append(lead_text)
        if any(isinstance(p, Slot) and p.name not in ("", OPTIONAL) for p in body):
            continue
        nodes = _nodes(body, {}, field, key)
        while nodes and nodes[0] == WS:
            nodes.pop(0)
        tag = _make_tag(nodes, Lit(""), [])
        if tag.begin:
            out.append((tag.begin, tag.content))
    if not out:
        raise GrammarError("the opener writes no fixed text", field=field.name, key=key)
    return out


def _region_ends(field: FieldSpec) -> tuple[str, ...]:
    if field.close is None:
        raise GrammarError("a region without a closer cannot be followed by another", field=field.name)
    if field.close.literals is not None:
        return tuple(field.close.literals)
    text = _spell_text(field.close, field.name, "close_pattern")
    if not text:
        raise GrammarError(
            "the region ends where the next one begins (a lookahead closer)",
            field=field.name,
            key="close_pattern",
        )
    return (text,)


def _text_regions(field: FieldSpec, joiners: list[str]) -> list[Tag]:
    ends = _region_ends(field)
    return [Tag(begin, seq(rest, Text()), ends[0], ends[1:]) for begin, rest in _region_opens(field, joiners)]


def _call_variants(
    field: FieldSpec, tools: Sequence[Tool], parallel: bool, joiners: list[str]
) -> list[CallSyntax]:
    """The call syntax for each spelling of the opener (harmony: ``to=`` before or after the channel)."""
    if field.open is None or field.open.literals is not None:
        return [call_syntax(field, tools, parallel, frozenset(), joiners)]
    out: list[CallSyntax] = []
    error: GrammarError | None = None
    for lead, body, trail in spell_parts_variants(str(field.open.source)):
        bodies = [body]
        if body and isinstance(body[0], Slot) and not body[0].name:
            # whitespace before the opener's text: written as nothing or as one space
            bodies = [body[1:], [" ", *body[1:]]]
        for spelled in bodies:
            try:
                out.append(call_syntax(field, tools, parallel, frozenset(), joiners, (lead, spelled, trail)))
            except GrammarError as exc:
                error = error or exc
    if not out:
        raise error or GrammarError("the opener has no spelling", field=field.name, key="open_pattern")
    return out


def _with_joiners(tags: Sequence[Tag], joiners: Sequence[str]) -> tuple[Tag, ...]:
    """Each tag as written first and as written after another region (with a joiner before it)."""
    out = list(tags)
    for joiner in dict.fromkeys(joiners):
        out.extend(Tag(joiner + t.begin, t.content, t.end, t.other_ends) for t in tags if t.begin)
    return tuple(out)


def _run(tags: Sequence[Tag], at_least_one: bool, stop: bool = False) -> Node:
    if not tags:
        return Lit("")
    return Calls(tags=tuple(tags), separator="", at_least_one=at_least_one, stop_after_first=stop)


def _derive_regions(
    template: ResponseTemplate,
    tools: Sequence[Tool],
    mode: str,
    named: str | None,
    parallel: bool,
    reasoning: str,
    prefix: str | None,
) -> Node:
    """A template whose every part is an explicit region (harmony channels, Solar Open, Kimi K3): the
    output is a run of regions (reasoning first, then content and calls) with nothing between them."""
    joiners: list[str] = []
    content_fields = [f for f in template.fields if f.output_key == "content" and f.open is not None]
    content_tags = [tag for f in content_fields for tag in _text_regions(f, joiners)]
    call_tags: list[Tag] = []
    if mode != "none" and tools:
        allowed = [t for t in tools if named is None or t.name == named]
        syntaxes, errors = [], []
        for field in _tool_fields(template):
            try:
                syntaxes = _call_variants(field, allowed, parallel, joiners)
                break
            except GrammarError as exc:
                errors.append(exc)
        if not syntaxes:
            if not errors:
                raise GrammarError("the template has no tool-call field")
            raise errors[0]
        for syntax in syntaxes:
            if syntax.open_ended:
                raise GrammarError(
                    "a call that runs to the next region cannot be followed by another",
                    field=syntax.field.name,
                    key="close_pattern",
                )
            if syntax.section is not None:
                open_, close = syntax.section
                inner = Calls(
                    tags=_run_tags(syntax.tags),
                    separator="",
                    at_least_one=True,
                    stop_after_first=not parallel,
                )
                call_tags.append(Tag(open_, seq(WS, inner), close))
            else:
                call_tags.extend(t for t in syntax.tags if t not in call_tags)
    # Reasoning.
    thinking = _reasoning_field(template)
    state = reasoning_state(template, prefix)
    reasoning_node: Node = Lit("")
    if thinking is None:
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the template has no reasoning field")
    elif state == "open":
        ends = _region_ends(thinking)
        reasoning_node = Lit(ends[0]) if reasoning == "forbidden" else Tag("", Text(), ends[0], ends[1:])
    elif state == "closed":
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the prompt already closed the reasoning block")
    elif reasoning != "forbidden":
        tags = _with_joiners(_text_regions(thinking, joiners), joiners)
        reasoning_node = _run(tags, at_least_one=reasoning == "required", stop=not thinking.repeats)
    contents = _with_joiners(content_tags, joiners)
    calls = _with_joiners(call_tags, joiners)
    # The last region's closer may be the engine's stop token (``<|return|>``, ``<|call|>``), which the
    # output then lacks: the last region may also run to the end.
    tail = optional(Alt(tuple(_unclosed(t) for t in contents + calls)))
    if not call_tags:
        return seq(reasoning_node, _run(contents, at_least_one=False), tail)
    if mode in ("required", "named"):
        # at least one call: a run of closed calls, or one call cut at the stop token
        unclosed_call = Alt(tuple(_unclosed(t) for t in calls))
        return seq(
            reasoning_node,
            _run(contents, at_least_one=False),
            Alt((_run(calls, True, stop=not parallel), unclosed_call)),
        )
    if not parallel:  # at most one call, content before and after it
        content_tail = optional(Alt(tuple(_unclosed(t) for t in contents))) if contents else Lit("")
        one_call = seq(_run(calls, True, stop=True), _run(contents, at_least_one=False), content_tail)
        return seq(
            reasoning_node,
            _run(contents, at_least_one=False),
            Alt((one_call, Alt(tuple(_unclosed(t) for t in calls)), content_tail)),
        )
    return seq(reasoning_node, _run(contents + calls, at_least_one=False), tail)


def _unclosed(tag: Tag) -> Node:
    """A region written to the end of the output, without its closer."""
    return seq(Lit(tag.begin), tag.content)

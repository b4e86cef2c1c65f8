"""Internal: how one tool-call field of a template is written: its delimiters, where the call's name
comes from, and its arguments (:class:`CallSyntax`, :func:`call_syntax`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from ..language import FieldSpec
from ..toolstream.plan import tool_call_plan
from .arguments import (
    PY_NAME,
    GrammarError,
    Tool,
    call_object_schema,
    cast_tolerant,
    delimiter_key,
    json_value,
    make_tag,
    spelled_nodes,
    xml_arguments,
)
from .dialects import dialect_value, field_dialect
from .lark import regex_escape
from .nodes import WS, Alt, Calls, Json, Node, Pattern, Tag, seq
from .pyargs import python_arguments
from .spelling import (
    OPTIONAL,
    Piece,
    Slot,
    Unspellable,
    literal_text,
    spell_parts,
    spell_parts_variants,
    strip_space,
    suffix_spelling,
)

# --------------------------------------------------------------------------------------------- calls

__all__ = ["CallSyntax", "call_syntax", "top_alternatives"]


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
    #: Calls of another field written beside the section, opened by the section's own opener (Dots: a
    #: JSON call in ``<dots_function_call>``, which otherwise wraps XML calls).
    beside: tuple[Tag, ...] = ()
    #: The section opener's other spellings (DeepSeek R1's ``<｜tool▁calls｜>`` beside
    #: ``<｜tool▁calls▁begin｜>``), each opening the same section.
    section_others: tuple[str, ...] = ()
    #: An optional start of each call (``<｜tool▁call▁begin｜>``) that a call inside a section may leave
    #: out, or ``""``.
    inner_start: str = ""
    #: A section whose opener and closer carry an optional suffix run (Hy's ``<tool_calls:6124c78e>``):
    #: ``(opener's fixed start, rest regex, closer's fixed start, rest regex)``, or None.
    section_suffix: tuple[str, str, str, str] | None = None


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
    joiners: list[tuple[Piece, ...]] | None = None,
    variant: tuple[list[Piece], list[Piece], list[Piece]] | None = None,
) -> tuple[list[Piece], list[Piece], tuple[str, str] | None, bool]:
    """``(open pieces, close pieces, section, open_ended)`` of a tool-call field.

    A close that is also an end of the turn (``turn_ends``: the implicit field's closes, such as
    ``<|eot_id|>``) is the engine's stop token, not text the grammar writes: such calls run to the end.
    """
    if field.open is None:
        raise GrammarError("a tool-call field needs an open delimiter", field=field.name)
    open_key = delimiter_key(field.open, "open")
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
        joiners.append(tuple(section_open))
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
    joiners: list[tuple[Piece, ...]] | None = None,
    variant: tuple[list[Piece], list[Piece], list[Piece]] | None = None,
) -> CallSyntax:
    """How the calls of ``field`` are written for ``tools`` (raises :class:`GrammarError`)."""
    parser = field.parser.name
    args = field.content_args
    dialect = field_dialect(field)  # a JSON dialect (bare keys, delimited strings): see .dialects
    if parser == "json" and dialect is None and field.argument_typing != "none":
        tools = [cast_tolerant(t) for t in tools]  # scalars also as the strings the typing casts
    if parser not in ("json", "xml-inline", "python-call-list", "python-calls"):
        raise GrammarError(
            f"the {parser!r} content parser does not carry a tool's arguments by schema",
            field=field.name,
            key="content",
        )
    if parser == "python-calls" and args.get("name_suffix"):
        raise GrammarError("built-in call syntax (name suffix)", field=field.name, key="content_args")
    open_pieces, close_pieces, section, open_ended = _delimiters(field, turn_ends, joiners, variant)
    open_pieces = _before_lookahead(field, open_pieces)
    assert field.open is not None
    open_key = delimiter_key(field.open, "open")
    close_nodes = spelled_nodes(close_pieces, {}, field, "close_pattern")
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
        open_nodes = spelled_nodes(open_pieces, {}, field, open_key)
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
            calls = tuple(Tag(t.name + "(", python_arguments(t), ")") for t in tools)
            run = Calls(tags=calls, separator=", ", at_least_one=True, stop_after_first=not parallel)
            body: Node = Tag("[", run, "]")
        elif parser == "python-calls":
            # One call per line, no brackets (the lenient Python-call syntax of the extension).
            calls = tuple(Tag(t.name + "(", python_arguments(t), ")") for t in tools)
            body = Calls(tags=calls, separator="\n", at_least_one=True, stop_after_first=not parallel)
        elif parser == "json":
            if dialect is not None:
                raise _dialect_error(field)
            keys = _item_keys(field, plan)
            # Each call object with its name first or last (models write both; the parser reads both).
            # (where the opener reads both: a lookahead may require the name first)
            other = next((k for role, k in keys.items() if role != "name"), "arguments")
            name_last = "[{" + json.dumps(other) + ": {}, " + json.dumps(keys.get("name", "name")) + ': "f"}]'
            either = "name" in keys and not field.item_transform and _opener_reads(field, lead, name_last)
            orders = (False, True) if either else (False,)
            variants = [(t, last) for t in tools for last in orders]
            at = ["/items"] if len(variants) == 1 else [f"/items/anyOf/{i}" for i in range(len(variants))]
            items = [
                call_object_schema(t, keys, field.item_transform, where, name_last=last)
                for (t, last), where in zip(variants, at, strict=True)
            ]
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
        tags.append(make_tag(open_nodes, seq(WS, body, WS), close_nodes))
        return CallSyntax(field, _other_closers(field, tags, turn_ends), [lead], None, True, open_ended)
    name = plan.name
    for tool in tools:
        if name is not None and name[0] == "capture":
            group = str(name[1])
            open_nodes = spelled_nodes(open_pieces, {group: tool.name}, field, open_key, name_group=group)
            if parser == "json" and dialect is not None:
                content: Node = seq(WS, dialect_value(tool.parameters, tool, dialect), WS)
            elif parser == "json":
                content = seq(WS, json_value(tool.parameters), WS)
            elif parser == "xml-inline":
                content = xml_arguments(field, tool)
            else:
                raise GrammarError("Python calls with the name in the open delimiter", field=field.name)
            tags.append(make_tag(open_nodes, content, close_nodes))
        elif name is not None and name[0] == "json" and parser == "json":
            if dialect is not None:
                raise _dialect_error(field)
            if _json_path_key(name) != "name":
                raise GrammarError("the call's name sits deeper than the top of its JSON", field=field.name)
            arg_key = _json_path_key(plan.arguments) or "arguments"
            open_nodes = spelled_nodes(open_pieces, {}, field, open_key)
            # The arguments before the name, where the opener reads that too (no lookahead for the name).
            either = _opener_reads(field, lead, "{" + json.dumps(arg_key) + ': {}, "name": "f"}')
            content = seq(WS, _name_and_arguments(tool, arg_key, either), WS)
            tags.append(make_tag(open_nodes, content, close_nodes))
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
    others, start = _section_spellings(field, section, tags) if variant is None else ((), "")
    suffix = _section_suffix(field, turn_ends) if section is not None and variant is None else None
    return CallSyntax(
        field,
        _other_closers(field, tags, turn_ends),
        [lead],
        section,
        False,
        open_ended,
        (),
        others,
        start,
        suffix,
    )


def _suffix_of(pieces: Sequence[Piece]) -> tuple[str, str] | None:
    """``(fixed start, rest regex)`` of a delimiter spelled ``text``, optional suffix run, ``text``."""
    pieces = [p for p in pieces if not (isinstance(p, Slot) and not p.name)]  # whitespace left out
    if len(pieces) != 3:
        return None
    head, slot, tail = pieces
    if not (isinstance(head, str) and isinstance(slot, Slot) and isinstance(tail, str)):
        return None
    found = suffix_spelling(regex_escape(head) + f"(?:{slot.pattern})?" + regex_escape(tail))
    return None if found is None else (found[1], found[2])


def _section_suffix(field: FieldSpec, turn_ends: frozenset[str]) -> tuple[str, str, str, str] | None:
    """Where a section's opener and closer both may carry a suffix run (Hy's session id): their fixed
    starts and rests (see :attr:`CallSyntax.section_suffix`)."""
    if field.open is None or field.open.literals is not None or field.close is None:
        return None
    if field.close.literals is not None:
        return None
    closers = _close_alternatives(str(field.close.source), turn_ends)
    try:
        section_open = spell_parts(str(field.open.source))[0]
        section_close = spell_parts(closers[0])[2] if closers else []
    except Unspellable:
        return None
    opens, closes = _suffix_of(section_open), _suffix_of(section_close)
    if opens is None or closes is None:
        return None
    return (*opens, *closes)


#: A token-like delimiter at the start of a call's opener (``<｜tool▁call▁begin｜>``).
_LEADING_TOKEN = regex.compile(r"<[^<>]+>")


def _section_spellings(
    field: FieldSpec, section: tuple[str, str] | None, tags: Sequence[Tag]
) -> tuple[tuple[str, ...], str]:
    """The section opener's other spellings (the alternatives the template lists after the first, with
    the same call opener after them), and a token at the start of each call's opener that a call inside
    the section may leave out (an optional part the opener's pattern reads without), checked with the
    pattern itself."""
    if section is None or field.open is None or field.open.literals is not None or not tags:
        return (), ""
    source = str(field.open.source)
    try:
        variants = spell_parts_variants(source)
    except Unspellable:
        return (), ""
    others: list[str] = []
    body = variants[0][1] if variants else None
    if any(pieces != body for _, pieces, _ in variants):
        # the call opener has other spellings too (DeepSeek V4.1's ``\DSML\``, a style of the whole
        # call): the section keeps its first spelling, as the calls do
        variants = []
    for lead, pieces, _ in variants:
        text = literal_text(strip_space(lead))
        if text and text != section[0] and pieces == body and text not in others:
            others.append(text)
    start = ""
    found = _LEADING_TOKEN.match(tags[0].begin)
    if found is not None and found.end() < len(tags[0].begin):
        token = found.group(0)
        try:
            if all(
                t.begin.startswith(token)
                and regex.fullmatch(source, section[0] + t.begin[len(token) :], partial=True, timeout=1.0)
                for t in tags
            ):
                start = token
        except (regex.error, TimeoutError):
            start = ""
    return tuple(others), start


#: A lookahead for one character (after optional whitespace) that ends an opener: ``(?=\s*\{)``.
_END_LOOKAHEAD = regex.compile(r"\(\?=(?:\\s\*)?(\\?[^\\()|*+?])\)$")


def _before_lookahead(field: FieldSpec, pieces: list[Piece]) -> list[Piece]:
    r"""An opener that ends where a character follows (``(?=\s*\{)``) ends at the first such character:
    an optional part before it written as a negated class run (Mistral's call id, ``[^\[]*?``) must not
    hold that character, or the parser would end the opener inside it."""
    if field.open is None or field.open.literals is not None:
        return pieces
    found = _END_LOOKAHEAD.search(str(field.open.source))
    if found is None:
        return pieces
    char = found.group(1)[-1]
    escaped = regex_escape(char)
    return [
        Slot(p.name, p.pattern.replace("[^", "[^" + escaped))
        if isinstance(p, Slot) and p.name == OPTIONAL and "[^" in p.pattern
        else p
        for p in pieces
    ]


def _other_closers(field: FieldSpec, tags: list[Tag], turn_ends: frozenset[str]) -> list[Tag]:
    """The tags, each also ended by the field's other close literals (``<|call|>`` or ``<|end|>``), which
    the parser reads alike (not those that end the turn: the engine's stop tokens)."""
    if field.close_json or field.close is None or field.close.literals is None:
        return tags
    closers = [lit for lit in field.close.literals if lit not in turn_ends]
    others = tuple(closers[1:])
    if not others:
        return tags
    return [Tag(t.begin, t.content, t.end, others) if t.end == closers[0] else t for t in tags]


#: Whitespace JSON allows between tokens.
_JSON_SPACE = "[ \\t\\r\\n]*"


def _json_pattern(*parts: str) -> Pattern:
    """JSON punctuation and strings (``parts``, written as they are) with any JSON whitespace between
    them, as a regular expression."""
    return Pattern(_JSON_SPACE.join(regex_escape(p) for p in parts), example="".join(parts))


def _opener_reads(field: FieldSpec, lead: str, after: str) -> bool:
    """Whether the field's opener, spelled from ``lead``, reads a call whose text goes on with ``after``
    (a lookahead in the opener may require the body to start in one way)."""
    if field.open is None or field.open.literals is not None:
        return True
    try:
        return regex.match(str(field.open.source), lead + after, timeout=1.0) is not None
    except (regex.error, TimeoutError):
        return False


def _name_and_arguments(tool: Tool, arg_key: str, either_order: bool = True) -> Node:
    """One call object, ``{"name": NAME, "arguments": ARGS}``, in either key order, with any JSON
    whitespace (``{"name":"x",...}`` compact too): the JSON parser reads all of them alike."""
    name = json.dumps(tool.name, ensure_ascii=False)
    key = json.dumps(arg_key, ensure_ascii=False)
    arguments = json_value(tool.parameters)
    name_first = seq(
        _json_pattern("{", '"name"', ":", name, ",", key, ":"), WS, arguments, _json_pattern("}")
    )
    if not either_order:
        return name_first
    arguments_first = seq(
        _json_pattern("{", key, ":"), WS, arguments, _json_pattern(",", '"name"', ":", name, "}")
    )
    return Alt((name_first, arguments_first))


def _dialect_error(field: FieldSpec) -> GrammarError:
    return GrammarError(
        "the arguments are a JSON dialect (unquoted keys, custom string quotes), written only where the "
        "tool name is read from the open delimiter",
        field=field.name,
        key="content_args",
    )


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

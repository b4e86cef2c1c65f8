"""Internal: the grammar as a small tree of nodes, and its xgrammar structural-tag form.

The builder (:mod:`.derive`) describes what a model may write as a tree of the node kinds below; the
tree is then written out twice, as an xgrammar structural tag (:func:`structural_tag_format`, here) and
as an llguidance Lark grammar (:mod:`.lark`). Both forms accept the same texts: the node kinds are
chosen so that each one has a direct counterpart in both (the structural tag's kinds are the vocabulary).

* :class:`Lit` -- a fixed string; :class:`Json` -- a JSON value valid against a JSON schema;
  :class:`Text` -- free text not containing any of ``excludes`` (inside a :class:`Tag` it also ends at
  the tag's end string); :class:`Pattern` -- a regular expression (Rust-``regex`` and xgrammar syntax
  alike: only character classes, groups, alternation and repetition); :class:`PyString` -- a Python
  string literal holding none of some strings (an EBNF ``grammar`` in the structural tag).
* :class:`Seq` and :class:`Alt` -- sequence and choice.
* :class:`Tag` -- ``begin``, a content node, ``end``.
* :class:`Calls` -- free text with tool calls in it: text until one of ``triggers`` starts a tag, the
  tag, text again (``at_least_one``: the output starts with a tag; ``stop_after_first``: nothing after
  the first tag); with :attr:`Calls.separator` set, tags only, separated by it and no other text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

__all__ = [
    "WS",
    "Alt",
    "Calls",
    "DialectValue",
    "Json",
    "Lit",
    "Node",
    "Pattern",
    "PyString",
    "Repeat",
    "Seq",
    "SharedAlt",
    "Tag",
    "Text",
    "structural_tag_format",
]


@dataclass(frozen=True)
class Lit:
    value: str


@dataclass(frozen=True)
class Json:
    schema: Any


@dataclass(frozen=True)
class Text:
    excludes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pattern:
    pattern: str
    #: One text the pattern matches (for :func:`example`).
    example: str = field(default="", compare=False)


@dataclass(frozen=True)
class PyString:
    """A Python string literal in either quote (:data:`~.anyvalue.PY_STRING`), as the Python-call parsers
    read an argument's string, holding none of ``excludes`` in its text. Where it is written, it holds
    neither the text of a special token the grammar writes nor, in the structural tag, a closer of a
    region around it (other than the call's own brackets, which the parser reads as Python)."""

    excludes: tuple[str, ...] = ()
    example: str = field(default="'Paris'", compare=False)


@dataclass(frozen=True)
class DialectValue:
    """Any value of a JSON dialect (``kind``: ``"any"``, ``"object"`` or ``"array"``), spelled as the
    ``json`` parser reads it with bare keys (``unquoted_keys``) and strings between ``delims`` holding
    none of ``excludes``: a value a tool's schema leaves free. Written by :mod:`.dialects` (recursive: an
    EBNF ``grammar`` in the structural tag, rules in the Lark grammar). ``python``: a Python literal
    instead (strings and keys in either quote, ``True``/``None`` too, a space after ``,`` and ``:``), as
    the Python-call parsers read an argument's value."""

    kind: str
    unquoted_keys: bool
    delims: tuple[str, str] | None
    excludes: tuple[str, ...] = ()
    python: bool = False


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class SharedAlt(Alt):
    """A choice that occurs at several places of the tree (the same object): the Lark grammar writes it
    once, as a rule (the parameters of a call in any order share the rest of each order)."""


@dataclass(frozen=True)
class Repeat:
    """``content`` repeated, zero to ``most`` times (a run of optional parameters in any order). Bounded:
    xgrammar refuses an unbounded repetition of tags inside a tag whose end string is empty."""

    content: Node
    most: int


@dataclass(frozen=True)
class Tag:
    begin: str
    content: Node
    end: str
    #: Other strings that end the tag as well as ``end`` (a region with several closers).
    other_ends: tuple[str, ...] = ()

    @property
    def ends(self) -> tuple[str, ...]:
        return (self.end, *self.other_ends)


@dataclass(frozen=True)
class Calls:
    tags: tuple[Tag, ...]
    triggers: tuple[str, ...] = ()
    at_least_one: bool = False
    stop_after_first: bool = False
    #: Strings the free text between tags must not contain (besides the triggers).
    excludes: tuple[str, ...] = ()
    #: Tags only, separated by this string (``None``: free text around the tags, started by triggers).
    separator: str | None = None
    #: With ``stop_after_first``: free text may still follow the one tag (a region that holds every call
    #: of the turn, such as a JSON list, followed by more content).
    text_after: bool = False
    #: The calls come last, one right after the other (a call runs to the next call or the end, so no
    #: text may follow it): free text, then the calls.
    calls_last: bool = False


Node = Lit | Json | Text | Pattern | PyString | Seq | Alt | Tag | Calls | DialectValue | Repeat


#: Optional whitespace, where the template allows it (``\\s*``): a region's content, between parameters.
WS: Node = Alt((Pattern("[ \\t\\r\\n]+"), Lit("")))


def seq(*items: Node) -> Node:
    """A sequence with empty literals dropped and nested sequences flattened (one item: the item)."""
    flat: list[Node] = []
    for item in items:
        if isinstance(item, Seq):
            flat.extend(item.items)
        elif (isinstance(item, Lit) and not item.value) or (item == WS and flat and flat[-1] == WS):
            continue
        else:
            flat.append(item)
    merged: list[Node] = []
    for item in flat:
        if merged and isinstance(item, Lit) and isinstance(merged[-1], Lit):
            merged[-1] = Lit(merged[-1].value + item.value)
        else:
            merged.append(item)
    if not merged:
        return Lit("")
    if len(merged) == 1:
        return merged[0]
    return Seq(tuple(merged))


def optional(node: Node) -> Node:
    return Alt((node, Lit("")))


def usable_special_tokens(special_tokens: Mapping[str, int | None] | None) -> dict[str, int | None]:
    """The special tokens both forms name as tokens: those with an id, and those without one whose text
    is ``<...>`` (llguidance can name a token by its text only then); any other is written as text."""
    return {
        t: i
        for t, i in (special_tokens or {}).items()
        if t and (i is not None or (t.startswith("<") and t.endswith(">") and ">" not in t[:-1]))
    }


def split_special(text: str, tokens: Sequence[str]) -> list[tuple[bool, str]]:
    """``text`` as ``(is_special_token, piece)`` pieces, the longest of ``tokens`` first at each position
    (``tokens`` sorted longest first)."""
    if not tokens:
        return [(False, text)] if text else []
    pieces: list[tuple[bool, str]] = []
    at = 0
    for found in _token_pattern(tuple(tokens)).finditer(text):
        if found.start() > at:
            pieces.append((False, text[at : found.start()]))
        pieces.append((True, found.group()))
        at = found.end()
    if at < len(text):
        pieces.append((False, text[at:]))
    return pieces


@lru_cache(maxsize=64)
def _token_pattern(tokens: tuple[str, ...]) -> re.Pattern[str]:
    # An alternation tries its branches in order: longest first, as ``tokens`` are sorted.
    return re.compile("|".join(re.escape(t) for t in tokens))


def _strings(node: Node) -> Iterator[str]:
    """Every delimiter string of a tree (literals, tag ends, triggers, separators, excluded strings)."""
    if isinstance(node, Lit):
        yield node.value
    elif isinstance(node, Text | PyString):
        yield from node.excludes
    elif isinstance(node, Seq):
        for item in node.items:
            yield from _strings(item)
    elif isinstance(node, Alt):
        for option in node.options:
            yield from _strings(option)
    elif isinstance(node, Tag):
        yield node.begin
        yield from node.ends
        yield from _strings(node.content)
    elif isinstance(node, Repeat):
        yield from _strings(node.content)
    elif isinstance(node, Calls):
        yield from node.triggers
        yield from node.excludes
        if node.separator is not None:
            yield node.separator
        for tag in node.tags:
            yield from _strings(tag)


def strings(node: Node) -> list[str]:
    """Every delimiter string of a tree (literals, tag ends, triggers, separators, excluded strings)."""
    return list(_strings(node))


#: The most items of a JSON array written out in a tag with no end string (see :meth:`_Formatter.json`).
ENDLESS_ITEMS = 64


def written_special_tokens(tree: Node, special: Mapping[str, int | None]) -> tuple[str, ...]:
    """The special tokens (of ``special``, see :func:`usable_special_tokens`) that the grammar writes
    somewhere: free text holds none of them, as a token or spelled in ordinary tokens."""
    tokens = sorted(special, key=len, reverse=True)
    found: dict[str, None] = {}
    if tokens:
        for text in _strings(tree):
            for is_token, piece in split_special(text, tokens):
                if is_token:
                    found[piece] = None
    return tuple(found)


class _Formatter:
    """Writes a tree as structural-tag formats. Without special tokens, every delimiter is text (xgrammar
    matches a token of the tokenizer by its text, so a special token and its spelling in ordinary tokens
    are the same to it). With special tokens, a delimiter that is one is a ``token`` format (that token,
    never its spelling), and free text excludes the text of every special token the grammar writes, which
    keeps out both the token and its spelling: a special token occurs only where the grammar places it.
    A tag that holds a special token is a ``tag`` format with that token as its begin or end where one
    token is the whole of it, else a sequence; calls that hold one are written with sequences, choices
    and repetitions (``triggered_tags`` takes text triggers and tags that begin with text only)."""

    def __init__(self, tree: Node, special_tokens: Mapping[str, int | None] | None) -> None:
        self.special = usable_special_tokens(special_tokens)
        self.tokens = sorted(self.special, key=len, reverse=True)
        #: The special tokens the grammar writes: no free text holds them, by token or by text.
        self.delimiters = written_special_tokens(tree, self.special)
        #: Inside the content of a tag with no end string, where xgrammar refuses an unbounded repetition.
        self.endless = 0

    def split(self, text: str) -> list[tuple[bool, str]]:
        return split_special(text, self.tokens)

    def has_token(self, text: str) -> bool:
        return bool(self.delimiters) and any(is_token for is_token, _ in self.split(text))

    def literal(self, text: str) -> dict[str, Any]:
        """A fixed string: ``const_string``, or with special tokens in it a ``token`` format for each."""
        if not self.has_token(text):
            return {"type": "const_string", "value": text}
        parts: list[dict[str, Any]] = []
        for is_token, piece in self.split(text):
            if is_token:
                token_id = self.special[piece]
                parts.append({"type": "token", "token": piece if token_id is None else token_id})
            else:
                parts.append({"type": "const_string", "value": piece})
        return parts[0] if len(parts) == 1 else {"type": "sequence", "elements": parts}

    def text(self, excludes: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "any_text"}
        listed = list(dict.fromkeys((*excludes, *self.delimiters)))
        if listed:
            out["excludes"] = listed
        return out

    def tag_holds_token(self, tag: Tag) -> bool:
        return self.has_token(tag.begin) or any(self.has_token(end) for end in tag.ends)

    def tag(self, tag: Tag, closers: tuple[str, ...] = ()) -> dict[str, Any]:
        end: str | list[str] | dict[str, Any] = list(tag.ends) if tag.other_ends else tag.end
        begin: str | dict[str, Any] = tag.begin
        lead: dict[str, Any] | None = None
        if self.tag_holds_token(tag):
            # The ``tag`` format where its ends allow it (text, or one special token: xgrammar's tags are
            # its fast path), else a sequence.
            if not any(tag.ends):  # no end string: xgrammar refuses a tag whose content is unbounded
                return self.tag_sequence(tag, closers)
            if any(self.has_token(e) for e in tag.ends):
                if tag.other_ends or self.split(tag.end) != [(True, tag.end)]:
                    return self.tag_sequence(tag, closers)
                end = self.literal(tag.end)
            if self.has_token(tag.begin):
                first = self.literal(tag.begin)
                begin, lead = (first, None) if first["type"] == "token" else ("", first)
        own = tuple(e for e in tag.ends if e.strip())
        inner = tuple(dict.fromkeys((*closers, *own)))
        endless = not any(tag.ends)
        self.endless += endless
        try:
            content = self.format(tag.content, inner, own)
        finally:
            self.endless -= endless
        if lead is not None:
            content = {"type": "sequence", "elements": [lead, content]}
        return {"type": "tag", "begin": begin, "content": content, "end": end}

    def tag_sequence(self, tag: Tag, closers: tuple[str, ...] = ()) -> dict[str, Any]:
        """A tag as ``begin``, the content, then one of its ends: free text in the content excludes the
        ends (as the ``tag`` format's content ends at its end string), special tokens as tokens."""
        own = tuple(e for e in tag.ends if e.strip())
        inner = tuple(dict.fromkeys((*closers, *own)))
        ends = [self.literal(end) for end in tag.ends]
        parts = [
            *([self.literal(tag.begin)] if tag.begin else []),
            self.format(tag.content, inner, ()),
            ends[0] if len(ends) == 1 else {"type": "or", "elements": ends},
        ]
        return {"type": "sequence", "elements": parts}

    def format(self, node: Node, closers: tuple[str, ...] = (), own: tuple[str, ...] = ()) -> dict[str, Any]:
        """The xgrammar structural-tag ``format`` object of a node.

        ``closers`` are the ends of the tags around the node (``own``: those of the innermost one). No
        JSON string and no free text inside may contain one: the parser ends the region at the first
        closer it meets, so a value holding one would be cut there. xgrammar takes a delimiter that is
        not a special token of the tokenizer as ordinary text, and would write it inside a string; the
        Lark form needs no such list, since llguidance never writes a special token inside a lexeme.
        (Free text right inside a tag already ends at that tag's own end, so only the outer closers are
        listed for it.)
        """
        if isinstance(node, Lit):
            return self.literal(node.value)
        if isinstance(node, Json):
            return self.json(node.schema, closers)
        if isinstance(node, Text):
            return self.text((*node.excludes, *(c for c in closers if c not in own)))
        if isinstance(node, Pattern):
            return {"type": "regex", "pattern": node.pattern}
        if isinstance(node, PyString):
            return self.py_string(node, closers)
        if isinstance(node, DialectValue):
            from .anyvalue import ebnf_any_value

            if self.delimiters:  # no string of the value holds a special token the grammar writes
                node = replace(node, excludes=tuple(dict.fromkeys((*node.excludes, *self.delimiters))))
            return {"type": "grammar", "grammar": ebnf_any_value(node)}
        if isinstance(node, Seq):
            return {
                "type": "sequence",
                "elements": [self.format(item, closers, own) for item in node.items],
            }
        if isinstance(node, Alt):
            return {
                "type": "or",
                "elements": [self.format(item, closers, own) for item in node.options],
            }
        if isinstance(node, Tag):
            return self.tag(node, closers)
        if isinstance(node, Repeat):
            content = self.format(node.content, closers, own)
            return {"type": "repeat", "min": 0, "max": node.most, "content": content}
        if self.calls_hold_token(node):
            return self.calls_sequence(node, closers, own)
        return self.calls(node, closers, own)

    def py_string(self, node: PyString, closers: tuple[str, ...]) -> dict[str, Any]:
        """A Python string as an EBNF ``grammar`` (a ``regex`` format has no excludes): its text holds no
        closer of a region around it (the parser cuts the region there before it reads the Python) and
        no special token the grammar writes (xgrammar would take it, or its spelling, as text). A closer
        made of closing brackets only (the call's ``)``, a call list's ``]``) is the Python's own: the
        parser reads it inside a string as text."""
        from .anyvalue import ebnf_py_string

        regions = (c for c in closers if c.strip(")]} \t\r\n"))
        excludes = tuple(dict.fromkeys((*node.excludes, *regions, *self.delimiters)))
        rules = ebnf_py_string(excludes, "root")
        return {"type": "grammar", "grammar": "\n".join(rules) + "\n"}

    def json(self, schema: Any, closers: tuple[str, ...]) -> dict[str, Any]:
        """A JSON value valid against ``schema``. xgrammar reads an ``anyOf`` of objects by its first
        branch's property order only, so a choice of objects (a call object with its keys in either
        order) is a choice of ``json_schema`` formats, and an array of such choices is written out."""
        if isinstance(schema, dict):
            defs = {k: v for k, v in schema.items() if k in ("$defs", "definitions")}
            rest = {k: v for k, v in schema.items() if k not in defs}
            branches = rest.get("anyOf")
            if set(rest) == {"anyOf"} and isinstance(branches, list) and len(branches) > 1:
                return {
                    "type": "or",
                    "elements": [
                        self.json({**defs, **b} if isinstance(b, dict) else b, closers) for b in branches
                    ],
                }
            items = rest.get("items")
            if (
                rest.get("type") == "array"
                and set(rest) <= {"type", "items", "minItems", "maxItems"}
                and isinstance(items, dict)
                and set(items) == {"anyOf"}
                and isinstance(items["anyOf"], list)
                and len(items["anyOf"]) > 1
            ):
                return self.json_array(self.json({**defs, **items}, closers), rest)
        out: dict[str, Any] = {"type": "json_schema", "json_schema": schema}
        # No string holds a closer (the parser would end the region there) or a special token the
        # grammar writes (llguidance never writes one inside a lexeme)
        excludes = list(dict.fromkeys((*closers, *self.delimiters)))
        if excludes:
            out["excludes"] = excludes
        return out

    def json_array(self, item: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
        """A JSON array of ``item`` values, with ``minItems``/``maxItems`` of ``schema`` (at most
        :data:`ENDLESS_ITEMS` in a tag with no end string, where xgrammar refuses an unbounded run)."""
        space = {"type": "regex", "pattern": "[ \\t\\n\\r]*"}
        least = max(int(schema.get("minItems", 0)), 0)
        most = schema.get("maxItems")
        open_, close = {"type": "const_string", "value": "["}, {"type": "const_string", "value": "]"}
        if most is not None and int(most) <= 0:
            return {"type": "sequence", "elements": [open_, space, close]}
        more = {
            "type": "sequence",
            "elements": [space, {"type": "const_string", "value": ","}, space, item],
        }
        rest = max(least - 1, 0)
        if most is None and self.endless:
            most = max(ENDLESS_ITEMS, least)
        body: dict[str, Any] = item
        if most is None and rest == 0:
            body = {"type": "sequence", "elements": [item, {"type": "star", "content": more}]}
        elif most is None or int(most) > 1:
            upper = -1 if most is None else int(most) - 1
            tail = {"type": "repeat", "min": rest, "max": upper, "content": more}
            body = {"type": "sequence", "elements": [item, tail]}
        if least == 0:
            body = {"type": "optional", "content": body}
        return {"type": "sequence", "elements": [open_, space, body, space, close]}

    def calls_hold_token(self, node: Calls) -> bool:
        return (
            any(self.has_token(t) for t in node.triggers)
            or (node.separator is not None and self.has_token(node.separator))
            or any(self.tag_holds_token(tag) for tag in node.tags)
        )

    def calls(self, node: Calls, closers: tuple[str, ...], own: tuple[str, ...]) -> dict[str, Any]:
        if node.separator is not None:
            return {
                "type": "tags_with_separator",
                "tags": [self.tag(tag, closers) for tag in node.tags],
                "separator": node.separator,
                "at_least_one": node.at_least_one,
                "stop_after_first": node.stop_after_first,
            }
        if node.calls_last:
            run: dict[str, Any] = {
                "type": "tags_with_separator",
                "tags": [self.tag(tag, closers) for tag in node.tags],
                "separator": "",
                "at_least_one": True,
                "stop_after_first": node.stop_after_first,
            }
            if node.at_least_one:
                return run
            text = self.format(Text(tuple(node.triggers) + node.excludes), closers, own)
            return {"type": "or", "elements": [text, {"type": "sequence", "elements": [text, run]}]}
        if node.text_after and node.stop_after_first:
            text = self.format(Text(tuple(node.triggers) + node.excludes), closers, own)
            tag = (
                {"type": "or", "elements": [self.tag(t, closers) for t in node.tags]}
                if len(node.tags) > 1
                else self.tag(node.tags[0], closers)
            )
            if node.at_least_one:
                return {"type": "sequence", "elements": [tag, text]}
            return {"type": "or", "elements": [text, {"type": "sequence", "elements": [text, tag, text]}]}
        result: dict[str, Any] = {
            "type": "triggered_tags",
            "triggers": list(node.triggers),
            "tags": [self.tag(tag, closers) for tag in node.tags],
            "at_least_one": node.at_least_one,
            "stop_after_first": node.stop_after_first,
        }
        # A trigger is never text (it starts a tag), so it needs no exclude, and xgrammar would take an
        # excluded trigger for one the tags may not start with either.
        excludes = [e for e in dict.fromkeys((*node.excludes, *self.delimiters)) if e not in node.triggers]
        if excludes:
            result["excludes"] = excludes
        return result

    def calls_sequence(self, node: Calls, closers: tuple[str, ...], own: tuple[str, ...]) -> dict[str, Any]:
        """Calls whose delimiters hold special tokens, as the Lark form writes them: free text (which
        holds no trigger and no special token), a tag, free text again; or tags with a separator."""
        tags = [self.tag(tag, closers) for tag in node.tags]
        one = tags[0] if len(tags) == 1 else {"type": "or", "elements": tags}
        triggered = [
            self.tag(tag, closers) for tag in node.tags if any(tag.begin.startswith(t) for t in node.triggers)
        ]
        call = triggered[0] if len(triggered) == 1 else {"type": "or", "elements": triggered or tags}
        text = self.format(Text(tuple(node.triggers) + node.excludes), closers, own)

        def seq_(*items: dict[str, Any]) -> dict[str, Any]:
            return {"type": "sequence", "elements": list(items)}

        def star(item: dict[str, Any]) -> dict[str, Any]:
            return {"type": "star", "content": item}

        def either(*items: dict[str, Any]) -> dict[str, Any]:
            return {"type": "or", "elements": list(items)}

        if node.separator is not None:
            if node.stop_after_first:
                many = one
            elif node.separator:
                many = seq_(one, star(seq_(self.literal(node.separator), one)))
            else:
                many = {"type": "plus", "content": one}
            return many if node.at_least_one else {"type": "optional", "content": many}
        if node.calls_last:
            run = one if node.stop_after_first else {"type": "plus", "content": one}
            return run if node.at_least_one else either(text, seq_(text, run))
        if node.text_after and node.stop_after_first:
            return seq_(one, text) if node.at_least_one else either(text, seq_(text, call, text))
        if node.at_least_one:
            return one if node.stop_after_first else seq_(one, star(seq_(text, call)), text)
        if node.stop_after_first:
            return either(text, seq_(text, call))
        return seq_(text, star(seq_(call, text)))


def structural_tag_format(
    node: Node,
    closers: tuple[str, ...] = (),
    own: tuple[str, ...] = (),
    special_tokens: Mapping[str, int | None] | None = None,
) -> dict[str, Any]:
    """The xgrammar structural-tag ``format`` object of a node (see :class:`_Formatter`);
    ``special_tokens``: the tokenizer's special tokens, ``{text: id or None}``."""
    return _Formatter(node, special_tokens).format(node, closers, own)


# --------------------------------------------------------------------------------------------- examples


def example_value(schema: Any) -> Any:
    """A JSON value valid against ``schema`` (the common keywords: type, properties, items, enum, const)."""
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for union in ("anyOf", "oneOf"):
        if schema.get(union):
            return example_value(schema[union][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else "object")
    if kind == "string":
        return "Paris"
    if kind == "integer":
        return 3
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        return [example_value(schema.get("items", {"type": "string"}))] * max(
            1, int(schema.get("minItems", 1))
        )
    props = schema.get("properties")
    if isinstance(props, dict):
        return {key: example_value(sub) for key, sub in props.items()}
    return {}


def example(node: Node, calls: int = 2) -> str:
    """One text the grammar accepts: reasoning written, ``calls`` calls where several are allowed."""
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Json):
        import json as _json

        return _json.dumps(example_value(node.schema), ensure_ascii=False)
    if isinstance(node, Text):
        text = "Let me think about it."
        return text if not any(e and e in text for e in node.excludes) else ""
    if isinstance(node, Pattern | PyString):
        return node.example
    if isinstance(node, DialectValue):
        from .anyvalue import example_any_value

        return example_any_value(node)
    if isinstance(node, Seq):
        return "".join(example(item, calls) for item in node.items)
    if isinstance(node, Alt):
        return example(node.options[0], calls)
    if isinstance(node, Tag):
        return node.begin + example(node.content, calls) + node.end
    if isinstance(node, Repeat):
        return ""
    count = 1 if node.stop_after_first else calls
    tags = [node.tags[i % len(node.tags)] for i in range(count)]
    if node.separator is not None:
        return node.separator.join(example(t, calls) for t in tags)
    lead = "" if node.at_least_one else "Checking. "
    if node.text_after:
        return lead + "".join(example(t, calls) for t in tags) + " Done."
    if node.calls_last:
        return lead + "".join(example(t, calls) for t in tags)
    return lead + "".join(example(t, calls) for t in tags)

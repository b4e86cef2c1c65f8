"""Internal: the grammar as a small tree of nodes, and its xgrammar structural-tag form.

The builder (:mod:`.derive`) describes what a model may write as a tree of the node kinds below; the
tree is then written out twice, as an xgrammar structural tag (:func:`structural_tag_format`, here) and
as an llguidance Lark grammar (:mod:`.lark`). Both forms accept the same texts: the node kinds are
chosen so that each one has a direct counterpart in both (the structural tag's kinds are the vocabulary).

* :class:`Lit` -- a fixed string; :class:`Json` -- a JSON value valid against a JSON schema;
  :class:`Text` -- free text not containing any of ``excludes`` (inside a :class:`Tag` it also ends at
  the tag's end string); :class:`Pattern` -- a regular expression (Rust-``regex`` and xgrammar syntax
  alike: only character classes, groups, alternation and repetition).
* :class:`Seq` and :class:`Alt` -- sequence and choice.
* :class:`Tag` -- ``begin``, a content node, ``end``.
* :class:`Calls` -- free text with tool calls in it: text until one of ``triggers`` starts a tag, the
  tag, text again (``at_least_one``: the output starts with a tag; ``stop_after_first``: nothing after
  the first tag); with :attr:`Calls.separator` set, tags only, separated by it and no other text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
class DialectValue:
    """Any value of a JSON dialect (``kind``: ``"any"``, ``"object"`` or ``"array"``), spelled as the
    ``json`` parser reads it with bare keys (``unquoted_keys``) and strings between ``delims`` holding
    none of ``excludes``: a value a tool's schema leaves free. Written by :mod:`.dialects` (recursive: an
    EBNF ``grammar`` in the structural tag, rules in the Lark grammar)."""

    kind: str
    unquoted_keys: bool
    delims: tuple[str, str] | None
    excludes: tuple[str, ...] = ()


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


Node = Lit | Json | Text | Pattern | Seq | Alt | Tag | Calls | DialectValue


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


def _tag_dict(tag: Tag, closers: tuple[str, ...] = ()) -> dict[str, Any]:
    end: str | list[str] = list(tag.ends) if tag.other_ends else tag.end
    own = tuple(e for e in tag.ends if e.strip())
    inner = tuple(dict.fromkeys((*closers, *own)))
    content = structural_tag_format(tag.content, inner, own)
    return {"type": "tag", "begin": tag.begin, "content": content, "end": end}


def structural_tag_format(
    node: Node, closers: tuple[str, ...] = (), own: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The xgrammar structural-tag ``format`` object of a node.

    ``closers`` are the ends of the tags around the node (``own``: those of the innermost one). No JSON
    string and no free text inside may contain one: the parser ends the region at the first closer it
    meets, so a value holding one would be cut there. xgrammar takes a delimiter that is not a special
    token of the tokenizer as ordinary text, and would write it inside a string; the Lark form needs no
    such list, since llguidance never writes a special token inside a lexeme. (Free text right inside a
    tag already ends at that tag's own end, so only the outer closers are listed for it.)
    """
    if isinstance(node, Lit):
        return {"type": "const_string", "value": node.value}
    if isinstance(node, Json):
        out_json: dict[str, Any] = {"type": "json_schema", "json_schema": node.schema}
        if closers:
            out_json["excludes"] = list(closers)
        return out_json
    if isinstance(node, Text):
        out: dict[str, Any] = {"type": "any_text"}
        excludes = list(dict.fromkeys((*node.excludes, *(c for c in closers if c not in own))))
        if excludes:
            out["excludes"] = excludes
        return out
    if isinstance(node, Pattern):
        return {"type": "regex", "pattern": node.pattern}
    if isinstance(node, DialectValue):
        from .anyvalue import ebnf_any_value

        return {"type": "grammar", "grammar": ebnf_any_value(node)}
    if isinstance(node, Seq):
        return {
            "type": "sequence",
            "elements": [structural_tag_format(item, closers, own) for item in node.items],
        }
    if isinstance(node, Alt):
        return {
            "type": "or",
            "elements": [structural_tag_format(item, closers, own) for item in node.options],
        }
    if isinstance(node, Tag):
        return _tag_dict(node, closers)
    if node.separator is not None:
        return {
            "type": "tags_with_separator",
            "tags": [_tag_dict(tag, closers) for tag in node.tags],
            "separator": node.separator,
            "at_least_one": node.at_least_one,
            "stop_after_first": node.stop_after_first,
        }
    if node.calls_last:
        run: dict[str, Any] = {
            "type": "tags_with_separator",
            "tags": [_tag_dict(tag, closers) for tag in node.tags],
            "separator": "",
            "at_least_one": True,
            "stop_after_first": node.stop_after_first,
        }
        if node.at_least_one:
            return run
        text = structural_tag_format(Text(tuple(node.triggers) + node.excludes), closers, own)
        return {"type": "or", "elements": [text, {"type": "sequence", "elements": [text, run]}]}
    if node.text_after and node.stop_after_first:
        text = structural_tag_format(Text(tuple(node.triggers) + node.excludes), closers, own)
        tag = (
            {"type": "or", "elements": [_tag_dict(t, closers) for t in node.tags]}
            if len(node.tags) > 1
            else _tag_dict(node.tags[0], closers)
        )
        if node.at_least_one:
            return {"type": "sequence", "elements": [tag, text]}
        return {"type": "or", "elements": [text, {"type": "sequence", "elements": [text, tag, text]}]}
    result: dict[str, Any] = {
        "type": "triggered_tags",
        "triggers": list(node.triggers),
        "tags": [_tag_dict(tag, closers) for tag in node.tags],
        "at_least_one": node.at_least_one,
        "stop_after_first": node.stop_after_first,
    }
    if node.excludes:
        result["excludes"] = list(node.excludes)
    return result


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
    if isinstance(node, Pattern):
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

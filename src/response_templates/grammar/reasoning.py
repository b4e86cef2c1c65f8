"""Internal: the reasoning region of a grammar, and what the template's parser says about it.

:func:`reasoning_state` tells whether a prompt leaves the reasoning open; :func:`reasoning_region` writes
the reasoning region (its opener's and closer's spellings, a doubled opener, a stray closer, a block a
call may end) from probes of the template's own parser (:func:`reads`). :mod:`.derive` builds the rest
of the grammar around it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import regex

from ..language import FieldSpec, ResponseTemplate
from ..parser import ResponseParser
from .arguments import GrammarError, delimiter_key, spell_text
from .nodes import WS, Alt, Lit, Node, Pattern, Seq, Tag, Text, optional, seq
from .spelling import (
    CLASS,
    OPTIONAL,
    Slot,
    Unspellable,
    literal_text,
    spell_branches,
    spell_parts,
    spell_parts_variants,
    strip_space,
    suffix_spelling,
    suffixed_starts,
)

__all__ = [
    "all_call_openers",
    "call_fields",
    "other_call_openers",
    "other_spellings",
    "reads",
    "reasoning_field",
    "reasoning_region",
    "reasoning_state",
    "reopened",
    "suffixed_call_openers",
    "turn_ends",
    "with_doubled_opener",
]


def reasoning_field(template: ResponseTemplate) -> FieldSpec | None:
    for field in template.fields:
        if field.output_key == "reasoning_content" and field.open is not None:
            return field
    return None


def reasoning_state(template: ResponseTemplate, prefix: str | None) -> str:
    """``"open"`` (the prompt leaves reasoning open), ``"closed"`` (the prompt wrote it) or ``"none"``."""
    field = reasoning_field(template)
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


def call_fields(template: ResponseTemplate) -> list[FieldSpec]:
    fields = [f for f in template.fields if f.output_key == "tool_calls" and not f.implicit]
    fields.sort(key=lambda f: f.name != "tool_calls")
    return fields


def turn_ends(template: ResponseTemplate) -> frozenset[str]:
    implicit = template.implicit
    if implicit is None or implicit.close is None or implicit.close.literals is None:
        return frozenset()
    return frozenset(implicit.close.literals)


def all_call_openers(template: ResponseTemplate) -> list[str]:
    out: list[str] = []
    for field in call_fields(template):
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


#: How a token-like delimiter ends (``<|...|>``, ``<｜...｜>``).
_TOKEN_ENDS = ("|>", "｜>")


def other_call_openers(template: ResponseTemplate) -> list[str]:
    """The other spellings of the call openers that the parser reads as calls but the grammar does not
    write (Hermes' ``<function name="``, DeepSeek R1's ``function<｜tool▁sep｜>`` without the call token
    before it), each up to its first slot: free text that holds no call opener holds none of these
    either (the parser would read a call there). Texts of three characters or fewer are left out (they
    would keep ordinary text out)."""
    written = all_call_openers(template)
    out: list[str] = []
    for field in call_fields(template):
        if field.open is None or field.open.literals is not None:
            continue
        source = str(field.open.source)
        try:
            variants = spell_parts_variants(source)
            closes = (
                {
                    "".join(p for p in v[1] if isinstance(p, str))
                    for v in spell_parts_variants(str(field.close.source))
                }
                if field.close is not None and field.close.literals is None
                else set()
            )
        except Unspellable:
            continue
        if len(closes) > 1:
            # The closer is spelled several ways too (DeepSeek V4.1's ``<\\DSML\\ ...>`` throughout): a
            # whole other spelling of the calls, which the grammar does not write as calls but recorded
            # outputs use; free text keeps it (left open).
            continue
        for _, body, _ in variants:
            text = ""
            for piece in body:
                if not isinstance(piece, str):
                    break
                text += piece
            if not any(isinstance(p, Slot) and p.name not in ("", OPTIONAL, CLASS) for p in body):
                # an opener that only looks ahead at a call body (``<json>`` before ``{"name": ...}``):
                # the call after it is one the grammar writes, and without one it opens nothing
                continue
            # also the text after a token-like delimiter inside it, where a match may start too (the
            # token optional, as R1's call token)
            starts = [text] + [
                text[i + 1 :] for i in range(1, len(text) - 1) if text[i - 1 : i + 1] in _TOKEN_ENDS
            ]
            for start in starts:
                if len(start.strip()) > 3 and start not in written and start not in out:
                    try:
                        found = regex.match(source, start, partial=True)
                    except regex.error:
                        found = None
                    if found is not None:
                        out.append(start)
    return out


def suffixed_call_openers(template: ResponseTemplate) -> list[str]:
    """The call openers' spellings with a session suffix (Hy's ``<tool_call:6124c78e>``) up to the
    suffix's run (``<tool_call:``), which the grammar does not write as calls: free text that holds no
    call opener holds none of these either (the parser would read a call there)."""
    out: list[str] = []
    for field in call_fields(template):
        if field.open is not None and field.open.literals is None:
            out.extend(s for s in suffixed_starts(str(field.open.source)) if s not in out)
    return out


def _opens_without_text(field: FieldSpec) -> bool:
    """Whether the reasoning may start without its open delimiter (an alternative such as
    ``^\\s*(?=</think>)``: the close alone ends text that was reasoning)."""
    if field.open is None or field.open.literals is not None:
        return False
    try:
        return any(not strip_space(branch) for branch in spell_branches(str(field.open.source)))
    except Unspellable:
        return False


def reads(template: ResponseTemplate, prefix: str | None, text: str) -> Mapping[str, Any] | None:
    """How the parser reads ``text`` after ``prefix`` (None if it does not read it)."""
    from ..whole import parse_response

    try:
        message = parse_response(text, template, prefix=prefix or "", errors="keep", missing_anchor="parse")
    except Exception:  # a probe: anything the parser refuses is "not read"
        return None
    return message if isinstance(message, Mapping) else None


def _stray_close(template: ResponseTemplate, prefix: str | None, close: str) -> str | None:
    """How the parser reads a reasoning close with no opener before it (``Hmm</think>Yes``) in a message
    without calls: ``"reasoning"`` (the text before it), ``"content"`` (all of it, the close kept in the
    content or dropped), or None (otherwise, or not alike for every probe)."""
    kinds = set()
    for before in ("Hmm", ""):
        message = reads(template, prefix, before + close + "Yes")
        if message is None or message.get("tool_calls") or message.get("errors"):
            return None
        reasoning = (message.get("reasoning_content") or "").strip()
        content = (message.get("content") or "").strip()
        if not content.endswith("Yes"):
            return None
        if reasoning == before and not content.startswith(before + close):
            kinds.add("reasoning" if before else "")
        elif not reasoning and content.startswith(before):
            kinds.add("content")
        else:
            return None
    kinds.discard("")
    return kinds.pop() if len(kinds) == 1 else None


def _doubled(pattern: Any, text: str) -> bool:
    """Whether a delimiter's pattern also reads its text written twice (``<think>(?:\\s*<think>)?``)."""
    if pattern is None or pattern.literals is not None:
        return False
    try:
        return regex.fullmatch(str(pattern.source), text + "\n" + text) is not None
    except regex.error:
        return False


def other_spellings(delim: Any, canonical: str, template: ResponseTemplate) -> tuple[str, ...]:
    """The other texts a delimiter's pattern reads, besides its one spelling (``</ifm|think_fast>`` beside
    ``</ifm|think>``), when the pattern reads a few fixed texts only (whitespace it allows left out); not
    those that end the turn (the engine's stop tokens)."""
    if delim is None or delim.literals is not None:
        return ()
    implicit = template.implicit
    ends = turn_ends(template)
    end_pattern = implicit.close.source if implicit is not None and implicit.close is not None else None
    out: list[str] = []
    for text in _finite_texts(str(delim.source)) or []:
        if not text or text == canonical or text in ends or text in out:
            continue
        if end_pattern is not None and regex.fullmatch(str(end_pattern), text):
            continue
        out.append(text)
    return tuple(out)


def _finite_texts(source: str, limit: int = 8) -> list[str] | None:
    """Every text a pattern of fixed texts, choices, optional parts and whitespace matches (whitespace as
    nothing), or None (a class, a repeat, too many)."""
    sre: Any = importlib.import_module("re._parser")
    try:
        tree = sre.parse(source)
    except Exception:  # any pattern the stdlib cannot read: no texts
        return None

    def walk(items: Any) -> list[str] | None:
        texts = [""]
        for op, arg in items:
            name = str(op)
            if name == "LITERAL":
                options: list[str] | None = [chr(arg)]
            elif name == "SUBPATTERN":
                options = walk(arg[3])
            elif name == "BRANCH":
                options = []
                for branch in arg[1]:
                    sub = walk(branch)
                    if sub is None:
                        return None
                    options.extend(sub)
            elif name in ("MAX_REPEAT", "MIN_REPEAT") and str(arg[2][0][0]) == "IN" and arg[0] == 0:
                options = [""]  # whitespace the pattern allows (``\s*``): written as nothing
            elif name in ("MAX_REPEAT", "MIN_REPEAT") and (arg[0], arg[1]) == (0, 1):
                sub = walk(arg[2])
                options = None if sub is None else ["", *sub]
            elif name in ("AT", "ASSERT", "ASSERT_NOT"):
                options = [""]
            else:
                return None
            if options is None:
                return None
            texts = [t + o for t in texts for o in options]
            if len(texts) > limit:
                return None
        return texts

    return walk(list(tree))


def delimiter_texts(field: FieldSpec | None) -> tuple[str, str] | None:
    """The one spelling of a reasoning field's opener and closer, or None where the field has none of
    them (no field, a delimiter missing, unspellable, or spelled empty)."""
    if field is None or field.open is None or field.close is None:
        return None
    try:
        open_text = spell_text(field.open, field.name, delimiter_key(field.open, "open"))
        close = spell_text(field.close, field.name, delimiter_key(field.close, "close"))
    except GrammarError:
        return None
    return (open_text, close) if open_text and close else None


def reopened(field: FieldSpec) -> Node:
    """The text of a reasoning block, after its opener: a doubled opener the template reads as one
    (``<think>\n<think>``) may write the opener once more first."""
    try:
        open_text = spell_text(field.open, field.name, delimiter_key(field.open, "open"))
    except GrammarError:
        return Text()
    if open_text and _doubled(field.open, open_text):
        again: Node = Lit(open_text)
        suffixed = _suffixed(field.open, open_text)
        if suffixed is not None:  # the opener written again with a session suffix (``<think:abc>``)
            again = Alt((again, seq(Lit(suffixed[0]), Pattern(suffixed[1], example="x>"))))
        return seq(optional(seq(WS, again)), Text())
    return Text()


def with_doubled_opener(node: Node, field: FieldSpec) -> Node:
    """The reasoning block the prompt opened (a tag that begins with nothing), with the opener written
    once more first where the parser reads it doubled (``<think>\n<think>``): needed where the opener is
    a delimiter elsewhere in the grammar (a block reopened in the content), so never plain text."""
    doubled = reopened(field)
    if not isinstance(doubled, Seq):
        return node
    lead = doubled.items[0]
    if isinstance(node, Tag) and not node.begin:
        return Tag(node.begin, seq(lead, node.content), node.end, node.other_ends)
    if isinstance(node, Alt):
        return Alt(tuple(with_doubled_opener(o, field) for o in node.options))
    if isinstance(node, Seq) and node.items:
        return Seq((with_doubled_opener(node.items[0], field), *node.items[1:]))
    return node


def _suffixed(delim: Any, text: str) -> tuple[str, str] | None:
    """``(end, rest)`` where a delimiter spelled ``text`` may also carry a suffix (Hy's session id,
    ``</think:6124c78e>``): the fixed text up to the suffix's run, and a regex for the remainder; else
    None."""
    if delim is None or delim.literals is not None:
        return None
    first = top_alternative(str(delim.source))
    found = suffix_spelling(first) if first is not None else None
    if found is None or found[0] != text:
        return None
    return found[1], found[2]


def top_alternative(source: str) -> str | None:
    """The first top-level alternative of a pattern (the one the grammar spells)."""
    from .calls import top_alternatives

    alternatives = top_alternatives(source)
    return alternatives[0] if alternatives else None


def closed_block(
    begin: str, inner: Node, close: str, others: tuple[str, ...], suffixed: tuple[str, str] | None
) -> Node:
    """A reasoning block from ``begin``: ``inner`` (ending in free text) and its closer; where the closer
    may carry a suffix (``</think:6124c78e>``), either spelling, the text holding neither."""
    if suffixed is None:
        return Tag(begin, inner, close, others)
    end, rest = suffixed
    items = inner.items if isinstance(inner, Seq) else (inner,)
    text = items[-1]
    if not isinstance(text, Text):
        return Tag(begin, inner, close, others)
    plain = seq(*items[:-1], Text((*text.excludes, end)))
    marked = seq(*items[:-1], Text((*text.excludes, close, *others)))
    return Alt((Tag(begin, plain, close, others), seq(Tag(begin, marked, end), Pattern(rest, example="x>"))))


def reasoning_region(
    template: ResponseTemplate, reasoning: str, prefix: str | None
) -> tuple[Node, list[str], Node | None]:
    """The reasoning part of the grammar, what the content after it must not contain, and (or None) the
    whole output when it ends inside the reasoning block (a block the turn's stop token closes)."""
    field = reasoning_field(template)
    state = reasoning_state(template, prefix)
    if field is None:
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the template has no reasoning field")
        return Lit(""), [], None
    assert field.open is not None
    close = (
        spell_text(field.close, field.name, delimiter_key(field.close, "close"))
        if field.close is not None
        else ""
    )
    if not close:
        if reasoning == "required":
            raise GrammarError("the reasoning has no close delimiter to write", field=field.name, key="close")
        return Lit(""), [], None
    # A block the turn's stop token closes too (``[/THINK]`` or ``</s>``) may run to the end of the output.
    closes = field.close.literals if field.close is not None and field.close.literals is not None else ()
    to_the_end = reasoning != "forbidden" and any(end in turn_ends(template) for end in closes)
    call_openers = tuple(dict.fromkeys((*all_call_openers(template), *other_call_openers(template))))
    if state == "open":
        if reasoning == "forbidden":
            return Lit(close), [], None
        others = other_spellings(field.close, close, template)
        block = closed_block("", Text(), close, others, _suffixed(field.close, close))
        # Reasoning that runs to the end of the output holds no call opener: the parser reads a call there.
        return block, [], (Text(call_openers) if to_the_end else None)
    if state == "closed":
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the prompt already closed the reasoning block")
        return Lit(""), [], None
    open_text = spell_text(field.open, field.name, delimiter_key(field.open, "open"))
    orphan = _opens_without_text(field)
    stray = None if orphan or reasoning == "forbidden" else _stray_close(template, prefix, close)
    if stray == "content" and reasoning == "required":
        stray = None  # a stray close read as content writes no reasoning
    if not open_text:
        if reasoning == "required":
            raise GrammarError(
                "the reasoning's open delimiter writes no text", field=field.name, key="open_pattern"
            )
        return Lit(""), [], None
    if reasoning == "forbidden":
        return Lit(""), [open_text], None
    inner = reopened(field)
    others = other_spellings(field.close, close, template)
    options: list[Node] = [
        seq(WS, closed_block(open_text, inner, close, others, _suffixed(field.close, close)))
    ]
    if orphan or stray:
        # A close with no opener, which the parser reads (the text before it as reasoning, or all of it as
        # content): text before it holds no opener of anything.
        options.append(Tag("", Text((open_text, *call_openers)), close, others))
    if reasoning == "allowed":
        options.append(Lit(""))
    node = options[0] if len(options) == 1 else Alt(tuple(options))
    tail = seq(WS, Lit(open_text), _text_without(inner, call_openers)) if to_the_end else None
    # Where the text before a stray close is reasoning, the content after the reasoning holds no close.
    return node, [open_text] + ([close] if orphan or stray == "reasoning" else []), tail


def _text_without(node: Node, excludes: tuple[str, ...]) -> Node:
    """``node`` (free text, or a sequence ending in it) with its last free text holding none of
    ``excludes`` either: the text of a block that runs to the end of the output, where the parser reads
    a call opener as a call."""
    if isinstance(node, Text):
        return Text(tuple(dict.fromkeys((*node.excludes, *excludes))))
    if isinstance(node, Seq) and node.items:
        return Seq((*node.items[:-1], _text_without(node.items[-1], excludes)))
    return node


# ------------------------------------------------------------------------- templates without free content

"""Internal: from a compiled response template, a request's tools and choices, to a grammar tree.

The template is read as the parser reads it: the reasoning field (``reasoning_content``) and its
delimiters, the implicit field (free content), and the tool-call field: where a call's name comes from
(:func:`response_templates.toolstream.plan.tool_call_plan` evaluates the transform), which content parser
reads its arguments, and how its delimiters are spelled (:mod:`.spelling`). Every refusal is a
:class:`GrammarError` naming the field and the key that cannot be written as a grammar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import regex

from ..language import FieldSpec, ResponseTemplate
from .arguments import GrammarError, Tool, delimiter_key, make_tag, spell_text, spelled_nodes
from .calls import CallSyntax, call_syntax, top_alternatives
from .nodes import WS, Alt, Calls, Lit, Node, Pattern, Repeat, Seq, Tag, Text, example, optional, seq, strings
from .reasoning import (
    all_call_openers,
    call_fields,
    delimiter_texts,
    other_call_openers,
    other_spellings,
    reads,
    reasoning_field,
    reasoning_region,
    reasoning_state,
    reopened,
    suffixed_call_openers,
    turn_ends,
    with_doubled_opener,
)
from .spelling import (
    CLASS,
    OPTIONAL,
    Piece,
    Slot,
    literal_text,
    spell_parts_variants,
    strip_space,
    suffixed_starts,
)

__all__ = ["derive", "reasoning_state", "tool_fields"]


# ----------------------------------------------------------------------------------------- the whole


def tool_fields(template: ResponseTemplate) -> list[FieldSpec]:
    """The template's tool-call fields, ``tool_calls`` first (none: the template reads no call)."""
    return call_fields(template)


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
    if not call_fields(template):
        # No tool-call field: the template reads no call, so ``auto`` is ``none``; a forced call cannot
        # be written.
        if mode in ("required", "named"):
            raise GrammarError(
                f"tool_choice {tool_choice!r} forces a call, but the template has no tool-call field "
                "(its outputs carry no calls; only 'auto' and 'none' compile)"
            )
        mode = "none"
    if template.implicit is None:
        return _derive_regions(template, tools, mode, named, parallel_tool_calls, reasoning, prefix)
    reasoning_node, excludes, unclosed = reasoning_region(template, reasoning, prefix)
    others = other_call_openers(template)
    excludes = [*excludes, *suffixed_call_openers(template), *others]
    again = _reasoning_again(template, reasoning, prefix) if parallel_tool_calls else None
    thinking = reasoning_field(template)
    opened = reasoning_state(template, prefix) == "open"
    if again is not None and thinking is not None and opened and mode in ("auto", "none"):
        # the opener is a delimiter of the content now: the block the prompt opened may write it doubled
        reasoning_node = with_doubled_opener(reasoning_node, thinking)
    if mode == "none" or not tools:
        excludes += all_call_openers(template)
        if again is not None:
            return _with_again(reasoning_node, Calls(tags=(), excludes=tuple(excludes)), unclosed, again)
        return _or_unclosed(seq(reasoning_node, Text(tuple(excludes))), unclosed)
    allowed = [t for t in tools if named is None or t.name == named]
    syntax, errors = None, []
    for field in call_fields(template):  # the first field whose calls can be written
        try:
            syntax = call_syntax(field, allowed, parallel_tool_calls, turn_ends(template))
            break
        except GrammarError as exc:
            errors.append(exc)
    if syntax is None:
        if not errors:
            raise GrammarError("the template has no tool-call field")
        raise errors[0]
    syntax = _with_alternative_bodies(syntax, template, allowed, parallel_tool_calls)
    # The other spellings of an opener that the calls themselves open with (a section's other spelling)
    # are delimiters of the grammar, not text to keep out.
    written = _written(syntax)
    excludes = [e for e in excludes if e not in others or not any(w.startswith(e) for w in written)]
    at_least_one = mode in ("required", "named")
    # A region that holds a list of calls, which the parser also reads written twice (LFM2): several.
    blocks = parallel_tool_calls and syntax.array and _reads_twice(template, prefix, syntax.tags)
    calls = _calls_node(syntax, at_least_one, parallel_tool_calls, tuple(excludes), blocks)
    if (
        mode == "auto"
        and parallel_tool_calls
        and ("interleaved" in template.extensions or _calls_in_reasoning(template, prefix, syntax))
    ):
        reasoning_node = _interleaved(reasoning_node, syntax)
        # A block reopened in the content after the one the prompt opened (DeepSeek V4.1) holds calls as
        # that one does. (Where the output opens the first block itself, it is written as it was.)
        opened = reasoning_state(template, prefix) == "open"
        again = _interleaved_again(template, prefix, again, syntax) if opened else None
    if (
        again is not None
        and mode == "auto"
        and isinstance(calls, Calls)
        and calls.separator is None
        and not (calls.calls_last or calls.stop_after_first or calls.at_least_one or calls.text_after)
        and not any(again.begin.startswith(t) or t.startswith(again.begin) for t in calls.triggers)
        and _ended_by_a_call(template, prefix, reasoning, syntax) is None
    ):
        return _with_again(reasoning_node, calls, unclosed, again)
    if at_least_one and reasoning_node != Lit(""):
        return seq(reasoning_node, WS, calls)  # the first call comes right after the reasoning
    whole = seq(reasoning_node, calls)
    ended = _ended_by_a_call(template, prefix, reasoning, syntax)
    if ended is not None and mode == "auto" and isinstance(calls, Calls) and calls.separator is None:
        # The reasoning also ends where a call opens (a lookahead closer): its text runs up to the call.
        whole = Alt((whole, seq(ended, calls)))
    return _or_unclosed(whole, unclosed)


def _written(syntax: CallSyntax) -> list[str]:
    """Every delimiter string the calls of ``syntax`` write (tags, triggers, section spellings)."""
    out = [*syntax.triggers, *syntax.section_others, *(syntax.section or ())]
    for tag in (*syntax.tags, *syntax.beside):
        out.extend(strings(tag))
    return out


def _reasoning_again(template: ResponseTemplate, reasoning: str, prefix: str | None) -> Tag | None:
    """A reasoning block the content may hold (after some text, or a second one), or None: for
    ``reasoning="allowed"`` and a parser that reads ``Hi <think>Hmm</think>Yes`` so, after a first block
    as well."""
    field = reasoning_field(template)
    texts = delimiter_texts(field) if reasoning == "allowed" else None
    if field is None or texts is None:
        return None
    open_text, close = texts
    is_open = reasoning_state(template, prefix) == "open"
    first = "Ok" + close if is_open else open_text + "Ok" + close
    probes = [first + "Hi " + open_text + "Hmm" + close + "Yes"]
    if not is_open:  # (where the prompt opened the block, the output's text starts inside it)
        probes.insert(0, "Hi " + open_text + "Hmm" + close + "Yes")
    for text in probes:
        message = reads(template, prefix, text)
        if message is None or message.get("errors") or message.get("tool_calls"):
            return None
        content = message.get("content") or ""
        if (
            "Hmm" not in (message.get("reasoning_content") or "")
            or "Hi" not in content
            or "Yes" not in content
        ):
            return None
    others = other_spellings(field.close, close, template)
    return Tag(open_text, reopened(field), close, others)


def _with_again(reasoning_node: Node, calls: Calls, unclosed: Node | None, again: Tag) -> Node:
    """The output with reasoning blocks anywhere in the content (``again``, one more kind of tag among the
    calls). The first block, when the prompt did not open it, is one of them: written before it too, an
    opener would start two lexemes at once (the reasoning's and the content's text up to it). An output
    that ends inside a block is text up to the opener (the content's lexeme), then the block's text."""
    options = reasoning_node.options if isinstance(reasoning_node, Alt) else (reasoning_node,)
    kept = tuple(o for o in options if not _opens_with(o, again.begin))
    node: Node = Lit("") if not kept else kept[0] if len(kept) == 1 else Alt(kept)
    content = Calls(
        tags=(*calls.tags, again),
        triggers=(*calls.triggers, again.begin),
        excludes=calls.excludes,
    )
    tail = unclosed
    if unclosed is not None and _opens_with(unclosed, again.begin):
        text = Text((*calls.excludes, *calls.triggers, again.begin))
        inner = unclosed.items[-1] if isinstance(unclosed, Seq) else Text()
        tail = seq(text, Lit(again.begin), inner)
    return _or_unclosed(seq(node, content), tail)


def _opens_with(node: Node, begin: str) -> bool:
    """Whether ``node`` is the reasoning block opened by ``begin`` (after optional whitespace)."""
    items = node.items if isinstance(node, Seq) else (node,)
    items = tuple(i for i in items if i != WS)
    first = items[0] if items else None
    return (isinstance(first, Tag) and first.begin == begin) or (
        isinstance(first, Lit) and first.value == begin
    )


def _ended_by_a_call(
    template: ResponseTemplate, prefix: str | None, reasoning: str, syntax: CallSyntax
) -> Node | None:
    """Where the reasoning's close reads the start of a call as its end (``(?=<tool_call>)``): what opens
    the block (nothing when the prompt opened it), else None."""
    field = reasoning_field(template)
    if reasoning == "forbidden" or field is None or field.close is None or field.close.literals is not None:
        return None
    state = reasoning_state(template, prefix)
    if state == "closed":
        return None
    ends = False
    for alternative in top_alternatives(str(field.close.source)):
        if not alternative.startswith("(?="):
            continue
        for trigger in syntax.triggers:
            try:
                match = regex.match(alternative, trigger)
            except regex.error:
                match = None
            ends = ends or (match is not None and match.end() == 0)
    if not ends:
        return None
    if state == "open":
        return Lit("")
    try:
        open_text = spell_text(field.open, field.name, delimiter_key(field.open, "open"))
    except GrammarError:
        return None
    return seq(WS, Lit(open_text)) if open_text else None


def _calls_in_reasoning(template: ResponseTemplate, prefix: str | None, syntax: CallSyntax) -> bool:
    """Whether the grammar may let a call be written inside the reasoning block: the parser reads it as a
    call, the reasoning going on after it (as the ``interleaved`` extension does), or as reasoning text."""
    texts = delimiter_texts(reasoning_field(template))
    if texts is None or not syntax.tags:
        return False
    open_text, close = texts
    lead = "" if reasoning_state(template, prefix) == "open" else open_text
    call = example(syntax.tags[0], 1)
    message = reads(template, prefix, lead + "Hmm " + call + " more" + close + "Done")
    if message is None or message.get("errors") or "Done" not in (message.get("content") or ""):
        return False
    reasoning = message.get("reasoning_content") or ""
    calls = len(message.get("tool_calls") or [])
    # and a call after the reasoning block as well (a field read once may not take both)
    after = reads(template, prefix, lead + "Hmm " + call + " more" + close + "Done" + call)
    if after is None or after.get("errors") or len(after.get("tool_calls") or []) != calls + 1:
        return False
    # read as a call, or kept in the reasoning as its text (a call token in reasoning is no call)
    return (calls == 1 and "Hmm" in reasoning and "more" in reasoning) or (
        calls == 0 and "Hmm " + call + " more" in reasoning
    )


def _interleaved_again(
    template: ResponseTemplate, prefix: str | None, again: Tag | None, syntax: CallSyntax
) -> Tag | None:
    """A reasoning block reopened in the content, where calls may be written inside reasoning: with calls
    inside it too, where the parser reads a call there as one (and both blocks' text as reasoning); else
    with text that holds no call opener (the parser reads such a block as reasoning: see
    :func:`_reasoning_again`)."""
    if again is None:
        return None
    items = again.content.items if isinstance(again.content, Seq) else (again.content,)
    if not isinstance(items[-1], Text):
        return None
    field = reasoning_field(template)
    if field is None or not syntax.tags:
        return None
    lead = "" if reasoning_state(template, prefix) == "open" else again.begin
    call = example(syntax.tags[0], 1)
    text = f"{lead}Ok{again.end}Hi {again.begin}Hmm {call} more{again.end}Yes"
    message = reads(template, prefix, text)
    if (
        message is not None
        and not message.get("errors")
        and len(message.get("tool_calls") or []) == 1
        and all(w in (message.get("reasoning_content") or "") for w in ("Ok", "Hmm", "more"))
        and all(w in (message.get("content") or "") for w in ("Hi", "Yes"))
    ):
        inner = _interleaved(again, syntax)
        if isinstance(inner, Tag) and inner != again:
            return inner
    plain = Text((*items[-1].excludes, *syntax.triggers))
    return Tag(again.begin, seq(*items[:-1], plain), again.end, again.other_ends)


def _or_unclosed(whole: Node, unclosed: Node | None) -> Node:
    """The output as the grammar writes it, or (no call) one that ends inside the reasoning block."""
    return whole if unclosed is None else Alt((whole, unclosed))


def _interleaved(node: Node, syntax: CallSyntax) -> Node:
    """The reasoning with calls inside it (the ``interleaved`` extension: a call in an open reasoning
    block is read as a call, and the reasoning goes on after it): each reasoning tag's text becomes free
    text with calls, ending at the reasoning's closer."""
    items = node.content.items if isinstance(node, Tag) and isinstance(node.content, Seq) else ()
    if isinstance(node, Tag) and node.end and isinstance(items[-1] if items else node.content, Text):
        text = items[-1] if items else node.content
        assert isinstance(text, Text)
        if any(trigger in text.excludes for trigger in syntax.triggers):
            return node  # text that holds no call opener (before a stray close) stays so
        opener = syntax.field.open
        suffixed = suffixed_starts(str(opener.source)) if opener and opener.literals is None else []
        inner = _calls_node(syntax, False, True, (*text.excludes, *node.ends, *suffixed))
        if isinstance(inner, Calls) and inner.separator is None and not inner.calls_last:
            return Tag(node.begin, seq(*items[:-1], inner), node.end, node.other_ends)
        return node
    if isinstance(node, Alt):
        return Alt(tuple(_interleaved(option, syntax) for option in node.options))
    if isinstance(node, Seq):
        return Seq(tuple(_interleaved(item, syntax) for item in node.items))
    return node


def _with_alternative_bodies(
    syntax: CallSyntax, template: ResponseTemplate, tools: Sequence[Tool], parallel: bool
) -> CallSyntax:
    """Another tool-call field with the same opener and closer, which a lookahead tells apart by its body
    (LFM2: ``<|tool_call_start|>`` then a Python call list, or a JSON list), adds its body as an
    alternative inside the same tag."""
    if not syntax.array:
        return _with_alternative_calls(syntax, template, tools, parallel)
    if len(syntax.tags) != 1 or syntax.section is not None:
        return syntax
    (tag,) = syntax.tags
    bodies = [tag.content]
    for field in call_fields(template):
        if field is syntax.field:
            continue
        try:
            other = call_syntax(field, tools, parallel, turn_ends(template))
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
    return replace(syntax, tags=[merged], section=None, array=True)


def _with_alternative_calls(
    syntax: CallSyntax, template: ResponseTemplate, tools: Sequence[Tool], parallel: bool
) -> CallSyntax:
    """Another tool-call field whose calls open and close as these do (the same section, the same begin
    and end strings), told apart by their body (K2 Horizon: XML parameters, or a JSON call object after
    ``<ifm|tool_call>``): its calls are written too."""
    begins = {(t.begin, t.ends) for t in syntax.tags}
    tags = list(syntax.tags)
    beside: list[Tag] = []
    for field in call_fields(template):
        if field is syntax.field:
            continue
        try:
            other = call_syntax(field, tools, parallel, turn_ends(template))
        except GrammarError:
            continue
        if (
            not other.array
            and other.section == syntax.section
            and other.open_ended == syntax.open_ended
            and other.triggers == syntax.triggers
            and all((t.begin, t.ends) in begins for t in other.tags)
        ):
            tags.extend(t for t in other.tags if t not in tags)
        elif (
            syntax.section is not None
            and not other.array
            and other.section is None
            and other.open_ended == syntax.open_ended
            and other.tags
            and all((t.begin, t.end) == syntax.section for t in other.tags)
        ):
            beside.extend(t for t in other.tags if t not in beside)
    if len(tags) == len(syntax.tags) and not beside:
        return syntax
    return replace(syntax, tags=tags, beside=tuple(beside))


#: The most calls a section with a suffixed opener holds (xgrammar compiles a tag whose end string is
#: empty only around a bounded content: the run of calls is a bounded repetition there).
SUFFIXED_SECTION_CALLS = 16


def _suffixed_section(suffix: tuple[str, str, str, str], run: Sequence[Tag], close: str, stop: bool) -> Tag:
    """A section opened with a suffix run (``<tool_calls:6124c78e>``) and closed with or without one."""
    open_start, open_rest, close_start, close_rest = suffix
    one: Node = run[0] if len(run) == 1 else Alt(tuple(run))
    calls = one if stop else seq(one, Repeat(one, SUFFIXED_SECTION_CALLS - 1))
    closing = Alt((Lit(close), seq(Lit(close_start), Pattern(close_rest, example="x>"))))
    return Tag(open_start, seq(Pattern(open_rest, example="x>"), WS, calls, closing), "")


def _run_tags(tags: Sequence[Tag]) -> tuple[Tag, ...]:
    """Tags for a run of calls written one after the other: each ends with its end string and any
    whitespace (a run's separator is fixed text, so whitespace between calls belongs to the calls)."""
    return tuple(Tag(t.begin, seq(t.content, Lit(t.end), WS), "") for t in tags)


def _reads_twice(template: ResponseTemplate, prefix: str | None, tags: Sequence[Tag]) -> bool:
    """Whether the parser reads two call regions written one after the other as the calls of both."""
    if len(tags) != 1:
        return False
    text = example(tags[0], 1)
    once, twice = reads(template, prefix, text), reads(template, prefix, text + text)
    if once is None or twice is None or twice.get("errors"):
        return False
    calls = len(once.get("tool_calls") or [])
    return calls > 0 and len(twice.get("tool_calls") or []) == 2 * calls


def _calls_node(
    syntax: CallSyntax,
    at_least_one: bool,
    parallel: bool,
    excludes: tuple[str, ...],
    blocks: bool = False,
) -> Node:
    stop = not parallel
    if syntax.section is not None:
        open_, close = syntax.section
        run = _run_tags(syntax.tags)
        skip = syntax.inner_start
        if skip:  # a call inside the section may leave out its optional start (``<｜tool▁call▁begin｜>``)
            run += tuple(Tag(t.begin[len(skip) :], t.content, t.end) for t in run)
        inner = Calls(tags=run, separator="", at_least_one=True, stop_after_first=stop)
        tag = Tag(open_, seq(WS, inner), close)
        # the section opener's other spellings open the same section
        others = tuple(Tag(o, seq(WS, inner), close) for o in syntax.section_others)
        if syntax.section_suffix is not None:
            others += (_suffixed_section(syntax.section_suffix, run, close, stop),)
        # The section's opener is optional: a call may also stand alone, without the section around it.
        # (and then end with the section's closer, or not).
        bare = tuple(
            Tag(t.begin, seq(t.content, Lit(t.end), optional(seq(WS, Lit(close)))), "")
            for t in syntax.tags
            if any(t.begin.startswith(g) for g in syntax.triggers)
            # (a trigger that starts the section's opener would end free text there: ``<tool_call`` and
            # ``<tool_calls>``)
            and not any(open_.startswith(g) or g.startswith(open_) for g in syntax.triggers)
        )
        triggers = (
            open_,
            *(t.begin for t in others),
            *(g for g in syntax.triggers if bare and g != open_),
        )
        return Calls(
            tags=(tag, *others, *bare, *syntax.beside),
            triggers=triggers,
            at_least_one=at_least_one,
            stop_after_first=stop,
            excludes=tuple(e for e in excludes if e not in triggers),
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
    # one region holds every call of the turn
    once = syntax.array and not syntax.field.repeats and not blocks
    return Calls(
        tags=tuple(syntax.tags),
        triggers=tuple(syntax.triggers),
        at_least_one=at_least_one,
        stop_after_first=stop or once,
        excludes=excludes,
        text_after=once,
    )


def _region_opens(field: FieldSpec, joiners: list[tuple[Piece, ...]]) -> list[tuple[str, Node]]:
    """Every spelling of a region's opener (``<|channel|>(?:final|commentary)``) as ``(begin, rest)``:
    the fixed text it starts with, and the rest (whitespace, optional parts, more text) as a node; an
    optional start of it (``(?:<|start|>assistant)?``) becomes a joiner."""
    assert field.open is not None
    if field.open.literals is not None:
        return [(lit, Lit("")) for lit in field.open.literals]
    key = "open_pattern"
    out: list[tuple[str, Node]] = []
    for lead, body, _ in spell_parts_variants(str(field.open.source)):
        if literal_text(strip_space(lead)):
            joiners.append(tuple(lead))
        if any(isinstance(p, Slot) and p.name not in ("", OPTIONAL, CLASS) for p in body):
            continue
        nodes = spelled_nodes(body, {}, field, key)
        while nodes and nodes[0] == WS:
            nodes.pop(0)
        tag = make_tag(nodes, Lit(""), [])
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
    text = spell_text(field.close, field.name, "close_pattern")
    if not text:
        raise GrammarError(
            "the region ends where the next one begins (a lookahead closer)",
            field=field.name,
            key="close_pattern",
        )
    return (text,)


def _text_regions(field: FieldSpec, joiners: list[tuple[Piece, ...]]) -> list[Tag]:
    ends = _region_ends(field)
    return [Tag(begin, seq(rest, Text()), ends[0], ends[1:]) for begin, rest in _region_opens(field, joiners)]


def _call_variants(
    field: FieldSpec, tools: Sequence[Tool], parallel: bool, joiners: list[tuple[Piece, ...]]
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
        elif body and isinstance(body[0], str) and lead and isinstance(lead[-1], Slot) and not lead[-1].name:
            # whitespace that ends an optional start (``(?:<|start|>assistant\s*)?to=``): after the start
            # it is one space (see _with_joiners), and the opener may also begin with it
            bodies = [body, [" ", *body]]
        for spelled in bodies:
            try:
                out.append(call_syntax(field, tools, parallel, frozenset(), joiners, (lead, spelled, trail)))
            except GrammarError as exc:
                error = error or exc
    if not out:
        raise error or GrammarError("the opener has no spelling", field=field.name, key="open_pattern")
    return out


#: A recipient written after a joiner where every opener reads one (Inkling's ``<|message_model|>`` then
#: ``get_weather``, before ``<|content_invoke_tool_json|>``): a name, as a regex.
_RECIPIENT = "[A-Za-z0-9_][A-Za-z0-9_.-]*"


def _recipients(template: ResponseTemplate, joiners: list[tuple[Piece, ...]]) -> list[tuple[Piece, ...]]:
    """The joiners, each followed by an optional recipient where the template's openers read any text
    there (``(?:<|message_model|>[^<]*)?``: the parser skips it, and names a call by its body)."""
    out: list[tuple[Piece, ...]] = []
    for joiner in joiners:
        text = literal_text(strip_space(list(joiner)))
        if text and _reads_recipient(template, text):
            joiner = (*joiner, Slot(OPTIONAL, _RECIPIENT))
        if joiner not in out:
            out.append(joiner)
    return out


def _reads_recipient(template: ResponseTemplate, joiner: str) -> bool:
    """Whether every opener that may start with ``joiner`` reads a recipient after it (checked with the
    pattern itself: names of several shapes between the joiner and the opener's own text)."""
    names = ("get_weather", "functions.get_weather", "a-b.c_9", "x")
    checked = 0
    for field in template.fields:
        if field.open is None or field.open.literals is not None:
            continue
        source = str(field.open.source)
        try:
            variants = spell_parts_variants(source)
        except Exception:  # a pattern without spellings: no joiner of it
            continue
        for lead, body, _ in variants:
            if literal_text(strip_space(lead)) != joiner:
                continue
            begin = "".join(p for p in body if isinstance(p, str))
            for name in names:
                try:
                    found = regex.match(source, joiner + name + begin, timeout=1.0)
                except (regex.error, TimeoutError):
                    return False
                if found is None or found.end() != len(joiner + name + begin):
                    return False
            checked += 1
    return checked > 0


def _with_joiners(tags: Sequence[Tag], joiners: Sequence[tuple[Piece, ...]]) -> tuple[Tag, ...]:
    """Each tag as written first and as written after another region (with a joiner before it, spelled
    with the whitespace it allows: ``<|start|> assistant``)."""
    out = list(tags)
    for joiner in dict.fromkeys(joiners):
        nodes: list[Node] = []
        for piece in joiner:
            if isinstance(piece, str):
                nodes.append(Lit(piece))
            elif piece.name == OPTIONAL:
                nodes.append(optional(Pattern(piece.pattern)))
            elif not piece.name:
                nodes.append(WS if regex.fullmatch(piece.pattern, "") else Pattern(piece.pattern))
        text = literal_text(strip_space(list(joiner))) or ""
        begin = ""
        while nodes and isinstance(nodes[0], Lit):
            first = nodes.pop(0)
            assert isinstance(first, Lit)
            begin += first.value
        spaced = bool(nodes) and not isinstance(nodes[-1], Lit)
        out.extend(
            Tag(begin, seq(*nodes, Lit(t.begin), t.content), t.end, t.other_ends)
            if nodes
            else Tag(begin + t.begin, t.content, t.end, t.other_ends)
            for t in tags
            # a joiner never runs into a word (``<|start|>assistant`` + ``to=``: written with a space)
            if t.begin and (spaced or not (text[-1:].isalnum() and t.begin[:1].isalnum()))
        )
    return tuple(out)


def _run(tags: Sequence[Tag], at_least_one: bool, stop: bool = False) -> Node:
    """A run of regions, one after the other, with whitespace (which the parser skips) after each."""
    if not tags:
        return Lit("")
    spaced = tuple(Tag(t.begin, seq(Tag("", t.content, t.end, t.other_ends), WS), "") for t in tags)
    return Calls(tags=spaced, separator="", at_least_one=at_least_one, stop_after_first=stop)


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
    joiners: list[tuple[Piece, ...]] = []
    content_fields = [f for f in template.fields if f.output_key == "content" and f.open is not None]
    content_tags = [tag for f in content_fields for tag in _text_regions(f, joiners)]
    call_tags: list[Tag] = []
    if mode != "none" and tools:
        allowed = [t for t in tools if named is None or t.name == named]
        syntaxes, errors = [], []
        for field in call_fields(template):
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
    thinking = reasoning_field(template)
    state = reasoning_state(template, prefix)
    reasoning_node: Node = Lit("")
    if thinking is None:
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the template has no reasoning field")
    elif state == "open":
        ends = _region_ends(thinking)
        reasoning_node = (
            Lit(ends[0])
            if reasoning == "forbidden"
            else seq(Tag("", reopened(thinking), ends[0], ends[1:]), WS)
        )
    elif state == "closed":
        if reasoning == "required":
            raise GrammarError("reasoning 'required', but the prompt already closed the reasoning block")
    elif reasoning != "forbidden":
        tags = _with_joiners(_text_regions(thinking, joiners), _recipients(template, joiners))
        reasoning_node = _run(tags, at_least_one=reasoning == "required", stop=not thinking.repeats)
    joiners = _recipients(template, joiners)
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

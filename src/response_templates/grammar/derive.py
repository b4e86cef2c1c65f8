"""Internal: from a compiled response template, a request's tools and choices, to a grammar tree.

The template is read as the parser reads it: the reasoning field (``reasoning_content``) and its
delimiters, the implicit field (free content), and the tool-call field: where a call's name comes from
(:func:`response_templates.toolstream.plan.tool_call_plan` evaluates the transform), which content parser
reads its arguments, and how its delimiters are spelled (:mod:`.spelling`). Every refusal is a
:class:`GrammarError` naming the field and the key that cannot be written as a grammar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..language import FieldSpec, ResponseTemplate
from ..parser import ResponseParser
from .arguments import GrammarError, Tool, delimiter_key, make_tag, spell_text, spelled_nodes
from .calls import CallSyntax, call_syntax
from .nodes import WS, Alt, Calls, Lit, Node, Seq, Tag, Text, optional, seq
from .spelling import (
    OPTIONAL,
    Slot,
    Unspellable,
    literal_text,
    spell_branches,
    spell_parts,
    spell_parts_variants,
    strip_space,
)

__all__ = ["derive", "reasoning_state", "tool_fields"]


# ----------------------------------------------------------------------------------------- the whole


def _reasoning_field(template: ResponseTemplate) -> FieldSpec | None:
    for field in template.fields:
        if field.output_key == "reasoning_content" and field.open is not None:
            return field
    return None


def tool_fields(template: ResponseTemplate) -> list[FieldSpec]:
    """The template's tool-call fields, ``tool_calls`` first (none: the template reads no call)."""
    return _tool_fields(template)


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
    if not _tool_fields(template):
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
    if mode == "auto" and parallel_tool_calls and "interleaved" in template.extensions:
        reasoning_node = _interleaved(reasoning_node, syntax)
    if at_least_one and reasoning_node != Lit(""):
        return seq(reasoning_node, WS, calls)  # the first call comes right after the reasoning
    return seq(reasoning_node, calls)


def _interleaved(node: Node, syntax: CallSyntax) -> Node:
    """The reasoning with calls inside it (the ``interleaved`` extension: a call in an open reasoning
    block is read as a call, and the reasoning goes on after it): each reasoning tag's text becomes free
    text with calls, ending at the reasoning's closer."""
    if isinstance(node, Tag) and isinstance(node.content, Text) and node.end:
        inner = _calls_node(syntax, False, True, (*node.content.excludes, *node.ends))
        if isinstance(inner, Calls) and inner.separator is None and not inner.calls_last:
            return Tag(node.begin, inner, node.end, node.other_ends)
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
        spell_text(field.close, field.name, delimiter_key(field.close, "close"))
        if field.close is not None
        else ""
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
    open_text = spell_text(field.open, field.name, delimiter_key(field.open, "open"))
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


def _with_joiners(tags: Sequence[Tag], joiners: Sequence[str]) -> tuple[Tag, ...]:
    """Each tag as written first and as written after another region (with a joiner before it)."""
    out = list(tags)
    for joiner in dict.fromkeys(joiners):
        out.extend(
            Tag(joiner + t.begin, t.content, t.end, t.other_ends)
            for t in tags
            # a joiner never runs into a word (``<|start|>assistant`` + ``to=``: written with a space)
            if t.begin and not (joiner[-1:].isalnum() and t.begin[:1].isalnum())
        )
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

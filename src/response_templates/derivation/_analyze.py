"""The analysis: diff probe renders, recognise the turn's markers (header, end, reasoning, content) and
hand the tool calls to :mod:`._calls`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import _text as tx
from ._builtin import builtin_calls
from ._calls import tools
from ._channels import channels
from ._findings import Findings
from ._prose import prose
from ._render import CALL_1, CONTENT, IDS, NEXT_USER, REASONING, TOOL_RESULT, Render, Renderer

__all__ = ["EOS_SPELLINGS", "Findings", "analyze"]

#: The usual spellings of a tokenizer's end-of-sequence token, for a template that writes ``eos_token``.
EOS_SPELLINGS = (
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|im_end|>",
    "<eos>",
    "<｜end▁of▁sentence｜>",
)


# ------------------------------------------------------------------------------------------ turn pieces


def _header(plain: Render, gens: Mapping[str, str]) -> str:
    """The text the generation prompt and the rendered turn share: where the model starts writing."""
    gen = plain.generation
    return tx.prefix_at_boundary(gen, plain.turn)


def _strip_end(text: str, end: str) -> str:
    if end and end in text:
        return text[: text.rfind(end)]
    return text


def analyze(r: Renderer) -> Findings:
    f = Findings()
    gens = r.generation_prompts()
    for name, gen in gens.items():
        f.note(f"generation prompt ({name})", "generation prompt", gen)
    plain = r.probe("plain", r.message())
    if plain is None:
        return f
    f.renders["plain"] = plain
    turn = plain.turn
    at = turn.find(CONTENT)
    if at < 0:
        f.warnings.append("the chat template does not render the assistant's content")
        return f
    header = _header(plain, gens)
    f.header = header
    after = turn[at + len(CONTENT) :]
    # The turn's end: the last marker after the content (the first one, if a wrapper closes first).
    after_tokens = tx.tokens(after)
    end = r.eos_token if r.eos_token and r.eos_token in after else after_tokens[0] if after_tokens else ""
    if len(after_tokens) >= 2 and not (r.eos_token and after_tokens[0] == r.eos_token):
        # <|END_RESPONSE|><|END_OF_TURN_TOKEN|>: a content wrapper closes before the turn ends
        f.content_close = after_tokens[0]
        end = after_tokens[1]
    if not end:
        end = _next_turn(r, plain)
        if end:
            f.note("plain, then a user message", "end of turn (the next turn's opener)", end)
    else:
        f.note("plain", "end of turn", end)
    f.end = end
    if not r.eos_token and _writes_eos(r, plain):
        # the turn ends with the tokenizer's end-of-sequence token, which the template does not spell:
        # the common spellings end it (a guess; special_tokens, when given, name it)
        f.eos_guess = list(EOS_SPELLINGS)
        f.guessed += 1
        f.note("plain, with a stand-in eos_token", "end of turn (eos_token, spelling guessed)", f.eos_guess)
        f.warnings.append(
            "end-of-sequence token guessed by rule: the chat template ends the assistant's turn with the "
            f"tokenizer's eos_token, which was not given; any of {', '.join(EOS_SPELLINGS)} ends the turn. "
            "Pass special_tokens (or a model folder) to name it"
        )
    # Before the content: the header, then perhaps an empty reasoning block or a content opener.
    before = turn[len(header) : at]
    _reasoning(r, f, plain, header, before, gens)
    lead = before
    if f.reasoning_close and f.reasoning_close in lead:
        lead = lead[lead.rfind(f.reasoning_close) + len(f.reasoning_close) :]
    elif f.reasoning_open and f.reasoning_open in lead:
        lead = ""
    if lead.strip():
        f.content_open = lead.strip()
        f.note("plain", "content opener", f.content_open)
        if f.content_close:
            f.note("plain", "content closer", f.content_close)
        f.bare_content = _bare_content_ok(f)
    elif f.content_close and f.reasoning_close != f.content_close:
        # a closer with no opener: more of the turn's end
        f.content_close = ""
    _answer_closer(f)
    # The anchor: the header without a reasoning block the generation prompt opens or writes empty.
    anchor = header
    for marker in (f.reasoning_open, f.reasoning_close):
        if marker and marker in anchor:
            anchor = anchor[: anchor.find(marker)]
    if not anchor.strip():
        anchor = tx.trailing_marker(plain.base) or anchor
        if anchor:
            f.note("plain", "start anchor (the history's last marker)", anchor)
    else:
        f.note("plain", "start anchor", anchor)
    f.anchor = anchor
    for gen in gens.values():
        tail = gen[gen.find(anchor) + len(anchor) :] if anchor and anchor in gen else gen
        if f.reasoning_close and tail.strip().startswith(f.reasoning_close):
            f.closed_by_prompt = True
    tools(r, f, header)
    if f.tools is not None:
        _after_tool_result(r, f)
        builtin_calls(r, f)
        _call_marker_in_header(f)
    prose(r, f)
    channels(f)
    return f


def _call_marker_in_header(f: Findings) -> None:
    """A generation prompt that ends with the call marker (Functionary's ``>>>``): the marker is no part
    of the anchor, so that the model's first call and answer start after it as later ones do."""
    toks = tx.tokens(f.anchor)
    last = toks[-1] if toks else ""
    pattern = (f.tools or {}).get("open_pattern", "")
    if not last or not f.anchor.endswith(last) or not pattern.startswith(tx.flex(last)):
        return
    if not f.anchor[: -len(last)].strip():
        return
    f.anchor = f.anchor[: -len(last)]
    f.prompt_marker = last
    f.note("plain", "start anchor (without the call marker the prompt ends with)", f.anchor)
    if f.content_open:
        f.content_open = last + f.content_open


def _answer_closer(f: Findings) -> None:
    """A reasoning closer that opens the answer by name (``[BEGIN FINAL RESPONSE]``): the answer may end
    with the closer the naming rule gives it (``[END FINAL RESPONSE]``), a guess."""
    if f.content_open or f.content_close or not re.search(r"\b(?:BEGIN|START)", f.reasoning_close):
        return
    closer = tx.closer_for(f.reasoning_close)
    if not closer or closer.startswith(("</", "[/")):
        return
    f.content_close = closer
    f.guessed += 1
    f.note("reasoning markers", "answer closer (by the naming rule)", closer)
    f.warnings.append(
        f"the answer's closer {closer!r} is guessed from the marker {f.reasoning_close!r} that opens it"
    )


def _writes_eos(r: Renderer, plain: Render) -> bool:
    """Whether the template writes ``eos_token`` after the assistant's text (tried with a stand-in)."""
    stand_in = "\x00EOS\x00"
    probe = Renderer(r.chat_template, bos_token=r.bos_token, eos_token=stand_in, supplied=dict(r.supplied))
    try:
        full = probe.render([*plain.history, plain.message], add_generation_prompt=False, **plain.kwargs)
    except Exception:  # the template refuses the stand-in: nothing learnt
        return False
    at = full.rfind(CONTENT)
    return at >= 0 and stand_in in full[at:]


def _next_turn(r: Renderer, plain: Render) -> str:
    """A template that writes nothing after the assistant's text: the model stops where the next turn
    starts, so the marker the next (user) message opens with ends the turn."""
    try:
        full = r.render(
            [*plain.history, plain.message, {"role": "user", "content": NEXT_USER}],
            add_generation_prompt=False,
        )
    except Exception:  # the template refuses this conversation
        return ""
    at, nxt = full.rfind(CONTENT), full.rfind(NEXT_USER)
    if at < 0 or nxt < at:
        return ""
    toks = tx.tokens(full[at + len(CONTENT) : nxt])
    return toks[0] if toks and toks[0].startswith(("<", "[")) else ""


def _after_tool_result(r: Renderer, f: Findings) -> None:
    """The start anchor after a tool's result: the generation prompt after a tool message may not repeat
    the assistant header (``...[/TOOL_RESULTS]`` and the model writes on)."""
    call = r.message(content="", calls=[CALL_1])
    result = {"role": "tool", "tool_call_id": IDS[0], "name": CALL_1["name"], "content": TOOL_RESULT}
    for history in r.histories():
        try:
            # with the generation prompt, and without (a server may prompt right after the output)
            prompts = [r.render([*history, call, result], add_generation_prompt=g) for g in (True, False)]
        except Exception:  # the template refuses this conversation: try the next history
            continue
        for prompt in prompts:
            at = prompt.rfind(TOOL_RESULT)
            if at < 0 or (f.anchor and f.anchor in prompt[at:]):
                continue
            tail = prompt[at + len(TOOL_RESULT) :].rstrip()
            while f.end and tail.endswith(f.end):  # the turn's end after the output: not where to start
                tail = tail[: -len(f.end)].rstrip()
            marker = tx.trailing_marker(tail)
            if marker and marker != f.anchor and marker not in f.more_anchors:
                f.more_anchors.append(marker)
                f.note("tool result", "start anchor after a tool result", marker)
        return
        marker = tx.trailing_marker(prompt[at + len(TOOL_RESULT) :])
        if marker and marker != f.anchor:
            f.more_anchors.append(marker)
            f.note("tool result", "start anchor after a tool result", marker)
        return


def _bare_content_ok(f: Findings) -> bool:
    """Whether bare text may be the answer: the content opener is one marker, and in the reasoning
    render only whitespace lies between the reasoning's close and it (no message headers)."""
    if len(tx.tokens(f.content_open)) != 1:
        return False
    rendered = f.renders.get("reasoning")
    if rendered is None or not f.reasoning_close:
        return True
    turn = rendered.turn
    at = turn.find(f.reasoning_close)
    to = turn.find(f.content_open, at + 1) if at >= 0 else -1
    if at < 0 or to < 0:  # the render does not show the two together
        return True
    return not turn[at + len(f.reasoning_close) : to].strip()


# -------------------------------------------------------------------------------------------- reasoning


def _reasoning(
    r: Renderer, f: Findings, plain: Render, header: str, before: str, gens: Mapping[str, str]
) -> None:
    probes: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("reasoning", r.message(reasoning=REASONING), {}),
        ("reasoning, thinking on", r.message(reasoning=REASONING), {"enable_thinking": True}),
        ("reasoning with a call", r.message(content="", reasoning=REASONING, calls=[CALL_1]), {}),
    ]
    switches = r.thinking_switches()
    if switches:
        probes.append(
            ("reasoning, the template's thinking switches on", r.message(reasoning=REASONING), switches)
        )
    probes += [
        (
            "reasoning as a content block",
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": REASONING}, {"type": "text", "text": CONTENT}],
            },
            {},
        ),
    ]
    blocks = _own_blocks(r.chat_template)
    if blocks is not None:
        probes.append(("reasoning as the template's own content blocks", blocks, {}))
    for name, msg, kwargs in probes:
        rendered = r.probe(name, msg, **kwargs)
        if rendered is None or REASONING not in rendered.turn:
            continue
        if not isinstance(msg["content"], str) and re.search(r"""['"]type['"]""", rendered.turn):
            continue  # the template printed the blocks as a list
        turn = rendered.turn
        at = turn.find(REASONING)
        head = tx.prefix_at_boundary(header, turn[: len(header)]) if header else ""
        opener_text = turn[len(head) : at]
        if CONTENT in opener_text:  # reasoning written after the answer
            opener_text = opener_text[opener_text.rfind(CONTENT) + len(CONTENT) :]
        opener = opener_text.strip()
        pre_opened = gens.get("default", "")
        pre_opened = pre_opened[len(header) :].strip() if pre_opened.startswith(header) else ""
        if not opener and pre_opened and not opener_text.strip():
            # the history writes the reasoning bare where the generation prompt writes an opener
            # (``Here are my reasoning steps:``): the model starts inside that block
            opener = pre_opened
        if not opener:
            opener = tx.last_token(turn[:at]).strip()
        # when the turn also starts with an empty block, the opener is the last marker before the text
        toks = tx.tokens(opener_text)
        if len(toks) > 1 and all(t.startswith(("<", "[")) for t in toks):
            opener = toks[-1] if not _looks_multi(toks) else opener
        rest = turn[at + len(REASONING) :]
        closer = tx.first_token(rest)
        if not opener or not closer or CONTENT in closer or closer.startswith(CONTENT[:5]):
            continue
        f.reasoning_open, f.reasoning_close = opener, closer
        f.renders["reasoning"] = rendered
        f.note(name, "reasoning markers", [opener, closer])
        return
    # Reasoning not rendered from history: the thinking switch of the generation prompt.
    on, off, default = gens.get("on", ""), gens.get("off", ""), gens.get("default", "")
    for a, b, how in ((on, off, "thinking on vs off"), (default, off, "default vs thinking off")):
        if a == b:
            continue
        cut = len(tx.prefix_at_boundary(a, b))
        extra_a, extra_b = a[cut:].strip(), b[cut:].strip()
        ta, tb = tx.tokens(extra_a), tx.tokens(extra_b)
        if (len(tb) >= 2 and not ta) or (ta and len(tb) >= 2 and tb[0] == ta[-1]):
            # ``<|channel>thought\n<channel|>``: everything before the closer opens (a word included)
            opener, closer = extra_b[: extra_b.rfind(tb[-1])].strip(), tb[-1]
            if len(tx.tokens(opener)) > 2 or not opener:
                opener = tb[0]
        elif len(ta) == 1 and not tb:
            opener, closer = ta[0], tx.closer_for(ta[0]) or ""
        elif len(ta) == 1 and len(tb) == 1:
            opener, closer = ta[0], tb[0]
        else:
            continue
        if opener and closer:
            f.reasoning_open, f.reasoning_close = opener, closer
            f.note(f"generation prompt ({how})", "reasoning markers", [opener, closer])
            f.warnings.append(
                "the chat template drops reasoning from the history: the reasoning markers were read "
                f"off the generation prompt ({how})"
            )
            return
    # An opener the generation prompt always writes (a pre-opened block), closed by rule.
    tail = tx.trailing_marker(default)
    ruled = tx.closer_for(tail) if tail else None
    if tail and ruled and ruled in r.chat_template and tail not in header:
        closer = ruled
        f.reasoning_open, f.reasoning_close = tail, closer
        f.guessed += 1
        f.note("generation prompt (default)", "reasoning opener (closer by the naming rule)", [tail, closer])
        f.warnings.append(
            f"the chat template drops reasoning from the history: the closer {closer!r} is guessed from "
            f"the opener {tail!r} the generation prompt writes"
        )
        return
    # A marker pair the template's source splits reasoning off on.
    for m in re.finditer(r"""split\(\s*['"](</?[^'"<>]+>)['"]""", r.chat_template):
        closer = m.group(1)
        opener = closer.replace("</", "<", 1)
        if opener != closer:  # the opener by the naming rule, written or not
            f.reasoning_open, f.reasoning_close = opener, closer
            f.guessed += 1
            f.note("template source", "reasoning markers (split off the history)", [opener, closer])
            f.warnings.append(
                f"the chat template drops reasoning from the history; the markers {opener!r}/{closer!r} "
                "are taken from the text it splits reasoning off on"
            )
            return


def _own_blocks(chat_template: str) -> dict[str, Any] | None:
    """A message whose content is blocks of the types the template compares with (``block.type ==
    'thoughts'``, ``'response'``), in a ``{"blocks": [...]}`` mapping when the template looks for one; None
    when the template names no reasoning block type of its own."""
    types = re.findall(r"""\.type\s*==\s*['"](\w+)['"]""", chat_template)
    think = next((t for t in types if re.search(r"think|thought|reason", t) and t != "thinking"), None)
    if think is None:
        return None
    text = next((t for t in ("response", "answer", "output", "text") if t in types), "text")
    blocks = [{"type": think, "text": REASONING, "thinking": REASONING}, {"type": text, "text": CONTENT}]
    if re.search(r"""['"]blocks['"]\s+in\s+\w+(?:\.content|\[['"]content['"]\])""", chat_template):
        return {"role": "assistant", "content": {"blocks": blocks}}
    return {"role": "assistant", "content": blocks}


def _looks_multi(toks: list[str]) -> bool:
    """``<|channel|>analysis<|message|>``-like openers: several markers that belong together."""
    return any(not t.startswith(("<", "[")) for t in toks)

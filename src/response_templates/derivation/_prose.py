"""Markers the system prompt describes in words, for a chat template that never renders them.

Some templates tell the model its format in the system prompt they write instead of rendering it in the
history (Granite 3.3: "Write your thoughts between <think></think> and write your response between
<response></response>", "respond only with <|tool_call|> followed by a JSON list of tools used"). When
the renders showed no reasoning markers, answer wrapper or call syntax, the generation prompts (with and
without tools, with the template's thinking switches on and off) are searched for:

* a marker pair (``<x></x>``, ``[X]...[/X]``, by the naming rule) introduced by a word of thinking
  (thought, think, reasoning): the reasoning markers; introduced by response or answer: the answer's
  wrapper, which the model may leave out;
* a marker followed by "JSON list", "JSON array" or "JSON object" in a sentence about tools or
  functions: the call marker, then calls as JSON objects with a name and arguments.

Every marker read from prose is a guess: it lowers the confidence and is warned about.
"""

from __future__ import annotations

import re
from typing import Any

from ..verify import render_chat_template
from . import _text as tx
from ._findings import Findings
from ._render import TOOLS, USER, Renderer

__all__ = ["prose"]

_MARK = r"<[^<>\s]{1,40}>|\[[^\[\]\s]{1,30}\]"
_THINK = re.compile(r"\b(?:thoughts?|think(?:ing)?|reason(?:ing)?)\b", re.IGNORECASE)
_ANSWER = re.compile(r"\b(?:responses?|answers?)\b", re.IGNORECASE)
_CALLS = re.compile(r"(" + _MARK + r")[^.<>\n]{0,40}?\bJSON\s+(list|array|object)", re.IGNORECASE)
_TOOLISH = re.compile(r"\b(?:tools?|functions?)\b", re.IGNORECASE)


def _prompts(r: Renderer) -> list[str]:
    """The generation prompts the template writes, with and without tools and thinking switches."""
    out = []
    switches = r.thinking_switches()
    for tools in (None, TOOLS):
        for kwargs in ({}, switches, {"enable_thinking": True}):
            try:
                text = render_chat_template(
                    r.chat_template,
                    [{"role": "user", "content": USER}],
                    add_generation_prompt=True,
                    tools=tools,
                    bos_token=r.bos_token,
                    eos_token=r.eos_token,
                    **{**r.supplied, **kwargs},
                )
            except Exception:  # the template refuses this conversation
                continue
            if text not in out:
                out.append(text)
    return out


def _context(text: str, at: int) -> str:
    """The words before ``at`` back to the sentence's start or the previous marker."""
    start = max(text.rfind(c, 0, at) for c in (".", "\n", ">", "]"))
    return text[start + 1 : at]


def _pairs(text: str) -> list[tuple[str, str, str]]:
    """``(opener, closer, words before)`` for the marker pairs of ``text`` (closer by the naming rule)."""
    out = []
    for m in re.finditer(_MARK, text):
        opener = m.group(0)
        closer = tx.closer_for(opener)
        if closer is None or closer == opener:
            continue
        to = text.find(closer, m.end(), m.end() + 400)
        if to < 0 or "\n\n" in text[m.end() : to]:
            continue
        out.append((opener, closer, _context(text, m.start())))
    return out


def prose(r: Renderer, f: Findings) -> None:
    """Read the markers the renders did not show off the system prompt's words (see the module)."""
    want_reasoning = not f.reasoning_open
    want_answer = not f.content_open
    if not (want_reasoning or want_answer or f.tools is None):
        return
    prompts = _prompts(r)
    for text in prompts:
        for opener, closer, words in _pairs(text):
            if opener in (f.anchor, f.end) or opener in f.header:
                continue
            if want_reasoning and _THINK.search(words):
                f.reasoning_open, f.reasoning_close = opener, closer
                want_reasoning = False
                _guess(f, "reasoning markers", [opener, closer])
            elif want_answer and _ANSWER.search(words) and not _THINK.search(words):
                f.content_open, f.content_close, f.bare_content = opener, closer, True
                want_answer = False
                _guess(f, "answer wrapper", [opener, closer])
    if f.tools is not None:
        return
    for text in prompts:
        for m in _CALLS.finditer(text):
            sentence = _context(text, m.start()) + m.group(0)
            if not _TOOLISH.search(sentence) or m.group(1) in (f.anchor, f.end):
                continue
            f.tools = _json_calls(m.group(1), m.group(2).lower() != "object")
            _guess(f, "call marker (JSON calls)", m.group(1))
            return


def _guess(f: Findings, what: str, value: Any) -> None:
    f.guessed += 1
    f.note("system prompt (prose)", what, value)
    f.warnings.append(f"{what} read off the system prompt's prose, not a render (a guess): {value!r}")


def _json_calls(marker: str, is_list: bool) -> dict[str, Any]:
    """Calls after ``marker`` as JSON objects with a name and arguments (a list of them, or one each)."""
    spec: dict[str, Any] = {
        "open_pattern": tx.flex(marker) + r"(?=\s*[\[{])",
        "content": "json",
        "close_json": True,
    }
    if is_list:
        spec["transform_each"] = True
        spec["transform"] = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}
    else:
        spec["repeats"] = True
        spec["transform"] = {
            "type": "function",
            "function": {"name": "{content.name}", "arguments": "{content.arguments}"},
        }
    return spec

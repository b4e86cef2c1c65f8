"""Rendering probe conversations through a chat template, retrying the ones it refuses.

A probe is one assistant message. It is rendered after a short history (a user message, or a system
message and a user message, whichever the chat template accepts), once as the generation prompt and once
with the message appended; :class:`Render` keeps the pieces the analysis diffs.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..verify import render_chat_template
from ._text import common_prefix

__all__ = [
    "CALL_1",
    "CALL_2",
    "CONTENT",
    "IDS",
    "NEXT_USER",
    "REASONING",
    "SYSTEM",
    "TOOLS",
    "TOOL_RESULT",
    "USER",
    "Render",
    "Renderer",
]

USER = "What is the weather like in Paris today?"
SYSTEM = "You are a helpful assistant."
CONTENT = "Sunny skies ahead."
REASONING = "Consider the weather carefully."
TOOL_RESULT = "Rainy_z 12 degrees."
NEXT_USER = "And tomorrow_u?"

#: The probe calls: distinctive names, argument names and values (a string and an integer), call ids of
#: nine alphanumerics (Mistral's templates insist on that shape).
CALL_1: dict[str, Any] = {"name": "get_weather_x", "arguments": {"city_q": "Paris_v", "unit_r": "celsius_t"}}
CALL_2: dict[str, Any] = {"name": "search_web_y", "arguments": {"query_s": "news_w", "limit_n": 7}}
IDS = ("a1b2c3d4e", "f5g6h7i8j")

#: Message keys templates read reasoning from.
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking", "thought")


def _schema(arguments: Mapping[str, Any]) -> dict[str, Any]:
    props = {
        key: {"type": "integer" if isinstance(value, int) else "string", "description": f"The {key}."}
        for key, value in arguments.items()
    }
    return {"type": "object", "properties": props, "required": sorted(props)}


TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": c["name"],
            "description": f"The {c['name']} tool.",
            "parameters": _schema(c["arguments"]),
        },
    }
    for c in (CALL_1, CALL_2)
]


@dataclass
class Render:
    """One probe rendered: ``prompt`` (history plus generation prompt), ``full`` (history plus the
    message), ``base`` (history alone) and the options that made the template accept it."""

    prompt: str
    full: str
    base: str
    history: list[dict[str, Any]]
    message: dict[str, Any]
    kwargs: dict[str, Any]

    @cached_property
    def span(self) -> tuple[int, int]:
        """Where the assistant turn is in :attr:`full`."""
        if self.prompt == self.base or not self.full.startswith(self.base):
            # the template writes something after the history whatever comes (the generation prompt,
            # or an instruction): the turn goes in before it
            k = _always_prompted(self.base, self.full)
            if k is not None:
                return k, k + len(self.full) - len(self.base)
        return common_prefix(self.base, self.full), len(self.full)

    @property
    def turn(self) -> str:
        """The assistant turn as the history renders it (header included)."""
        start, end = self.span
        return self.full[start:end]

    @property
    def generation(self) -> str:
        """What the generation prompt adds to the history."""
        if self.prompt == self.base:
            k = _always_prompted(self.base, self.full)
            if k is not None:
                return self.base[k:]
        return self.prompt[common_prefix(self.base, self.prompt) :]


def _always_prompted(base: str, full: str) -> int | None:
    """Where the history ends, for a template that writes something after the history whatever comes
    (the generation prompt, an instruction): ``base`` = history + tail, ``full`` = history + turn + tail;
    None when ``full`` is not so.

    The split is ambiguous when the turn and the prompt (or the history) share text at the seam; the
    history is taken to end as the user's turn does (with the text the template writes after it)."""
    grow = len(full) - len(base)
    if grow <= 0:
        return None
    top = common_prefix(base, full)
    valid: list[int] = []
    for k in range(top, -1, -1):  # the splits that fit form one run
        if base[k:] == full[k + grow :]:
            valid.append(k)
        elif valid:
            break
    if not valid:
        return None
    at = base.rfind(USER)
    if at >= 0:
        rest = base[at + len(USER) :]
        m = re.match(r"\s*(<[^<>\n]{1,80}>|\[[^\[\]\n]{1,40}\])", rest)
        if m:
            ends = [k for k in valid if base[:k].rstrip().endswith(m.group(1))]
            if ends:
                return ends[0]
    return valid[0]


@dataclass
class Renderer:
    """Renders probes through one chat template; remembers what the template refused."""

    chat_template: str
    bos_token: str = ""
    eos_token: str = ""
    refused: list[str] = field(default_factory=list)
    #: The history shape that worked last (tried first next time).
    _histories: list[list[dict[str, Any]]] = field(default_factory=list)
    arguments_as_string: bool = False
    #: Variables no chat request has that the template needs, and the text supplied for them.
    supplied: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._histories = [
            [{"role": "user", "content": USER}],
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        ]

    def reasoning_keys(self) -> list[str]:
        found = [
            key
            for key in _REASONING_KEYS
            if re.search(r"""(?:\.|\[['"])""" + key + r"""(?!\w)""", self.chat_template)
        ]
        return found or ["reasoning_content"]

    def thinking_switches(self) -> dict[str, bool]:
        """Template variables that switch reasoning on (``add_thoughts``...): tested, never set inside."""
        names = set(re.findall(r"\{%-?\s*(?:el)?if\s+(?:not\s+)?([A-Za-z_]\w*)", self.chat_template))
        out = {}
        for name in sorted(names):
            set_inside = re.search(r"\{%-?\s*set\s+" + name + r"\s*=", self.chat_template)
            if re.search(r"think|thought|reason", name) and not set_inside and name != "enable_thinking":
                out[name] = True
        return out

    def histories(self) -> list[list[dict[str, Any]]]:
        """The history shapes, the one that worked last first."""
        return [list(h) for h in self._histories]

    def render(
        self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool, **kwargs: Any
    ) -> str:
        while True:
            try:
                return render_chat_template(
                    self.chat_template,
                    messages,
                    add_generation_prompt=add_generation_prompt,
                    tools=TOOLS,
                    bos_token=self.bos_token,
                    eos_token=self.eos_token,
                    **{**self.supplied, **kwargs},
                )
            except Exception as exc:
                if not self._supply(exc, kwargs):
                    raise

    def _supply(self, exc: Exception, kwargs: Mapping[str, Any]) -> bool:
        """A variable no chat request has (``functions``): supply it as text (the tools as JSON when it
        is named after them) and say whether to retry."""
        m = re.fullmatch(r"'(\w+)' is undefined", str(exc))
        name = m.group(1) if m and type(exc).__name__ == "UndefinedError" else None
        if name is None or name in self.supplied or name in kwargs or len(self.supplied) >= 4:
            return False
        self.supplied[name] = json.dumps(TOOLS, indent=4) if re.search(r"tool|function", name) else ""
        return True

    def message(
        self,
        *,
        content: str | None = CONTENT,
        reasoning: str | None = None,
        calls: Sequence[Mapping[str, Any]] = (),
        ids: Sequence[str] = IDS,
    ) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            for key in self.reasoning_keys():
                msg[key] = reasoning
        if calls:
            out = []
            for index, call in enumerate(calls):
                arguments: Any = copy.deepcopy(dict(call["arguments"]))
                if self.arguments_as_string:
                    arguments = json.dumps(arguments)
                out.append(
                    {
                        "id": ids[index],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": arguments},
                    }
                )
            msg["tool_calls"] = out
        return msg

    def probe(self, what: str, message: dict[str, Any], **kwargs: Any) -> Render | None:
        """Render ``message`` after the first history the template accepts; None if it accepts none
        (recorded in :attr:`refused`)."""
        problems = []
        variants = [message]
        if message.get("content") is None:
            variants.append({**message, "content": ""})
        elif message.get("content") == "" and message.get("tool_calls"):
            variants.append({**message, "content": None})
        for history in list(self._histories):
            for msg in variants:
                try:
                    base = self.render(history, add_generation_prompt=False, **kwargs)
                    prompt = self.render(history, add_generation_prompt=True, **kwargs)
                    full = self.render([*history, msg], add_generation_prompt=False, **kwargs)
                except Exception as exc:  # the template refuses this conversation: try the next shape
                    problems.append(f"{type(exc).__name__}: {exc}")
                    continue
                if history is not self._histories[0]:
                    self._histories.remove(history)
                    self._histories.insert(0, history)
                return Render(prompt, full, base, list(history), msg, dict(kwargs))
        self.refused.append(f"{what}: {problems[-1] if problems else 'refused'}")
        return None

    def generation_prompts(self) -> dict[str, str]:
        """The generation prompt's addition to the history, by thinking switch (``default``, ``on``,
        ``off``), for the switches the template accepts."""
        out: dict[str, str] = {}
        for name, kwargs in (
            ("default", {}),
            ("on", {"enable_thinking": True}),
            ("off", {"enable_thinking": False}),
        ):
            for history in self._histories:
                try:
                    base = self.render(history, add_generation_prompt=False, **kwargs)
                    prompt = self.render(history, add_generation_prompt=True, **kwargs)
                except Exception:
                    continue
                out[name] = prompt[common_prefix(base, prompt) :]
                break
        return out

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
from typing import Any

from ..verify import render_chat_template

__all__ = ["CALL_1", "CALL_2", "CONTENT", "IDS", "REASONING", "SYSTEM", "TOOLS", "USER", "Render", "Renderer"]

USER = "What is the weather like in Paris today?"
SYSTEM = "You are a helpful assistant."
CONTENT = "Sunny skies ahead."
REASONING = "Consider the weather carefully."

#: The probe calls: distinctive names, argument names and values (a string and an integer), call ids of
#: nine alphanumerics (Mistral's templates insist on that shape).
CALL_1: dict[str, Any] = {"name": "get_weather_x", "arguments": {"city_q": "Paris_v", "unit_r": "celsius_t"}}
CALL_2: dict[str, Any] = {"name": "search_web_y", "arguments": {"query_s": "news_w", "limit_n": 7}}
IDS = ("a1b2c3d4e", "f5g6h7i8j")

#: Message keys templates read reasoning from.
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


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

    @property
    def turn(self) -> str:
        """The assistant turn as the history renders it (header included)."""
        return self.full[_common_prefix(self.base, self.full) :]

    @property
    def generation(self) -> str:
        """What the generation prompt adds to the history."""
        return self.prompt[_common_prefix(self.base, self.prompt) :]


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


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

    def render(
        self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool, **kwargs: Any
    ) -> str:
        return render_chat_template(
            self.chat_template,
            messages,
            add_generation_prompt=add_generation_prompt,
            tools=TOOLS,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            **kwargs,
        )

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
                out[name] = prompt[_common_prefix(base, prompt) :]
                break
        return out

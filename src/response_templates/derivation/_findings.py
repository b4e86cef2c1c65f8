"""What the analysis found: the markers of each part of a turn, with the evidence for each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._render import Render

__all__ = ["Findings"]


@dataclass
class Findings:
    """What the probes showed, piece by piece, with the evidence for each."""

    anchor: str = ""
    #: Where the model starts writing after a tool result, when the anchor is not there.
    more_anchors: list[str] = field(default_factory=list)
    #: What the generation prompt and the rendered turn share (the anchor and any block it pre-opens).
    header: str = ""
    end: str = ""
    #: The call marker the generation prompt ends with (Functionary's ``>>>``), which a prompt rendered
    #: without it leaves out: markers starting with it may then start the output without it.
    prompt_marker: str = ""
    #: End-of-sequence spellings guessed by rule where the template writes an ``eos_token`` not given.
    eos_guess: list[str] = field(default_factory=list)
    reasoning_open: str = ""
    reasoning_close: str = ""
    #: The generation prompt may close reasoning before the model writes (``<think></think>``-less
    #: ``</think>`` alone): the reasoning region may then open empty at the start.
    closed_by_prompt: bool = False
    content_open: str = ""
    #: The answer may be written without its wrapper (nothing but the wrapper follows the reasoning).
    bare_content: bool = False
    content_close: str = ""
    tools: dict[str, Any] | None = None
    #: More fields feeding the tool calls (``into``): other syntaxes the model may use.
    more_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: A channel-style turn (harmony): the channel and message markers, channel names, the call header.
    channels: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    renders: dict[str, Render] = field(default_factory=dict)
    guessed: int = 0

    def note(self, probe: str, what: str, value: Any) -> None:
        self.evidence.append({"probe": probe, "found": what, "value": value})

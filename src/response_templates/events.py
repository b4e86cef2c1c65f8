"""Every event the library emits, described once.

At run time events are plain ``dict`` objects (code written for the reference implementation compares
them with dicts); these :class:`~typing.TypedDict` classes are their types, the single description that
the documentation, the parser and every consumer (tool-call streamer, wire adapters) share.

Parser events (``ResponseParser.feed`` / ``finalize`` / ``initial_events``):

* :class:`RegionOpen` -- a region starts; ``captures`` holds the open delimiter's named groups, when it
  has any.
* :class:`RegionChunk` -- text routed into the open region; ``dirty`` is false when every chunk is part
  of the final value (up to stripping), true for structured content parsed only at close.
* :class:`RegionClose` -- the region ended with its parsed value; ``error`` is present (and ``value``
  None) when the value did not parse.

Tool-call events (:class:`~response_templates.toolstream.ToolCallStreamer`):
:class:`ToolCallStart`, :class:`ToolCallDelta`, :class:`ToolCallEnd`.

>>> from response_templates.events import RegionChunk
>>> chunk: RegionChunk = {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False}
>>> chunk == {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False}
True
"""

from __future__ import annotations

import sys
from typing import Any, Literal, TypedDict

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover
    from typing_extensions import NotRequired

__all__ = [
    "Event",
    "ParserEvent",
    "RegionChunk",
    "RegionClose",
    "RegionOpen",
    "Report",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallEvent",
    "ToolCallStart",
]


class RegionOpen(TypedDict):
    type: Literal["region_open"]
    field: str
    #: The open delimiter's named groups (only when it has some) **[ours, additive]**.
    captures: NotRequired[dict[str, str]]


class RegionChunk(TypedDict):
    type: Literal["region_chunk"]
    field: str
    text: str
    dirty: bool


class RegionClose(TypedDict):
    type: Literal["region_close"]
    field: str
    value: Any
    #: Present when the region's value did not parse (``value`` is then None).
    error: NotRequired[str]


ParserEvent = RegionOpen | RegionChunk | RegionClose


class ToolCallStart(TypedDict):
    type: Literal["tool_call_start"]
    index: int
    name: str
    id: str | None


class ToolCallDelta(TypedDict):
    type: Literal["tool_call_delta"]
    index: int
    arguments: str
    whole: bool


class ToolCallEnd(TypedDict):
    type: Literal["tool_call_end"]
    index: int
    name: str | None
    id: str | None
    arguments: str
    input: Any
    complete: bool
    error: NotRequired[str]


ToolCallEvent = ToolCallStart | ToolCallDelta | ToolCallEnd

#: What code that handles any event (or a scanner report) takes: a plain dict with a ``type``.
Event = dict[str, Any]
#: A report of the incremental JSON scanner (:class:`~response_templates.jsonlex.JsonScanner`).
Report = dict[str, Any]

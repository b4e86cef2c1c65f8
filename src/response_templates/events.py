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
* :class:`Unparsed` -- only with ``errors="keep"``: right after the ``region_close`` of a region that
  did not parse, its text exactly as written (delimiters included), which the message keeps as content.

Tool-call events (:class:`~response_templates.toolstream.ToolCallStreamer`):
:class:`ToolCallStart`, :class:`ToolCallDelta`, :class:`ToolCallEnd`.

>>> from response_templates.events import RegionChunk
>>> chunk: RegionChunk = {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False}
>>> chunk == {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False}
True
"""

# No ``from __future__ import annotations`` here: NotRequired must be evaluated for the classes'
# ``__required_keys__``/``__optional_keys__`` to be right at run time (tests/test_events.py reads them).
import sys
from typing import Any, Literal

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover
    # typing.TypedDict of Python 3.10 does not know NotRequired: both come from typing_extensions.
    from typing_extensions import NotRequired, TypedDict

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
    "Unparsed",
]


class RegionOpen(TypedDict):
    """A region starts: at its open delimiter, or for the implicit field at its first character."""

    type: Literal["region_open"]
    field: str
    #: The open delimiter's named groups (only when it has some) **[ours, additive]**.
    captures: NotRequired[dict[str, str]]


class RegionChunk(TypedDict):
    """Text routed into the open region.

    ``dirty`` is false when the chunks are the value itself (``text``, ``int``, ``float``, ``bool``: up to
    stripping), true when they are raw text of a value parsed only at close (``json``, ``xml-inline``...).
    """

    type: Literal["region_chunk"]
    field: str
    text: str
    dirty: bool


class RegionClose(TypedDict):
    """The region ended; ``value`` is parsed, transformed and typed, what the message gets from it.

    For the implicit field, each segment (gap between other regions) closes with its own value, None when
    the segment does not parse on its own; the message's value is all segments parsed together.
    """

    type: Literal["region_close"]
    field: str
    value: Any
    #: Present when the region's value did not parse (``value`` is then None).
    error: NotRequired[str]


class Unparsed(TypedDict):
    """A region that did not parse, kept as text (``errors="keep"``; docs/errors.md, "Error policy").

    Emitted right after the failed region's ``region_close`` (whose ``value`` is None). ``text`` is the
    region exactly as the model wrote it, its open and close delimiters included (a region that only the
    end of the stream closed has no close delimiter); the message keeps this text as content, in stream
    order. ``error`` is the reason, the ``error`` of the ``region_close``.
    """

    type: Literal["unparsed"]
    field: str
    text: str
    error: str


ParserEvent = RegionOpen | RegionChunk | RegionClose | Unparsed


class ToolCallStart(TypedDict):
    """Tool call ``index`` (0, 1, ... in stream order) is known: its name, and its id when captured."""

    type: Literal["tool_call_start"]
    index: int
    name: str
    id: str | None


class ToolCallDelta(TypedDict):
    """More argument text of call ``index``; ``whole``: the complete arguments string, sent at once."""

    type: Literal["tool_call_delta"]
    index: int
    arguments: str
    whole: bool


class ToolCallEnd(TypedDict):
    """Call ``index`` ended; ``complete`` says whether ``input`` holds its typed arguments.

    When ``complete`` is true, ``json.loads(arguments) == input``; otherwise ``input`` is None and ``error``
    says why (the region failed to parse, the stream was cut off, ...).
    """

    type: Literal["tool_call_end"]
    index: int
    name: str | None
    id: str | None
    arguments: str
    input: Any
    complete: bool
    error: NotRequired[str]
    #: Present (True) when the output ended inside the call: ``arguments`` is then the text sent, exactly,
    #: with nothing closed or added (the start of a JSON text, or ``""``; see ``ToolCallStreamer``).
    cut_off: NotRequired[bool]


ToolCallEvent = ToolCallStart | ToolCallDelta | ToolCallEnd

#: What code that handles any event (or a scanner report) takes: a plain dict with a ``type``.
Event = dict[str, Any]
#: A report of the incremental JSON scanner (:class:`~response_templates.jsonlex.JsonScanner`).
Report = dict[str, Any]

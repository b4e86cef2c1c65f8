"""The incremental parser: feed text, get events (docs/spec.md, sections 2, 4, 5 and 8).

:class:`ResponseParser` is a sans-I/O state machine in the style of h11: you feed it text and it returns
events; it does no I/O, starts no threads and keeps no global state. Its total work is linear in the
input however the input is chunked, and the result never depends on the chunking.

>>> import response_templates as rt
>>> template = {
...     "start_anchor": "<|im_start|>assistant\\n",
...     "fields": {
...         "reasoning_content": {"open": "<think>", "close": "</think>"},
...         "content": {"close": "<|im_end|>"},
...     },
... }
>>> p = rt.ResponseParser(template, prefix="<|im_start|>assistant\\n<think>\\n")
>>> p.initial_events
[{'type': 'region_open', 'field': 'reasoning_content'}, {'type': 'region_chunk', 'field': 'reasoning_content', 'text': '\\n', 'dirty': False}]
>>> events = p.feed("Easy.</think>Hi!")
>>> message, final_events = p.finalize()
>>> message
{'reasoning_content': 'Easy.', 'content': 'Hi!'}

Router state
------------

Besides the text buffer, the parser's state is two attributes: ``_current``, the open :class:`_Region`
(or None), and ``_suspended``, the region a nested one opened inside (or None). They are in one of four
states:

========================  ======================================  =====================================
state                     ``_current`` / ``_suspended``           watched delimiters
========================  ======================================  =====================================
outside                   None / None                             ``template.outside``
implicit segment open     a region of the implicit field / None   ``template.outside``
explicit region open      a field's region / None                 ``template.inside[field]``, or the
                                                                  JSON value's end (``close_json``)
nested region open        the inner region / the outer region     ``template.inside[inner]``
========================  ======================================  =====================================

Transitions (``_process``, ``_route``, ``_open_region``, ``_close_region``):

* text while outside opens an implicit segment when the template has an implicit field (else the text
  is discarded); in any other state text goes to ``_current``;
* an open delimiter, outside or in an implicit segment, closes the segment and opens the field's region;
* an open delimiter inside an explicit region (``within``, extension ``interleaved``) suspends that
  region and opens the nested one;
* a close delimiter (the open region's, or the implicit field's own in an implicit segment), the end of
  a ``close_json`` value, or the end of the stream closes ``_current``; the suspended region then
  resumes (nested -> explicit), else the parser is outside. The end of the stream closes a resumed
  region too.

``_watch`` and the fast-path hints ``_fast_first``/``_fast_re`` follow from the state: ``_enter`` sets
them at every transition that changes the watched delimiters.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .assembly import MessageAssembler
from .errors import ParseError, ParserStateError, ResponseTemplateError
from .events import ParserEvent
from .jsonlex.end import JsonEnd
from .language import FieldSpec, ResponseTemplate, load_template
from .matching import Match, WatchSet
from .tools import tool_parameters
from .values import ValuePipeline

__all__ = ["ResponseParser", "parse_response"]

logger = logging.getLogger("response_templates")

#: A request's tools, as ``ResponseParser`` and ``parse_response`` take them.
Tools = Sequence[Mapping[str, Any] | Callable[..., Any]]

# Pending (held-back) text longer than this is re-scanned only after it has grown by half its length,
# which keeps the total work linear even when a regex delimiter stays undecided for a long time.
_RESCAN_FLOOR = 256


class _ToolParams(dict[str, dict[str, Any]]):
    """Tool name -> parameter schemas, already extracted (shared by the items of a batch)."""


def _tool_params(tools: Tools | _ToolParams | None) -> _ToolParams:
    if isinstance(tools, _ToolParams):
        return tools
    # tool_parameters checks each tool (a mapping or a function) and says which one is malformed.
    tool_list: Any = tools
    return _ToolParams(tool_parameters(tool_list))


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


_MISSING: Any = _Missing()


def _missing_prefix_error() -> ResponseTemplateError:
    return ResponseTemplateError(
        "prefix is required: pass the prompt the model continued (a string), because chat templates "
        "often write the start of the assistant message themselves (an opening <think>, a prefill) and "
        'the parser must see it to read the output correctly. Pass prefix="" to opt out explicitly.'
    )


class _Region:
    """One open region: the explicit region of a field, or a segment of the implicit field.

    ``body`` collects the region's text as it is routed, ``start`` is the stream offset of its first
    character, ``captures`` the open delimiter's named groups (empty for an implicit segment) and
    ``end`` the end-finder of a ``close_json`` region (where its JSON value ends), else None.
    """

    __slots__ = ("body", "captures", "end", "field", "start")

    def __init__(self, field: FieldSpec, start: int, captures: dict[str, str], end: JsonEnd | None) -> None:
        self.field = field
        self.body: list[str] = []
        self.start = start
        self.captures = captures
        self.end = end


class ResponseParser:
    """Parse one generation as it streams.

    Args:
        template: a response template (dict, JSON string or :class:`ResponseTemplate`).
        prefix: the prompt that preceded the generation; required (``""`` opts out). Its part after the
            last start anchor is read as if the model had written it; events from it are in
            :attr:`initial_events`.
        tools: the request's tools (JSON-schema dicts or typed, documented callables); tool-call
            arguments are cast by their schema when a region closes.

    Use :meth:`feed` for each chunk of model output (``str``, or ``bytes`` of UTF-8 that may split a
    character anywhere) and :meth:`finalize` once at the end.

    A region that does not parse makes the call that closed it raise a
    :class:`~response_templates.ParseError` once the whole chunk has been read; the error carries all the
    events of the call (``error.events``, the failed region's ``region_close`` among them) and the region's
    raw text, and the parser stays usable: keep feeding, then finalize. Errors so far are in :attr:`errors`.
    """

    __slots__ = (
        "_assembler",
        "_base",
        "_buf",
        "_bytes_seen",
        "_current",
        "_decoder",
        "_failed",
        "_fast_first",
        "_fast_re",
        "_finalized",
        "_incoming",
        "_incoming_len",
        "_pos",
        "_skip_empty_at",
        "_suspended",
        "_values",
        "_watch",
        "_window",
        "anchor_found",
        "errors",
        "initial_events",
        "prefix_length",
        "template",
    )

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        prefix: str = _MISSING,
        *,
        tools: Tools | None = None,
    ) -> None:
        self.template = load_template(template)
        if prefix is _MISSING or prefix is None:
            raise _missing_prefix_error()
        if not isinstance(prefix, str):
            raise ResponseTemplateError(
                f"prefix must be a string, got {type(prefix).__name__}; token ids are decoded by the "
                "tokenizer integration (response_templates.hf)"
            )
        t = self.template
        self._values = ValuePipeline(t, _tool_params(tools))
        self._assembler = MessageAssembler(t, self._values)
        self._window = t.lookbehind_window
        self._buf = ""  # text from absolute offset self._base; self._pos indexes the first unrouted char
        self._base = 0
        self._pos = 0
        self._incoming: list[str] = []
        self._incoming_len = 0
        self._decoder: codecs.IncrementalDecoder | None = None
        self._bytes_seen = 0
        self._skip_empty_at = -1  # absolute offset of the last zero-width boundary
        # Router state (see the class docstring): outside, no region open.
        self._current: _Region | None = None
        self._suspended: _Region | None = None
        self._enter(t.outside, None)
        self._finalized = False
        self._failed: list[ParseError] = []  # regions that failed in the current call, raised at its end
        self.errors: list[ResponseTemplateError] = []
        self.initial_events: list[ParserEvent] = []
        remainder, found = t.cut_prefix(prefix)
        #: Whether the start anchor was found in the prefix (if not, the whole prefix was parsed).
        self.anchor_found = found
        if not found and prefix:
            logger.debug("start anchor not found in the prefix; the whole prefix is parsed")
        self.prefix_length = len(remainder)
        if remainder:
            self._incoming.append(remainder)
            self._incoming_len = len(remainder)
            self._run(self.initial_events, final=False)

    # -- public API ---------------------------------------------------------------------------------

    def feed(self, text: str | bytes) -> list[ParserEvent]:
        """Add model output and return the events it produced (possibly none)."""
        if self._finalized:
            raise ParserStateError("feed() after finalize(): one parser follows one generation")
        if type(text) is not str:
            if isinstance(text, (bytes, bytearray, memoryview)):
                text = self._decode(bytes(text), final=False)
            elif not isinstance(text, str):
                raise ResponseTemplateError(f"feed() takes str or UTF-8 bytes, got {type(text).__name__}")
        elif self._decoder is not None and self._decoder.getstate()[0]:
            raise ResponseTemplateError(
                "feed() got str while an earlier bytes chunk ended inside a UTF-8 character; feed the rest "
                "of that character as bytes first"
            )
        if not text:
            return []
        buf = self._buf
        if self._pos == len(buf) and not self._incoming:
            # Nothing is held back: the chunk starts a fresh buffer (keeping the lookbehind window).
            first = self._fast_first
            if (
                first is not None
                and buf  # not at the start of the stream, where a '^' pattern may match anything
                and (first not in text if self._fast_re is None else not self._fast_re.search(text))
            ):
                # Fast path: no watched delimiter can start in this chunk (see WatchSet.first_chars).
                self._base += len(buf)
                self._buf = text
                self._pos = len(text)
                region = self._current
                if region is not None:
                    region.body.append(text)
                    field = region.field
                    return [{"type": "region_chunk", "field": field.name, "text": text, "dirty": field.dirty}]
                events: list[ParserEvent] = []
                self._pos = 0  # an implicit segment opened here starts at the chunk's first character
                self._route(events, text)
                self._pos = len(text)
                return events
            keep = buf[-self._window :]
            self._base += len(buf) - len(keep)
            self._buf = keep + text
            self._pos = len(keep)
        else:
            self._incoming.append(text)
            self._incoming_len += len(text)
            pending = len(buf) - self._pos
            if pending > _RESCAN_FLOOR and self._incoming_len * 2 < pending:
                return []  # a long undecided span: wait for enough new text to make a re-scan worthwhile
        events = []
        self._run(events, final=False)
        return events

    def finalize(self) -> tuple[dict[str, Any], list[ParserEvent]]:
        """End the stream: flush held-back text, close open regions, check required fields.

        Returns ``(message, final_events)``.
        """
        if self._finalized:
            raise ParserStateError("finalize() called twice: one parser follows one generation")
        events: list[ParserEvent] = []
        if self._decoder is not None:
            tail = self._decode(b"", final=True)
            if tail:
                self._incoming.append(tail)
                self._incoming_len += len(tail)
        self._run(events, final=True)
        self._finalized = True
        try:
            message = self._assembler.message(self.prefix_length)
        except ParseError as exc:
            exc.events = events
            self.errors.append(exc)
            raise
        return message, events

    @property
    def finalized(self) -> bool:
        return self._finalized

    def _enter(self, watch: WatchSet, end: JsonEnd | None) -> None:
        """Enter a router state: remember its delimiters and whether chunks may skip the scanner.

        ``end`` is the new state's JSON end-finder (``close_json``): its text must go through the
        finder, so there is no fast path then.
        """
        self._watch: WatchSet = watch
        first = watch.first_chars if self._window == 1 and end is None else None
        self._fast_first: str | None = first
        self._fast_re: Any = watch.first_re if first is not None and len(first) != 1 else None

    # -- input --------------------------------------------------------------------------------------

    def _decode(self, data: bytes, final: bool) -> str:
        if self._decoder is None:
            self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        held = len(self._decoder.getstate()[0])
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            at = self._bytes_seen - held + exc.start
            self._decoder.reset()
            self._bytes_seen += len(data)
            if final and not data:
                what = f"the stream ended inside a UTF-8 character that starts at byte {at}"
            else:
                what = (
                    f"invalid UTF-8 at byte {at} of the generated bytes ({exc.reason}); the chunk was not "
                    "consumed: decode it yourself if you want replacement characters"
                )
            err = ParseError(what, raw=data.decode("utf-8", "backslashreplace"), offset=None)
            err.events = []
            self.errors.append(err)
            raise err from None
        self._bytes_seen += len(data)
        return text

    # -- the scan/route loop --------------------------------------------------------------------------

    def _run(self, events: list[ParserEvent], final: bool) -> None:
        if self._incoming:
            self._buf += "".join(self._incoming)
            self._incoming.clear()
            self._incoming_len = 0
        try:
            self._process(events, final)
        except ResponseTemplateError as exc:
            exc.events = events
            self.errors.extend(self._failed)
            self._failed = []
            self.errors.append(exc)
            raise
        self._trim()
        if self._failed:
            # A region that does not parse is reported at the end of the call that closed it, after all of
            # the call's text was read: which call reports it then depends only on where the region ends,
            # never on how the text was split into chunks.
            failed, self._failed = self._failed, []
            for error in failed:
                error.events = events
            self.errors.extend(failed)
            first = failed[0]
            if len(failed) > 1 and hasattr(first, "add_note"):
                first.add_note(
                    f"({len(failed) - 1} more region(s) failed in the same call: see parser.errors)"
                )
            raise first

    # The hot loop: one iteration per delimiter match (or JSON value end), kept in one function so that a
    # chunk full of delimiters pays no extra calls; opening and closing regions are the helpers below.
    def _process(self, events: list[ParserEvent], final: bool) -> None:
        t = self.template
        timeout = t.regex_timeout
        # The buffer does not change during one call: each pattern's search is remembered (WatchSet.scan),
        # so that states visited many times in a long chunk do not search its rest again at each visit.
        memo: dict[Any, Any] = {}
        while True:
            region = self._current
            if region is not None and region.end is not None:
                # json-value-end: the open region ends exactly where its JSON value ends.
                buf = self._buf
                end = region.end.feed(buf[self._pos :]) if self._pos < len(buf) else -1
                stop = len(buf) if end < 0 else self._pos + end
                if stop > self._pos:
                    self._route(events, buf[self._pos : stop])
                    self._pos = stop
                if end >= 0 or final:
                    self._close_region(events, None)
                    if end >= 0 or self._current is not None:
                        continue  # more text, or a resumed outer region (interleaved) to close too
                return
            watch = self._watch
            buf = self._buf
            if watch.delimiters:
                skip = self._skip_empty_at - self._base
                match, undecided = watch.scan(buf, self._pos, final, skip, timeout, memo)
            else:
                match, undecided = None, len(buf)
            if match is None:
                if undecided > self._pos:
                    self._route(events, buf[self._pos : undecided])
                    self._pos = undecided
                if final and self._current is not None:
                    self._close_region(events, None)
                    if self._current is not None:
                        continue  # the outer region of an interleaved one resumed: close it too
                return
            if match.start > self._pos:
                self._route(events, buf[self._pos : match.start])
            self._pos = match.end
            if match.start == match.end:
                self._skip_empty_at = self._base + match.start
            d = match.delimiter
            if d.kind == "open":
                self._open_region(events, t.by_name[d.field], match)
            else:
                self._close_region(events, match)

    def _trim(self) -> None:
        """Drop routed text that no pattern can look at any more (keeps a lookbehind window)."""
        drop = self._pos - self._window
        if drop > 0 and drop >= len(self._buf) - self._pos:
            self._buf = self._buf[drop:]
            self._base += drop
            self._pos -= drop

    # -- routing ------------------------------------------------------------------------------------

    def _route(self, events: list[ParserEvent], text: str) -> None:
        """Add routed text to the open region (outside, open an implicit segment first, or discard it)."""
        region = self._current
        if region is None:
            implicit = self.template.implicit
            if implicit is None:
                return  # outside every region and no implicit field: the template discards this text
            region = self._current = _Region(implicit, self._base + self._pos, {}, None)
            events.append({"type": "region_open", "field": implicit.name})
        region.body.append(text)
        field = region.field
        events.append({"type": "region_chunk", "field": field.name, "text": text, "dirty": field.dirty})

    def _open_region(self, events: list[ParserEvent], field: FieldSpec, match: Match) -> None:
        """An open delimiter matched: close an implicit segment, or suspend the open explicit region."""
        current = self._current
        if current is not None and not current.field.implicit:
            # interleaved: a field opens inside the open region, which resumes when it closes.
            self._suspended = current
        else:
            self._close_region(events, None)
        end = JsonEnd.for_args(field.content_args) if field.close_json else None
        self._current = _Region(field, self._base + match.end, match.captures, end)
        self._enter(self.template.inside[field.name], end)
        if match.captures:
            # [ours, additive] the open delimiter's named groups (a tool name in the header, say), so that
            # consumers know them at once; a copy, so the event can be modified freely.
            events.append({"type": "region_open", "field": field.name, "captures": dict(match.captures)})
        else:
            events.append({"type": "region_open", "field": field.name})

    def _close_region(self, events: list[ParserEvent], close: Match | None) -> None:
        """Close the current region (explicit, or the implicit segment if one is open)."""
        region = self._current
        if region is None:
            return
        field = region.field
        raw = "".join(region.body)
        start = region.start
        captures = (
            {**region.captures, **close.captures} if close is not None and close.captures else region.captures
        )
        # Change state first: whatever happens below, the parser is back outside any region (or back in
        # the region this one opened inside, which resumes).
        resumed = self._suspended
        self._current = resumed
        if resumed is None:
            self._enter(self.template.outside, None)
        else:
            self._suspended = None
            self._enter(self.template.inside[resumed.field.name], resumed.end)
        if field.implicit or field.into_implicit:
            # The implicit field's value is its segments parsed together at the end; a segment's own
            # region_close carries the segment's value, or None when it does not parse on its own
            # (whitespace between two tool calls in an int field, say). A wrapper of the implicit text
            # ('into' the implicit field) adds one more segment.
            self._assembler.add_implicit_segment(raw, captures, start)
            value = self._values.segment_value(raw, captures)
            events.append({"type": "region_close", "field": field.name, "value": value})
            return
        try:
            value = self._values.region_value(field, raw, captures, start, self.prefix_length)
            self._assembler.add(field, value, raw, start, self.prefix_length)
        except ParseError as exc:
            # Keep open/close balanced for consumers: the region closes with no value and the error; the
            # error is raised when the call ends (see _run).
            events.append({"type": "region_close", "field": field.name, "value": None, "error": exc.detail})
            self._failed.append(exc)
            return
        events.append({"type": "region_close", "field": field.name, "value": value})


def parse_response(
    text: str | Sequence[str],
    template: Mapping[str, Any] | ResponseTemplate | str,
    *,
    prefix: str | Sequence[str] = _MISSING,
    tools: Tools | None = None,
) -> dict[str, Any] | list[dict[str, Any]]:
    """Parse one complete generation (or a batch) into a message dict.

    ``text`` is a string, or a list of strings for a batch, which returns a list of messages; ``prefix``
    is then one prompt for all items or a list with one per item. ``prefix`` is required (``""`` opts
    out). Raises :class:`~response_templates.ParseError` when the output does not fit the template.

    >>> import response_templates as rt
    >>> t = {"start_anchor": "<|im_start|>assistant\\n",
    ...      "fields": {"tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True,
    ...                                "content": "json"},
    ...                 "content": {}}}
    >>> rt.parse_response('Sure.<tool_call>{"name": "f"}</tool_call>', t, prefix="")
    {'content': 'Sure.', 'tool_calls': [{'name': 'f'}]}
    """
    if prefix is _MISSING or prefix is None:
        raise _missing_prefix_error()
    compiled = load_template(template)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"invalid UTF-8 at byte {exc.start} ({exc.reason})") from None
    if isinstance(text, str):
        if not isinstance(prefix, str):
            raise ResponseTemplateError(
                f"a single text needs a single string prefix, got {type(prefix).__name__}"
            )
        return _parse_one(text, compiled, prefix, tools)
    if not isinstance(text, Sequence):
        raise ResponseTemplateError(f"text must be a string or a list of strings, got {type(text).__name__}")
    if isinstance(prefix, str):
        prefixes: Sequence[str] = [prefix] * len(text)
    else:
        prefixes = list(prefix)
        if len(prefixes) != len(text):
            raise ResponseTemplateError(
                f"batch of {len(text)} texts but {len(prefixes)} prefixes: pass one prefix for all, or one per text"
            )
    params = _tool_params(tools)
    results = []
    for index, (item, item_prefix) in enumerate(zip(text, prefixes, strict=True)):
        try:
            results.append(_parse_one(item, compiled, item_prefix, params))
        except ResponseTemplateError as exc:
            exc.index = index
            if hasattr(exc, "add_note"):
                exc.add_note(f"(in batch item {index})")
            raise
    return results


def _parse_one(
    text: Any, template: ResponseTemplate, prefix: str, tools: Tools | _ToolParams | None
) -> dict[str, Any]:
    if not isinstance(text, str):
        raise ResponseTemplateError(f"each text must be a string, got {type(text).__name__}")
    tool_arg: Any = tools  # a batch's _ToolParams: ResponseParser takes them as they are
    parser = ResponseParser(template, prefix, tools=tool_arg)
    # The whole text is known: read it in finalize's single pass over complete text (no hold-back to
    # decide, every search remembered), which gives what feeding it and then finalizing gives.
    if text:
        parser._incoming.append(text)
        parser._incoming_len = len(text)
    return parser.finalize()[0]

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

import logging
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .assembly import MessageAssembler
from .controls import MARK, ControlTokens, tokenizer_integration
from .errors import ParseError, ParserStateError, ResponseTemplateError
from .events import ParserEvent, RegionChunk
from .jsonlex.end import JsonEnd
from .language import FieldSpec, ResponseTemplate, load_template
from .matching import Delimiter, Match, RegexBudget, RegexMeter, WatchSet
from .policy import (
    MAX_ERRORS,
    MISSING,
    AnchorPolicy,
    ErrorPolicy,
    ParsedMessage,
    Tools,
    anchor_not_found,
    check_policy,
    detach,
    missing_prefix_error,
    tool_params,
)
from .utf8 import BadBytes, Utf8Input
from .values import ValuePipeline

__all__ = ["MAX_ERRORS", "ParsedMessage", "ResponseParser"]

logger = logging.getLogger("response_templates")

#: A request's tools, as ``ResponseParser`` and ``parse_response`` take them.
# Pending (held-back) text longer than this is re-scanned only after it has grown by half its length,
# which keeps the total work linear even when a regex delimiter stays undecided for a long time.
_RESCAN_FLOOR: Final = 256


class _Region:
    """One open region: the explicit region of a field, or a segment of the implicit field.

    ``body`` collects the region's text as it is routed, ``start`` is the stream offset of its first
    character, ``captures`` the open delimiter's named groups (empty for an implicit segment) and
    ``end`` the end-finder of a ``close_json`` region (where its JSON value ends), else None, and
    ``opener`` the open delimiter as written (kept with the text when the region fails, errors="keep").
    ``chunk`` is the field's ``region_chunk`` event without its text (one per field and parser, see
    ``ResponseParser._region``): each event is a copy of it (a copy of a small dict costs a third of
    building one).
    """

    __slots__ = ("body", "captures", "chunk", "end", "field", "opener", "start")

    def __init__(
        self,
        field: FieldSpec,
        start: int,
        captures: dict[str, str],
        end: JsonEnd | None,
        opener: str,
        chunk: RegionChunk,
    ) -> None:
        self.field = field
        self.chunk = chunk
        self.body: list[str] = []
        self.start = start
        self.captures = captures
        self.end = end
        self.opener = opener


# The first piece of the buffer a json-value-end region's end finder reads; each next one is 4x longer.
_JSON_END_PIECE: Final = 64


def _feed_json_end(finder: JsonEnd, buf: str, pos: int) -> int:
    """``finder.feed(buf[pos:])`` (the end's offset from ``pos``, or -1), read in growing pieces.

    A value usually ends soon after it starts, or not at all (a model looping on a call opener opens a
    region at every copy and its value fails at once): copying the whole rest of the buffer for each
    region made that quadratic. The finder reads pieces as it reads streamed chunks, with the same answer.
    """
    n = len(buf)
    at, size = pos, _JSON_END_PIECE
    while at < n:
        stop = min(n, at + size)
        end = finder.feed(buf[at:stop] if at or stop < n else buf)
        if end >= 0:
            return at - pos + end
        at, size = stop, size * 4
    return -1


class ResponseParser:
    """Parse one generation as it streams.

    Args:
        template: a response template (dict, JSON string or :class:`ResponseTemplate`), or the name of
            a library family or a model id (``"qwen3"``, ``"Qwen/Qwen3-8B"``: see ``load_template``).
        prefix: the prompt that preceded the generation; required (``""`` opts out). Its part after the
            last start anchor is read as if the model had written it; events from it are in
            :attr:`initial_events`.
        tools: the request's tools (JSON-schema dicts or typed, documented callables); tool-call
            arguments are cast by their schema when a region closes.
        errors: ``"raise"`` (the default) or ``"keep"``: what a region that does not parse does (below).
        missing_anchor: ``"raise"`` (the default): a non-empty prefix without the start anchor raises
            :class:`~response_templates.errors.AnchorNotFoundError`; ``"parse"``: the whole prefix is read
            as if the model had written it.
        regex_budget: a :class:`~response_templates.RegexBudget` bounding the regex time of one search,
            of one call and of the whole stream (default ``RegexBudget()``: ``regex_timeout``, 5 s, 30 s);
            running out raises :class:`~response_templates.PatternTimeoutError`.
        control_tokens: the texts of the tokenizer's control tokens (or a
            :class:`~response_templates.controls.ControlTokens`), for output that comes as token ids: then
            :meth:`feed` takes text decoded from ordinary tokens, in which a control token spelled out
            does not match a delimiter, and :meth:`feed_control` takes a control token as generated (see
            docs/tokenizers.md; :mod:`response_templates.hf` does this from ids). ``prefix`` may then be
            a sequence of ``(text, is_control)`` pieces; a string prefix is read as text (every spelling
            counts, as the chat template wrote it). None (the default): text is text, and every spelling
            of a delimiter matches.
        tokenizer: a Hugging Face tokenizer (transformers 5.25's call shape): :meth:`feed` then takes the
            generated token ids (text too), ``prefix`` may be the prompt's ids, and the control tokens are
            the tokenizer's (:func:`response_templates.hf.control_token_ids`). Nothing of the tokenizer
            integration is imported unless it is given.

    Use :meth:`feed` for each chunk of model output (``str``, or ``bytes`` of UTF-8 that may split a
    character anywhere) and :meth:`finalize` once at the end; it returns a :class:`ParsedMessage`.

    With ``errors="raise"``, a region that does not parse makes the call that closed it raise a
    :class:`~response_templates.ParseError` once the whole chunk has been read; the error carries all the
    events of the call (``error.events``, the failed region's ``region_close`` among them) and the region's
    raw text, and the parser stays usable: keep feeding, then finalize. With ``errors="keep"`` nothing
    raises a ``ParseError``: the region's text, delimiters included, is kept as content (an ``unparsed``
    event follows its ``region_close``), invalid UTF-8 becomes U+FFFD, and the error is recorded. Errors so
    far are in :attr:`errors` (at most :data:`MAX_ERRORS`; :attr:`errors_dropped` counts the others), and
    in the message's ``errors``. ``finalize`` always ends the parser.
    """

    __slots__ = (
        "_assembler",
        "_bad_bytes",
        "_base",
        "_buf",
        "_chunk_events",
        "_controls",
        "_ctail",
        "_current",
        "_failed",
        "_fast_first",
        "_fast_literal",
        "_fast_re",
        "_finalized",
        "_incoming",
        "_incoming_len",
        "_keep",
        "_marks",
        "_meter",
        "_pos",
        "_quiet",
        "_raised",
        "_raw",
        "_scan_hint",
        "_skip_empty_at",
        "_suspended",
        "_tokens",
        "_utf8",
        "_values",
        "_watch",
        "_window",
        "anchor_found",
        "errors",
        "errors_dropped",
        "initial_events",
        "prefix_length",
        "template",
    )

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        prefix: str | Sequence[tuple[str, bool]] | Any = MISSING,
        *,
        tools: Tools | None = None,
        errors: ErrorPolicy = "raise",
        missing_anchor: AnchorPolicy = "raise",
        regex_budget: RegexBudget | None = None,
        control_tokens: ControlTokens | Iterable[str] | None = None,
        tokenizer: Any = None,
    ) -> None:
        check_policy("errors", errors, ("raise", "keep"))
        check_policy("missing_anchor", missing_anchor, ("raise", "parse"))
        self.template = load_template(template)
        if prefix is MISSING or prefix is None:
            raise missing_prefix_error()
        self._tokens: Any = None  # the token-id decoder (hf.PieceDecoder) when a tokenizer is given
        if tokenizer is not None:
            ring = tokenizer_integration()  # the tokenizer ring, plugged in by the package (controls.py)
            self._tokens, prefix, control_tokens = ring.reader(tokenizer, prefix, control_tokens)
        controls: ControlTokens | None = None
        if control_tokens is not None:
            controls = (
                control_tokens if isinstance(control_tokens, ControlTokens) else ControlTokens(control_tokens)
            )
        self._controls = controls
        self._ctail = ""  # the end of the text from ordinary tokens so far (a spelling may continue it)
        self._raw = False  # the text being fed is read as written (feed_control)
        # Absolute offsets (in the buffer) of the marks put into spelled-out control tokens, in order.
        self._marks: list[int] = []
        prefix_marks: list[int] = []
        if not isinstance(prefix, str):
            if controls is None or not _is_pieces(prefix):
                raise ResponseTemplateError(
                    f"prefix must be a string, got {type(prefix).__name__}; token ids are decoded by the "
                    "tokenizer integration (response_templates.hf)"
                )
            prefix, prefix_marks = controls.mark_pieces(prefix)
        t = self.template
        # What is left of the regex budget (RegexBudget): every search of this parser is charged to it.
        self._meter = RegexMeter(regex_budget, t.regex_timeout)
        remainder, found = t.cut_prefix(prefix, self._meter)
        if prefix_marks:
            cut = len(prefix) - len(remainder)
            self._marks = [m - cut for m in prefix_marks if m >= cut]
        if not found and prefix and missing_anchor == "raise":
            raise anchor_not_found(t, prefix)
        self._keep = errors == "keep"
        self._values = ValuePipeline(t, tool_params(tools))
        self._assembler = MessageAssembler(t, self._values)
        self._window = t.lookbehind_window
        self._buf = ""  # text from absolute offset self._base; self._pos indexes the first unrouted char
        self._base = 0
        self._pos = 0
        self._incoming: list[str] = []
        self._incoming_len = 0
        self._utf8: Utf8Input | None = None  # the decoder of bytes chunks, once one came
        self._skip_empty_at = -1  # absolute offset of the last zero-width boundary
        self._chunk_events: dict[str, RegionChunk] = {}  # field -> its region_chunk event, without text
        # Which delimiter held text back last, per watch set: tried first at the next scan (WatchSet.scan).
        self._scan_hint: dict[WatchSet, Delimiter] = {}
        # Whole-text parsing (parse_response) wants the message only: no events are built.
        self._quiet = False
        # Router state (see the class docstring): outside, no region open.
        self._current: _Region | None = None
        self._suspended: _Region | None = None
        self._enter(t.outside, None)
        self._finalized = False
        # Regions that failed in the current call (with the stream offset where each became known), raised
        # or recorded at its end; with errors="keep", bad bytes waiting for the parser to reach them.
        self._failed: list[tuple[int, ParseError]] = []
        self._bad_bytes: list[BadBytes] = []
        self._raised: ResponseTemplateError | None = None  # the last error raised (keeps its traceback)
        #: The errors so far, in stream order (at most MAX_ERRORS; see errors_dropped).
        self.errors: list[ResponseTemplateError] = []
        #: How many errors were not stored in :attr:`errors` because it held MAX_ERRORS already.
        self.errors_dropped = 0
        self.initial_events: list[ParserEvent] = []
        #: Whether the start anchor was found in the prefix (if not, the whole prefix was parsed).
        self.anchor_found = found
        if not found and prefix:
            logger.debug("start anchor not found in the prefix; the whole prefix is parsed (missing_anchor)")
        self.prefix_length = len(remainder)
        if remainder:
            self._incoming.append(remainder)
            self._incoming_len = len(remainder)
            self._run(self.initial_events, final=False)

    # -- public API ---------------------------------------------------------------------------------

    def feed(self, text: str | bytes | Sequence[int]) -> list[ParserEvent]:
        """Add model output and return the events it produced (possibly none).

        With ``control_tokens``, ``text`` is text decoded from ordinary tokens: a control token spelled out
        in it is text (see :meth:`feed_control`). With ``tokenizer``, it may be token ids (a list, or a
        1-D array)."""
        if self._finalized:
            raise ParserStateError("feed() after finalize(): one parser follows one generation")
        if self._tokens is not None and type(text) is not str and not isinstance(text, (bytes, bytearray)):
            return self._feed_pieces(self._tokens.step(text))
        if type(text) is not str:
            if isinstance(text, (bytes, bytearray, memoryview)):
                text = self._decode(bytes(text), final=False)
            elif not isinstance(text, str):
                raise ResponseTemplateError(f"feed() takes str or UTF-8 bytes, got {type(text).__name__}")
        elif self._utf8 is not None and self._utf8.pending():
            raise ResponseTemplateError(
                "feed() got str while an earlier bytes chunk ended inside a UTF-8 character; feed the rest "
                "of that character as bytes first"
            )
        if not text:
            return []
        marked = False
        if self._controls is not None:
            if self._raw:  # feed_control: read as written
                self._raw = False
            else:
                text, marked = self._mark(text)
        buf = self._buf
        if self._pos == len(buf) and not self._incoming:
            # Nothing is held back: the chunk starts a fresh buffer (keeping the lookbehind window).
            if not marked and self._delimiter_free(text):
                # Fast path: no watched delimiter can start in this chunk (see WatchSet.first_chars).
                self._base += len(buf)
                self._buf = text
                self._pos = len(text)
                region = self._current
                if region is not None:
                    region.body.append(text)
                    event = region.chunk.copy()
                    event["text"] = text
                    return [event]
                events: list[ParserEvent] = []
                self._pos = 0  # an implicit segment opened here starts at the chunk's first character
                self._route(events, text)
                self._pos = len(text)
                return events
            keep = buf[-self._window :]
            self._base += len(buf) - len(keep)
            self._buf = buf = keep + text
            self._pos = start = len(keep)
            literal = self._fast_literal
            if literal is not None and not self._bad_bytes and literal.literal_re.search(buf, start) is None:
                # Only literal delimiters are watched and none is in the chunk: route all of it but the
                # tail that could still start one (no regex search, nothing to meter).
                stop = len(buf)
                if buf[-1] in literal.prefix_last_chars:
                    stop = min(stop, literal._literal_hold_back(buf, start))
                events = []
                if stop > start:
                    self._route(events, buf[start:stop])
                    self._pos = stop
                return events
        else:
            self._incoming.append(text)
            self._incoming_len += len(text)
            pending = len(buf) - self._pos
            if pending > _RESCAN_FLOOR and self._incoming_len * 2 < pending:
                return []  # a long undecided span: wait for enough new text to make a re-scan worthwhile
        events = []
        self._run(events, final=False)
        return events

    def _mark(self, text: str) -> tuple[str, bool]:
        """Text from ordinary tokens with its spelled control tokens marked (recorded in ``_marks``)."""
        assert self._controls is not None
        text, marks, self._ctail = self._controls.mark(self._ctail, text)
        if not marks:
            return text, False
        at = self._base + len(self._buf) + self._incoming_len
        self._marks.extend(at + m for m in marks)
        return text, True

    def _append(self, text: str, control: bool) -> None:
        """Whole-text reading (whole.py): add a piece to the text that finalize reads, unprocessed."""
        if control:
            self._ctail = ""
        elif self._controls is not None:
            text = self._mark(text)[0]
        if text:
            self._incoming.append(text)
            self._incoming_len += len(text)

    def feed_control(self, text: str | bytes) -> list[ParserEvent]:
        """Add one control token as the model generated it (its id): its text matches delimiters as written.

        Only for a parser made with ``control_tokens``; ``text`` is the token's text (a spelling from
        :attr:`~response_templates.controls.ControlTokens.spellings`, as a rule). More generally, any
        text fed here is read as text, where every spelling counts (str, or UTF-8 bytes as for
        :meth:`feed`).

        >>> import response_templates as rt
        >>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {"content": {"close": "<|im_end|>"}}}
        >>> p = rt.ResponseParser(template, prefix="", control_tokens=["<|im_end|>"])
        >>> for piece in ["Type ", "<|", "im_end", "|>", " to stop."]:  # spelled with ordinary tokens
        ...     _ = p.feed(piece)
        >>> _ = p.feed_control("<|im_end|>")  # the real token
        >>> p.finalize()[0]
        {'content': 'Type <|im_end|> to stop.'}
        """
        if self._controls is None:
            raise ParserStateError(
                "feed_control() needs a parser made with control_tokens=: without them every spelling is a "
                "control token, so feed() the text"
            )
        if self._finalized:
            raise ParserStateError("feed_control() after finalize(): one parser follows one generation")
        if type(text) is not str and not isinstance(text, (bytes, bytearray, memoryview)):
            raise ResponseTemplateError(
                f"feed_control() takes the token's text (str), got {type(text).__name__}"
            )
        if type(text) is str and self._utf8 is not None and self._utf8.pending():
            raise ResponseTemplateError(
                "feed_control() came while an earlier bytes chunk ended inside a UTF-8 character; feed the "
                "rest of that character as bytes first"
            )
        self._ctail = ""  # a spelling cannot run through a control token
        if not text:
            return []
        self._raw = True
        try:
            return self.feed(text)
        finally:
            self._raw = False

    def _feed_pieces(self, pieces: list[tuple[str, bool]]) -> list[ParserEvent]:
        """Pieces ``(text, is_control)`` decoded from ids: all of them are read, then the first error of
        the call (if any) is raised with all of its events."""
        events: list[ParserEvent] = []
        failed: ResponseTemplateError | None = None
        for text, control in pieces:
            try:
                events += self.feed_control(text) if control else self.feed(text)
            except ParseError as exc:
                events += list(exc.events or [])
                failed = failed or exc
        if failed is not None:
            failed.events = events
            raise failed
        return events

    def feed_region(self, text: str) -> Mapping[str, Any] | None:
        """The shortcut of :meth:`feed` for most chunks of a long region: when ``text`` only continues the
        open region (nothing is held back and no watched delimiter can start in it), route it and return
        the region's ``region_chunk`` event without its text: :meth:`feed` would have returned exactly
        ``[{**returned, "text": text}]``. Otherwise read nothing and return None (then call :meth:`feed`).

        The returned mapping is shared by every chunk of the field: read it, do not change it. This is what
        the wire adapters' ``step`` uses to skip building an event for every chunk; most callers want
        :meth:`feed`.

        >>> import response_templates as rt
        >>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {"content": {"close": "<|im_end|>"}}}
        >>> parser = rt.ResponseParser(template, prefix="")
        >>> [e["type"] for e in parser.feed("Hello")]
        ['region_open', 'region_chunk']
        >>> parser.feed_region(", world")["field"], parser.feed_region("<|im_end|>")
        ('content', None)
        >>> parser.finalize()[0]["content"]
        'Hello, world'
        """
        region = self._current
        if (
            region is None
            or self._controls is not None
            or self._pos != len(self._buf)
            or self._incoming
            or self._finalized
            or type(text) is not str
            or not text
            or (self._utf8 is not None and self._utf8.pending())
            or not self._delimiter_free(text)
        ):
            return None
        self._base += len(self._buf)
        self._buf = text
        self._pos = len(text)
        region.body.append(text)
        return region.chunk

    def _delimiter_free(self, text: str) -> bool:
        """Whether no watched delimiter can start in ``text`` (see WatchSet.first_chars), when it starts a
        fresh buffer: not at the start of the stream (where a '^' pattern may match anything), and with no
        bad bytes waiting (they are recorded when the scan reaches them)."""
        first = self._fast_first
        return (
            first is not None
            and bool(self._buf)
            and not self._bad_bytes
            and (first not in text if self._fast_re is None else not self._fast_re.search(text))
        )

    def finalize(self) -> tuple[ParsedMessage, list[ParserEvent]]:
        """End the stream: flush held-back text, close open regions, check required fields.

        Returns ``(message, final_events)``; ``message`` is a :class:`ParsedMessage`, whose ``errors``
        lists every ``ParseError`` of the stream. With ``errors="raise"``, a failure found here (a region
        that only the end of the stream closed, an implicit value, a required field, a character cut off)
        raises the first of them, with this call's events and ``partial_message``: the message built from
        everything else. Either way the parser is finished afterwards.
        """
        if self._finalized:
            raise ParserStateError("finalize() called twice: one parser follows one generation")
        early: list[ParserEvent] = []
        failure: ParseError | None = None
        if self._tokens is not None:
            try:
                early = self._feed_pieces(self._tokens.flush())  # what the decoder still held
            except ParseError as exc:
                failure, early = exc, list(exc.events or [])
        self._finalized = True  # whatever happens below, this parser has followed its generation
        events: list[ParserEvent] = early
        if self._utf8 is not None:
            try:
                tail = self._decode(b"", final=True)
            except ParseError as exc:  # errors="raise": a character cut off by the end of the stream
                failure, tail = exc, ""
            if tail:
                self._incoming.append(tail)
                self._incoming_len += len(tail)
        try:
            self._run(events, final=True)
        except ParseError as exc:
            failure = failure or exc
        kept: list[ParseError] | None = [] if self._keep else None
        try:
            message = self._assembler.message(self.prefix_length, kept)
        except ParseError as exc:
            exc.events = events
            self._store(exc, raised=True)
            message = exc.partial_message or {}
            failure = failure or exc
        for error in kept or ():
            self._store(error, raised=False)
        parsed = ParsedMessage(
            message, [e for e in self.errors if isinstance(e, ParseError)], self.errors_dropped
        )
        if failure is not None:
            failure.events = events
            failure.partial_message = parsed
            raise failure
        return parsed, events

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
        self._fast_literal: WatchSet | None = watch if watch.literal_only and end is None else None

    # -- input --------------------------------------------------------------------------------------

    def _decode(self, data: bytes, final: bool) -> str:
        utf8 = self._utf8
        if utf8 is None:
            utf8 = self._utf8 = Utf8Input(self._keep)
        try:
            return utf8.decode(data, final, self._base + len(self._buf) + self._incoming_len, self._bad_bytes)
        except ParseError as err:  # errors="raise": not UTF-8
            self._store(err, raised=True)
            raise

    def _store(self, error: ResponseTemplateError, *, raised: bool) -> None:
        """Add an error to :attr:`errors` (bounded: :data:`MAX_ERRORS`), without what pins memory.

        Stored errors lose their tracebacks (their frames hold whole buffers and searches): only the error
        being raised keeps its own, until the next error is stored.
        """
        previous = self._raised
        if previous is not None:
            detach(previous)
            self._raised = None
        if raised:
            self._raised = error
            cause = error.__cause__ or error.__context__
            if cause is not None:
                detach(cause)
        else:
            detach(error)
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(error)
        else:
            self.errors_dropped += 1

    def _release_bad_bytes(self, final: bool) -> list[tuple[int, ParseError]]:
        """The bad bytes the parser has read past, as errors (errors="keep")."""
        reached = self._base + self._pos
        ready = [b for b in self._bad_bytes if final or b[0] < reached]
        if not ready:
            return []
        self._bad_bytes = self._bad_bytes[len(ready) :]
        out: list[tuple[int, ParseError]] = []
        for index, (offset, at, reason, raw) in enumerate(ready):
            if len(self.errors) + len(out) >= MAX_ERRORS:
                self.errors_dropped += len(ready) - index
                break
            out.append(
                (offset, ParseError(f"invalid UTF-8 at byte {at} ({reason}); kept as U+FFFD", raw=raw))
            )
        return out

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
            for _, error in self._failed:
                self._store(error, raised=False)
            self._failed = []
            self._store(exc, raised=True)
            raise
        self._trim()
        if self._bad_bytes:
            self._failed += self._release_bad_bytes(final)
            self._failed.sort(key=lambda item: item[0])  # stable: stream order, whatever the chunking
        if self._failed:
            # A region that does not parse is reported at the end of the call that closed it, after all of
            # the call's text was read: which call reports it then depends only on where the region ends,
            # never on how the text was split into chunks.
            failed = [error for _, error in self._failed]
            self._failed = []
            if self._keep:
                for error in failed:
                    self._store(error, raised=False)
                return
            for error in failed:
                error.events = events
                self._store(error, raised=False)
            first = failed[0]
            if len(failed) > 1 and hasattr(first, "add_note"):
                first.add_note(
                    f"({len(failed) - 1} more region(s) failed in the same call: see parser.errors)"
                )
            self._raised = first  # its new traceback is dropped when the next error is stored
            raise first

    # The hot loop: one iteration per delimiter match (or JSON value end), kept in one function so that a
    # chunk full of delimiters pays no extra calls; opening and closing regions are the helpers below.
    def _process(self, events: list[ParserEvent], final: bool) -> None:
        t = self.template
        meter = self._meter
        # One call (feed, finalize, the prefix): one per-feed budget, grown by the text the call looks at;
        # the stream's budget grows with all the output read so far (docs/errors.md, limits and budgets).
        meter.start_feed(len(self._buf) - self._pos, self._base + len(self._buf))
        # The buffer does not change during one call: each pattern's search is remembered (WatchSet.scan),
        # so that states visited many times in a long chunk do not search its rest again at each visit.
        memo: dict[Any, Any] = {}
        while True:
            region = self._current
            if region is not None and region.end is not None:
                # json-value-end: the open region ends exactly where its JSON value ends.
                buf = self._buf
                end = _feed_json_end(region.end, buf, self._pos)
                stop = len(buf) if end < 0 else self._pos + end
                if stop > self._pos:
                    self._route(events, buf[self._pos : stop])
                    self._pos = stop
                if end >= 0 or final:
                    self._close_region(events, None, end < 0)
                    if end >= 0 or self._current is not None:
                        continue  # more text, or a resumed outer region (interleaved) to close too
                return
            watch = self._watch
            buf = self._buf
            if final and watch.literal_only:
                # The whole text, and only literals to look for: the next one is the boundary.
                found = watch.literal_re.search(buf, self._pos)
                if found is None:
                    match, undecided = None, len(buf)
                else:
                    literal = found.group()
                    match = Match(found.start(), found.end(), {}, watch.literal_owner[literal])
            elif watch.delimiters:
                skip = self._skip_empty_at - self._base
                match, undecided = watch.scan(buf, self._pos, final, skip, meter, memo, self._scan_hint)
            else:
                match, undecided = None, len(buf)
            if match is None:
                if undecided > self._pos:
                    self._route(events, buf[self._pos : undecided])
                    self._pos = undecided
                if final and self._current is not None:
                    self._close_region(events, None, True)
                    if self._region_open():
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

    def _region(
        self, field: FieldSpec, start: int, captures: dict[str, str], end: JsonEnd | None, opener: str = ""
    ) -> _Region:
        """A new open region of ``field``, with the field's ``region_chunk`` event (made once per field)."""
        chunk = self._chunk_events.get(field.name)
        if chunk is None:
            chunk = {"type": "region_chunk", "field": field.name, "text": "", "dirty": field.dirty}
            self._chunk_events[field.name] = chunk
        return _Region(field, start, captures, end, opener, chunk)

    def _region_open(self) -> bool:
        """Whether a region is open. A call, not ``self._current is not None``, where a check of the same
        attribute before a state change would let a type checker (and the compiled build, which trusts
        it) assume the answer."""
        return self._current is not None

    def _trim(self) -> None:
        """Drop routed text that no pattern can look at any more (keeps a lookbehind window)."""
        drop = self._pos - self._window
        if drop > 0 and drop >= len(self._buf) - self._pos:
            self._buf = self._buf[drop:]
            self._base += drop
            self._pos -= drop

    # -- control-token marks (controls.py) ------------------------------------------------------------

    def _marked_between(self, start: int, end: int) -> bool:
        """Whether a mark lies in the absolute range ``[start, end)``."""
        marks = self._marks
        i = bisect_left(marks, start)
        return i < len(marks) and marks[i] < end

    def _unmark(self, text: str, at: int) -> str:
        """``text`` (the buffer from absolute offset ``at``) without the marks in it, taken out by position:
        a U+FDD2 the model wrote is not a mark and stays."""
        marks = self._marks
        end = at + len(text)
        if marks[-1] < at:
            return text
        i = bisect_left(marks, at)
        if i == len(marks) or marks[i] >= end:
            return text
        pieces: list[str] = []
        last = 0
        while i < len(marks) and marks[i] < end:
            cut = marks[i] - at
            pieces.append(text[last:cut])
            last = cut + 1
            i += 1
        pieces.append(text[last:])
        return "".join(pieces)

    # -- routing ------------------------------------------------------------------------------------

    def _route(self, events: list[ParserEvent], text: str) -> None:
        """Add routed text to the open region (outside, open an implicit segment first, or discard it)."""
        if self._marks:
            text = self._unmark(text, self._base + self._pos)
            if not text:
                return
        region = self._current
        if region is None:
            implicit = self.template.implicit
            if implicit is None:
                return  # outside every region and no implicit field: the template discards this text
            region = self._current = self._region(implicit, self._base + self._pos, {}, None)
            if self._quiet:
                region.body.append(text)
                return
            events.append({"type": "region_open", "field": implicit.name})
        region.body.append(text)
        if self._quiet:
            return
        event = region.chunk.copy()
        event["text"] = text
        events.append(event)

    def _open_region(self, events: list[ParserEvent], field: FieldSpec, match: Match) -> None:
        """An open delimiter matched: close an implicit segment, or suspend the open explicit region."""
        current = self._current
        if current is not None and not current.field.implicit:
            # interleaved: a field opens inside the open region, which resumes when it closes.
            self._suspended = current
        else:
            self._close_region(events, None)
        end = JsonEnd.for_args(field.content_args) if field.close_json else None
        opener = self._buf[match.start : match.end] if self._keep else ""
        captures = match.captures
        if self._marks:
            opener = self._unmark(opener, self._base + match.start)
            if captures and self._marked_between(self._base + match.start, self._base + match.end):
                captures = {k: v.replace(MARK, "") for k, v in captures.items()}
        self._current = self._region(field, self._base + match.end, captures, end, opener)
        self._enter(self.template.inside[field.name], end)
        if self._quiet:
            return
        if captures:
            # [ours, additive] the open delimiter's named groups (a tool name in the header, say), so that
            # consumers know them at once; a copy, so the event can be modified freely.
            events.append({"type": "region_open", "field": field.name, "captures": dict(captures)})
        else:
            events.append({"type": "region_open", "field": field.name})

    def _close_region(self, events: list[ParserEvent], close: Match | None, at_end: bool = False) -> None:
        """Close the current region (explicit, or the implicit segment if one is open); ``at_end``: the end
        of the output closes it, not its close delimiter (nor its JSON value's end)."""
        region = self._current
        if region is None:
            return
        field = region.field
        raw = "".join(region.body)
        start = region.start
        captures = (
            {**region.captures, **close.captures} if close is not None and close.captures else region.captures
        )
        if (
            close is not None
            and close.captures
            and self._marks
            and self._marked_between(self._base + close.start, self._base + close.end)
        ):
            captures = {k: v.replace(MARK, "") for k, v in captures.items()}
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
            if not self._quiet:
                value = self._values.segment_value(raw, captures)
                events.append({"type": "region_close", "field": field.name, "value": value})
            return
        cut = at_end and (field.close is not None or field.close_json)
        try:
            value = self._values.region_value(field, raw, captures, start, self.prefix_length, cut)
            self._assembler.add(field, value, raw, start, self.prefix_length)
        except ParseError as exc:
            if cut:
                exc.cut_off = True  # its close never came: the output was cut inside the region
            # Keep open/close balanced for consumers: the region closes with no value and the error; the
            # error is raised when the call ends (see _run).
            events.append({"type": "region_close", "field": field.name, "value": None, "error": exc.detail})
            if self._keep:
                # Nothing is lost: the region's text as written, delimiters included, stays in the message.
                closer = ""
                if close is not None:
                    closer = self._buf[close.start : close.end]
                    if closer and self._marks:
                        closer = self._unmark(closer, self._base + close.start)
                text = region.opener + raw + closer
                events.append({"type": "unparsed", "field": field.name, "text": text, "error": exc.detail})
                self._assembler.add_kept(text, start - len(region.opener))
            # Its traceback goes now, not when the call ends (stored errors lose it anyway, see _store):
            # its frames point back at this parser, and a long call that fails thousands of regions (a
            # model looping on a call opener) kept them all alive, which made the garbage collector's
            # passes over them grow with the text (quadratic).
            detach(exc)
            self._failed.append((self._base + self._pos, exc))
            return
        if not self._quiet:
            events.append({"type": "region_close", "field": field.name, "value": value})


def _is_pieces(value: Any) -> bool:
    """Whether ``value`` is a prefix given as ``(text, is_control)`` pieces."""
    return isinstance(value, Sequence) and all(
        isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], bool)
        for item in value
    )

"""Call events from parser events: :class:`ToolCallStreamer`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from ..calls import argument_cast, arguments_text, call_parts, flatten_calls
from ..events import ParserEvent, RegionClose, Report, ToolCallEnd, ToolCallEvent
from ..jsonlex.canonical import dumps_arguments, same_json
from ..jsonlex.scanner import JsonScanner
from ..language import ResponseTemplate, load_template
from ..tools import tool_parameters
from .completion import json_completion
from .plan import Source, ToolCallPlan, tool_call_plan

__all__ = ["ARGUMENT_MODES", "ToolCallStreamer"]

#: The values of ``arguments=``: stream the arguments as they are written, or hold them until the call
#: is known to parse.
ARGUMENT_MODES: Final = ("stream", "buffered")


class _Call:
    """One tool call being streamed (one region, or one element of an each-region)."""

    __slots__ = ("announced", "args_done", "deferred", "ended", "id", "index", "name", "sent")

    def __init__(self) -> None:
        self.name: str | None = None
        self.id: str | None = None
        self.index = -1  # the call's position in the stream, once announced
        self.announced = False
        # its arguments cannot stream (they started before its name, or are not an object)
        self.deferred = False
        self.args_done = False
        self.ended = False
        self.sent: list[str] = []  # argument text sent so far


class ToolCallStreamer:
    """Turn a template's tool-call regions into call events, announcing each call as early as possible.

    Args:
        template: the response template (dict, JSON or compiled), the one the parser uses.
        tools: the request's tools, as given to the parser: arguments are typed by their schemas before
            they are sent, exactly as the parser types them.
        field: the tool-call field of the template.
        eager: announce calls and stream their arguments while the model writes them (default). With
            ``False`` a call is sent whole when its region closes, and only if it parsed.
        arguments: ``"stream"`` (default): with ``eager``, the arguments are sent as they are written;
            ``"buffered"``: a call is still announced as soon as its name is known, but its arguments are
            held back and sent whole when its region parsed (the calls after the first one of an array of
            calls are then announced at close too). Either way the arguments a call ends with are valid
            JSON (see below).

    Feed it every event of the parser, in order (:meth:`feed`, or :meth:`process` one at a time); events
    of other fields are ignored. It returns *call events*:

    * ``{"type": "tool_call_start", "index": k, "name": n, "id": i}``: call ``k`` (0, 1, 2... in stream
      order) is known; ``id`` is the call's own id when the template captures one (e.g. Kimi's
      ``functions.get_weather:0``), else ``None``;
    * ``{"type": "tool_call_delta", "index": k, "arguments": text, "whole": w}``: more argument text;
      ``whole`` is true when it is the call's complete arguments string, sent at once when the region
      closed (valid JSON, but not necessarily an object: arguments the model wrote as a string are sent
      as they are when they hold JSON, else as a JSON string);
    * ``{"type": "tool_call_end", "index": k, "name": n, "id": i, "arguments": a, "input": v,
      "complete": c}``: the call ended. ``arguments`` is the whole argument text sent. When ``complete``
      is true, ``input`` is the arguments value (typed, as in the parsed message) and ``json.loads(a)``
      equals it; otherwise the call could not be completed (its region failed to parse, the stream was
      cut off, or the model contradicted what was already sent), ``input`` is ``None`` and ``error`` says
      why. A call whose region failed while the output went on still ends with valid JSON: text already
      sent cannot be taken back, so a last ``tool_call_delta`` closes it
      (:func:`~.completion.json_completion`: open strings, arrays and objects are closed, a key waiting
      for its value gets ``null``), or sends ``{}`` when no argument text was sent; ``arguments`` is then
      that closed text. A call that the end of the output cut off (its region was still open when the
      output ended, and the call did not complete) is not closed: nothing the model did not write is
      added, ``arguments`` is exactly the text sent (the start of a JSON text, or ``""``), and the end
      event has ``"cut_off": True``. (When the region still parsed, its calls not announced yet are
      announced then and ended the same way, with their whole arguments for ``json`` content.)

    Where each part comes from is read from the template (:func:`tool_call_plan`): a name captured by the
    open delimiter is known at ``region_open``; a name inside ``json`` content is known as soon as its
    string is complete; the arguments of ``json`` content stream as canonical JSON text
    (:class:`JsonScanner`), always a prefix of the final arguments string. Arguments that cannot stream
    that way (``xml-inline``, ``kv-lines``, ``allow_non_json``, arguments the model wrote before the
    name, arguments that are not a JSON object) are sent whole when the region closes. When the region
    closes, the parsed value is checked against what was sent, and the rest of the arguments string is
    sent.

    After the parser's ``finalize()``, pass its events to :meth:`finish`; with ``truncated=True`` (the
    engine stopped at its token limit) a call that only the end of the stream closed is ended with
    ``complete: False`` (and ``cut_off``) rather than reported as a complete call.
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
        field: str = "tool_calls",
        eager: bool = True,
        arguments: Literal["stream", "buffered"] = "stream",
    ) -> None:
        if arguments not in ARGUMENT_MODES:
            raise ValueError(f"arguments must be one of {ARGUMENT_MODES}, got {arguments!r}")
        compiled = load_template(template)
        self.field = field
        # The field itself, and every field that feeds it through 'into' (another syntax for the same
        # calls), each with its own plan; regions of tool-call fields never overlap.
        self._plans: dict[str, ToolCallPlan | None] = {}
        spec = compiled.by_name.get(field)
        self._plans[field] = tool_call_plan(spec) if spec is not None else None
        for other in compiled.fields:
            if other.into == field and not other.into_implicit:
                self._plans[other.name] = tool_call_plan(other)
        #: The names of the fields whose events this streamer reads.
        self.fields: frozenset[str] = frozenset(self._plans)
        # The fields whose regions end with a delimiter (or with their JSON value): when the end of the
        # output closes one of those, the output was cut inside it. (A region that runs to the end of the
        # output by design is only cut off when the engine says so, with ``truncated``.)
        delimited: set[str] = set()
        for name in self._plans:
            other_spec = compiled.by_name.get(name)
            if other_spec is not None and (other_spec.close is not None or other_spec.close_json):
                delimited.add(name)
        self._delimited: frozenset[str] = frozenset(delimited)
        # How each field's arguments are typed (FieldSpec.argument_typing): what the held-back members are.
        self._typing: dict[str, str] = {}
        for name in self._plans:
            typed_spec = compiled.by_name.get(name)
            self._typing[name] = typed_spec.argument_typing if typed_spec is not None else "all"

        self.plan: ToolCallPlan | None = self._plans[field]
        self._region_field = field
        self._params: dict[str, dict[str, Any]] = tool_parameters(tools)
        self.eager = eager
        #: Whether argument text waits for the region to parse (``arguments="buffered"``).
        self.buffered = arguments == "buffered"
        #: Messages of the calls that could not be completed, and of regions that produced no call.
        self.errors: list[str] = []
        #: How many calls were announced / ended complete so far.
        self.count = 0
        self.completed = 0
        self._open = False
        self._captures: Mapping[str, str] = {}
        self._calls: list[_Call] = []
        self._scanner: JsonScanner | None = None
        # The call whose arguments the last 'arguments' report of the scanner streamed, and its item.
        self._streaming: _Call | None = None
        self._streaming_item = -1
        #: The index of the call that the last :meth:`stream_text` that read its text continued.
        self.streaming_index = -1
        self._out: list[ToolCallEvent] = []

    # -- public API ------------------------------------------------------------------------------------

    def whole_calls(self, value: Any) -> list[ToolCallEvent]:
        """The call events of calls that arrive whole, already parsed and typed: the tool calls a
        ``json-envelope`` route gives when its region closes (``value``: one call, or a list of calls, in
        either shape :func:`~response_templates.calls.call_parts` reads). Each is announced, its arguments
        are sent at once, and it ends complete; an item that is not a call is reported in :attr:`errors`.
        """
        out: list[ToolCallEvent] = []
        self._out = out
        for item in flatten_calls(value):
            parts = call_parts(item)
            if parts is None:
                self.errors.append(f"a routed tool call is not a call object: {json.dumps(item)[:200]}")
                continue
            name, call_id, arguments = parts
            call = _Call()
            self._announce(call, name, call_id)
            text = arguments_text(arguments)
            self._send(call, text, whole=True)
            self._end(call, text, value=arguments)
        return out

    def feed(self, events: Iterable[ParserEvent]) -> list[ToolCallEvent]:
        """Process parser events (from ``initial_events`` or a ``feed``); return the call events."""
        out: list[ToolCallEvent] = []
        fields = self.fields
        for event in events:
            if event.get("field") in fields:
                out.extend(self.process(event))
        return out

    def finish(self, events: Iterable[ParserEvent] = (), *, truncated: bool = False) -> list[ToolCallEvent]:
        """Process the events of ``finalize()``; ``truncated``: the engine hit its token limit."""
        out: list[ToolCallEvent] = []
        for event in events:
            if event.get("field") in self.fields:
                out.extend(self.process(event, cut_off=truncated, at_end=True))
        if self._open:  # the parser always closes its regions; be safe with other event sources
            out.extend(
                self.process(
                    {
                        "type": "region_close",
                        "field": self._region_field,
                        "value": None,
                        "error": "the stream ended inside the region",
                    },
                    at_end=True,
                )
            )
        return out

    def process(
        self, event: ParserEvent, *, cut_off: bool = False, at_end: bool = False
    ) -> list[ToolCallEvent]:
        """Process one event of the tool-call field; ``cut_off``: a close caused by a truncated stream;
        ``at_end``: the event is one of ``finalize()``'s (a region with a close delimiter that it closes
        was open when the output ended, so a call of it that fails is one the end of the output cut off;
        ``cut_off`` implies it)."""
        out: list[ToolCallEvent] = []
        self._out = out
        if event["type"] == "region_chunk":
            if self._scanner is not None:
                self._on_reports(self._scanner.feed(event["text"]))
        elif event["type"] == "region_open":
            self._region_field = event.get("field", self.field)
            self.plan = self._plans.get(self._region_field, self._plans[self.field])
            self._on_open(event.get("captures") or {})
        elif event["type"] == "region_close":
            self._on_close(event, cut_off, cut_off or (at_end and self._region_field in self._delimited))
        return out

    def stream_text(self, text: str) -> str | None:
        """The shortcut of :meth:`process` for most chunks of a long string argument: when the text of a
        ``region_chunk`` continues, verbatim, a string in the arguments of the call being streamed
        (:meth:`JsonScanner.feed_verbatim`), read it and return ``arguments``, with the call's index in
        :attr:`streaming_index`: :meth:`process` would have returned exactly ``[{"type":
        "tool_call_delta", "index": streaming_index, "arguments": arguments, "whole": False}]``, or nothing
        when ``arguments`` is empty (the chunk is the backslash of an escape, which waits for the next
        one). Otherwise return None and read nothing (process the event). (No tuple: this runs for most
        chunks of a long argument.)
        """
        call = self._streaming
        scanner = self._scanner
        if call is None or call.ended or scanner is None:
            return None
        arguments = scanner.feed_verbatim(text, self._streaming_item)
        if arguments is None:
            return None
        if arguments:
            call.sent.append(arguments)
        self.streaming_index = call.index
        return arguments

    # -- regions ---------------------------------------------------------------------------------------

    def _on_open(self, captures: Mapping[str, str]) -> None:
        plan = self.plan
        self._open = True
        self._captures = captures
        self._calls = []
        self._scanner = None
        self._streaming = None
        if plan is None or not self.eager:
            return
        if plan.scan and ((plan.name is not None and plan.name[0] == "json") or plan.arguments is not None):
            self._scanner = JsonScanner(
                name_paths=plan.name[1] if plan.name is not None and plan.name[0] == "json" else (),
                id_paths=plan.id[1] if plan.id is not None and plan.id[0] == "json" else (),
                arguments_paths=plan.arguments[1]
                if plan.arguments is not None and plan.arguments[0] == "json"
                else (),
                each=plan.each,
                unquoted_keys=plan.unquoted_keys,
                string_delims=plan.string_delims,
                hold=self._hold if self._params else None,
            )
        if not plan.each:
            call = self._call(0)
            call.name = self._static(plan.name)
            call.id = self._static(plan.id)
            self._try_announce(0)

    def _static(self, source: Source) -> str | None:
        if source is None:
            return None
        if source[0] == "literal":
            return source[1] if isinstance(source[1], str) else None
        if source[0] == "capture":
            return self._captures.get(source[1])
        return None

    def _call(self, item: int) -> _Call:
        calls = self._calls
        while len(calls) <= item:
            calls.append(_Call())
        return calls[item]

    def _header_known(self, call: _Call) -> bool:
        plan = self.plan
        assert plan is not None
        if call.name is None:
            return False
        if plan.wait_for_id and call.id is None:
            # an id of its own that is not known yet: wait for it, unless it can never come early
            return plan.id is None or (plan.id[0] == "capture" and plan.id[1] not in self._captures)
        return True

    def _try_announce(self, item: int) -> None:
        call = self._calls[item]
        if call.announced or call.deferred or not self._header_known(call):
            return
        if self.plan is not None and self.plan.wait_for_id and call.id is None and self.plan.id is None:
            call.deferred = True  # its id is only known at close: announce it then
            return
        if item:  # calls of one region are announced in order, each after the previous one ended
            previous = self._calls[item - 1]
            if not previous.ended:
                if self.buffered or not previous.announced or previous.deferred or not previous.args_done:
                    call.deferred = True
                    return
                self._end_early(previous)
        assert call.name is not None  # _header_known
        self._announce(call, call.name, call.id)

    def _announce(self, call: _Call, name: str, call_id: str | None) -> None:
        call.announced = True
        call.name = name
        call.id = call_id
        call.index = self.count
        self.count += 1
        self._out.append({"type": "tool_call_start", "index": call.index, "name": name, "id": call_id})

    def _send(self, call: _Call, text: str, whole: bool = False) -> None:
        call.sent.append(text)
        self._out.append({"type": "tool_call_delta", "index": call.index, "arguments": text, "whole": whole})

    def _end(
        self, call: _Call, arguments: str, value: Any = None, error: str | None = None, cut_off: bool = False
    ) -> None:
        call.ended = True
        if error is not None and not cut_off:
            arguments = self._close_arguments(call, arguments)
        event: ToolCallEnd = {
            "type": "tool_call_end",
            "index": call.index,
            "name": call.name,
            "id": call.id,
            "arguments": arguments,
            "input": value if error is None else None,
            "complete": error is None,
        }
        if error is None:
            self.completed += 1
        else:
            event["error"] = error
            if cut_off:
                event["cut_off"] = True
            self.errors.append(f"tool call {call.index} ({call.name}): {error}")
        self._out.append(event)

    def _close_arguments(self, call: _Call, sent: str) -> str:
        """Make the argument text of a call that failed valid JSON: send what closes it; the text."""
        if not sent:
            self._send(call, "{}", whole=True)
            return "{}"
        try:
            suffix = json_completion(sent)
        except ValueError as exc:  # not expected: what is sent is always the start of a JSON text
            self.errors.append(f"tool call {call.index} ({call.name}): its arguments cannot be closed: {exc}")
            return sent
        if suffix:
            self._send(call, suffix)
        return sent + suffix

    def _end_early(self, call: _Call) -> None:
        """End a call of an each-region whose arguments are complete before the region closes."""
        text = "".join(call.sent)
        call.sent = [text]
        try:
            value = json.loads(text)
        except ValueError:
            self._end(call, text, error="its arguments are not complete JSON")
            return
        self._end(call, text, value)

    # -- scanner reports -------------------------------------------------------------------------------

    def _hold(self, item: int, key: str, kind: str) -> Callable[[Any], Any] | None:
        """Typing: a member whose schema may change a string (or the items of a list) is held back."""
        typing = self._typing.get(self._region_field, "all")
        if typing == "none":
            return None
        name = self._calls[item].name if item < len(self._calls) else None
        if name is None and self._scanner is not None:
            name = self._scanner.names.get(item)  # read in this very feed, not yet processed
        return argument_cast(self._params, name, key, kind, keep_strings=typing == "non-string")

    def _on_reports(self, reports: list[Report]) -> None:
        for report in reports:
            kind = report["type"]
            if kind == "arguments":
                call = self._call(report["item"])
                text = report["json"]
                if call.ended or call.deferred:
                    continue
                if not call.announced:
                    call.deferred = True  # the arguments started before the name (or id) was known
                elif self.buffered:
                    continue  # sent whole once the region parsed
                elif not call.sent and text and text[0] != "{":
                    call.deferred = True  # not an object: sent whole at close
                elif text:
                    self._send(call, text)
                    self._streaming = call
                    self._streaming_item = report["item"]
            elif kind == "arguments_done":
                self._call(report["item"]).args_done = True
            elif kind == "name" or kind == "id":
                item = report["item"]
                call = self._call(item)
                value = report["value"]
                if call.announced:
                    continue
                if kind == "name":
                    if call.name is None and isinstance(value, str) and value:
                        call.name = value
                elif call.id is None and value is not None:
                    call.id = value if isinstance(value, str) else json.dumps(value)
                self._try_announce(item)
            elif kind == "error":
                self._scanner = None
                return

    # -- closing -----------------------------------------------------------------------------------------

    def _end_unannounced(self, event: RegionClose, why: str) -> None:
        """A truncated stream whose last region parsed: the calls it holds that were not announced yet
        (sent at close, or named at close) are announced and ended incomplete, so that the call, not
        nothing, stands for the text. Arguments of ``json`` content are sent whole (the region parsed: the
        model finished every value of them); others (``xml-inline``, ``kv-lines``: a value the end of the
        output cut may still have parsed), and ``"buffered"`` ones, are not sent."""
        plan = self.plan
        whole = plan is not None and plan.scan and not self.buffered
        calls = self._calls
        for position, value in enumerate(flatten_calls(event.get("value"))):
            call = calls[position] if position < len(calls) else None
            if call is not None and call.announced:
                continue
            parts = call_parts(value)
            if parts is None:
                continue
            name, call_id, arguments = parts
            call = call or self._call(position)
            self._announce(call, name, call_id)
            text = _wire_arguments(arguments) if whole else ""
            if text:
                self._send(call, text, whole=True)
            self._end(call, text, error=why, cut_off=True)

    def _on_close(self, event: RegionClose, cut_off: bool, at_end: bool) -> None:
        self._open = False
        self._scanner = None
        calls = self._calls
        if "error" in event or cut_off:
            if cut_off:
                why = "the stream was cut off (token limit) before the call was complete"
            elif at_end:
                why = f"the output ended inside the call, and its region did not parse: {event.get('error')}"
            else:
                why = f"its region did not parse: {event.get('error')}"
            # A call the end of the output cut off keeps the text sent as it is (at_end); one whose region
            # failed while the output went on is closed to valid JSON.
            for started in calls:
                if started.announced and not started.ended:
                    self._end(started, "".join(started.sent), error=why, cut_off=at_end)
            if cut_off and "error" not in event:
                self._end_unannounced(event, why)
            if not any(c.announced for c in calls):
                self.errors.append(f"a {self._region_field!r} region produced no call: {why}")
            return
        values = flatten_calls(event.get("value"))
        for position, value in enumerate(values):
            call = calls[position] if position < len(calls) else None
            parts = call_parts(value)
            if parts is None:
                if call is not None and call.announced and not call.ended:
                    self._end(call, "".join(call.sent), error="the parsed value is not a tool call")
                else:
                    self.errors.append(
                        f"a {self._region_field!r} region holds a value that is not a tool call: {value!r:.200}"
                    )
                continue
            name, call_id, arguments = parts
            final = _wire_arguments(arguments)
            if call is None or not call.announced:
                call = call or _Call()
                self._announce(call, name, call_id)
                self._send(call, final, whole=True)
                self._end(call, final, arguments)
                continue
            if call.name != name or (call.id is not None and call.id != call_id):
                if not call.ended:
                    self._end(call, "".join(call.sent), error=f"the parsed call is {name!r} (id {call_id!r})")
                else:
                    self.errors.append(
                        f"tool call {call.index} was sent as {call.name!r} but parsed as {name!r}"
                    )
                continue
            sent = "".join(call.sent)
            if call.ended:  # ended early (each-region): check only
                if sent != final and not same_json(sent, arguments):
                    self.errors.append(
                        f"tool call {call.index} ({name}): the arguments sent differ from the parsed ones"
                    )
                continue
            if final.startswith(sent):
                if len(final) > len(sent):
                    self._send(call, final[len(sent) :], whole=not sent)
                self._end(call, final, arguments)
            elif same_json(sent, arguments):
                self._end(call, sent, arguments)
            else:
                self._end(call, sent, error="the parsed arguments differ from the text already sent")
        for call in calls[len(values) :]:
            if call.announced and not call.ended:
                self._end(call, "".join(call.sent), error="the parsed value has no such call")


def _wire_arguments(arguments: Any) -> str:
    """The arguments string of a parsed call, always valid JSON: :func:`arguments_text`, except that a
    string that is not JSON text (``allow_non_json`` fallback text) is sent as a JSON string."""
    text = arguments_text(arguments)
    if isinstance(arguments, str):
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return dumps_arguments(arguments)
    return text

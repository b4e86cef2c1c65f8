"""Early, incremental tool calls: an opt-in layer over the parser's events **[ours]**.

The parser's ``region_chunk`` events for a ``json`` tool-call region are raw text (``dirty``), and the
parsed value arrives with ``region_close``. A server streaming tool calls to a client wants more: the
tool's name as soon as it is written, and the arguments as they grow. This module gives both, without
ever re-parsing the text from the start (the work per chunk is proportional to the chunk):

* :class:`JsonScanner` reads one JSON document incrementally. It validates it (it rejects exactly what
  :func:`json.loads` rejects), reports watched values (a tool name, a call id) as soon as they are
  complete, and reports the arguments value as it grows, both as the raw text the model wrote and as
  *canonical* JSON text: the arguments re-written token by token the way :func:`dumps_arguments` writes
  the final value, so that every piece sent is a prefix of the final arguments string.
* :class:`ToolCallStreamer` is fed the parser's events and turns the tool-call field's regions into
  *call events*: ``tool_call_start`` (index, name, id) once the name is known, ``tool_call_delta``
  (argument text), ``tool_call_end`` (the complete argument string, or ``complete: False``). It works out
  from the template where each call's name, id and arguments come from (a capture of the open
  delimiter, a path in the JSON, a literal), types arguments by the request's tools exactly as the parser
  does, and checks every call against the parsed value when its region closes. The wire adapters
  (:mod:`response_templates.wire`) are built on it.

The guarantee, whatever the chunking: for a call that ends complete, the ``tool_call_delta`` texts
concatenate to its final ``arguments`` string, which :func:`json.loads` turns into exactly the typed
arguments of the parsed message (and which equals ``dumps_arguments(arguments)`` unless the model
repeated a key). Each delta keeps the text sent so far a prefix of valid JSON.

>>> import response_templates as rt
>>> from response_templates.toolstream import ToolCallStreamer
>>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {
...     "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
...                    "transform": {"type": "function", "function": "{content}"}},
...     "content": {}}}
>>> parser = rt.ResponseParser(template, prefix="")
>>> calls = ToolCallStreamer(template)
>>> calls.feed(parser.feed('<tool_call>{"name": "get_weather", "argu'))
[{'type': 'tool_call_start', 'index': 0, 'name': 'get_weather', 'id': None}]
>>> calls.feed(parser.feed('ments": {"city":  "Par'))
[{'type': 'tool_call_delta', 'index': 0, 'arguments': '{"city": "Par', 'whole': False}]
>>> calls.feed(parser.feed('is", "days": 3}}</tool_call>'))  # doctest: +NORMALIZE_WHITESPACE
[{'type': 'tool_call_delta', 'index': 0, 'arguments': 'is", "days": 3}', 'whole': False},
 {'type': 'tool_call_end', 'index': 0, 'name': 'get_weather', 'id': None,
  'arguments': '{"city": "Paris", "days": 3}', 'input': {'city': 'Paris', 'days': 3}, 'complete': True}]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from .content import MAX_JSON_DEPTH
from .errors import ContentError, ResponseTemplateError
from .templates import FieldSpec, ResponseTemplate, load_template
from .tools import _CASTS, _schema_types, _type_call, tool_parameters
from .transforms import apply_transform, transform_placeholders

__all__ = [
    "JsonScanner",
    "ToolCallPlan",
    "ToolCallStreamer",
    "arguments_text",
    "call_parts",
    "dumps_arguments",
    "tool_call_plan",
]

Event = dict[str, Any]
Path = tuple[str, ...]

# ------------------------------------------------------------------------------------------------------
# Canonical JSON text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps_arguments(value: Any) -> str:
    """The canonical JSON text of tool-call arguments: ``json.dumps(value, ensure_ascii=False)``.

    Lone surrogates (from a ``"\\ud800"`` escape the model wrote) are kept as escapes, so the text can
    always be encoded as UTF-8.

    >>> dumps_arguments({"city": "Zürich", "days": 3, "tags": ["a", "b"]})
    '{"city": "Zürich", "days": 3, "tags": ["a", "b"]}'
    """
    text = json.dumps(value, ensure_ascii=False)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(_escape_surrogate, text)
    return text


def arguments_text(arguments: Any) -> str:
    """The ``arguments`` string the wire formats carry for a parsed call's arguments.

    A dict (the usual case) and any other JSON value are written by :func:`dumps_arguments`; a string is
    kept as it is (a model that wrote its arguments as a JSON string, or a ``json`` region with
    ``allow_non_json`` that fell back to text); a missing value (``None``) is ``"{}"``.

    >>> arguments_text({"q": "x"}), arguments_text('{"q": "x"}'), arguments_text(None)
    ('{"q": "x"}', '{"q": "x"}', '{}')
    """
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return dumps_arguments(arguments)


def call_parts(value: Any) -> tuple[str, str | None, Any] | None:
    """``(name, id, arguments)`` of one parsed tool call, or ``None`` if ``value`` is not one.

    Accepts the chat shape ``{"type": "function", "id": ..., "function": {"name": ..., "arguments": ...}}``
    and a bare ``{"name": ..., "arguments": ...}`` (also ``"parameters"`` for the arguments, as some
    models write). A missing arguments value is ``{}``; a non-string id is written as JSON.

    >>> call_parts({"type": "function", "function": {"name": "f", "arguments": {"x": 1}}})
    ('f', None, {'x': 1})
    >>> call_parts({"id": "functions.f:0", "name": "f", "parameters": {}})
    ('f', 'functions.f:0', {})
    """
    if not isinstance(value, dict):
        return None
    function = value.get("function")
    if not isinstance(function, dict):
        function = value
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    if "arguments" in function:
        arguments = function["arguments"]
    elif "parameters" in function:
        arguments = function["parameters"]
    else:
        arguments = {}
    call_id = value.get("id")
    if call_id is not None and not isinstance(call_id, str):
        call_id = json.dumps(call_id)
    return name, call_id or None, arguments


def _flatten_calls(value: Any) -> list[Any]:
    """The calls in a tool-call region's value: a dict is one call, lists are flattened."""
    if isinstance(value, list):
        out: list[Any] = []
        stack = [iter(value)]
        while stack:
            for item in stack[-1]:
                if isinstance(item, list):
                    stack.append(iter(item))
                    break
                out.append(item)
            else:
                stack.pop()
        return out
    return [] if value is None else [value]


def _strict_equal(a: Any, b: Any) -> bool:
    """Equality that also compares scalar types (``1``, ``1.0`` and ``True`` differ) and NaN to NaN."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y and not (isinstance(x, float) and x != x and y != y):
            return False
    return True


# ------------------------------------------------------------------------------------------------------
# The incremental JSON scanner

# States of the scanner (what the next character may be).
_VALUE = 0  # a value (document start, after ':' or after ',' in an array)
_OBJ_FIRST = 1  # after '{': a key or '}'
_OBJ_KEY = 2  # after ',' in an object: a key
_OBJ_COLON = 3  # after a key: ':'
_OBJ_NEXT = 4  # after a member: ',' or '}'
_ARR_FIRST = 5  # after '[': a value or ']'
_ARR_NEXT = 6  # after an element: ',' or ']'
_STRING = 7  # inside a "..." string
_SCALAR = 8  # inside a number or a literal (true, false, null, NaN, Infinity, -Infinity)
_BARE_KEY = 9  # inside an unquoted key (dialect)
_DELIMITED = 10  # inside a string with custom delimiters (dialect)
_DONE = 11  # the document is complete; only whitespace may follow
_FAILED = 12  # invalid JSON was seen; everything else is ignored

# Roles of a value.
_PLAIN = 0  # validated only
_ARGS = 1  # the arguments value of an item: reported (raw and canonical)
_NAME = 2  # a watched name value: captured, reported when complete
_ID = 3  # a watched id value: captured, reported when complete
_HOLD = 4  # a top-level argument that tool typing may change: captured, emitted once typed

_WS = " \t\n\r"
_WS_RUN = re.compile(r"[ \t\n\r]*")
_STR_SPECIAL = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_SCALAR_RUN = re.compile(r"[0-9A-Za-z+\-.]*")
_SCALAR_START = frozenset("-0123456789tfnNI")
_WORD_RUN = regex.compile(r"\w*")
_WORD_CHAR = regex.compile(r"\w")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{0,3}")
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "/",
    "b": "\\b",
    "f": "\\f",
    "n": "\\n",
    "r": "\\r",
    "t": "\\t",
}
_NEEDS_ESCAPE = _STR_SPECIAL  # the characters a canonical string escapes


def _canonical_char(char: str) -> str:
    """How :func:`dumps_arguments` writes one character inside a string."""
    if char == '"':
        return '\\"'
    if char == "\\":
        return "\\\\"
    code = ord(char)
    if code < 0x20:
        return json.dumps(char)[1:-1]
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return char


def _canonical_match(match: re.Match[str]) -> str:
    return _canonical_char(match.group())


class _Watch:
    """A node of the tree of watched paths: what the value at this path is, and watched children."""

    __slots__ = ("children", "what")

    def __init__(self) -> None:
        self.what = _PLAIN
        self.children: dict[str, _Watch] | None = None

    def child(self, key: str) -> _Watch:
        if self.children is None:
            self.children = {}
        node = self.children.get(key)
        if node is None:
            node = self.children[key] = _Watch()
        return node


class _Frame:
    """An open object or array."""

    __slots__ = (
        "conv",
        "first",
        "index",
        "is_object",
        "item",
        "key",
        "key_text",
        "node",
        "role",
        "sink",
        "top",
    )

    def __init__(self, is_object: bool, node: _Watch | None, sink: list[str] | None, item: int) -> None:
        self.is_object = is_object
        self.node = node  # watched children, if any
        self.sink = sink  # where this container's canonical text goes (None: nowhere)
        self.item = item  # the item (element of an each-document, else 0) it belongs to
        self.role = _PLAIN  # the role of this container as a value
        self.conv: Callable[[Any], Any] | None = None  # the converter of a held container
        self.first = True  # no member/element written yet (for the ", " separators)
        self.top = False  # this is an arguments object: its members may be held for typing
        self.key: str | None = None  # the current member's key (objects whose keys matter)
        self.key_text = ""  # the current member's key as canonical JSON
        self.index = -1  # the current element's index (arrays)


#: ``hold(item, key, kind)`` is called when a member of an arguments object starts, with ``kind``
#: ``"string"`` or ``"array"``. It returns a function that converts the member's complete value (the member
#: is then held back until complete, and written converted), or ``None`` (it streams as it is).
HoldHook = Callable[[int, str, str], "Callable[[Any], Any] | None"]


class JsonScanner:
    """Read one JSON document incrementally and report watched values as soon as they are known.

    Args:
        name_paths / id_paths / arguments_paths: paths (tuples of object keys) of the values to report.
            The first path of a list that occurs wins; later occurrences are ignored. With ``each`` the
            document is an array and the paths are relative to each element (reports carry the element's
            index as ``item``; otherwise ``item`` is 0).
        unquoted_keys / string_delims: the dialect of the ``json`` content parser (bare ``\\w+`` keys;
            ``[open, close]`` markers around verbatim strings).
        hold: see :data:`HoldHook` (used to type arguments by a tool schema before sending them).

    :meth:`feed` reads the next piece of the document and returns reports, dicts with a ``type``:

    * ``{"type": "name", "item": i, "value": v}`` (and ``"id"``): a watched value, once complete;
    * ``{"type": "arguments", "item": i, "raw": r, "json": j}``: the arguments value grew by the raw text
      ``r`` (exactly what the document holds) and by the canonical text ``j`` (the value written as
      :func:`dumps_arguments` writes it; it lags behind while a number or a held value is incomplete).
      One of them may be empty;
    * ``{"type": "arguments_done", "item": i}``: the arguments value is complete;
    * ``{"type": "error", "message": m, "offset": k}``: the text is not JSON (``k`` counts characters from
      the start of the document); nothing more is reported.

    The raw texts concatenate to the arguments exactly as written; the canonical texts concatenate to
    ``dumps_arguments(arguments)`` when no object repeats a key (and still ``json.loads`` to the same
    value when one does). A feed costs time proportional to its text; only the few characters of an
    incomplete escape or string delimiter wait for the next feed.

    >>> scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)])
    >>> scanner.feed('{"name": "get_weather", "arguments": {"city" :"Pa')  # doctest: +NORMALIZE_WHITESPACE
    [{'type': 'name', 'item': 0, 'value': 'get_weather'},
     {'type': 'arguments', 'item': 0, 'raw': '{"city" :"Pa', 'json': '{"city": "Pa'}]
    >>> scanner.feed('ris",\\n "days": 3}}')  # doctest: +NORMALIZE_WHITESPACE
    [{'type': 'arguments', 'item': 0, 'raw': 'ris",\\n "days": 3}', 'json': 'ris", "days": 3}'},
     {'type': 'arguments_done', 'item': 0}]
    >>> scanner.end(), scanner.done
    ([], True)
    """

    __slots__ = (
        "_args_seen",
        "_cap",
        "_carry",
        "_closers",
        "_consumed",
        "_delim_close",
        "_hold",
        "_key",
        "_key_frame",
        "_openers",
        "_out",
        "_pending_high",
        "_raw_from",
        "_raw_item",
        "_reports",
        "_root",
        "_seen",
        "_ssink",
        "_stack",
        "_state",
        "_text",
        "_tok",
        "_tok_start",
        "_unquoted",
        "_vconv",
        "_vitem",
        "_vrole",
        "_vsink",
        "each",
        "names",
    )

    def __init__(
        self,
        *,
        name_paths: Sequence[Path] = (),
        id_paths: Sequence[Path] = (),
        arguments_paths: Sequence[Path] = (),
        each: bool = False,
        unquoted_keys: bool = False,
        string_delims: Sequence[Sequence[str]] = (),
        hold: HoldHook | None = None,
    ) -> None:
        self.each = each
        root = _Watch()
        base = root.child("*") if each else root
        for what, paths in ((_NAME, name_paths), (_ID, id_paths), (_ARGS, arguments_paths)):
            for path in paths:
                node = base
                for key in path:
                    node = node.child(key)
                if node.what == _PLAIN:
                    node.what = what
        self._root = root
        self._hold = hold
        self._unquoted = unquoted_keys
        closers: dict[str, str] = {}
        for pair in string_delims:
            closers.setdefault(pair[0], pair[1])
        self._closers = closers
        self._openers = sorted(closers, key=len, reverse=True)
        self._stack: list[_Frame] = []
        self._state = _VALUE
        self._text = ""  # the text of the current feed
        self._carry = ""  # unconsumed text waiting for the next feed (an escape or a delimiter)
        self._consumed = 0  # characters consumed before the current text
        self._out: list[str] = []  # canonical arguments text not yet reported
        self._cap: list[str] = []  # canonical text of the value being captured
        self._key: list[str] = []  # canonical text of the key being read
        self._key_frame: _Frame | None = None  # the object whose key is being read (None: a value)
        self._ssink: list[str] | None = None  # where the current string's canonical text goes
        self._vrole = _PLAIN  # role of the current string or scalar
        self._vitem = 0  # its item
        self._vconv: Callable[[Any], Any] | None = None  # its converter (held values)
        self._vsink: list[str] | None = None  # the current scalar's sink
        self._tok: list[str] = []  # the current scalar's characters
        self._tok_start = 0
        self._pending_high = -1  # a high surrogate escape waiting for its low half
        self._delim_close = ""  # closer of the current delimited string
        self._raw_item = -1  # the item whose arguments are being read (-1: none)
        self._raw_from = 0  # where their raw text starts in the current text
        self._seen: set[tuple[int, int]] = set()  # (role, item) of the names and ids reported
        self._args_seen: set[int] = set()  # items whose arguments value has started
        self._reports: list[Event] = []
        #: item -> the name value reported for it (so far).
        self.names: dict[int, Any] = {}

    # -- public API ------------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether the document is complete (only whitespace may follow)."""
        return self._state == _DONE

    @property
    def failed(self) -> bool:
        """Whether the text was found not to be valid JSON."""
        return self._state == _FAILED

    def feed(self, text: str) -> list[Event]:
        """Read the next piece of the document; return the reports it produced (possibly none)."""
        if self._state == _FAILED or not text:
            return []
        reports = self._reports = []
        if self._carry:
            text = self._carry + text
            self._carry = ""
        self._text = text
        self._raw_from = 0
        end = self._run(text)
        if end < len(text) and self._state != _FAILED:
            self._carry = text[end:]
        if self._raw_item >= 0:
            self._report_arguments(self._raw_item, text[self._raw_from : end])
        self._consumed += end
        return reports

    def end(self) -> list[Event]:
        """The document ended: report what is still pending, or an error if it is incomplete."""
        if self._state == _FAILED:
            return []
        reports = self._reports = []
        self._text = ""
        self._raw_from = 0
        if self._carry:
            self._fail("the document ends inside an escape or a string delimiter", self._consumed)
        elif self._state == _SCALAR:
            self._end_scalar(0)
        if self._state != _DONE:
            self._fail("the document is incomplete", self._consumed)
        return reports

    # -- the main loop -------------------------------------------------------------------------------------

    def _run(self, text: str) -> int:
        """Consume ``text``; return how far (the rest waits for more input)."""
        n = len(text)
        pos = 0
        while pos < n:
            state = self._state
            if state == _STRING:
                pos = self._string(text, pos, n)
                if pos < 0:
                    return -pos - 1
                continue
            if state == _SCALAR:
                end = _SCALAR_RUN.match(text, pos).end()
                if end > pos:
                    self._tok.append(text[pos:end])
                if end == n:
                    return n
                pos = end
                self._end_scalar(pos)
                continue
            if state == _DELIMITED:
                pos = self._delimited(text, pos, n)
                if pos < 0:
                    return -pos - 1
                continue
            if state == _BARE_KEY:
                end = _WORD_RUN.match(text, pos).end()
                if end > pos:
                    self._key.append(text[pos:end])
                if end == n:
                    return n
                pos = end
                self._key.append('"')
                self._end_key()
                continue
            if state == _FAILED:
                return n
            char = text[pos]
            if char in _WS:
                pos = _WS_RUN.match(text, pos).end()
                continue
            if state in (_VALUE, _ARR_FIRST):
                if state == _ARR_FIRST and char == "]":
                    self._close(pos, "]")
                    pos += 1
                    continue
                if self._openers:
                    opener = self._opener_at(text, pos, n)
                    if opener is None:
                        return pos  # maybe the start of a string delimiter: wait
                    if opener:
                        self._begin_value("delimited", pos)
                        self._delim_close = self._closers[opener]
                        pos += len(opener)
                        continue
                if char == "{":
                    self._begin_value("object", pos)
                elif char == "[":
                    self._begin_value("array", pos)
                elif char == '"':
                    self._begin_value("string", pos)
                elif char in _SCALAR_START:
                    self._begin_value("scalar", pos)
                    continue  # the _SCALAR state reads its characters
                else:
                    self._fail(f"expecting a value, got {char!r}", self._consumed + pos)
                    return n
                pos += 1
            elif state in (_OBJ_FIRST, _OBJ_KEY):
                frame = self._stack[-1]
                if state == _OBJ_FIRST and char == "}":
                    self._close(pos, "}")
                    pos += 1
                    continue
                if self._openers:
                    opener = self._opener_at(text, pos, n)
                    if opener is None:
                        return pos
                    if opener:
                        self._begin_key(frame)
                        self._delim_close = self._closers[opener]
                        self._state = _DELIMITED
                        pos += len(opener)
                        continue
                if char == '"':
                    self._begin_key(frame)
                    self._state = _STRING
                    pos += 1
                elif self._unquoted and _WORD_CHAR.match(char):
                    self._begin_key(frame)
                    self._state = _BARE_KEY
                else:
                    self._fail(f"expecting a property name, got {char!r}", self._consumed + pos)
                    return n
            elif state == _OBJ_COLON:
                if char != ":":
                    self._fail(f"expecting ':', got {char!r}", self._consumed + pos)
                    return n
                frame = self._stack[-1]
                sink = frame.sink
                if sink is not None:
                    sink.append(frame.key_text + ": " if frame.first else ", " + frame.key_text + ": ")
                    frame.first = False
                self._state = _VALUE
                pos += 1
            elif state in (_OBJ_NEXT, _ARR_NEXT):
                closer = "}" if state == _OBJ_NEXT else "]"
                if char == ",":
                    self._state = _OBJ_KEY if state == _OBJ_NEXT else _VALUE
                    pos += 1
                elif char == closer:
                    self._close(pos, closer)
                    pos += 1
                else:
                    self._fail(f"expecting ',' or {closer!r}, got {char!r}", self._consumed + pos)
                    return n
            else:  # _DONE
                self._fail(f"extra data after the document: {char!r}", self._consumed + pos)
                return n
        return n

    def _opener_at(self, text: str, pos: int, n: int) -> str | None:
        """The custom string opener at ``pos``: ``""`` if none, ``None`` if more text could make one."""
        for opener in self._openers:
            if text.startswith(opener, pos):
                return opener
        rest = text[pos:]
        for opener in self._openers:
            if len(rest) < len(opener) and opener.startswith(rest):
                return None
        return ""

    # -- values ----------------------------------------------------------------------------------------------

    def _begin_value(self, kind: str, pos: int) -> None:
        """A value of ``kind`` starts at ``pos``: work out its role and where its canonical text goes."""
        stack = self._stack
        role = _PLAIN
        sink: list[str] | None = None
        node: _Watch | None = None
        conv: Callable[[Any], Any] | None = None
        if not stack:
            item = 0
            node = self._root
        else:
            parent = stack[-1]
            item = parent.item
            children = parent.node.children if parent.node is not None else None
            sink = parent.sink
            if not parent.is_object:
                parent.index += 1
                if sink is not None:
                    if not parent.first:
                        sink.append(", ")
                    parent.first = False
                if children is not None:
                    node = children.get("*")
                    if node is not None and self.each and len(stack) == 1:
                        item = parent.index
            else:
                if children is not None and parent.key is not None:
                    node = children.get(parent.key)
                if parent.top and self._hold is not None and parent.key is not None and kind != "object":
                    if kind != "scalar":
                        conv = self._hold(item, parent.key, "array" if kind == "array" else "string")
                    if conv is not None:
                        role = _HOLD
                        self._cap.clear()
                        sink = self._cap
        if node is not None and role == _PLAIN and node.what != _PLAIN:
            what = node.what
            if what == _ARGS:
                if item not in self._args_seen:
                    self._args_seen.add(item)
                    role = _ARGS
                    sink = self._out
                    self._raw_item = item
                    self._raw_from = pos
            elif (what, item) not in self._seen:
                role = what
                self._cap.clear()
                sink = self._cap
        if kind == "object" or kind == "array":
            if len(stack) >= MAX_JSON_DEPTH:
                self._fail(
                    f"arrays/objects nest more than {MAX_JSON_DEPTH} levels deep", self._consumed + pos
                )
                return
            frame = _Frame(kind == "object", node if node is not None and node.children else None, sink, item)
            frame.role = role
            frame.conv = conv
            frame.top = role == _ARGS and kind == "object"
            if sink is not None:
                sink.append("{" if kind == "object" else "[")
            stack.append(frame)
            self._state = _OBJ_FIRST if kind == "object" else _ARR_FIRST
            return
        self._vrole = role
        self._vitem = item
        self._vconv = conv
        if kind == "scalar":
            self._vsink = sink
            self._tok.clear()
            self._tok_start = self._consumed + pos
            self._state = _SCALAR
            return
        self._key_frame = None
        self._ssink = sink
        if sink is not None:
            sink.append('"')
        self._state = _STRING if kind == "string" else _DELIMITED

    def _begin_key(self, frame: _Frame) -> None:
        self._key_frame = frame
        self._key.clear()
        if frame.sink is not None or frame.node is not None or frame.top:
            self._key.append('"')
            self._ssink = self._key
        else:
            self._ssink = None

    def _end_key(self) -> None:
        frame = self._key_frame
        assert frame is not None
        self._key_frame = None
        if self._ssink is not None:
            text = "".join(self._key)
            frame.key_text = text
            frame.key = json.loads(text) if frame.node is not None or frame.top else None
        else:
            frame.key = None
        self._state = _OBJ_COLON

    def _end_string(self, raw_end: int) -> None:
        if self._ssink is not None:
            self._ssink.append('"')
        if self._key_frame is not None:
            self._end_key()
        else:
            self._value_done(self._vrole, self._vitem, raw_end, self._vconv)

    def _end_scalar(self, raw_end: int) -> None:
        token = "".join(self._tok)
        try:
            value = json.loads(token)
        except ValueError:
            self._fail(f"invalid number or literal {token[:40]!r}", self._tok_start)
            return
        if self._vsink is not None:
            self._vsink.append(json.dumps(value))
        self._value_done(self._vrole, self._vitem, raw_end, self._vconv)

    def _close(self, pos: int, closer: str) -> None:
        frame = self._stack.pop()
        if frame.sink is not None:
            frame.sink.append(closer)
        self._value_done(frame.role, frame.item, pos + 1, frame.conv)

    def _value_done(self, role: int, item: int, raw_end: int, conv: Callable[[Any], Any] | None) -> None:
        if role == _ARGS:
            self._report_arguments(item, self._text[self._raw_from : raw_end])
            self._reports.append({"type": "arguments_done", "item": item})
            self._raw_item = -1
        elif role != _PLAIN:
            value = json.loads("".join(self._cap))
            self._cap.clear()
            if role == _HOLD:
                assert conv is not None
                self._out.append(dumps_arguments(conv(value)))
            else:
                self._seen.add((role, item))
                if role == _NAME:
                    self.names[item] = value
                self._reports.append(
                    {"type": "name" if role == _NAME else "id", "item": item, "value": value}
                )
        if self._stack:
            self._state = _OBJ_NEXT if self._stack[-1].is_object else _ARR_NEXT
        else:
            self._state = _DONE

    def _report_arguments(self, item: int, raw: str) -> None:
        canonical = "".join(self._out) if self._out else ""
        self._out.clear()
        if raw or canonical:
            self._reports.append({"type": "arguments", "item": item, "raw": raw, "json": canonical})

    # -- strings ---------------------------------------------------------------------------------------------

    def _string(self, text: str, pos: int, n: int) -> int:
        """Scan a standard string from ``pos``: the position after it, or ``-stop - 1`` to wait at ``stop``."""
        sink = self._ssink
        while pos < n:
            if self._pending_high >= 0:
                high = self._pending_high
                if text.startswith("\\u", pos):
                    if n - pos < 6:
                        if _HEX_PREFIX.fullmatch(text, pos + 2, n):
                            return -pos - 1  # wait: this may be the low half
                    else:
                        hexa = text[pos + 2 : pos + 6]
                        if _HEX4.fullmatch(hexa) and 0xDC00 <= int(hexa, 16) <= 0xDFFF:
                            self._pending_high = -1
                            if sink is not None:
                                sink.append(chr(0x10000 + ((high - 0xD800) << 10) + (int(hexa, 16) - 0xDC00)))
                            pos += 6
                            continue
                elif pos + 1 == n and text[pos] == "\\":
                    return -pos - 1
                self._pending_high = -1  # not followed by a low half: it stands alone
                if sink is not None:
                    sink.append(f"\\u{high:04x}")
            match = _STR_SPECIAL.search(text, pos)
            if match is None:
                if sink is not None:
                    sink.append(text[pos:] if pos else text)
                return n
            at = match.start()
            if at > pos and sink is not None:
                sink.append(text[pos:at])
            char = text[at]
            if char == '"':
                self._end_string(at + 1)
                return at + 1
            if char == "\\":
                if at + 1 == n:
                    return -at - 1
                esc = text[at + 1]
                if esc == "u":
                    if at + 6 > n:
                        if _HEX_PREFIX.fullmatch(text, at + 2, n):
                            return -at - 1
                        self._fail("invalid \\uXXXX escape", self._consumed + at)
                        return n
                    hexa = text[at + 2 : at + 6]
                    if not _HEX4.fullmatch(hexa):
                        self._fail("invalid \\uXXXX escape", self._consumed + at)
                        return n
                    code = int(hexa, 16)
                    if 0xD800 <= code <= 0xDBFF:
                        self._pending_high = code
                    elif sink is not None:
                        sink.append(_canonical_char(chr(code)))
                    pos = at + 6
                    continue
                canonical = _SHORT_ESCAPES.get(esc)
                if canonical is None:
                    self._fail(f"invalid escape \\{esc}", self._consumed + at)
                    return n
                if sink is not None:
                    sink.append(canonical)
                pos = at + 2
                continue
            if char < " ":
                self._fail(f"invalid control character {char!r} in a string", self._consumed + at)
                return n
            if sink is not None:  # a surrogate character
                sink.append(_canonical_char(char))
            pos = at + 1
        return n

    def _delimited(self, text: str, pos: int, n: int) -> int:
        """Scan the verbatim body of a custom-delimited string (dialect), like :meth:`_string`."""
        closer = self._delim_close
        end = text.find(closer, pos)
        if end < 0:
            keep = 0
            for k in range(min(len(closer) - 1, n - pos), 0, -1):
                if closer.startswith(text[n - k :]):
                    keep = k
                    break
            body_end = n - keep
            if self._ssink is not None and body_end > pos:
                self._ssink.append(_NEEDS_ESCAPE.sub(_canonical_match, text[pos:body_end]))
            return -body_end - 1 if keep else n
        if self._ssink is not None and end > pos:
            self._ssink.append(_NEEDS_ESCAPE.sub(_canonical_match, text[pos:end]))
        self._end_string(end + len(closer))
        return end + len(closer)

    def _fail(self, message: str, offset: int) -> None:
        if self._state == _FAILED:
            return
        self._state = _FAILED
        if self._raw_item >= 0:
            # Report the arguments read up to the error (the same text whatever the chunking was).
            stop = max(self._raw_from, min(offset - self._consumed, len(self._text)))
            self._report_arguments(self._raw_item, self._text[self._raw_from : stop])
            self._raw_item = -1
        self._out.clear()
        self._carry = ""
        self._reports.append({"type": "error", "message": message, "offset": offset})


# ------------------------------------------------------------------------------------------------------
# Where a template's tool calls get their name, id and arguments


class _PathProbe(Mapping[str, Any]):
    """Stands for the JSON value at ``path`` of a region's content while a transform is evaluated."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __getitem__(self, key: str) -> _PathProbe:
        return _PathProbe((*self.path, key))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class _CaptureProbe:
    """Stands for a named group of the open delimiter while a transform is evaluated."""

    def __init__(self, group: str) -> None:
        self.group = group


class _UnknownProbe:
    """Stands for a variable whose value is only known when the region closes."""


#: Where a value comes from: ``("literal", value)``, ``("capture", group)`` (a named group of the open
#: delimiter, known at ``region_open``), ``("json", paths)`` (the first of these paths in the region's JSON
#: content), or ``None`` (only known when the region closes).
Source = tuple[str, Any] | None


@dataclass(frozen=True)
class ToolCallPlan:
    """How the calls of a tool-call field can be streamed early (see :func:`tool_call_plan`).

    Attributes:
        field: the template field.
        name / id / arguments: the :data:`Source` of each part of a call (``id`` is ``None`` also when the
            transform has no id, in which case the wire adapters generate one: see ``wait_for_id``).
        wait_for_id: whether a call is announced only once its id is known (the transform gives the
            call an id of its own). When the whole call is the model's JSON, an ``"id"`` written before the
            name is used, but not waited for.
        each: the content is a JSON array with one call per element (``transform_each``).
        scan: whether the region's text is read by a :class:`JsonScanner` (``json`` content).
        unquoted_keys / string_delims: the JSON dialect of the field's content parser.
    """

    field: str
    name: Source
    id: Source
    arguments: Source
    wait_for_id: bool
    each: bool
    scan: bool
    unquoted_keys: bool = False
    string_delims: tuple[tuple[str, str], ...] = ()


def _source(value: Any) -> Source:
    if isinstance(value, _PathProbe):
        return ("json", (value.path,))
    if isinstance(value, _CaptureProbe):
        return ("capture", value.group)
    if isinstance(value, (_UnknownProbe, dict, list)):
        return None
    if isinstance(value, str) or value is None or isinstance(value, (int, float, bool)):
        return ("literal", value)
    return None


def tool_call_plan(field: FieldSpec) -> ToolCallPlan:
    """Work out, from a field's transform, where its calls' name, id and arguments come from.

    The transform is evaluated once with stand-ins for its variables (``content`` becomes "the JSON at
    this path", a named group of the open delimiter "this capture"), and the result is read the way
    :func:`call_parts` reads a parsed call. Anything the stand-ins cannot express (a path into a capture, a
    group of the close delimiter, an arguments object built from several variables) is "known at close".

    >>> import response_templates as rt
    >>> t = rt.load_template({"start_anchor": "<|assistant|>", "fields": {"tool_calls": {
    ...     "open_pattern": "<call name=(?P<name>\\\\w+)>", "close": "</call>", "content": "json",
    ...     "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}}})
    >>> plan = tool_call_plan(t.by_name["tool_calls"])
    >>> plan.name, plan.arguments, plan.scan
    (('capture', 'name'), ('json', ((),)), True)
    """
    open_groups = field.open.group_names if field.open is not None else frozenset()
    close_groups = field.close.group_names if field.close is not None else frozenset()
    args = field.content_args
    is_json = field.parser.name == "json"
    scan = is_json and not args.get("allow_non_json", False)
    dialect = {
        "unquoted_keys": bool(args.get("unquoted_keys", False)) if is_json else False,
        "string_delims": tuple((str(a), str(b)) for a, b in args.get("string_delims", ())) if is_json else (),
    }
    variables: dict[str, Any] = {}
    if field.has_transform:
        for root in transform_placeholders(field.transform):
            if root in close_groups or (field.transform_each and root in open_groups):
                variables[root] = _UnknownProbe()  # a close capture, or an element key may shadow it
            elif root in open_groups:
                variables[root] = _CaptureProbe(root)
            elif field.transform_each:
                variables[root] = _PathProbe((root,))
            elif root == "content":
                variables[root] = _PathProbe(())
            else:
                variables[root] = _UnknownProbe()
        try:
            call = apply_transform(field.transform, variables, copy_values=False)
        except (ContentError, ResponseTemplateError, TypeError, ValueError):
            call = None
    else:
        call = _PathProbe(())
    name: Source = None
    call_id: Source = None
    arguments: Source = None
    wait_for_id = False
    if isinstance(call, _PathProbe):  # the call is a JSON object written by the model
        function: Any = call
        call_id = ("json", ((*call.path, "id"),))
    elif isinstance(call, dict):
        function = call.get("function")
        if not isinstance(function, (dict, _PathProbe)):
            function = call
        if "id" in call:
            wait_for_id = True
            call_id = _source(call["id"])
    else:
        function = None
    if isinstance(function, _PathProbe):
        name = ("json", ((*function.path, "name"),))
        arguments = ("json", ((*function.path, "arguments"), (*function.path, "parameters")))
    elif isinstance(function, dict):
        name = _source(function.get("name"))
        if "arguments" in function:
            arguments = _source(function["arguments"])
        elif "parameters" in function:
            arguments = _source(function["parameters"])
        else:
            arguments = ("literal", {})
    if name is not None and name[0] == "literal" and not isinstance(name[1], str):
        name = None
    if arguments is not None and arguments[0] == "capture":
        arguments = None  # a capture is a string: the arguments are then whatever it holds, at close
    if not scan:
        name = name if name is None or name[0] != "json" else None
        call_id = call_id if call_id is None or call_id[0] != "json" else None
        arguments = arguments if arguments is None or arguments[0] != "json" else None
    if field.transform_each:
        # Each element is one call: its parts must come from the element (or be literal).
        name = name if name is not None and name[0] == "json" else None
        arguments = arguments if arguments is not None and arguments[0] == "json" else None
    return ToolCallPlan(
        field=field.name,
        name=name,
        id=call_id,
        arguments=arguments,
        wait_for_id=wait_for_id,
        each=field.transform_each,
        scan=scan,
        unquoted_keys=dialect["unquoted_keys"],
        string_delims=dialect["string_delims"],
    )


# ------------------------------------------------------------------------------------------------------
# Call events from parser events


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

    Feed it every event of the parser, in order (:meth:`feed`, or :meth:`process` one at a time); events
    of other fields are ignored. It returns *call events*:

    * ``{"type": "tool_call_start", "index": k, "name": n, "id": i}``: call ``k`` (0, 1, 2... in stream
      order) is known; ``id`` is the call's own id when the template captures one (e.g. Kimi's
      ``functions.get_weather:0``), else ``None``;
    * ``{"type": "tool_call_delta", "index": k, "arguments": text, "whole": w}``: more argument text;
      ``whole`` is true when it is the call's complete arguments string, sent at once when the region
      closed (it may then be any string the parsed value holds, not necessarily a JSON object);
    * ``{"type": "tool_call_end", "index": k, "name": n, "id": i, "arguments": a, "input": v,
      "complete": c}``: the call ended. ``arguments`` is the whole argument text sent. When ``complete``
      is true, ``input`` is the arguments value (typed, as in the parsed message) and ``json.loads(a)``
      equals it; otherwise the call could not be completed (its region failed to parse, the stream was
      cut off, or the model contradicted what was already sent), ``input`` is ``None`` and ``error`` says
      why.

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
    ``complete: False`` rather than reported as a complete call.
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
        field: str = "tool_calls",
        eager: bool = True,
    ) -> None:
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
        self.plan: ToolCallPlan | None = self._plans[field]
        self._region_field = field
        self._params: dict[str, dict[str, Any]] = tool_parameters(tools)  # type: ignore[arg-type]
        self.eager = eager
        #: Messages of the calls that could not be completed, and of regions that produced no call.
        self.errors: list[str] = []
        #: How many calls were announced / ended complete so far.
        self.count = 0
        self.completed = 0
        self._open = False
        self._captures: Mapping[str, str] = {}
        self._calls: list[_Call] = []
        self._scanner: JsonScanner | None = None
        self._out: list[Event] = []

    # -- public API ------------------------------------------------------------------------------------

    def feed(self, events: Iterable[Event]) -> list[Event]:
        """Process parser events (from ``initial_events`` or a ``feed``); return the call events."""
        out: list[Event] = []
        fields = self.fields
        for event in events:
            if event.get("field") in fields:
                out.extend(self.process(event))
        return out

    def finish(self, events: Iterable[Event] = (), *, truncated: bool = False) -> list[Event]:
        """Process the events of ``finalize()``; ``truncated``: the engine hit its token limit."""
        out: list[Event] = []
        for event in events:
            if event.get("field") in self.fields:
                out.extend(self.process(event, cut_off=truncated))
        if self._open:  # the parser always closes its regions; be safe with other event sources
            out.extend(
                self.process(
                    {
                        "type": "region_close",
                        "field": self._region_field,
                        "value": None,
                        "error": "the stream ended inside the region",
                    }
                )
            )
        return out

    def process(self, event: Event, *, cut_off: bool = False) -> list[Event]:
        """Process one event of the tool-call field; ``cut_off``: a close caused by a truncated stream."""
        self._out = out = []
        kind = event["type"]
        if kind == "region_chunk":
            if self._scanner is not None:
                self._on_reports(self._scanner.feed(event["text"]))
        elif kind == "region_open":
            self._region_field = event.get("field", self.field)
            self.plan = self._plans.get(self._region_field, self._plans[self.field])
            self._on_open(event.get("captures") or {})
        elif kind == "region_close":
            self._on_close(event, cut_off)
        return out

    # -- regions ---------------------------------------------------------------------------------------

    def _on_open(self, captures: Mapping[str, str]) -> None:
        plan = self.plan
        self._open = True
        self._captures = captures
        self._calls = []
        self._scanner = None
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
                if not previous.announced or previous.deferred or not previous.args_done:
                    call.deferred = True
                    return
                self._end_early(previous)
        self._announce(call, call.name, call.id)  # type: ignore[arg-type]

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

    def _end(self, call: _Call, arguments: str, value: Any = None, error: str | None = None) -> None:
        call.ended = True
        event: Event = {
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
            self.errors.append(f"tool call {call.index} ({call.name}): {error}")
        self._out.append(event)

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
        name = self._calls[item].name if item < len(self._calls) else None
        if name is None and self._scanner is not None:
            name = self._scanner.names.get(item)  # read in this very feed, not yet processed
        properties = self._params.get(name) if isinstance(name, str) else None
        if not properties or key not in properties:
            return None
        kinds = _schema_types(properties[key])
        if not any(k in _CASTS for k in kinds) or (kind == "array" and "array" in kinds):
            return None
        params = self._params

        def convert(value: Any) -> Any:
            typed = _type_call({"function": {"name": name, "arguments": {key: value}}}, params)
            return typed["function"]["arguments"][key]

        return convert

    def _on_reports(self, reports: list[Event]) -> None:
        for report in reports:
            kind = report["type"]
            if kind == "arguments":
                call = self._call(report["item"])
                text = report["json"]
                if call.ended or call.deferred:
                    continue
                if not call.announced:
                    call.deferred = True  # the arguments started before the name (or id) was known
                elif not call.sent and text and text[0] != "{":
                    call.deferred = True  # not an object: sent whole at close
                elif text:
                    self._send(call, text)
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

    def _on_close(self, event: Event, cut_off: bool) -> None:
        self._open = False
        self._scanner = None
        calls = self._calls
        if "error" in event or cut_off:
            why = (
                "the stream was cut off (token limit) before the call was complete"
                if cut_off
                else f"its region did not parse: {event.get('error')}"
            )
            for call in calls:
                if call.announced and not call.ended:
                    self._end(call, "".join(call.sent), error=why)
            if not any(c.announced for c in calls):
                self.errors.append(f"a {self._region_field!r} region produced no call: {why}")
            return
        values = _flatten_calls(event.get("value"))
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
            final = arguments_text(arguments)
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
                if sent != final and not _same_json(sent, arguments):
                    self.errors.append(
                        f"tool call {call.index} ({name}): the arguments sent differ from the parsed ones"
                    )
                continue
            if final.startswith(sent):
                if len(final) > len(sent):
                    self._send(call, final[len(sent) :], whole=not sent)
                self._end(call, final, arguments)
            elif _same_json(sent, arguments):
                self._end(call, sent, arguments)
            else:
                self._end(call, sent, error="the parsed arguments differ from the text already sent")
        for call in calls[len(values) :]:
            if call.announced and not call.ended:
                self._end(call, "".join(call.sent), error="the parsed value has no such call")


def _same_json(text: str, value: Any) -> bool:
    try:
        return _strict_equal(json.loads(text), value)
    except (ValueError, RecursionError):
        return False

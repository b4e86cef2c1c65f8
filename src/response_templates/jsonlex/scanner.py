"""Internal: the incremental JSON scanner; one document read chunk by chunk, watched values reported early."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from ..events import Report
from .canonical import dumps_arguments
from .dialect import MAX_JSON_DEPTH, WORD_CHAR, WORD_RUN, JsonDialect, dialect_for, pairs_of
from .state import ARGS as _ARGS
from .state import HOLD as _HOLD
from .state import ID as _ID
from .state import NAME as _NAME
from .state import PLAIN as _PLAIN
from .state import Frame as _Frame
from .state import Watch as _Watch
from .verbatim import CUT_ESCAPE, NOT_VERBATIM, VERBATIM, Verdicts

__all__ = ["HoldHook", "JsonScanner", "Path"]

Event = Report
Path = tuple[str, ...]

# The incremental JSON scanner

# States of the scanner (what the next character may be).
_VALUE: Final = 0  # a value (document start, after ':' or after ',' in an array)
_OBJ_FIRST: Final = 1  # after '{': a key or '}'
_OBJ_KEY: Final = 2  # after ',' in an object: a key
_OBJ_COLON: Final = 3  # after a key: ':'
_OBJ_NEXT: Final = 4  # after a member: ',' or '}'
_ARR_FIRST: Final = 5  # after '[': a value or ']'
_ARR_NEXT: Final = 6  # after an element: ',' or ']'
_STRING: Final = 7  # inside a "..." string
_SCALAR: Final = 8  # inside a number or a literal (true, false, null, NaN, Infinity, -Infinity)
_BARE_KEY: Final = 9  # inside an unquoted key (dialect)
_DELIMITED: Final = 10  # inside a string with custom delimiters (dialect)
_DONE: Final = 11  # the document is complete; only whitespace may follow
_FAILED: Final = 12  # invalid JSON was seen; everything else is ignored

_WS: Final = " \t\n\r"
_WS_RUN: Final = re.compile(r"[ \t\n\r]*")
_STR_SPECIAL: Final = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_SCALAR_RUN: Final = re.compile(r"[0-9A-Za-z+\-.]*")
_SCALAR_START: Final = frozenset("-0123456789tfnNI")
_HEX4: Final = re.compile(r"[0-9a-fA-F]{4}")
_HEX_PREFIX: Final = re.compile(r"[0-9a-fA-F]{0,3}")
_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "/",
    "b": "\\b",
    "f": "\\f",
    "n": "\\n",
    "r": "\\r",
    "t": "\\t",
}
_NEEDS_ESCAPE: Final = _STR_SPECIAL  # the characters a canonical string escapes


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
            ``[open, close]`` markers around verbatim strings), read as :mod:`.dialect` says.
        dialect: the dialect itself (a :class:`~.dialect.JsonDialect`, e.g. from
            ``JsonDialect.from_args(content_args)``), instead of ``unquoted_keys`` / ``string_delims``.
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
        "_dialect",
        "_hold",
        "_key",
        "_key_frame",
        "_opener_starts",
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
        "_verdicts",
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
        dialect: JsonDialect | None = None,
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
        if dialect is None:
            dialect = dialect_for(unquoted_keys, pairs_of(string_delims))
        self._dialect = dialect
        self._unquoted = dialect.unquoted_keys
        self._closers = dialect.closers
        self._opener_starts = dialect.opener_starts
        self._stack: list[_Frame] = []
        self._state = _VALUE
        self._text = ""  # the text of the current feed
        self._carry = ""  # unconsumed text waiting for the next feed (an escape or a delimiter)
        self._verdicts = Verdicts()  # feed_verbatim's, on texts its quick test cannot pass
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

    def feed_verbatim(self, text: str, item: int) -> str | None:
        """The shortcut of :meth:`feed` for most chunks of a long string argument: when the document is
        inside a string of the arguments value of ``item`` (not one held for typing) and ``text``
        continues it verbatim (it is its own canonical text: no quote that ends the string, no character
        or escape that canonical JSON writes differently), read it and return the text ``t`` it adds to
        the arguments: :meth:`feed` would have reported exactly ``{"type": "arguments", "item": item,
        "raw": t, "json": t}`` (nothing, when ``t`` is empty). As with :meth:`feed`, an escape cut by the
        end of the text waits for the next one (``t`` then lacks its backslash, and the next ``t`` starts
        with it). Otherwise read nothing and return None.

        >>> scanner = JsonScanner(arguments_paths=[()])
        >>> scanner.feed('{"code": "x')  # doctest: +NORMALIZE_WHITESPACE
        [{'type': 'arguments', 'item': 0, 'raw': '{"code": "x', 'json': '{"code": "x'}]
        >>> [scanner.feed_verbatim(t, 0) for t in ('  y\\\\n', 'z\\\\', '"w', '\\\\', 'n', 'z"', '\\\\/')]
        ['  y\\\\n', 'z', '\\\\"w', '', '\\\\n', None, None]
        """
        if (
            self._state != _STRING
            or self._raw_item != item
            or self._ssink is not self._out
            or self._out
            or self._pending_high >= 0
            or not text
        ):
            return None
        carry = self._carry
        if carry:  # the start of an escape (in a string, only an escape waits)
            text = carry + text
        # Printable text without a quote or a backslash is verbatim (the quick test); other text may be.
        verdict = VERBATIM
        if '"' in text or "\\" in text or not text.isprintable():
            verdict = self._verdicts.of(text)
            if verdict == NOT_VERBATIM:
                return None
        if verdict == CUT_ESCAPE:  # an escape cut in two: its backslash waits, as feed() leaves it
            self._carry = "\\"
            text = text[:-1]
        elif carry:
            self._carry = ""
        self._consumed += len(text)
        return text

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
            elif state == _SCALAR:
                end = _SCALAR_RUN.match(text, pos).end()  # type: ignore[union-attr]
                if end > pos:
                    self._tok.append(text[pos:end])
                if end == n:
                    return n
                pos = end
                self._end_scalar(pos)
            elif state == _DELIMITED:
                pos = self._delimited(text, pos, n)
            elif state == _BARE_KEY:
                end = WORD_RUN.match(text, pos).end()
                if end > pos:
                    self._key.append(text[pos:end])
                if end == n:
                    return n
                pos = end
                self._key.append('"')
                self._end_key()
            elif state == _FAILED:
                return n
            elif text[pos] in _WS:
                pos = _WS_RUN.match(text, pos).end()  # type: ignore[union-attr]
            elif state in (_VALUE, _ARR_FIRST):
                if state == _ARR_FIRST and text[pos] == "]":
                    self._close(pos, "]")
                    pos += 1
                else:
                    pos = self._value_token(text, pos, n, text[pos])
            elif state in (_OBJ_FIRST, _OBJ_KEY):
                if state == _OBJ_FIRST and text[pos] == "}":
                    self._close(pos, "}")
                    pos += 1
                else:
                    pos = self._key_token(text, pos, n, text[pos])
            else:
                pos = self._punctuation(text, pos, n, state)
            if pos < 0:
                return -pos - 1
        return n

    def _punctuation(self, text: str, pos: int, n: int, state: int) -> int:
        """Read ``:``, ``,`` or a closing bracket after a key or a value (or fail: nothing may follow the
        document); the position after it, or ``-n - 1`` after a failure."""
        char = text[pos]
        if state == _OBJ_COLON:
            if char != ":":
                return self._fail_at(f"expecting ':', got {char!r}", pos, n)
            frame = self._stack[-1]
            sink = frame.sink
            if sink is not None:
                sink.append(frame.key_text + ": " if frame.first else ", " + frame.key_text + ": ")
                frame.first = False
            self._state = _VALUE
            return pos + 1
        if state in (_OBJ_NEXT, _ARR_NEXT):
            closer = "}" if state == _OBJ_NEXT else "]"
            if char == ",":
                self._state = _OBJ_KEY if state == _OBJ_NEXT else _VALUE
            elif char == closer:
                self._close(pos, closer)
            else:
                return self._fail_at(f"expecting ',' or {closer!r}, got {char!r}", pos, n)
            return pos + 1
        return self._fail_at(f"extra data after the document: {char!r}", pos, n)  # _DONE

    def _value_token(self, text: str, pos: int, n: int, char: str) -> int:
        """A value starts at ``pos``: the position after what was read, or ``-stop - 1`` to wait at
        ``stop`` for more input (``-n - 1`` after a failure)."""
        if char in self._opener_starts:
            opener = self._dialect.opener_at(text, pos)
            if opener is None:
                return -pos - 1  # maybe the start of a string delimiter: wait
            if opener:
                self._begin_value("delimited", pos)
                self._delim_close = self._closers[opener]
                return pos + len(opener)
        if char == "{":
            self._begin_value("object", pos)
        elif char == "[":
            self._begin_value("array", pos)
        elif char == '"':
            self._begin_value("string", pos)
        elif char in _SCALAR_START:
            self._begin_value("scalar", pos)
            return pos  # the _SCALAR state reads its characters
        else:
            return self._fail_at(f"expecting a value, got {char!r}", pos, n)
        return pos + 1

    def _key_token(self, text: str, pos: int, n: int, char: str) -> int:
        """A key starts at ``pos``."""
        frame = self._stack[-1]
        if char in self._opener_starts:
            opener = self._dialect.opener_at(text, pos)
            if opener is None:
                return -pos - 1
            if opener:
                self._begin_key(frame)
                self._delim_close = self._closers[opener]
                self._state = _DELIMITED
                return pos + len(opener)
        if char == '"':
            self._begin_key(frame)
            self._state = _STRING
            return pos + 1
        if self._unquoted and WORD_CHAR.match(char):
            self._begin_key(frame)
            self._state = _BARE_KEY
            return pos
        return self._fail_at(f"expecting a property name, got {char!r}", pos, n)

    def _fail_at(self, message: str, pos: int, n: int) -> int:
        """Fail at ``pos`` of the current text; the value for :meth:`_run` to stop with."""
        self._fail(message, self._consumed + pos)
        return -n - 1

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
        """Scan a standard string from ``pos``: the position after it, or ``-stop - 1`` to wait at stop."""
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
        end, keep = self._dialect.find_closer(text, pos, closer)
        if end < 0:
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

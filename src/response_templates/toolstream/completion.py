"""Closing a JSON text that was cut off: :func:`json_completion`.

A tool call's arguments are streamed as they are written; when the call then fails (its region does not
parse, the stream is cut off), the text already sent cannot be taken back. What can still be sent is a
suffix, and :func:`json_completion` computes the shortest one that makes the text valid JSON, from one
pass over it (a stack of the open containers and the state of the last token):

* an open string is closed (``"Par`` -> ``"Par"``), after finishing a cut escape (``\\`` -> ``\\\\``,
  ``\\u00e`` -> ``\\u00e0``, the missing hex digits written as ``0``);
* a key waiting for its value gets ``null`` (``{"city"`` -> ``{"city": null}``, ``{"city": `` ->
  ``{"city": null}``), and so does an array element announced by a comma (``[1, `` -> ``[1, null]``);
  after a comma in an object a key is required, so the member ``"": null`` is added;
* a number is completed with the fewest digits (``-`` -> ``-0``, ``1.`` -> ``1.0``, ``1e`` / ``1e+`` ->
  ``1e0`` / ``1e+0``), a literal is spelled out (``tru`` -> ``true``, ``n`` -> ``null``, ``-Inf`` ->
  ``-Infinity``);
* then the open arrays and objects are closed, innermost first.

The text parsed so far keeps its meaning: every value, key and character already sent stays as it is
(a partial string keeps its partial text, a partial number the digits it has). An empty text has no
value yet, and gets ``null``.

>>> json_completion('{"city": "Par')
'"}'
>>> json_completion('{"city": "Paris", "days": ')
'null}'
>>> json_completion('{"tags": ["a", tru')
'e]}'
>>> json_completion('{"a": 1}')
''

Text that is not the start of a JSON document cannot be completed: :class:`ValueError` says where.

>>> json_completion('{"a" 1')
Traceback (most recent call last):
...
ValueError: not the start of a JSON document: expecting ':' at offset 5
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["json_completion"]

# What the next non-space character may be.
_VALUE: Final = 0  # a value (document start, after ':', after ',' in an array)
_FIRST_ELEMENT: Final = 1  # after '[': a value or ']'
_FIRST_KEY: Final = 2  # after '{': a key or '}'
_KEY: Final = 3  # after ',' in an object: a key
_COLON: Final = 4  # after a key
_NEXT: Final = 5  # after a value in a container: ',' or the closer
_DONE: Final = 6  # after the document

_WS: Final = " \t\n\r"
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_ESCAPES: Final = frozenset('"\\/bfnrtu')
_LITERALS: Final = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_CHARS: Final = frozenset("0123456789+-.eE")
# A complete number, as json.loads reads it.
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# A number that one more digit completes: '-', '1.', '1e', '1e+'.
_NEEDS_DIGIT: Final = re.compile(r"-|-?(?:0|[1-9][0-9]*)(?:\.|(?:\.[0-9]+)?[eE][+-]?)")


def _fail(what: str, offset: int) -> ValueError:
    return ValueError(f"not the start of a JSON document: {what} at offset {offset}")


def _scalar_completion(token: str, offset: int) -> str:
    """The characters that complete a number or literal cut after ``token``."""
    if _NUMBER.fullmatch(token):
        return ""
    if _NEEDS_DIGIT.fullmatch(token):
        return "0"
    for literal in _LITERALS:
        if literal.startswith(token):
            return literal[len(token) :]
    raise _fail(f"invalid number or literal {token[:40]!r}", offset)


def json_completion(text: str) -> str:
    """The shortest suffix that makes ``text``, the start of a JSON document, a complete one.

    ``json.loads(text + json_completion(text))`` always succeeds; see the module docstring for the rules.
    Raises :class:`ValueError` if ``text`` is not the start of any JSON document (or has text after one).
    The cost is one pass over ``text``.
    """
    closers: list[str] = []  # '}' or ']' of each open container, outermost first
    state = _VALUE
    n = len(text)
    pos = 0
    while pos < n:
        char = text[pos]
        if char in _WS:
            pos += 1
            continue
        if char == '"':
            if state not in (_VALUE, _FIRST_ELEMENT, _FIRST_KEY, _KEY):
                raise _fail("unexpected string", pos)
            is_key = state in (_FIRST_KEY, _KEY)
            end = _string_end(text, pos + 1)
            if end < 0:  # the string is cut off: it ends the text
                tail = _string_tail(text, pos + 1)
                return tail + (": null" if is_key else "") + "".join(reversed(closers))
            pos = end
            state = _COLON if is_key else (_NEXT if closers else _DONE)
            continue
        if state == _COLON:
            if char != ":":
                raise _fail("expecting ':'", pos)
            state = _VALUE
            pos += 1
            continue
        if state == _NEXT:
            if char == ",":
                state = _KEY if closers[-1] == "}" else _VALUE
            elif char == closers[-1]:
                closers.pop()
                state = _NEXT if closers else _DONE
            else:
                raise _fail(f"expecting ',' or {closers[-1]!r}", pos)
            pos += 1
            continue
        if state == _DONE:
            raise _fail("extra data after the document", pos)
        if state in (_FIRST_KEY, _KEY):
            if state == _FIRST_KEY and char == "}":
                closers.pop()
                state = _NEXT if closers else _DONE
                pos += 1
                continue
            raise _fail("expecting a property name", pos)
        # a value (or the end of an empty array)
        if char == "]" and state == _FIRST_ELEMENT:
            closers.pop()
            state = _NEXT if closers else _DONE
            pos += 1
        elif char == "{" or char == "[":
            closers.append("}" if char == "{" else "]")
            state = _FIRST_KEY if char == "{" else _FIRST_ELEMENT
            pos += 1
        else:
            start = pos
            while pos < n and (text[pos] in _NUMBER_CHARS or text[pos].isalpha()):
                pos += 1
            token = text[start:pos]
            if not token:
                raise _fail("expecting a value", pos)
            if pos == n:  # cut off: complete it
                return _scalar_completion(token, start) + "".join(reversed(closers))
            if not (_NUMBER.fullmatch(token) or token in _LITERALS):
                raise _fail(f"invalid number or literal {token[:40]!r}", start)
            state = _NEXT if closers else _DONE
    if state == _DONE:
        return ""
    head = ""
    if state == _VALUE:
        head = "null"
    elif state == _KEY:
        head = '"": null'
    elif state == _COLON:
        head = ": null"
    return head + "".join(reversed(closers))


def _string_end(text: str, pos: int) -> int:
    """The position after the string whose body starts at ``pos``, or ``-1`` if the text ends first.

    Raises :class:`ValueError` for what no string may hold (a control character, a bad escape)."""
    n = len(text)
    while pos < n:
        char = text[pos]
        if char == '"':
            return pos + 1
        if char == "\\":
            if pos + 1 == n:
                return -1
            esc = text[pos + 1]
            if esc not in _ESCAPES:
                raise _fail(f"invalid escape \\{esc}", pos)
            if esc == "u":
                digits = text[pos + 2 : pos + 6]
                if not all(d in _HEX for d in digits):
                    raise _fail("invalid \\uXXXX escape", pos)
                if len(digits) < 4:
                    return -1
                pos += 6
            else:
                pos += 2
            continue
        if char < " ":
            raise _fail(f"invalid control character {char!r} in a string", pos)
        pos += 1
    return -1


def _string_tail(text: str, pos: int) -> str:
    """What closes the cut string whose body starts at ``pos`` (already checked by :func:`_string_end`)."""
    backslash = text.rfind("\\", pos)
    tail = '"'
    if backslash >= 0:
        # Is the last backslash an escape still open? Count the run of backslashes it ends.
        run_start = backslash
        while run_start > pos and text[run_start - 1] == "\\":
            run_start -= 1
        if (backslash - run_start) % 2 == 0:  # it starts an escape
            rest = text[backslash + 1 :]
            if not rest:
                tail = '\\"'
            elif rest[0] == "u" and len(rest) < 5:
                tail = "0" * (5 - len(rest)) + '"'
    return tail

"""Internal: a free value of a JSON dialect (:class:`~.nodes.DialectValue`) written out in each grammar
form: one example text, Lark rules, and an xgrammar EBNF grammar.

Kept apart from :mod:`.dialects` (which builds dialect values from tool schemas) so that :mod:`.nodes`
and :mod:`.lark` can write them without importing the builders.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .nodes import DialectValue

__all__ = ["PY_CONSTANTS", "PY_STRING", "ebnf_any_value", "example_any_value", "lark_any_value"]

#: A JSON string (the escapes JSON allows), as a regex of both engines.
_JSON_STRING = r'"([^"\\\x00-\x1f]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*"'
_NUMBER = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"
_BARE = r"[A-Za-z0-9_]+"

# A Python literal (``DialectValue.python``), as both Python-call parsers read it: ``python-call-list``
# refuses an integer beyond 2**53 - 1 and a float that overflows, so a number has at most 15 digits
# before its point and a two-digit exponent; a string is on one line, in either quote, with the escapes
# the parsers read (JSON's and ``\'``, no surrogate escape). One line as ``str.splitlines`` sees it: the
# lenient ``python-calls`` reads a call per line, so a string holds no character that ends a line there.
_PY_NUMBER = r"-?(0|[1-9][0-9]{0,14})(\.[0-9]+)?([eE][+-]?[0-9]{1,2})?"
_PY_ESCAPE = r"\\([\"'\\/bfnrt]|u([0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))"
#: The characters a string in each quote holds as they are: not the quote, a backslash, nor a line break
#: (``\n \r \v \f \x1c-\x1e \x85 \u2028 \u2029``). Written as positive classes: xgrammar 0.2.7 clamps the
#: characters beyond ASCII out of a negated class, which would let U+2028 through.
_PY_PLAIN_DOUBLE = r"[\x00-\x09\x0e-\x1b\x1f-\x21\x23-\x5b\x5d-\x7f\x80-\x84\x86-\u2027\u202a-\U0010ffff]"
_PY_PLAIN_SINGLE = r"[\x00-\x09\x0e-\x1b\x1f-\x26\x28-\x5b\x5d-\x7f\x80-\x84\x86-\u2027\u202a-\U0010ffff]"
#: The same characters as code point ranges, per quote (for :func:`ebnf_py_string`).
_PY_PLAIN_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    '"': (
        (0x00, 0x09),
        (0x0E, 0x1B),
        (0x1F, 0x21),
        (0x23, 0x5B),
        (0x5D, 0x7F),
        (0x80, 0x84),
        (0x86, 0x2027),
        (0x202A, 0x10FFFF),
    ),
    "'": (
        (0x00, 0x09),
        (0x0E, 0x1B),
        (0x1F, 0x26),
        (0x28, 0x5B),
        (0x5D, 0x7F),
        (0x80, 0x84),
        (0x86, 0x2027),
        (0x202A, 0x10FFFF),
    ),
}
#: What may follow the backslash of an escape besides ``u`` and its four hex digits.
_PY_ESCAPED = "\"'\\/bfnrt"
_HEX = "0123456789abcdefABCDEF"
PY_STRING = f"\"({_PY_PLAIN_DOUBLE}|{_PY_ESCAPE})*\"|'({_PY_PLAIN_SINGLE}|{_PY_ESCAPE})*'"
#: The constants of a Python literal: Python's and JSON's spelling, both read.
PY_CONSTANTS = ("True", "False", "None", "true", "false", "null")


def example_any_value(node: DialectValue) -> str:
    """One text of the value (for :func:`~.nodes.example`)."""
    return {"object": "{}", "array": "[]"}.get(node.kind, "None" if node.python else "null")


def lark_any_value(writer: Any, node: DialectValue) -> str:
    """The Lark expression of ``node``: rules added to ``writer`` (:class:`~.lark._Writer`), once per
    dialect; delimiters that are special tokens are written as tokens, as everywhere else."""
    cache: dict[DialectValue, str] = writer.__dict__.setdefault("_dialect_values", {})
    key = dataclasses.replace(node, kind="any")
    base = cache.get(key)
    if base is None and node.python:
        base = writer._name("pv")
        cache[key] = base
        constants = " | ".join(f'"{c}"' for c in PY_CONSTANTS)
        writer.rules.extend(
            [
                f"{base}: {base}_str | /{_slashed(_PY_NUMBER)}/ | {constants} | {base}_obj | {base}_arr",
                f"{base}_str: {lark_py_string(writer, node.excludes)}",
                f'{base}_obj: "{{" ({base}_mem ("," " "? {base}_mem)*)? "}}"',
                f'{base}_mem: {base}_str ":" " "? {base}',
                f'{base}_arr: "[" ({base} ("," " "? {base})*)? "]"',
            ]
        )
    elif base is None:
        base = writer._name("dv")
        cache[key] = base
        strings = [f"/{_slashed(_JSON_STRING)}/"]
        if node.delims is not None:
            open_, close = node.delims
            strings.insert(0, f"{writer.literal(open_)} {writer.text_until(node.excludes, close)}")
        keys = [f"/{_slashed(_JSON_STRING)}/"]
        if node.unquoted_keys:
            keys.insert(0, f"/{_BARE}/")
        writer.rules.extend(
            [
                f'{base}: {base}_str | /{_NUMBER}/ | "true" | "false" | "null" | {base}_obj | {base}_arr',
                f"{base}_str: " + " | ".join(strings),
                f'{base}_obj: "{{" ({base}_mem ("," {base}_mem)*)? "}}"',
                f'{base}_mem: ({" | ".join(keys)}) ":" {base}',
                f'{base}_arr: "[" ({base} ("," {base})*)? "]"',
            ]
        )
    return {"object": f"{base}_obj", "array": f"{base}_arr"}.get(node.kind, base)


def _slashed(pattern: str) -> str:
    return pattern.replace("/", "\\/")


def ebnf_any_value(node: DialectValue) -> str:
    """The EBNF grammar (xgrammar's dialect) of ``node``, rooted at ``root``."""
    if node.python:
        return _ebnf_python_value(node)
    strings = ["json_string"]
    rules: list[str] = []
    if node.delims is not None:
        open_, close = node.delims
        strings.insert(0, f"{_ebnf_string(open_)} body0")
        rules.extend(_ebnf_body(close, node.excludes))
    keys = ["json_string"]
    if node.unquoted_keys:
        keys.insert(0, "[A-Za-z0-9_]+")
    root = {"object": "object", "array": "array"}.get(node.kind, "value")
    head = [
        f"root ::= {root}",
        'value ::= string | number | "true" | "false" | "null" | object | array',
        "string ::= " + " | ".join(strings),
        'object ::= "{" (member ("," member)*)? "}"',
        "member ::= (" + " | ".join(keys) + ') ":" value',
        'array ::= "[" (value ("," value)*)? "]"',
        'number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+\\-]? [0-9]+)?',
        'json_string ::= "\\"" ([^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\\""',
    ]
    return "\n".join(head + rules) + "\n"


def _ebnf_python_value(node: DialectValue) -> str:
    """The EBNF grammar of a Python literal (:data:`PY_STRING`, :data:`_PY_NUMBER`), rooted at ``root``."""
    root = {"object": "object", "array": "array"}.get(node.kind, "value")
    constants = " | ".join(f'"{c}"' for c in PY_CONSTANTS)
    lines = [
        f"root ::= {root}",
        f"value ::= string | number | {constants} | object | array",
        'object ::= "{" (member ("," " "? member)*)? "}"',
        'member ::= string ":" " "? value',
        'array ::= "[" (value ("," " "? value)*)? "]"',
        'number ::= "-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]+)? ([eE] [+\\-]? [0-9]{1,2})?',
        *ebnf_py_string(node.excludes),
    ]
    return "\n".join(lines) + "\n"


def _ebnf_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _class_char(ch: str) -> str:
    if ch in '\\]^-"':
        return "\\" + ch
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    if ch == "\t":
        return "\\t"
    if ord(ch) < 0x20:
        return f"\\x{ord(ch):02x}"
    return ch


def _ebnf_body(close: str, excludes: Sequence[str]) -> list[str]:
    """Rules ``body0`` ...: text that holds no exclude, up to and including the first ``close``.

    A state is the longest end of the text read that begins a marker (``close`` or an exclude); a
    character moves to the next state, ``close`` completed ends the body, an exclude completed is refused.
    """
    markers = [close, *(e for e in excludes if e and e != close)]
    prefixes = sorted({m[:i] for m in markers for i in range(len(m))}, key=lambda p: (len(p), p))
    index = {p: i for i, p in enumerate(prefixes)}
    alphabet = sorted({ch for m in markers for ch in m})

    def step(state: str, ch: str) -> str | None:
        """The next state; ``None``: refused; ``close``: the body is complete."""
        text = state + ch
        if text.endswith(close):
            return close
        if any(text.endswith(e) for e in markers[1:]):
            return None
        for start in range(len(text) + 1):
            if text[start:] in index:
                return text[start:]
        return ""  # pragma: no cover - the empty text is always a state

    rules = []
    for state in prefixes:
        # Characters that move to another state than the start (or are refused) are spelled out; every
        # other character goes back to the start, through one negated class.
        moves = {ch: step(state, ch) for ch in alphabet}
        special = [ch for ch, nxt in moves.items() if nxt != ""]
        other = "[^" + "".join(_class_char(ch) for ch in special) + "]"
        options = []
        for ch in special:
            nxt = moves[ch]
            if nxt is not None:
                literal = _ebnf_string(ch)
                options.append(literal if nxt == close else f"{literal} body{index[nxt]}")
        name = f"body{index[state]}"
        if state:
            rules.append(f"{name} ::= " + " | ".join([f"{other} body0", *options]))
        else:  # the start: a run of other characters, then a character that begins a marker
            rules.append(f"{name} ::= {other}* (" + " | ".join(options) + ")")
    return rules


# ------------------------------------------------------------------------------- Python strings


def _class_point(point: int) -> str:
    """One code point inside an EBNF character class."""
    if 0x20 <= point < 0x7F and chr(point) not in '\\]^-"[':
        return chr(point)
    if point <= 0xFF:
        return f"\\x{point:02x}"
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def _class_without(ranges: Sequence[tuple[int, int]], chars: Sequence[str]) -> str | None:
    """An EBNF character class of ``ranges`` without ``chars`` (``None``: nothing is left)."""
    out: list[tuple[int, int]] = []
    cut = sorted({ord(c) for c in chars})
    for lo, hi in ranges:
        start = lo
        for point in cut:
            if start <= point <= hi:
                if point > start:
                    out.append((start, point - 1))
                start = point + 1
        if start <= hi:
            out.append((start, hi))
    if not out:
        return None
    spans = "".join(
        _class_point(lo) if lo == hi else f"{_class_point(lo)}-{_class_point(hi)}" for lo, hi in out
    )
    return f"[{spans}]"


def ebnf_py_string(excludes: Sequence[str], name: str = "string") -> list[str]:
    """EBNF rules whose rule ``name`` is a Python string (:data:`PY_STRING`, in either quote) holding none
    of ``excludes`` in its text: the parser cuts a region at its closer before it reads the Python, and a
    special token's text would be read as that token (``regex`` formats have no excludes).

    An automaton over the string's characters: a state is the longest end of the text read that begins
    an exclude; a character that completes one is refused. An escape's backslash begins no exclude (with
    an exclude that holds a backslash there are no escapes) and its tail moves on from the start; a
    ``\\uXXXX`` escape is written only where no exclude starts with ``u`` or a hex digit (it would then
    need a state per digit).
    """
    markers = [e for e in dict.fromkeys(excludes) if e]
    prefixes = sorted({m[:i] for m in markers for i in range(len(m))} | {""}, key=lambda p: (len(p), p))
    index = {p: i for i, p in enumerate(prefixes)}
    alphabet = sorted({ch for m in markers for ch in m})

    def step(state: str, text: str) -> str | None:
        for ch in text:
            state += ch
            if any(state.endswith(m) for m in markers):
                return None
            state = next(state[i:] for i in range(len(state) + 1) if state[i:] in index)
        return state

    escapes = "\\" not in alphabet
    unicode = escapes and not any(m[0] in "u" + _HEX for m in markers)
    hex4 = "[0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}"
    rules = [f"{name} ::= [\"] {name}_d0 | ['] {name}_s0"]
    for quote, tag in (('"', "d"), ("'", "s")):
        ranges = _PY_PLAIN_RANGES[quote]
        other = _class_without(ranges, [*alphabet, quote, "\\"])
        for state in prefixes:
            # (next state, the text that leads there): spelled characters and escapes
            moves: list[tuple[str, str]] = []
            for ch in alphabet:
                if ch in (quote, "\\") or not any(lo <= ord(ch) <= hi for lo, hi in ranges):
                    continue
                nxt = step(state, ch)
                if nxt is not None:
                    moves.append((nxt, f"[{_class_point(ord(ch))}]"))
            if escapes:
                by_state: dict[str, list[str]] = {}
                for ch in _PY_ESCAPED:
                    nxt = step("", ch)
                    if nxt is not None:
                        by_state.setdefault(nxt, []).append(ch)
                for nxt, chars in by_state.items():
                    cls = "[" + "".join(_class_point(ord(c)) for c in chars) + "]"
                    moves.append((nxt, f"[\\\\] {cls}"))
                if unicode:
                    moves.append(("", f"[\\\\] [u] ({hex4})"))
            if other is not None:
                moves.append(("", other))
            rule = f"{name}_{tag}{index[state]}"
            home = [text for nxt, text in moves if nxt == ""]
            away = [f"{text} {name}_{tag}{index[nxt]}" for nxt, text in moves if nxt != ""]
            if state:  # back to the start, or on
                options = (
                    [f"{text} {name}_{tag}0" for text in home] + away + [f"[{_class_point(ord(quote))}]"]
                )
            else:  # a run that stays at the start, then the quote or a character that begins an exclude
                loop = f"({' | '.join(home)})*" if home else ""
                options = [f"{loop} {x}".strip() for x in [*away, f"[{_class_point(ord(quote))}]"]]
            rules.append(f"{rule} ::= " + " | ".join(options))
    return rules


def lark_py_string(writer: Any, excludes: Sequence[str]) -> str:
    """A Lark terminal for a Python string (:data:`PY_STRING`) holding none of ``excludes`` (nor the
    special tokens the grammar writes, spelled), once per set of excludes."""
    plain = tuple(sorted((set(excludes) | set(writer.spelled)) - {""}))
    cache: dict[tuple[str, ...], str] = writer.__dict__.setdefault("_py_strings", {})
    name = cache.get(plain)
    if name is None:
        name = f"PYSTR{len(cache)}"
        cache[plain] = name
        rule = f"{name}: /{_slashed(PY_STRING)}/"
        if plain:
            alts = "|".join(writer.escape(e) for e in plain)
            rule += f" & ~/(?s:.*)(?:{alts})(?s:.*)/"
        writer.rules.append(rule)
    return name

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
                f"{base}_str: /{_slashed(PY_STRING)}/",
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
        f"string ::= [\"] ({_PY_PLAIN_DOUBLE} | escape)* [\"] | ['] ({_PY_PLAIN_SINGLE} | escape)* [']",
        "escape ::= [\\\\] ([\"'\\\\/bfnrt] | [u] ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))",
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

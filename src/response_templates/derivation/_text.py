"""String helpers of the analysis: common affixes cut at token boundaries, marker tokens, patterns."""

from __future__ import annotations

import re

__all__ = [
    "ID",
    "INDEX",
    "closer_for",
    "common_prefix",
    "common_suffix",
    "first_token",
    "flex",
    "last_token",
    "leading_marker",
    "prefix_at_boundary",
    "suffix_at_boundary",
    "tokens",
    "trailing_marker",
]

#: A marker token: ``<|x|>``, ``<x>``, ``</x>``, ``<｜x｜>``, ``[X]``, or else a run of non-space text.
_MARKER = r"<[^<>\n]{1,80}>|\[[^\[\]\n]{1,40}\]|[\[\]][^\s\[\]<>]{1,10}[\[\]]"
_TOKEN = re.compile(_MARKER + r"|[^\s<\[]+(?:[ \t]+[^\s<\[]+)*")
_LEAD = re.compile(r"\s*(?:" + _MARKER + r")")
_TAIL = re.compile(r"(?:" + _MARKER + r")\s*\Z")

_END_CHARS = frozenset(">]}\n\t ")
_START_CHARS = frozenset("<[{\n\t ")


def common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def common_suffix(a: str, b: str) -> int:
    return common_prefix(a[::-1], b[::-1])


def prefix_at_boundary(a: str, b: str) -> str:
    """The common prefix of ``a`` and ``b``, cut back so it does not end inside a token of either."""
    n = common_prefix(a, b)
    while n:
        ends_ok = a[n - 1] in _END_CHARS
        starts_ok = all(n >= len(s) or s[n] in _START_CHARS for s in (a, b))
        if ends_ok or starts_ok:
            break
        n -= 1
    return a[:n]


def suffix_at_boundary(a: str, b: str) -> str:
    """The common suffix of ``a`` and ``b``, cut so it does not start inside a token of either."""
    n = common_suffix(a, b)
    while n:
        i, j = len(a) - n, len(b) - n
        starts_ok = a[i] in _START_CHARS
        ends_ok = all(k == 0 or s[k - 1] in _END_CHARS for s, k in ((a, i), (b, j)))
        if starts_ok or ends_ok:
            break
        n -= 1
    return a[len(a) - n :] if n else ""


def first_token(text: str) -> str:
    """The first marker (or run of words) of ``text``, ignoring leading whitespace."""
    m = _TOKEN.search(text)
    return m.group(0) if m else ""


def last_token(text: str) -> str:
    tokens = _TOKEN.findall(text)
    return tokens[-1] if tokens else ""


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def leading_marker(text: str) -> str:
    m = _LEAD.match(text)
    return m.group(0).strip() if m else ""


def trailing_marker(text: str) -> str:
    m = _TAIL.search(text)
    return m.group(0).strip() if m else ""


#: Stand-ins the analysis puts into literals for a call id and a call index.
ID = "\x00ID\x00"
INDEX = "\x00IX\x00"


def flex(literal: str) -> str:
    """A regex for ``literal`` in which every run of whitespace may be any whitespace (or none), a call
    id stand-in is captured as ``id`` and a call index stand-in matches any number."""
    parts = re.split(r"\s+", literal)
    out = r"\s*".join(re.escape(p) for p in parts)
    out = out.replace(re.escape(ID), r"(?P<id>[^\s<>\[\]]+?)", 1).replace(re.escape(ID), r"[^\s<>\[\]]+?")
    return out.replace(re.escape(INDEX), r"\d+")


def closer_for(opener: str) -> str | None:
    """The closing marker the usual naming rules give an opening one (``<x>`` -> ``</x>``, ``[X]`` ->
    ``[/X]``, ``<|START_X|>`` -> ``<|END_X|>``, ``[BEGIN X]`` -> ``[END X]``), or None."""
    m = re.fullmatch(r"<\|START_(\w+)\|>", opener)
    if m:
        return f"<|END_{m.group(1)}|>"
    m = re.fullmatch(r"\[BEGIN ([^\[\]]+)\]", opener)
    if m:
        return f"[END {m.group(1)}]"
    m = re.fullmatch(r"<\|(\w+)_start\|>", opener)
    if m:
        return f"<|{m.group(1)}_end|>"
    m = re.fullmatch(r"<([^/<>|][^<>]*)>", opener)
    if m:
        return f"</{m.group(1)}>"
    m = re.fullmatch(r"\[([^/\[\]][^\[\]]*)\]", opener)
    if m:
        return f"[/{m.group(1)}]"
    return None

"""Internal: one canonical spelling of a delimiter pattern, with its named groups left as slots.

A template's delimiters are recognizers (``(?:<tool_call>\\s*)?<function=(?P<name>[^>\\n]+)>`` reads
several spellings); a grammar needs the one spelling the model should write. :func:`spell` reads the
pattern (Python's own regex parser, so only ``re`` syntax is spelled) and picks:

* the first alternative of an alternation;
* an optional part (``?``) when it spells to fixed text (``(?:<tool_call>)?``, ``\\n?``, ``(?:json)?``),
  nothing when it would need an invented character (``(?::\\d+)?``);
* nothing for ``*`` repetitions (``\\s*``), one copy for ``+`` (a representative character for a class);
* nothing for assertions (``^``, lookaheads);
* a :class:`Slot` for each named group that holds no other named group (a group around one, such as
  Kimi's ``(?P<id>functions\\.(?P<name>...))``, is spelled through).

A pattern that needs a back-reference or an arbitrary character outside a named group has no spelling
(:class:`Unspellable`).
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass
from typing import Any

import regex

__all__ = [
    "CLASS",
    "OPTIONAL",
    "SPACE",
    "SPACE1",
    "Piece",
    "Slot",
    "Unspellable",
    "literal_text",
    "spell",
    "spell_branches",
    "spell_parts",
    "spell_parts_variants",
    "strip_space",
    "suffix_spelling",
    "suffixed_starts",
]

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")


class Unspellable(Exception):
    """The pattern has no canonical spelling; the message says why."""


@dataclass(frozen=True)
class Slot:
    """A named group of the pattern: ``pattern`` is what it matches (a regex in grammar syntax)."""

    name: str
    pattern: str


Piece = str | Slot

#: The name of a slot for an optional part: its pattern may match or not (``(?:json)?``).
OPTIONAL = "?"

#: The name of a slot for a run of a character class after the opener's text (``\w+``), written as the
#: pattern it is.
CLASS = "+"

#: Whitespace the template allows between two parts (``\s*``), and at least one whitespace (``\s+``).
SPACE = Slot("", "[ \\t\\r\\n]*")
SPACE1 = Slot("", "[ \\t\\r\\n]+")

_CATEGORY_CLASS = {
    "CATEGORY_DIGIT": "\\d",
    "CATEGORY_NOT_DIGIT": "\\D",
    "CATEGORY_SPACE": "\\s",
    "CATEGORY_NOT_SPACE": "\\S",
    "CATEGORY_WORD": "\\w",
    "CATEGORY_NOT_WORD": "\\W",
}
_CATEGORY_SAMPLE = {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " ", "CATEGORY_WORD": "a"}
_CLASS_META = set("\\]^-[")
_META = set("\\.+*?()|[]{}^$#&-~")


def _esc(ch: str, in_class: bool = False) -> str:
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if ch == "\r":
        return "\\r"
    if (in_class and ch in _CLASS_META) or (not in_class and ch in _META):
        return "\\" + ch
    return ch


def _dedupe_groups(source: str) -> tuple[str, dict[str, str]]:
    """Rename repeated group names (the ``regex`` module allows them, ``re`` does not)."""
    seen: dict[str, int] = {}
    aliases: dict[str, str] = {}

    def rename(m: Any) -> str:
        name = m.group(1)
        count = seen.get(name, 0)
        seen[name] = count + 1
        if count == 0:
            return str(m.group(0))
        alias = f"{name}__{count}"
        aliases[alias] = name
        return f"(?P<{alias}>"

    return regex.sub(r"\(\?P<(\w+)>", rename, source), aliases


class _Speller:
    def __init__(self, source: str, keep: frozenset[str] = frozenset()) -> None:
        self.keep = keep
        #: Whether text was spelled before the part being spelled (set by :func:`spell_parts`).
        self.after_text = False
        #: How many optional groups that are being written enclose the part being spelled.
        self.including = 0
        #: When spelling every variant: the alternative chosen at each alternation met, in order.
        self.plan: list[int] | None = None
        self.sizes: list[int] = []
        self.branch_count = 0
        text, self.aliases = _dedupe_groups(source)
        try:
            parsed = _parser.parse(text, 0)
        except Exception as exc:  # re's parser raises re.error (and others on odd input)
            raise Unspellable(f"the pattern uses syntax this spelling does not read ({exc})") from None
        self.names = {gid: self.aliases.get(name, name) for name, gid in parsed.state.groupdict.items()}
        self.tree = parsed

    # --------------------------------------------------------------------------- pattern text (slots)

    def unparse(self, items: Any) -> str:
        out = []
        for op, arg in items:
            name = str(op)
            if name == "LITERAL":
                out.append(_esc(chr(arg)))
            elif name == "NOT_LITERAL":
                out.append("[^" + _esc(chr(arg), True) + "]")
            elif name == "ANY":
                out.append("[\\s\\S]")
            elif name == "IN":
                out.append(self._class(arg))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = arg
                body = self.unparse(sub)
                body = f"({body})" if len(sub) > 1 or str(sub[0][0]) not in ("LITERAL", "IN", "ANY") else body
                if hi == _c.MAXREPEAT:
                    out.append(body + ("*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"))
                elif lo == 0 and hi == 1:
                    out.append(body + "?")
                else:
                    out.append(body + f"{{{lo},{hi}}}")
            elif name == "SUBPATTERN":
                out.append("(" + self.unparse(arg[3]) + ")")
            elif name == "ATOMIC_GROUP":
                out.append("(" + self.unparse(arg) + ")")
            elif name == "BRANCH":
                out.append("(" + "|".join(self.unparse(alt) for alt in arg[1]) + ")")
            elif name in ("AT", "ASSERT", "ASSERT_NOT"):
                continue
            else:
                raise Unspellable(f"the pattern uses {name.lower()}, which a grammar cannot express")
        return "".join(out)

    def _class(self, items: Any) -> str:
        parts: list[str] = []
        for op, arg in items:
            name = str(op)
            if name == "NEGATE":
                parts.insert(0, "^")
            elif name == "LITERAL":
                parts.append(_esc(chr(arg), True))
            elif name == "RANGE":
                parts.append(_esc(chr(arg[0]), True) + "-" + _esc(chr(arg[1]), True))
            elif name == "CATEGORY":
                parts.append(_CATEGORY_CLASS.get(str(arg), ""))
        return "[" + "".join(parts) + "]"

    # ------------------------------------------------------------------------------------ spelling

    def has_slot(self, items: Any) -> bool:
        for op, arg in items:
            name = str(op)
            if name == "SUBPATTERN" and (arg[0] in self.names or self.has_slot(arg[3])):
                return True
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and self.has_slot(arg[2]):
                return True
            if name == "BRANCH" and any(self.has_slot(alt) for alt in arg[1]):
                return True
            if name == "ATOMIC_GROUP" and self.has_slot(arg):
                return True
        return False

    def spell(self, items: Any) -> tuple[list[Piece], bool]:
        """``(pieces, invented)``: ``invented`` when a character was made up for a class."""
        pieces: list[Piece] = []
        invented = False
        for op, arg in items:
            name = str(op)
            if name == "LITERAL":
                pieces.append(chr(arg))
                self.after_text = True
            elif name == "IN":
                literals = [a for o, a in arg if str(o) == "LITERAL"]
                if len(arg) == 1 and literals:
                    pieces.append(chr(literals[0]))
                    continue
                sample = self._sample(arg)
                pieces.append(sample)
                invented = True
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = arg
                if self.is_blank(sub):
                    pieces.append(self.blank(lo, hi, sub))
                    continue
                if (
                    lo <= 1
                    and hi == _c.MAXREPEAT
                    and self.after_text
                    and not self.including
                    and len(sub) == 1
                    and str(sub[0][0]) == "IN"
                ):
                    # A run of a class after the opener's text (``<tool_call>\s*\w+\n``, ``[^<]*``): any
                    # text the class reads, as the pattern it is.
                    pieces.append(Slot(CLASS, self.unparse([(_c.MAX_REPEAT, (lo, hi, sub))])))
                    continue
                if lo == 0 and hi == 1 and self.repeats_text(pieces, sub):
                    # A repeated opener (``<think>(?:\s*<think>)?``) reads a doubled delimiter as one: the
                    # grammar writes it once.
                    continue
                if lo == 0:
                    fixed = hi == 1 and not self.has_class(sub, ignore_space=True)
                    if fixed and (not self.after_text or self.including or self.has_kept_slot(sub)):
                        # Optional fixed text before any other text is written (``(?:<tool_call>\s*)?``):
                        # the opener needs a literal start.
                        self.including += 1
                        try:
                            sub_pieces, sub_invented = self.spell(sub)
                        finally:
                            self.including -= 1
                        if not sub_invented:
                            pieces.extend(sub_pieces)
                        continue
                    if hi == 1:
                        # Any other optional part may be written or not (``(?:json)?``, ``(?::\d+)?``).
                        pieces.append(Slot(OPTIONAL, self.unparse(sub)))
                    continue
                sub_pieces, sub_invented = self.spell(sub)
                for _ in range(lo):
                    pieces.extend(sub_pieces)
                invented = invented or sub_invented
            elif name == "SUBPATTERN":
                gid, sub = arg[0], arg[3]
                if gid in self.names and not self.has_slot(sub):
                    pieces.append(Slot(self.names[gid], self.unparse(sub)))
                    continue
                sub_pieces, sub_invented = self.spell(sub)
                pieces.extend(sub_pieces)
                invented = invented or sub_invented
            elif name == "ATOMIC_GROUP":
                sub_pieces, sub_invented = self.spell(arg)
                pieces.extend(sub_pieces)
                invented = invented or sub_invented
            elif name == "BRANCH":
                sub_pieces, sub_invented = self.branch(arg[1])
                pieces.extend(sub_pieces)
                invented = invented or sub_invented
            elif name in ("AT", "ASSERT", "ASSERT_NOT"):
                continue
            elif name in ("ANY", "NOT_LITERAL"):
                raise Unspellable("the pattern matches an arbitrary character outside a named group")
            else:
                raise Unspellable(f"the pattern uses {name.lower()}, which has no canonical spelling")
        return pieces, invented

    def repeats_text(self, pieces: list[Piece], sub: Any) -> bool:
        """Whether the optional part ``sub`` only repeats the text spelled just before it."""
        if self.has_slot(sub) or self.has_class(sub, ignore_space=True):
            return False
        saved = (self.after_text, self.including, self.branch_count)
        plan = self.plan
        self.plan = None
        try:
            sub_pieces, invented = self.spell(sub)
        except Unspellable:
            return False
        finally:
            self.after_text, self.including, self.branch_count = saved
            self.plan = plan
        text = literal_text(strip_space(_merge(sub_pieces)))
        before = literal_text(strip_space(_merge(list(pieces))))
        return not invented and bool(text) and before is not None and before.endswith(text or "\x00")

    def blank(self, lo: int, hi: int, sub: Any) -> Slot:
        """Whitespace the template allows. ``\\s*`` and ``\\s+`` are :data:`SPACE` and :data:`SPACE1` (any
        whitespace); a narrower repeat keeps its pattern (``\\n?`` as a whitespace slot ``\\n?``), and one
        that excludes the newline (``[ \\t]*``) is an optional part, since a newline there would change
        what the template reads (the end of a line)."""
        body = self.unparse(sub)
        if len(sub) > 1:
            body = f"({body})"
        generic = all(regex.fullmatch(body, ch) for ch in " \t\r\n")
        quant = {(0, 1): "?", (0, _c.MAXREPEAT): "*", (1, _c.MAXREPEAT): "+"}.get((lo, hi))
        if quant is None or (generic and quant != "?"):
            return SPACE if lo == 0 else SPACE1
        if regex.fullmatch(body, "\n"):
            return Slot("", body + quant)
        if lo == 0:
            return Slot(OPTIONAL, body if quant == "?" else body + "+")
        return Slot("", body + "+")

    def branch(self, alternatives: Any) -> tuple[list[Piece], bool]:
        """The first alternative that starts with fixed text (else the first): an opener such as
        ``\\s*to=...<|channel|>x|<|channel|>x\\s*to=...`` is spelled from its second alternative.

        When enumerating (:attr:`plan` is set), the alternative the plan names instead."""
        if self.plan is not None:
            position = self.branch_count
            self.branch_count += 1
            if position >= len(self.plan):
                self.plan.append(0)
                self.sizes.append(len(alternatives))
            return self.spell(alternatives[self.plan[position]])
        state = self.after_text
        first: tuple[list[Piece], bool] | None = None
        for alternative in alternatives:
            self.after_text = state
            try:
                spelled = self.spell(alternative)
            except Unspellable:
                continue
            if first is None:
                first = spelled
            merged = _merge(spelled[0])
            if merged and isinstance(merged[0], str):
                return spelled
        if first is None:
            raise Unspellable("no alternative of the pattern has a canonical spelling")
        return first

    def has_kept_slot(self, items: Any) -> bool:
        """Whether ``items`` holds a group named in ``keep`` (written even where it is optional)."""
        for op, arg in items:
            name = str(op)
            if name == "SUBPATTERN":
                if self.names.get(arg[0]) in self.keep or self.has_kept_slot(arg[3]):
                    return True
            elif (
                name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and self.has_kept_slot(arg[2])
            ) or (name == "BRANCH" and any(self.has_kept_slot(alt) for alt in arg[1])):
                return True
        return False

    def is_blank(self, items: Any) -> bool:
        """Whether ``items`` matches whitespace only (whitespace literals and classes)."""
        if not items:
            return False
        for op, arg in items:
            name = str(op)
            if name == "LITERAL" and chr(arg) in " \t\r\n":
                continue
            if name == "IN" and self.is_space([(op, arg)]):
                continue
            return False
        return True

    def is_space(self, items: Any) -> bool:
        """Whether ``items`` is one whitespace class (``\\s``, ``[ \\t]``, ``[^\\S\\n]``)."""
        if len(items) != 1 or str(items[0][0]) != "IN":
            return False
        for op, arg in items[0][1]:
            name = str(op)
            if name == "CATEGORY" and str(arg) in ("CATEGORY_SPACE", "CATEGORY_NOT_SPACE"):
                continue
            if name == "LITERAL" and chr(arg) in " \t\r\n":
                continue
            if name == "NEGATE":
                continue
            return False
        return True

    def has_class(self, items: Any, ignore_space: bool = False) -> bool:
        """Whether ``items`` matches a character class somewhere (whitespace repeats aside, if asked)."""
        for op, arg in items:
            name = str(op)
            if name in ("IN", "ANY", "NOT_LITERAL"):
                return True
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                if ignore_space and arg[0] == 0 and self.is_space(arg[2]):
                    continue
                if self.has_class(arg[2], ignore_space):
                    return True
            if name == "SUBPATTERN":
                if arg[0] in self.names and self.names[arg[0]] not in self.keep:
                    return True
                if arg[0] not in self.names and self.has_class(arg[3], ignore_space):
                    return True
            if name == "BRANCH" and any(self.has_class(alt, ignore_space) for alt in arg[1]):
                return True
        return False

    def _sample(self, items: Any) -> str:
        for op, arg in items:
            name = str(op)
            if name == "NEGATE":
                raise Unspellable("the pattern matches a negated character class outside a named group")
            if name == "LITERAL":
                return chr(arg)
            if name == "RANGE":
                return chr(arg[0])
            if name == "CATEGORY" and str(arg) in _CATEGORY_SAMPLE:
                return _CATEGORY_SAMPLE[str(arg)]
        raise Unspellable("the pattern matches a character class with no canonical member")


def _merge(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str):
            if not piece:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += piece
                continue
        out.append(piece)
    return out


def spell(source: str, keep: frozenset[str] = frozenset(), canonical: bool = False) -> list[Piece]:
    """The canonical spelling of the regex ``source``: text pieces and :class:`Slot` s, merged.

    >>> spell(r"(?:<tool_call>\\s*)?<function=(?P<name>[^>\\n]+)>")  # doctest: +NORMALIZE_WHITESPACE
    ['<tool_call>', Slot(name='', pattern='[ \\\\t\\\\r\\\\n]*'), '<function=',
     Slot(name='name', pattern='[^>\\\\n]+'), '>']

    ``keep`` names groups whose optional surroundings are written all the same (a type attribute).
    Optional parts after the first text are slots named :data:`OPTIONAL` (written or not), unless
    ``canonical``, which leaves them out: the one spelling writes an optional start
    (``(?:<tool_call>\\s*)?``) and nothing optional after it (``</ifm\\|think(?:_fast)?>`` is ``</ifm|think>``).
    """
    speller = _Speller(source, keep)
    pieces, _ = speller.spell(speller.tree)
    if canonical:
        pieces = [p for p in pieces if not (isinstance(p, Slot) and p.name == OPTIONAL)]
    return _merge(pieces)


def spell_parts_variants(source: str, limit: int = 16) -> list[tuple[list[Piece], list[Piece], list[Piece]]]:
    """:func:`spell_parts` for each choice of alternatives inside the pattern (at most ``limit``; the
    top-level alternatives are not enumerated): ``<|channel|>(?:final|commentary)<|message|>`` has two."""
    out: list[tuple[list[Piece], list[Piece], list[Piece]]] = []
    plan: list[int] = []
    sizes: list[int] = []
    while len(out) < limit:
        speller = _Speller(source)
        speller.plan, speller.sizes = plan, sizes
        with contextlib.suppress(Unspellable):  # an alternative without a spelling is left out
            out.append(_spell_parts(speller))
        # the next plan: advance the last alternation that has another alternative
        while plan and plan[-1] + 1 >= sizes[-1]:
            plan.pop()
            sizes.pop()
        if not plan:
            break
        plan[-1] += 1
    return out


def spell_parts(source: str) -> tuple[list[Piece], list[Piece], list[Piece]]:
    """The spelling in three parts: a leading optional group, the rest, a trailing optional group.

    A pattern such as ``(?:<|section|>\\s*)?<|call|>`` opens a *section* (a wrapper written once around
    several calls) and a call; the first and last parts are empty when the pattern has no such group.
    """
    return _spell_parts(_Speller(source))


def _spell_parts(speller: _Speller) -> tuple[list[Piece], list[Piece], list[Piece]]:
    items = list(speller.tree)
    if len(items) == 1 and str(items[0][0]) == "BRANCH":
        items = list(items[0][1][1][0])
    lead: list[Piece] = []
    trail: list[Piece] = []

    def optional_group(item: Any) -> list[Piece] | None:
        op, arg = item
        if str(op) in ("MAX_REPEAT", "MIN_REPEAT") and arg[0] == 0 and arg[1] == 1:
            speller.including += 1
            try:
                pieces, invented = speller.spell(arg[2])
            finally:
                speller.including -= 1
            merged = _merge(pieces)
            if not invented and strip_space(merged) and all(isinstance(p, str) for p in strip_space(merged)):
                return merged
        return None

    while items and str(items[-1][0]) in ("AT", "ASSERT", "ASSERT_NOT"):
        items.pop()
    if len(items) > 1:
        group = optional_group(items[0])
        if group is not None:
            lead = group
            items = items[1:]
    if len(items) > 1:
        group = optional_group(items[-1])
        if group is not None:
            trail = group
            items = items[:-1]
    speller.after_text = False
    body, _ = speller.spell(items)
    body = _merge(body)
    # A repeated delimiter read as one (``<think>(?:\s*<think>)?``) is written once.
    text = literal_text(strip_space(body))
    if text is not None:
        if (trail_text := literal_text(strip_space(trail))) and text.endswith(trail_text):
            trail = []
        if (lead_text := literal_text(strip_space(lead))) and text.startswith(lead_text):
            lead = []
    return lead, body, trail


def spell_branches(source: str) -> list[list[Piece]]:
    """The spelling of each top-level alternative of ``source``."""
    speller = _Speller(source)
    items = list(speller.tree)
    branches = items[0][1][1] if len(items) == 1 and str(items[0][0]) == "BRANCH" else [items]
    out = []
    for branch in branches:
        speller.after_text = False
        pieces, _ = speller.spell(branch)
        out.append(_merge(pieces))
    return out


def strip_space(pieces: list[Piece]) -> list[Piece]:
    """The pieces without whitespace slots and optional parts (what is always written)."""
    return _merge([p for p in pieces if not (isinstance(p, Slot) and p.name in ("", OPTIONAL))])


def literal_text(pieces: list[Piece]) -> str | None:
    """The spelling as plain text, or ``None`` when it has slots."""
    if all(isinstance(p, str) for p in pieces):
        return "".join(p for p in pieces if isinstance(p, str))
    return None


#: A suffix: one literal character, then a run of a character class (``:[\w]+``, a session id).
_SUFFIX = regex.compile(r"(\\.|[^\\\[\](){}|*+?.^$])((?:\[(?:\\.|[^\]\\])+\]|\\[wd])\+)", regex.S)


def suffix_spelling(source: str) -> tuple[str, str, str] | None:
    """A delimiter whose only freedom is an optional suffix inside its text (Hy's ``</think(?::\\w+)?>``,
    a session id): ``(text, end, rest)`` where ``text`` is its one spelling (``</think>``), ``end`` the
    fixed text of the suffixed spelling up to the suffix's run (``</think:``) and ``rest`` a regex for the
    remainder (``[\\w]+>``); None for any other delimiter."""
    try:
        lead, body, trail = spell_parts(source)
    except Unspellable:
        return None
    if lead or trail or len(body) != 3:
        return None
    head, slot, tail = body
    if (
        not (isinstance(head, str) and isinstance(slot, Slot) and isinstance(tail, str))
        or slot.name != OPTIONAL
    ):
        return None
    found = _SUFFIX.fullmatch(slot.pattern)
    if found is None or not head or not tail:
        return None
    from .lark import regex_escape

    first = found.group(1)[-1]
    return head + tail, head + first, found.group(2) + regex_escape(tail)


def suffixed_starts(source: str) -> list[str]:
    """The fixed text up to an optional suffix at the start of a delimiter's parts (``<tool_call:`` of
    ``(?:<tool_calls(?::\\w+)?>\\s*)?<tool_call(?::\\w+)?>...``, with ``<tool_calls:``): where the parser
    reads the suffixed spelling too, free text must not hold it when it must not hold the delimiter."""
    try:
        parts = spell_parts(source)
    except Unspellable:
        return []
    out: list[str] = []
    for pieces in parts:
        if len(pieces) < 2 or not isinstance(pieces[0], str) or not pieces[0]:
            continue
        slot = pieces[1]
        if isinstance(slot, Slot) and slot.name == OPTIONAL:
            found = _SUFFIX.fullmatch(slot.pattern)
            if found is not None:
                out.append(pieces[0] + found.group(1)[-1])
    return out

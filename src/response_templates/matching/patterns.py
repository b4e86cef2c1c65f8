"""Internal: reading template regexes (docs/spec.md, section 4): compiling them with the rules the spec
fixes (DOTALL, no reading-changing inline flags, end-of-input assertions rewritten so that partial
matching sees them), and the static facts the watch sets use: the characters a match can start with and
the literal text every match starts with.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import regex

# The parser regex_first_chars reads patterns with: `re._parser` from Python 3.11 on (`sre_parse` still
# exists there but warns), `sre_parse` before.
if sys.version_info >= (3, 11):
    # typeshed has no stub for this CPython-internal module (same contents as `sre_parse`)
    import re._parser as sre_parse  # type: ignore[import-not-found, unused-ignore]
else:  # pragma: no cover
    import sre_parse

from ..errors import TemplateError

__all__ = [
    "FLAGS",
    "compile_pattern",
    "regex_first_chars",
    "regex_literal_prefix",
    "regex_literal_suffix",
    "regex_required_literals",
    "rewrite_end_assertions",
]

#: Flags every template regex is compiled with: DOTALL on, MULTILINE off (docs/spec.md, section 4).
FLAGS = regex.DOTALL


# Replacements for the zero-width assertions whose truth at the end of the buffer can change when more
# text arrives. Each is exactly equivalent (DOTALL, no MULTILINE) but reads a character, which the
# partial matcher notices.
_END = r"(?![\s\S])"
_ASSERTION_REWRITES = {
    "$": r"(?=\n?" + _END + ")",
    r"\Z": _END,
    r"\b": r"(?:(?<=\w)(?!\w)|(?<!\w)(?=\w))",
    r"\B": r"(?:(?<=\w)(?=\w)|(?<!\w)(?!\w))",
    r"\m": r"(?<!\w)(?=\w)",
    r"\M": r"(?<=\w)(?!\w)",
}
# Appended to the atomic group of a probe: never matches, and reads one character past the match, so a
# match that ends at the end of the buffer counts as undecided. (A bare ``(?!)`` is not enough: the
# ``regex`` engine does not always report a repeat that gives up at the end of the text as partial.)
_PROBE_TAIL = r"(?=[\s\S])(?!)"
# A branch that never matches, added to a probe's atomic group. It changes nothing the probe finds, but it
# keeps the `regex` module from looking for the literal text the pattern requires (``<|content_text|>`` in
# ``[^<]*<\|content_text\|>``) before each attempt: in partial matching that look-up cannot rule a start
# out and reads the rest of the text every time, which made a probe quadratic in the text it searches.
_NO_REQUIRED_STRING = "|(?!)"
_TOUCH_END = r"(?=[\s\S]|)"
# Inline flags that would change how a pattern is read or what its anchors mean.
_FORBIDDEN_FLAGS = {"m": "MULTILINE", "x": "VERBOSE", "w": "WORD", "V": "VERSION1", "p": "POSIX"}


def rewrite_end_assertions(pattern: str) -> tuple[str, bool]:
    """Rewrite end-sensitive assertions of ``pattern`` into equivalent lookarounds.

    Returns the rewritten pattern and whether the original uses a lookbehind (the parser then keeps a
    window of already-routed text for it to look at). Raises ``ValueError`` for constructs whose meaning
    depends on where a search starts (``\\G``) or inline flags that the template language forbids.

    >>> rewrite_end_assertions(r"</x>$")[0]
    '</x>(?=\\\\n?(?![\\\\s\\\\S]))'
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    lookbehind = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            tok = pattern[i : i + 2]
            i += 2
            if not in_class:
                if tok == r"\G":
                    raise ValueError(r"'\G' depends on where a search starts; it cannot be used here")
                if tok in _ASSERTION_REWRITES:
                    out.append(_ASSERTION_REWRITES[tok])
                    continue
            out.append(tok)
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            # A ']' right after '[' or '[^' is a literal member of the set.
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("]")
                i += 1
            continue
        if c == "$":
            out.append(_ASSERTION_REWRITES["$"])
            i += 1
            continue
        if c == "(" and pattern.startswith("(?", i):
            if pattern.startswith("(?#", i):  # comment group: copy verbatim up to ')'
                end = pattern.find(")", i)
                end = n if end < 0 else end + 1
                out.append(pattern[i:end])
                i = end
                continue
            if pattern.startswith(("(?<=", "(?<!"), i):
                lookbehind = True
                # A lookbehind that fails at the end of the buffer reads nothing, and the engine then
                # does not always notice that a lazy quantifier before it could still extend; an
                # always-true lookahead that reads a character makes the end of the buffer visible.
                out.append(_TOUCH_END)
            else:
                j = i + 2
                while j < n and (pattern[j].isalpha() or pattern[j] in "-0123456789"):
                    j += 1
                if j < n and pattern[j] in ":)" and j > i + 2:
                    flags = pattern[i + 2 : j].split("-", 1)[0]  # flags after '-' are turned off
                    for flag in flags:
                        if flag in _FORBIDDEN_FLAGS:
                            raise ValueError(
                                f"inline flag '{flag}' ({_FORBIDDEN_FLAGS[flag]}) is not allowed: template "
                                "regexes are always DOTALL without MULTILINE"
                            )
        out.append(c)
        i += 1
    return "".join(out), lookbehind


def _probe_head(source: str) -> str:
    """What a probe starts with: when every match starts at one of a few characters, a lookahead for them
    (or the start of the text, where a ``^`` branch may match anything), which lets the engine skip the
    other positions quickly now that the probe has no required literal to skip by."""
    first = regex_first_chars(source)
    if not first:
        return ""
    return "(?:(?=[" + "".join(regex.escape(c) for c in first) + "])|^)"


def compile_pattern(source: str, *, field: str | None, key: str) -> tuple[Any, Any, bool]:
    """Compile a template regex into (search pattern, probe pattern, uses lookbehind).

    Errors name the field and key.
    """
    if not isinstance(source, str):
        raise TemplateError(f"must be a regex string, got {type(source).__name__}", field=field, key=key)
    if source == "":
        raise TemplateError("must not be empty", field=field, key=key)
    try:
        regex.compile(source, FLAGS)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise TemplateError(f"invalid regex {source!r}: {exc}", field=field, key=key) from None
    except MemoryError:
        raise TemplateError(
            f"regex {source!r} is too large to compile (out of memory)", field=field, key=key
        ) from None
    try:
        rewritten, lookbehind = rewrite_end_assertions(source)
    except ValueError as exc:
        raise TemplateError(f"regex {source!r}: {exc}", field=field, key=key) from None
    try:
        search = regex.compile(rewritten, FLAGS)
        probe = regex.compile(
            f"{_probe_head(source)}(?>(?:{rewritten}){_NO_REQUIRED_STRING}){_PROBE_TAIL}", FLAGS
        )
    except (regex.error, OverflowError, RecursionError, MemoryError) as exc:  # pragma: no cover
        raise TemplateError(
            f"regex {source!r} cannot be used for streaming: {exc}", field=field, key=key
        ) from None
    return search, probe, lookbehind


# The first characters a regex can match at, for the parser's fast path. Read with Python's own regex
# parser (the patterns are `regex` patterns; anything it does not read the same way gives "unknown").
_MAX_FIRST = 256


# Over 80 lines with its docstring and examples; the walk over the parsed pattern is about 60 lines, kept
# in one piece because its two inner functions recurse into each other.
def regex_first_chars(source: str) -> str | None:
    """The characters that every match of ``source`` starts at, or None when that is not a small known set.

    A match starting at position ``p`` (zero-width or not) needs ``text[p]`` to be one of them, so a chunk
    with none of them cannot contain the start of a match -- except at the very start of the stream, where
    a ``^`` branch may match (the parser never takes its fast path there). None for anything this analysis
    cannot bound: a pattern that can match the empty string anywhere, ``$`` and word boundaries, ``.``,
    classes such as ``\\s`` or negated sets at the start, case-insensitive parts, backreferences, or a
    pattern that Python's ``re`` parser does not read.

    >>> regex_first_chars(r"(?:<tool_call>\\s*)?<function=(?P<name>[^>]+)>")
    '<'
    >>> regex_first_chars(r"<think>|^\\s*(?=</think>)")  # a ^ branch matches only at the start
    '<'
    >>> regex_first_chars(r"\\s*</think>") is None
    True
    """
    parsed = _sre_read(source)
    if parsed is None:
        return None
    consts = sre_parse

    def seq(items: Any) -> tuple[set[str] | None, bool]:
        acc: set[str] = set()
        for op, av in items:
            first, nullable = item(op, av)
            if first is None:
                return None, True
            acc |= first
            if not nullable:
                return acc, False
        return acc, True

    def item(op: Any, av: Any) -> tuple[set[str] | None, bool]:
        if op is consts.LITERAL:
            return {chr(av)}, False
        if op is consts.IN:
            chars: set[str] = set()
            for kind, value in av:
                if kind is consts.LITERAL:
                    chars.add(chr(value))
                elif kind is consts.RANGE and value[1] - value[0] < _MAX_FIRST:
                    chars.update(chr(c) for c in range(value[0], value[1] + 1))
                else:
                    return None, True
            return chars, False
        if op is consts.BRANCH:
            union: set[str] = set()
            any_nullable = False
            for branch in av[1]:
                first, nullable = seq(branch)
                if first is None:
                    return None, True
                union |= first
                any_nullable = any_nullable or nullable
            return union, any_nullable
        if op is consts.SUBPATTERN:
            if av[1] & re.IGNORECASE:
                return None, True
            return seq(av[3])
        if op in (consts.MAX_REPEAT, consts.MIN_REPEAT, getattr(consts, "POSSESSIVE_REPEAT", None)):
            first, nullable = seq(av[2])
            return first, nullable or av[0] == 0
        if op is getattr(consts, "ATOMIC_GROUP", None):
            return seq(av)
        if op is consts.ASSERT:
            if av[0] < 0:
                return set(), True  # a lookbehind constrains earlier text only
            first, nullable = seq(av[1])
            if first is None or nullable:
                return set(), True
            return first, False  # zero-width, but the character at the match position is one of these
        if op is consts.ASSERT_NOT:
            return set(), True
        if op is consts.AT and av in (consts.AT_BEGINNING, consts.AT_BEGINNING_STRING):
            return set(), False  # matches only at the start of the stream, which the fast path never skips
        return None, True

    first, nullable = seq(parsed)
    if first is None or nullable or not first or len(first) > _MAX_FIRST:
        return None
    return "".join(sorted(first))


# Longest literal prefix the index keys on (a shorter key only admits more candidates).
_INDEX_PREFIX = 16
# Sources whose leading literals Python's parser may read differently from `regex`: fuzzy constraints
# ({e<=1} is literal text to `re`). Inline flags that `re` does not know make it fail, which gives "".
_PREFIX_UNSAFE = regex.compile(r"\{[^}0-9,]")


def _parsed_like_regex(source: str) -> Any:
    """``source`` read by Python's own regex parser, or None when that reading may differ from ``regex``'s
    (syntax only ``regex`` knows, or case-insensitive matching)."""
    if _PREFIX_UNSAFE.search(source):
        return None
    return _sre_read(source)


def _sre_read(source: str) -> Any:
    """``source`` parsed by Python's own regex parser, or None when it does not read it, or when the
    pattern is case-insensitive (its literals then are not literal text)."""
    try:
        parsed = sre_parse.parse(source, re.DOTALL)
    except Exception:  # any syntax Python's parser does not share with `regex`
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    return parsed


def regex_literal_prefix(source: str) -> str:
    """The literal text every match of ``source`` starts with (up to 16 characters), or ``""``.

    Read with Python's own regex parser, like :func:`regex_first_chars`; ``""`` for anything it does not
    read the same way as ``regex``.

    >>> regex_literal_prefix(r"<f12(?:a|b)>")
    '<f12'
    >>> regex_literal_prefix(r"(?:<tool_call>\\s*)?<function=")
    ''
    """
    parsed = _parsed_like_regex(source)
    if parsed is None:
        return ""
    chars: list[str] = []
    items: Any = parsed  # a SubPattern: a sequence of (op, argument)
    for op, av in items:
        if op is not sre_parse.LITERAL or len(chars) >= _INDEX_PREFIX:
            break
        chars.append(chr(av))
    return "".join(chars)


# Operators after which the text a match ends with is not bounded by the pattern alone (they look at
# text around the match, or match it in ways Python's parser reads differently).
_SUFFIX_UNSAFE_OPS = frozenset({"AT", "ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS"})


# The opening of a named group (not after a backslash): read as a plain group by regex_required_literals.
_NAMED_GROUP = regex.compile(r"(?<!\\)\(\?P<\w+>")


def regex_required_literals(source: str) -> tuple[str, ...]:
    """Literal texts one of which every match of ``source`` contains, or ``()`` when none is known.

    Lookarounds and anchors are allowed: the promise is only that a match cannot exist in a text that
    contains none of them after where the search starts. The parser uses it to skip searching for a
    match, and probing whether one is still undecided, where none can be. Of the ways a pattern requires
    literal text (a run of literal characters, one literal per branch of an alternation, the inside of a
    group that must match), the one nearest the end of a match is kept: in a stream it arrives last, so
    its absence rules a match out for longest.

    >>> regex_required_literals(r"(?:to=(?!functions\\.)\\w+)?<\\|channel\\|>\\w+\\s*<\\|message\\|>")
    ('<|message|>',)
    >>> regex_required_literals(r"</invoke>(?:\\s*</tool_call>)?|<\\|im_end\\|>")
    ('/invoke>', '|im_end|>')
    >>> regex_required_literals(r"a+|\\w"), regex_required_literals(r"(?i)<think>")
    ((), ())

    Named groups do not change what a pattern matches, so a name used twice (``regex`` allows it,
    Python's parser does not) is read as a plain group. (Python's parser moves the text all branches
    start with in front of the alternation: ``</a>|</b>`` is read as ``</`` then ``a>|b>``.)
    """
    parsed = _parsed_like_regex(source)
    if parsed is None:
        parsed = _parsed_like_regex(_NAMED_GROUP.sub("(", source))
    if parsed is None:
        return ()
    return _required(parsed) or ()


def _required(items: Any) -> tuple[str, ...] | None:
    """Literals one of which every match of the sequence ``items`` (a SubPattern) contains, or None."""
    best: tuple[str, ...] | None = None

    def consider(candidate: tuple[str, ...] | None) -> None:
        nonlocal best
        if candidate:
            best = candidate  # the last one wins: nearest the end of a match

    run: list[str] = []
    for op, av in [*items, (None, None)]:
        if op is sre_parse.LITERAL:
            run.append(chr(av))
            continue
        if run:
            consider(("".join(run),))
            run = []
        name = str(op)
        if name == "BRANCH":
            alternatives: list[str] = []
            for branch in av[1]:
                found = _required(branch)
                if found is None:
                    alternatives = []
                    break
                alternatives.extend(found)
            consider(tuple(dict.fromkeys(alternatives)))
        elif name == "SUBPATTERN" and not av[1] & re.IGNORECASE:
            consider(_required(av[-1]))
        elif name == "ATOMIC_GROUP":
            consider(_required(av))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
            consider(_required(av[2]))
    return best


def regex_literal_suffix(source: str) -> str:
    """The literal text every match of ``source`` ends with, or ``""``.

    Every match then lies before the end of the last occurrence of that text, so a search may stop
    there (``endpos``) with the same result: this keeps a pattern such as ``<p=(?P<key>[^>]+)>(?P<value>.*?)
    </p>`` from scanning to the end of the text from every ``<p=`` when no ``</p>`` follows. ``""`` for a
    pattern with a lookaround, an anchor or a backreference anywhere (they may look past the match), and
    for anything Python's parser does not read the same way as ``regex``.

    >>> regex_literal_suffix(r"<p=(?P<key>[^>]+)>(?P<value>.*?)</p>")
    '</p>'
    >>> regex_literal_suffix(r"<p>(?P<value>.*?)</p>$"), regex_literal_suffix(r"a|b")
    ('', '')
    """
    parsed = _parsed_like_regex(source)
    if parsed is None:
        return ""

    def unsafe(items: Any) -> bool:
        for op, av in items:
            name = str(op)
            if name in _SUFFIX_UNSAFE_OPS:
                return True
            if name == "SUBPATTERN":
                if av[1] & re.IGNORECASE or unsafe(av[-1]):
                    return True
            elif (
                (name == "ATOMIC_GROUP" and unsafe(av))
                or (name == "BRANCH" and any(unsafe(branch) for branch in av[1]))
                or (name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and unsafe(av[2]))
            ):
                return True
        return False

    items: Any = parsed
    if unsafe(items):
        return ""
    chars: list[str] = []
    for op, av in reversed(list(items)):
        if op is not sre_parse.LITERAL:
            break
        chars.append(chr(av))
    return "".join(reversed(chars))

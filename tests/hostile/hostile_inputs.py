"""Hostile inputs and the checks the hostile-input suite applies to them (issue 12).

Shared by ``tests/hostile/`` (the suite), ``benchmarks/bench_hostile.py`` (time per MB and memory per
stream) and ``scripts/hostile_campaign.py`` (the large random campaign outside CI); the last two put this
directory on ``sys.path``. Nothing here asserts: every check returns a description of what went wrong
(or ``None``), so the campaign can count failures by class and the tests can assert on them.

What is generated:

* **hostile outputs** for one library template (:func:`hostile_outputs`): runs of its delimiters cut
  short (``<function=`` repeated), unclosed regions, very deep JSON, huge integers, lone surrogates, NUL
  and control characters (also inside delimiters), and invalid UTF-8 (as ``bytes``);
* **hostile templates**: catastrophic patterns in every pattern-taking key (:func:`catastrophic_cases`),
  blow-ups at load time (:data:`BLOWUPS`: huge literals and repeat counts, deep nesting), run in a child
  process with a memory cap (:func:`run_isolated`), and random type mutations of the library templates
  (:func:`mutate`).

What is checked, for one output fed in several chunkings (:func:`run_stream`, :func:`compare_runs`):

* only documented typed errors (:class:`response_templates.ResponseTemplateError` and subclasses) come
  out; anything else is recorded as ``untyped``;
* nothing is lost (:func:`lost_text`): every character of the parsed stream is in a ``region_chunk``, is
  a delimiter that an event stands for, or (only in a template without an implicit field, docs/spec.md
  3.12) lies outside every region;
* every chunking gives the same message, the same errors (class, field, offset) and the same
  open/close events with the same values and region texts (docs/spec.md 4.12).
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import response_templates as rt
from response_templates import library
from response_templates.language import FieldSpec, ResponseTemplate
from response_templates.matching import Delimiter

try:  # Python >= 3.11
    import re._parser as sre_parse  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef,unused-ignore]

HERE = Path(__file__).resolve().parent
TYPED = rt.ResponseTemplateError

# -------------------------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    """How big the hostile outputs are.

    ``run_chars`` (the length of a run of one cut delimiter) and ``depth`` size the outputs fed one
    character at a time; ``big_run_chars`` and ``big_depth`` size the ones fed whole and in random chunks
    only. ``THOROUGH`` runs ``<function=`` 20,000 times.
    """

    run_chars: int = 1_000
    big_run_chars: int = 20_000
    depth: int = 600
    big_depth: int = 100_000
    digits: int = 5_000


CI = Sizes()
THOROUGH = Sizes(run_chars=10_000, big_run_chars=200_000, depth=5_000, big_depth=100_000, digits=50_000)
TINY = Sizes(run_chars=40, big_run_chars=100, depth=20, big_depth=600, digits=50)


def profile_sizes() -> Sizes:
    """:data:`THOROUGH` under ``HYPOTHESIS_PROFILE=thorough``, else :data:`CI`."""
    return THOROUGH if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else CI


# ------------------------------------------------------------------------------- delimiter samples


def _sample(parsed: Any) -> str | None:
    """One string the parsed regex (``re`` parser's tree) matches; None when the tree is not understood."""
    out: list[str] = []
    for op, av in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(av) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            piece = _in_sample(av)
            if piece is None:
                return None
            out.append(piece)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, item = av
            sub = _sample(item)
            if sub is None:
                return None
            out.append(sub * max(low, 1 if low == 0 and not out else low))
        elif name == "SUBPATTERN":
            sub = _sample(av[-1])
            if sub is None:
                return None
            out.append(sub)
        elif name == "ATOMIC_GROUP":
            sub = _sample(av)
            if sub is None:
                return None
            out.append(sub)
        elif name == "BRANCH":
            sub = _sample(av[1][0])
            if sub is None:
                return None
            out.append(sub)
        elif name == "ASSERT" and av[0] == 1:  # a lookahead: what follows the match, in the sample too
            sub = _sample(av[1])
            if sub is None:
                return None
            out.append(sub)
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        else:
            return None
    return "".join(out)


def _in_sample(items: Any) -> str | None:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    if negate:
        for candidate in "aZ0_":
            if not any(_in_hit(op, av, candidate) for op, av in items):
                return candidate
        return None
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            return chr(av)
        if name == "RANGE":
            return chr(av[0])
        if name == "CATEGORY":
            return {"CATEGORY_SPACE": " ", "CATEGORY_DIGIT": "1", "CATEGORY_WORD": "a"}.get(
                str(av), "a" if "NOT" in str(av) else None
            )
    return None


def _in_hit(op: Any, av: Any, c: str) -> bool:
    name = str(op)
    if name == "LITERAL":
        return chr(av) == c
    if name == "RANGE":
        return bool(av[0] <= ord(c) <= av[1])
    if name == "CATEGORY":
        return bool(str(av) in ("CATEGORY_WORD", "CATEGORY_DIGIT") and c.isalnum())
    return False


def regex_sample(delimiter: Delimiter) -> str | None:
    """A string that the regex delimiter matches (whole, or up to what its lookaheads want to follow),
    or None when none could be built."""
    source = str(delimiter.source)
    try:
        # Python's parser refuses a group name used twice (``regex`` allows it): unname the groups.
        parsed = sre_parse.parse(re.sub(r"\(\?P<\w+>", "(?:", source), re.DOTALL)
        sample = _sample(parsed)
    except Exception:
        return None
    if not sample:
        return None
    match = delimiter.pattern.match(sample)
    if match is None or (match.end() == 0 and "(?=" not in source):
        return None
    return sample


def delimiter_samples(delimiter: Delimiter | None) -> list[str]:
    """What the delimiter matches: its literals, or one sample match of its regex."""
    if delimiter is None:
        return []
    if delimiter.literals is not None:
        return list(delimiter.literals)
    sample = regex_sample(delimiter)
    return [sample] if sample else []


@cache
def template_words(name: str) -> tuple[str, ...]:
    """The library template's delimiters as text: literals and sample matches of its regexes, plus the
    markup its regexes spell out (``library_checks.delimiter_words``)."""
    from library_checks import delimiter_words

    template = rt.templates.get(name)
    words = set(delimiter_words(template))
    for spec in template.fields:
        for delimiter in (spec.open, spec.close):
            words.update(delimiter_samples(delimiter))
        for key in spec.route or {}:  # json-envelope: the keys that route a whole-message JSON object
            words.add(f'{{"{key}": ' if key != "*" else "[{")
    words.update(('{"', '"}'))  # every template meets JSON
    return tuple(sorted(w for w in words if w))


def _opens(template: ResponseTemplate) -> list[tuple[FieldSpec, str, str]]:
    """(field, an open sample, a close sample or "") of every explicit field."""
    out = []
    for spec in template.fields:
        opens = delimiter_samples(spec.open)
        if not opens:
            continue
        closes = delimiter_samples(spec.close)
        out.append((spec, opens[0], closes[0] if closes else ""))
    return out


# ------------------------------------------------------------------------------------ hostile outputs

#: Control characters, NUL and other code points that trip naive code (BOM, line separators,
#: non-characters, the replacement character).
CONTROLS = "\x00\x01\x07\x08\x0b\x0c\x1b\x1f\x7f\x85\u2028\u2029\ufeff\ufffe\uffff\ufffd"
SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff", "\udfff\ud800")
#: Invalid UTF-8: a stray continuation byte, 0xFF, an overlong "/", an encoded surrogate, a code point
#: above U+10FFFF, a lead byte followed by ASCII.
BAD_BYTES = (b"\x80", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2(")


@dataclass(frozen=True)
class HostileOutput:
    """One hostile model output: ``text`` is ``str``, or ``bytes`` for invalid UTF-8. ``big`` outputs are
    fed whole and in random chunks only (one character at a time would take too long in CI)."""

    label: str
    text: str | bytes
    big: bool = False


def _call_json(payload: str) -> str:
    return '{"name": "f", "arguments": ' + payload + "}"


def hostile_outputs(name: str, sizes: Sizes = CI) -> list[HostileOutput]:
    """The hostile outputs of one library template (deterministic for a name and sizes)."""
    template = rt.templates.get(name)
    words = [w for w in template_words(name) if len(w) >= 2]
    opens = _opens(template)
    rng = random.Random(f"hostile-{name}")
    out: list[HostileOutput] = []
    out_labels: set[str] = set()

    # Runs of partial markers: each delimiter cut short and repeated; then all cuts mixed.
    cuts = sorted({w[:k] for w in words for k in {1, len(w) // 2, len(w) - 1} if k > 0})
    for w in words:
        cut = w[:-1]
        if f"run {cut!r}" in out_labels:
            continue
        out_labels.add(f"run {cut!r}")
        out.append(HostileOutput(f"run {cut!r}", cut * max(2, sizes.run_chars // len(cut))))
        out.append(HostileOutput(f"big run {cut!r}", cut * max(2, sizes.big_run_chars // len(cut)), big=True))
    if cuts:
        mixed = "".join(rng.choice(cuts) for _ in range(sizes.run_chars // 4))
        out.append(HostileOutput("mixed cuts", mixed))
        whole = "".join(w * 3 for w in words)
        out.append(HostileOutput("runs of whole delimiters", whole * max(1, sizes.run_chars // len(whole))))

    # Unclosed regions (a partial close at the very end), and every open in a row.
    for spec, open_, close in opens:
        tail = close[:-1] if len(close) > 1 else ""
        out.append(HostileOutput(f"unclosed {spec.name}", open_ + 'text {"a": "unclosed [' + tail))
    out.append(HostileOutput("every open, none closed", " x ".join(o for _, o, _ in opens) + " end"))

    # Deep JSON: balanced and unbalanced, bare and in every region.
    d, bd = sizes.depth, sizes.big_depth
    out.append(HostileOutput("deep json bare", "[" * d + "]" * d))
    out.append(HostileOutput("big deep json bare", "[" * bd + "]" * bd, big=True))
    out.append(HostileOutput("big deep objects bare", '{"a":' * bd, big=True))
    for spec, open_, close in opens:
        out.append(HostileOutput(f"deep json in {spec.name}", open_ + _call_json("[" * d + "]" * d) + close))
        out.append(HostileOutput(f"big deep json in {spec.name}", open_ + "[" * bd + close, big=True))

    # Huge integers.
    digits = "9" * sizes.digits
    out.append(HostileOutput("huge integer bare", digits))
    for spec, open_, close in opens:
        payload = '{"n": ' + digits + ', "e": 1e999999, "m": -' + digits + "}"
        out.append(HostileOutput(f"huge integer in {spec.name}", open_ + _call_json(payload) + close))
        out.append(HostileOutput(f"huge integer text in {spec.name}", open_ + digits + close))

    # Lone surrogates and control characters: between, inside and around delimiters.
    for label, alphabet in (("surrogates", "".join(SURROGATES)), ("controls", CONTROLS)):
        pieces = []
        for w in words:
            k = rng.randrange(1, len(w))
            pieces += [w[:k] + rng.choice(alphabet) + w[k:], w + rng.choice(alphabet), rng.choice(alphabet)]
        out.append(HostileOutput(f"{label} around delimiters", "".join(pieces)))
        for spec, open_, close in opens:
            body = _call_json('{"x": "' + alphabet + '", "\\ud800": "\\udfff\\u0000"}')
            out.append(HostileOutput(f"{label} in {spec.name}", open_ + alphabet + body + alphabet + close))

    # Invalid UTF-8, fed as bytes.
    sample = "".join(o + "é x 東 " + c for _, o, c in opens) or "plain é text 東"
    raw = sample.encode("utf-8")
    for bad in BAD_BYTES:
        k = rng.randrange(0, len(raw) + 1)
        out.append(HostileOutput(f"invalid utf-8 {bad!r}", raw[:k] + bad + raw[k:]))
    out.append(HostileOutput("utf-8 cut inside a character", raw + "é".encode()[:1]))
    return out


# ---------------------------------------------------------------------------------------- chunkings


def random_chunks(text: Any, rng: random.Random, longest: int = 64) -> list[Any]:
    """``text`` (str or bytes) cut into pieces of 1 to ``longest`` items at random."""
    from library_checks import random_pieces

    return random_pieces(text, rng, longest)


def chunkings(output: HostileOutput, seed: int = 0) -> dict[str, list[Any]]:
    """How an output is fed: whole, one item at a time (not for ``big`` ones) and in random chunks."""
    text = output.text
    rng = random.Random(f"{seed}-{output.label}")
    ways: dict[str, list[Any]] = {"whole": [text]}
    if not output.big:
        ways["1-char"] = [text[i : i + 1] for i in range(len(text))]
        ways["random"] = random_chunks(text, rng, 7)
    else:
        ways["random"] = random_chunks(text, rng, 4096)
    return ways


# ------------------------------------------------------------------------------------------- running


def canon(value: Any) -> Any:
    """``value`` as comparable text: key order kept, NaN equal to NaN, ``1``/``1.0``/``True`` told apart.

    JSON text rather than nested tuples, so that values nested as deep as the parser allows (512 levels)
    are compared without Python recursion in this harness.
    """
    return json.dumps(value, ensure_ascii=False, default=repr)


@dataclass
class StreamResult:
    """What one chunking of one output produced."""

    message: Any = None
    #: (class name, field, offset) of every error the parser recorded, in order
    errors: list[tuple[str, Any, Any]] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    #: the parsed stream: the prefix after the anchor, then the text (None for bytes)
    stream: str | None = None
    #: an exception outside the documented hierarchy, with where it came from
    untyped: str | None = None
    template_error: bool = False

    def key(self) -> Any:
        """What must not depend on the chunking."""
        from library_checks import event_summary

        summary = event_summary([e for e in self.events if str(e.get("type", "")).startswith("region")])
        return canon(self.message), tuple(self.errors), canon(summary)


def _describe(exc: BaseException, where: str) -> str:
    return f"{type(exc).__name__} from {where}: {str(exc)[:200]}"


def run_stream(
    template: ResponseTemplate, prefix: str, chunks: Sequence[Any], *, stop_on_template_error: bool = True
) -> StreamResult:
    """Feed ``chunks`` to a fresh parser and finalize; typed errors are recorded and the stream goes on
    (docs/spec.md 9.7), an untyped exception ends the run and is described in ``untyped``."""
    result = StreamResult()
    try:
        parser = rt.ResponseParser(template, prefix=prefix)
    except TYPED as exc:
        result.message = ("error", type(exc).__name__)
        result.template_error = isinstance(exc, rt.TemplateError)
        return result
    except BaseException as exc:
        result.untyped = _describe(exc, "ResponseParser()")
        return result
    events = result.events
    events += parser.initial_events
    if isinstance(chunks[0] if chunks else "", str):
        result.stream = prefix[len(prefix) - parser.prefix_length :] + "".join(chunks)
    for i, chunk in enumerate(chunks):
        try:
            events += parser.feed(chunk)
        except TYPED as exc:
            events += exc.events or []
            if isinstance(exc, rt.TemplateError):
                result.template_error = True
                if stop_on_template_error:
                    break
        except BaseException as exc:
            result.untyped = _describe(exc, f"feed (chunk {i})")
            return result
    try:
        message, final = parser.finalize()
        events += final
        result.message = canon(message)
    except TYPED as exc:
        events += exc.events or []
        partial = getattr(exc, "partial_message", None)
        if isinstance(exc, rt.ParseError) and partial is not None:
            # finalize always finishes the parser (docs/spec.md 9.8): the message without the failed
            # region is the result, whichever call reported the failure (9.6, 12.8).
            result.message = canon(partial)
        else:
            result.message = ("error", type(exc).__name__, getattr(exc, "field", None))
        result.template_error |= isinstance(exc, rt.TemplateError)
    except BaseException as exc:
        result.untyped = _describe(exc, "finalize")
        return result
    result.errors = [
        (type(e).__name__, getattr(e, "field", None), getattr(e, "offset", None)) for e in parser.errors
    ]
    return result


def parse_whole(template: ResponseTemplate, prefix: str, text: Any) -> tuple[Any, str | None]:
    """``parse_response``: (canonical message or ("error", class name), untyped description)."""
    try:
        return canon(rt.parse_response(text, template, prefix=prefix)), None
    except TYPED as exc:
        return ("error", type(exc).__name__), None
    except BaseException as exc:
        return None, _describe(exc, "parse_response")


# --------------------------------------------------------------------------------------- lost text


def _ends(delimiter: Delimiter, stream: str, pos: int) -> set[int]:
    """Where ``delimiter`` can end when it starts at ``pos``."""
    if delimiter.literals is not None:
        return {pos + len(lit) for lit in delimiter.literals if stream.startswith(lit, pos)}
    try:
        match = delimiter.pattern.match(stream, pos, timeout=1.0)
    except Exception:
        return set()
    return {match.end()} if match is not None else set()


def _first_ends(delimiter: Delimiter, stream: str, pos: int) -> set[int]:
    """Ends of the earliest match at or after ``pos`` (text before it was discarded, docs/spec.md 3.12)."""
    try:
        match = delimiter.pattern.search(stream, pos, timeout=1.0)
    except Exception:
        return set()
    return _ends(delimiter, stream, match.start()) | {match.end()} if match is not None else set()


def lost_text(template: ResponseTemplate, stream: str, events: Sequence[Mapping[str, Any]]) -> str | None:
    """None when every character of ``stream`` is accounted for by ``events``, else where it was lost.

    Walks the events keeping the set of stream positions they can have reached: a ``region_chunk`` must
    be the next text; a ``region_open`` of an explicit field consumes its open delimiter (outside every
    region of a template without an implicit field, after discarded text); a ``region_close`` consumes
    the close delimiter or nothing (end of stream, ``close_json``, the implicit field closed by an open).
    """
    positions = {0}
    depth = 0
    discards = template.implicit is None
    bare_close = template.implicit.close if template.implicit is not None else None

    def outside_closes(found: set[int]) -> set[int]:
        # Outside every region the implicit field's close is still watched (docs/spec.md 4.3): with no
        # segment open it is consumed without events.
        todo, seen = list(found), set(found)
        while todo and bare_close is not None and len(seen) < 10_000:
            for end in _ends(bare_close, stream, todo.pop()):
                if end not in seen:
                    seen.add(end)
                    todo.append(end)
        return seen

    for index, event in enumerate(events):
        kind = event.get("type")
        if depth == 0 and kind in ("region_open", "region_chunk"):
            positions = outside_closes(positions)
        if kind == "region_chunk":
            text = event["text"]
            new = {p + len(text) for p in positions if stream.startswith(text, p)}
            if not new and discards and depth == 0:
                new = {q + len(text) for q in [stream.find(text, min(positions))] if q >= 0}
        elif kind == "region_open":
            spec = template.by_name[event["field"]]
            if spec.open is None:
                new = set(positions)
            else:
                new = set()
                for p in positions:
                    new |= _ends(spec.open, stream, p)
                    if discards and depth == 0:
                        new |= _first_ends(spec.open, stream, p)
            depth += 1
        elif kind == "region_close":
            spec = template.by_name[event["field"]]
            new = set(positions)
            if spec.close is not None:
                for p in positions:
                    new |= _ends(spec.close, stream, p)
            depth = max(0, depth - 1)
        else:
            continue
        if not new:
            at = min(positions)
            return (
                f"event {index} {dict(event)!r:.200} does not follow the text at offset {at}: "
                f"{stream[at : at + 60]!r}"
            )
        positions = new
    if depth == 0:
        positions = outside_closes(positions)
    if len(stream) in positions or (discards and depth == 0):
        return None
    at = max(positions)
    return f"text after offset {at} is in no event: {stream[at : at + 80]!r} ({len(stream) - at} chars)"


# ----------------------------------------------------------------------------------- one full check


@dataclass
class Failure:
    """One failed check: ``kind`` is ``untyped``, ``lost`` or ``chunking``."""

    kind: str
    template: str
    label: str
    chunking: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.template} / {self.label} / {self.chunking}: {self.detail}"


def check_output(
    name: str, template: ResponseTemplate, prefix: str, output: HostileOutput, seed: int = 0
) -> list[Failure]:
    """Every check of the suite for one output: typed errors only, nothing lost, the same result in
    every chunking (and the same message as ``parse_response``)."""
    failures: list[Failure] = []
    results: dict[str, StreamResult] = {}
    for way, chunks in chunkings(output, seed).items():
        res = run_stream(template, prefix, chunks)
        results[way] = res
        if res.untyped:
            failures.append(Failure("untyped", name, output.label, way, res.untyped))
            continue
        if res.stream is not None and not res.template_error:
            lost = lost_text(template, res.stream, res.events)
            if lost:
                failures.append(Failure("lost", name, output.label, way, lost))
    whole_msg, untyped = parse_whole(template, prefix, output.text)
    if untyped:
        failures.append(Failure("untyped", name, output.label, "parse_response", untyped))
    good = {w: r for w, r in results.items() if not r.untyped and not r.template_error}
    if isinstance(output.text, bytes):
        # Invalid UTF-8 is rejected per chunk (docs/spec.md 2.5): what is consumed depends on the chunk,
        # but every chunking reports it, with the same error class.
        seen = {
            w: {e[0] for e in r.errors} | ({r.message[1]} if _is_error(r.message) else set())
            for w, r in good.items()
        }
        if len({frozenset(s) for s in seen.values()}) > 1:
            failures.append(Failure("chunking", name, output.label, "all", f"error classes differ: {seen}"))
        return failures
    keys = {w: r.key() for w, r in good.items()}
    if "whole" in keys:
        for way, key in keys.items():
            if key != keys["whole"]:
                failures.append(
                    Failure("chunking", name, output.label, way, _first_key_difference(keys["whole"], key))
                )
        res = good["whole"]
        if not untyped and not res.errors and not _is_error(res.message) and whole_msg != res.message:
            failures.append(Failure("chunking", name, output.label, "parse_response", "message differs"))
    return failures


def _is_error(message: Any) -> bool:
    return isinstance(message, tuple) and len(message) >= 2 and message[0] == "error"


def _first_key_difference(a: Any, b: Any) -> str:
    names = ("message", "errors", "events")
    for label, x, y in zip(names, a, b, strict=True):
        if x != y:
            return f"{label} differ: whole {str(x)[:300]} vs {str(y)[:300]}"
    return "differ"


def prompts(name: str) -> list[str]:
    """The family's generation prompt and those of its variants (distinct, in order)."""
    fam = library.family(name)
    out = [fam.generation_prompt]
    for variant in fam.variants:
        if variant.generation_prompt not in out:
            out.append(variant.generation_prompt)
    return out


# ------------------------------------------------------------------------------- hostile templates

#: Patterns with catastrophic backtracking on runs of ``a``.
CATASTROPHIC = (
    "(?:a|aa)+c",
    "(?:(?:a|a)+)+b",
    "(a+)+$",
    "(?:a|a)*b",
    "(?:a*)*b",
    r"(?:\w+\s?)+$",
    "(?:.*a){12}c",
)
#: A run of ``a`` with no ending, fed to them.
CATASTROPHIC_TEXT = "a" * 40 + "!"


def catastrophic_cases() -> Iterator[tuple[str, dict[str, Any], str, str]]:
    """(label, template, prefix, text) with each catastrophic pattern in each pattern-taking key:
    ``open_pattern``, ``close_pattern`` (explicit and implicit field), ``start_anchor_pattern`` and the
    ``xml-inline`` ``tag_pattern`` (in ``key`` and in ``value``)."""
    text = CATASTROPHIC_TEXT
    for pat in CATASTROPHIC:
        base: dict[str, Any] = {"start_anchor": "<A>", "fields": {"content": {}}}
        yield (
            f"open_pattern {pat}",
            {**base, "fields": {"x": {"open_pattern": pat, "close": "</x>"}, "content": {}}},
            "",
            text,
        )
        yield (
            f"close_pattern {pat}",
            {**base, "fields": {"x": {"open": "<x>", "close_pattern": pat}, "content": {}}},
            "",
            "<x>" + text,
        )
        yield (
            f"implicit close_pattern {pat}",
            {**base, "fields": {"x": {"open": "<x>", "close": "</x>"}, "content": {"close_pattern": pat}}},
            "",
            text,
        )
        yield (
            f"start_anchor_pattern {pat}",
            {"start_anchor_pattern": pat, "fields": {"content": {}}},
            text,
            text,
        )
        for group in ("key", "value"):
            other = "value" if group == "key" else "key"
            tag = f"<p>(?P<{group}>{pat})(?P<{other}>[^<]*)</p>"
            xml_field = {
                "open": "<x>",
                "close": "</x>",
                "content": "xml-inline",
                "content_args": {"tag_pattern": tag},
            }
            yield (
                f"tag_pattern {group} {pat}",
                {**base, "fields": {"x": xml_field, "content": {}}},
                "",
                "<x><p>" + text + "</p></x>",
            )


#: Templates that blow up at load time: huge literals and counts, deep nesting, many fields. Each is run
#: in a child process with a memory cap (:func:`run_isolated`). Values are Python expressions of ``n``
#: (the size), built in the child.
BLOWUPS: dict[str, str] = {
    "1 MB literal open": "{'start_anchor': '<A>', 'fields': {'x': {'open': 'x' * n, 'close': '</x>'}, 'content': {}}}",
    "1 MB literal close": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': 'y' * n}, 'content': {}}}",
    "1 MB literal start_anchor": "{'start_anchor': 'z' * n, 'fields': {'content': {}}}",
    "1 MB literal implicit close": "{'start_anchor': '<A>', 'fields': {'content': {'close': 'w' * n}}}",
    "1 MB open_pattern literal": "{'start_anchor': '<A>', 'fields': {'x': {'open_pattern': 'x' * n, 'close': '</x>'}, 'content': {}}}",
    "1 MB string_delims": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': '</x>', 'content': 'json', 'content_args': {'string_delims': [['q' * n, 'r' * n]]}}, 'content': {}}}",
    "100 KB literal open": "{'start_anchor': '<A>', 'fields': {'x': {'open': 'x' * (n // 10), 'close': '</x>'}, 'content': {}}}",
    "100 KB literal close": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': 'y' * (n // 10)}, 'content': {}}}",
    "100 KB literal start_anchor": "{'start_anchor': 'z' * (n // 10), 'fields': {'content': {}}}",
    "100 KB open_pattern literal": "{'start_anchor': '<A>', 'fields': {'x': {'open_pattern': 'x' * (n // 10), 'close': '</x>'}, 'content': {}}}",
    "100 KB tag_pattern": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': '</x>', 'content': 'xml-inline', 'content_args': {'tag_pattern': '(?P<key>' + 'k' * (n // 10) + ')(?P<value>v)'}}, 'content': {}}}",
    "100 KB kv_sep": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': '</x>', 'content': 'kv-lines', 'content_args': {'kv_sep': ':' * (n // 10)}}, 'content': {}}}",
    "5000 literals": "{'start_anchor': '<A>', 'fields': {'x': {'open': [f'<x{i}>' for i in range(5000)], 'close': '</x>'}, 'content': {}}}",
    "open_pattern a{1000000000}": "{'start_anchor': '<A>', 'fields': {'x': {'open_pattern': 'a{1000000000}', 'close': '</x>'}, 'content': {}}}",
    "close_pattern a{1000000000}": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close_pattern': 'a{1000000000}'}, 'content': {}}}",
    "start_anchor_pattern a{1000000000}": "{'start_anchor_pattern': 'a{1000000000}', 'fields': {'content': {}}}",
    "tag_pattern a{1000000000}": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': '</x>', 'content': 'xml-inline', 'content_args': {'tag_pattern': '(?P<key>a{1000000000})(?P<value>b)'}}, 'content': {}}}",
    "open_pattern nested counts": "{'start_anchor': '<A>', 'fields': {'x': {'open_pattern': '(?:(?:(?:a{1000}){1000}){1000})', 'close': '</x>'}, 'content': {}}}",
    "close_pattern nested counts": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close_pattern': '(?:(?:(?:b{1000}){1000}){1000})'}, 'content': {}}}",
    "tag_pattern nested counts": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': '</x>', 'content': 'xml-inline', 'content_args': {'tag_pattern': '(?P<key>(?:(?:a{1000}){1000}){1000})(?P<value>b)'}}, 'content': {}}}",
    "open_pattern nested 100000 groups": "{'start_anchor': '<A>', 'fields': {'x': {'open_pattern': '(?:' * 100000 + 'a' + ')' * 100000, 'close': '</x>'}, 'content': {}}}",
    "json string nested 100000 deep": '\'{"start_anchor": "<A>", "fields": {"content": {"transform": \' + \'[\' * 100000 + \']\' * 100000 + \'}}}\'',
    "transform nested 100000 deep": "{'start_anchor': '<A>', 'fields': {'content': {'transform': deep(100000)}}}",
    "defaults nested 100000 deep": "{'start_anchor': '<A>', 'defaults': {'d': deep(100000)}, 'fields': {'content': {}}}",
    "content_args nested 100000 deep": "{'start_anchor': '<A>', 'fields': {'content': {'content': 'json', 'content_args': {'x': deep(100000)}}}}",
    "value_parser nested 100000 deep": "{'start_anchor': '<A>', 'fields': {'x': {'open': '<x>', 'close': '</x>', 'content': 'kv-lines', 'content_args': {'value_parser': deep_parser(100000)}}, 'content': {}}}",
    "1000 regex fields": "{'start_anchor': '<A>', 'fields': {**{f'f{i}': {'open_pattern': f'<f{i}(?:a|b)>', 'close': '</f>'} for i in range(999)}, 'content': {}}}",
    "10000 regex fields": "{'start_anchor': '<A>', 'fields': {**{f'f{i}': {'open_pattern': f'<f{i}(?:a|b)>', 'close': '</f>'} for i in range(10000)}, 'content': {}}}",
}

#: The text parsed with a blow-up template that loaded.
BLOWUP_TEXT = "<x>a</x> xxxx yyyy aaaa <f1a>b</f> <p>q</p> tail"


def _deep(n: int) -> Any:
    value: Any = "{content}"
    for _ in range(n):
        value = [value]
    return value


def _deep_parser(n: int) -> Any:
    value: Any = {"name": "text"}
    for _ in range(n):
        value = {"name": "kv-lines", "args": {"value_parser": value}}
    return value


def isolated_case(label: str, size: int = 1_000_000) -> dict[str, Any]:
    """Load the blow-up template ``label`` and parse :data:`BLOWUP_TEXT` with it, in this process.

    Returns ``{"outcome": "ok" | "typed" | "untyped", "exception": ..., "message": ..., "stage": ...}``.
    """
    stage = "build"
    try:
        spec = eval(BLOWUPS[label], {"n": size, "deep": _deep, "deep_parser": _deep_parser})
        stage = "load_template"
        template = rt.load_template(spec)
        stage = "parse_response"
        rt.parse_response(BLOWUP_TEXT, template, prefix="<A>")
        stage = "stream"
        parser = rt.ResponseParser(template, prefix="<A>")
        for ch in BLOWUP_TEXT:
            parser.feed(ch)
        parser.finalize()
    except TYPED as exc:
        return {
            "outcome": "typed",
            "stage": stage,
            "exception": type(exc).__name__,
            "message": str(exc)[:300],
        }
    except BaseException as exc:
        return {
            "outcome": "untyped",
            "stage": stage,
            "exception": type(exc).__name__,
            "message": str(exc)[:300],
        }
    return {"outcome": "ok", "stage": stage, "exception": None, "message": ""}


def _child_main() -> None:  # pragma: no cover - runs in the child process
    import resource

    size, limit, labels = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for label in labels:
        print(json.dumps({"label": label, **isolated_case(label, size)}), flush=True)


def run_isolated(
    labels: Sequence[str], size: int = 1_000_000, *, timeout: float = 20, memory: int = 3 << 30
) -> dict[str, dict[str, Any]]:
    """:func:`isolated_case` for each label, in child processes limited to ``memory`` bytes of address
    space: one child runs the cases in turn, and a case that takes over ``timeout`` seconds, or kills
    its child, is an ``untyped`` outcome (the child is killed and a new one takes the remaining cases).
    """
    import queue
    import threading

    code = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); import hostile_inputs; hostile_inputs._child_main()"
    )
    results: dict[str, dict[str, Any]] = {}
    todo = list(labels)
    while todo:
        argv = [sys.executable, "-c", code, str(HERE), str(size), str(memory), *todo]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump(stream: Any = proc.stdout, out: queue.Queue[str | None] = lines) -> None:
            for line in stream:
                out.put(line)
            out.put(None)

        threading.Thread(target=pump, daemon=True).start()
        while todo:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                proc.wait()
                results[todo.pop(0)] = {
                    "outcome": "untyped",
                    "stage": "?",
                    "exception": "timeout",
                    "message": f"over {timeout} s",
                }
                break
            if line is None:  # the child died
                code_ = proc.wait()
                tail = (proc.stderr.read() if proc.stderr else "").strip().splitlines()[-1:] or [""]
                results[todo.pop(0)] = {
                    "outcome": "untyped",
                    "stage": "?",
                    "exception": f"exit code {code_}",
                    "message": tail[0][:300],
                }
                break
            if line.startswith("{"):
                record = json.loads(line)
                label = record.pop("label")
                results[label] = record
                todo.remove(label)
        else:
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    return results


# --------------------------------------------------------------------------------- type mutations

#: Values of every JSON type and a few that are not JSON at all.
ODD_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    2**100,
    1.5,
    float("nan"),
    float("inf"),
    "",
    "x",
    "\x00",
    "\ud800",
    "(",
    "{content}",
    "{",
    [],
    [None],
    ["<a>", 1],
    {},
    {"open": "<x>"},
    {"name": 1},
    (1, 2),
    b"bytes",
    {1, 2},
    object(),
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def mutate(template: Mapping[str, Any], rng: random.Random, steps: int = 1) -> Any:
    """A copy of ``template`` with ``steps`` random mutations: a value replaced by one of another type, a
    key removed, renamed or added, a list item dropped or duplicated."""
    data: Any = _copy(template)
    for _ in range(steps):
        paths = list(_paths(data))
        path = rng.choice(paths)
        if not path:
            if rng.random() < 0.1:
                return _copy(rng.choice(ODD_VALUES))
            continue
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        op = rng.random()
        if op < 0.6:
            # a copy: a shared list or dict of ODD_VALUES would grow with every later mutation of it
            parent[last] = _copy(rng.choice(ODD_VALUES))
        elif op < 0.75:
            del parent[last]
        elif op < 0.9 and isinstance(parent, dict):
            parent[rng.choice(["", "open ", "x" * 3, str(last).upper(), "open_pattern", "close", "into"])] = (
                parent.pop(last)
            )
        elif isinstance(parent, list):
            parent.insert(last, _copy(parent[last]))
        else:
            parent[last] = [parent[last]]
    return data


def library_template_data(name: str) -> dict[str, Any]:
    """The library template as plain data (a fresh copy)."""
    return rt.templates.get(name).to_dict()

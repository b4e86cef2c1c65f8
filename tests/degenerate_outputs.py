"""Degenerate model outputs for the library templates (issue 11, failure class 8): a model that loops on
its own markup.

A model stuck in a loop writes one marker (``<function=``) over and over, a marker cut short, two markers
in turn, or a marker between bits of text, for 100 KB or more. Every library template must read such an
output in time linear in its length, whole and streamed. This module builds those outputs from each
template's own markers; ``tests/library/test_library_degenerate.py`` checks them at small sizes and
``benchmarks/bench_families.py --degenerate`` times them at 100 KB and 1 MB.

Markers of a template (:func:`markers`): its literal delimiters and start anchor, one sample match of each
regex delimiter, the literal pieces that a regex spells out (``<function=`` and ``>`` of
``<function=(?P<name>[^>\\n]+)>``), the markup it contains, and the same for the delimiters that content
parsers use inside a region (``tag_pattern``, ``string_delims``, a nested ``tag_prefix``).

Outputs (:func:`degenerate_outputs`), each a :class:`Degenerate` whose ``unit`` is repeated up to the
requested size (:meth:`Degenerate.text`):

* ``rep M``: a marker repeated; ``rep M[:-1]`` and ``rep M[:k]``: the marker cut short, repeated;
* ``rep M+a``: the marker followed by a name character (``<function=a<function=a...``);
* ``rep M+text``: the marker between words;
* ``alt ...``: all markers in turn, all cuts in turn, each open marker with each other marker (the
  last only with ``pairs``: there are many);
* ``in F: ...``: an explicit field's open delimiter, then the cuts of every marker repeated (a region that
  never closes, so its content parser reads the whole run);
* plain runs: one letter, words without markup, newlines, ``<``, quotes;
* ``+ends``: a run followed by the last character of every marker and a newline (a pattern that scans a
  run to its end for the character that closes a name finds one there).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import response_templates as rt
from response_templates import library
from response_templates.matching import Delimiter, regex_literal_prefix

_HOSTILE = Path(__file__).resolve().parent / "hostile"
if str(_HOSTILE) not in sys.path:  # the hostile-input helpers: delimiter samples, stream checks
    sys.path.insert(0, str(_HOSTILE))

import hostile_inputs  # noqa: E402

try:  # Python >= 3.11
    import re._parser as sre_parse  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef,unused-ignore]

KB = 1024


@dataclass(frozen=True)
class Degenerate:
    """One degenerate output: ``unit`` repeated (after ``head``) up to a size."""

    label: str
    unit: str
    head: str = ""
    tail: str = ""

    def text(self, size: int) -> str:
        """``head``, whole copies of ``unit`` up to ``size`` characters (at least two), then ``tail``."""
        count = max(2, (size - len(self.head) - len(self.tail)) // max(1, len(self.unit)))
        return self.head + self.unit * count + self.tail


# ------------------------------------------------------------------------------------------ markers


def literal_pieces(pattern: str) -> list[str]:
    """The runs of literal text a regex spells out, in every branch (``<function=`` and ``>`` of
    ``<function=(?P<name>[^>\\n]+)>``); empty when Python's parser cannot read the pattern."""
    try:
        parsed = sre_parse.parse(re.sub(r"\(\?P<\w+>", "(?:", pattern), re.DOTALL)
    except Exception:
        return []
    out: list[str] = []

    def walk(items: Any) -> None:
        run: list[str] = []
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                run.append(chr(av))
                continue
            if run:
                out.append("".join(run))
                run = []
            if name == "SUBPATTERN":
                walk(av[-1])
            elif name == "ATOMIC_GROUP":
                walk(av)
            elif name == "BRANCH":
                for branch in av[1]:
                    walk(branch)
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                walk(av[2])
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(av[1])
        if run:
            out.append("".join(run))

    walk(parsed)
    return [p for p in out if p.strip()]


def _pattern_markers(pattern: str) -> set[str]:
    words = set(literal_pieces(pattern))
    prefix = regex_literal_prefix(pattern)
    if prefix:
        words.add(prefix)
    try:
        delimiter = Delimiter.regex(pattern, field="x", kind="open", key="tag_pattern")
    except rt.TemplateError:
        return words
    sample = hostile_inputs.regex_sample(delimiter)
    if sample:
        words.add(sample)
    return words


def _content_markers(args: Any) -> set[str]:
    """Delimiters that content parsers look for inside a region (from a field's ``content_args``)."""
    words: set[str] = set()
    if not isinstance(args, dict):
        return words
    for key, value in args.items():
        if key == "tag_pattern" and isinstance(value, str):
            words |= _pattern_markers(value)
        elif key == "string_delims" and isinstance(value, list):
            for pair in value:
                if isinstance(pair, (list, tuple)):
                    words.update(v for v in pair if isinstance(v, str))
        elif key in ("tag_prefix", "name_suffix", "kv_sep", "item_tag") and isinstance(value, str):
            words.add(value)
        elif isinstance(value, dict):
            words |= _content_markers(value)
    return words


@cache
def markers(name: str) -> tuple[str, ...]:
    """Every marker of the library template ``name`` (see the module docstring), longest first."""
    template = rt.templates.get(name)
    words = set(hostile_inputs.template_words(name))
    for delimiter in [template.start_anchor, *(d for f in template.fields for d in (f.open, f.close))]:
        if delimiter is None:
            continue
        if delimiter.literals is not None:
            words.update(delimiter.literals)
        else:
            words |= _pattern_markers(str(delimiter.source))
    for spec in template.fields:
        words |= _content_markers(spec.content_args)
    words = {w for w in words if w and not w.isspace()}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


def cuts(marker: str) -> list[str]:
    """The marker cut short: to one character less and to half (distinct, non-empty)."""
    out = []
    for k in (len(marker) - 1, len(marker) // 2):
        if k >= 1 and marker[:k] not in out:
            out.append(marker[:k])
    return out


def open_samples(name: str) -> list[tuple[str, str]]:
    """(field, a text its open delimiter matches) for every explicit field of the template."""
    out = []
    for spec in rt.templates.get(name).fields:
        samples = hostile_inputs.delimiter_samples(spec.open)
        if samples:
            out.append((spec.name, samples[0]))
    return out


# ------------------------------------------------------------------------------------------ outputs

#: Plain runs: no markup at all, a letter, words, newlines, and characters that start markup.
PLAIN = (
    Degenerate("plain a", "a"),
    Degenerate("plain words", "the model keeps talking "),
    Degenerate("plain newlines", "\n"),
    Degenerate("plain spaces", " "),
    Degenerate("plain <", "<"),
    Degenerate("plain quotes", '"'),
    Degenerate("plain braces", "{}"),
)


def _unique(items: Iterable[Degenerate]) -> Iterator[Degenerate]:
    seen: set[tuple[str, str, str]] = set()
    for item in items:
        key = (item.head, item.unit, item.tail)
        if item.unit and key not in seen:
            seen.add(key)
            yield item


@cache
def degenerate_outputs(name: str, pairs: bool = False, full: bool = True) -> tuple[Degenerate, ...]:
    """The degenerate outputs of the library template ``name`` (deterministic, labels unique); with
    ``pairs``, also each open delimiter alternated with each other marker (many more outputs). Without
    ``full`` (the quick set, for CI), each marker gets four runs instead of eight: itself, cut by one
    character, followed by a name character and the closing characters, and between words."""
    words = markers(name)
    # What ends a marker: a run that a pattern scans to its end may find it there (after the run).
    ends = "".join(sorted({m[-1] for m in words} | {"\n"}))
    out: list[Degenerate] = []
    for plain in PLAIN:
        out += [plain, Degenerate(plain.label + " +ends", plain.unit, tail=ends)]
    for m in words:
        out.append(Degenerate(f"rep {m!r}", m))
        for cut in cuts(m) if full else cuts(m)[:1]:
            out.append(Degenerate(f"rep {cut!r}", cut))
            if full:
                out.append(Degenerate(f"rep {cut!r} +ends", cut, tail=ends))
        if full:
            out.append(Degenerate(f"rep {m!r}+a", m + "a"))
        out.append(Degenerate(f"rep {m!r}+a +ends", m + "a", tail=ends))
        out.append(Degenerate(f"rep {m!r}+text", m + " so "))
    all_cuts = [c for m in words for c in cuts(m)]
    out.append(Degenerate("alt markers", "".join(words)))
    out.append(Degenerate("alt cuts", "".join(all_cuts)))
    out.append(Degenerate("alt markers+text", " x ".join(words) + " x "))
    opens = open_samples(name)
    for field, sample in opens:
        for m in words if pairs else ():
            if m != sample:
                out.append(Degenerate(f"alt {sample!r} {m!r}", sample + m))
        out.append(Degenerate(f"in {field}: alt cuts", "".join(all_cuts) or "x", head=sample))
        out.append(Degenerate(f"in {field}: alt markers", "".join(words), head=sample))
    return tuple(_unique(out))


# ------------------------------------------------------------------------------- stop-token runs

#: End-of-turn and end-of-text tokens that models loop on (issue 28, item 12), whether or not a template
#: names them: a model that does not stop writes its stop token again and again.
STOP_TOKENS = (
    "<|im_end|>",
    "</s>",
    "<｜end▁of▁sentence｜>",
    "<eos>",
    "<|EOT|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end|>",
    "<end_of_turn>",
)
#: What a normal answer starts with, before the loop.
NORMAL_START = "Sure, here is the answer. "
#: The real chat templates of the library families (their special tokens are stop-token candidates).
CHAT_TEMPLATES = Path(__file__).resolve().parent / "data" / "chat_templates"
#: Special tokens as chat templates write them: ``<|...|>``, ``<｜...｜>``, ``<...|>``, ``<|...>``,
#: ``[|...|]``, and the plain ``</s>``, ``<eos>``, ``<end_of_turn>`` / ``<start_of_turn>``.
_SPECIAL_TOKEN = re.compile(
    r"<\|[^|<>\s]{1,40}\|>|<｜[^｜<>]{1,40}｜>|<[a-z_]{1,40}\|>|<\|[a-z_]{1,40}>|\[\|[a-z]{1,40}\|\]"
    r"|</?s>|<eos>|<bos>|<(?:end|start)_of_turn>"
)


def chat_template_tokens(name: str) -> set[str]:
    """The special tokens that the real chat templates of the library family ``name`` write (turn
    markers, end-of-turn and end-of-text tokens), from ``tests/data/chat_templates``."""
    found: set[str] = set()
    for file in library.family(name).chat_templates:
        path = CHAT_TEMPLATES / file
        if path.is_file():
            found.update(_SPECIAL_TOKEN.findall(path.read_text(encoding="utf-8")))
    return found


@cache
def stop_tokens(name: str) -> tuple[str, ...]:
    """Every delimiter and stop token of the library template ``name``, longest first: its markers (see
    :func:`markers`: delimiters, the markup its patterns spell out, sample matches), the family's
    detection markers and stop strings (``markers``, ``round_trip.stop``, ``round_trip.eos_token`` in its
    library file), the special tokens of its real chat templates (:func:`chat_template_tokens`) and the
    usual stop tokens of other families (:data:`STOP_TOKENS`)."""
    family = library.family(name)
    tokens = set(markers(name)) | set(STOP_TOKENS) | chat_template_tokens(name)
    for rule in family.markers:
        tokens.update(rule)
    options = family.round_trip_options()
    tokens.update(t for t in options.get("stop", ()) if isinstance(t, str))
    if isinstance(options.get("eos_token"), str):
        tokens.add(options["eos_token"])
    return tuple(sorted((t for t in tokens if t and not t.isspace()), key=lambda w: (-len(w), w)))


@cache
def stop_token_runs(name: str, after_text: bool = True) -> tuple[Degenerate, ...]:
    """A model looping on one delimiter or stop token of the template ``name`` (:func:`stop_tokens`):
    each token repeated right after the prompt, after a normal start (:data:`NORMAL_START`; without
    ``after_text``, not), and inside each explicit field's region (after a sample of its open
    delimiter: in the reasoning, in a tool call). Labels are ``stop {token!r}`` then where."""
    heads = [("", "")] + ([("after text", NORMAL_START)] if after_text else [])
    heads += [(f"in {field}", sample) for field, sample in open_samples(name)]
    out = [
        Degenerate(f"stop {token!r}" + (f" {where}" if where else ""), token, head=head)
        for token in stop_tokens(name)
        for where, head in heads
    ]
    return tuple(_unique(out))

"""Internal: scoring a chat template against the families' markers (used by :func:`library.detect_all`).

A family is recognised by the strings its chat template renders, not by the template's exact text:

* its **marker rules** (``markers`` in the family's JSON file), the curated strings that identify it;
* its **delimiters**: the special tokens of its response template (literal ``open``/``close``, the
  ``start_anchor``, and tokens such as ``<|im_end|>`` or ``[TOOL_CALLS]`` inside patterns).

Matching ignores whitespace (a fork that re-indents a line or breaks a string keeps its markers). A
family's **score** is the share of its best marker rule that is present, raised for the part it misses
by its delimiters (up to :data:`DELIMITER_SHARE` of the gap; each delimiter weighted by its rarity,
``1 / number of formats that use it``, so a token every ChatML model renders counts for little). Its
**confidence** is ``score * (1 - (rival / score) ** 2)`` where ``rival`` is the best score of a family of
another format that it does not explain (:func:`_explains`). :func:`decide` picks the answer: the most
specific complete rule, or a partial match that is good and far enough ahead (docs/detection.md).
Nothing here imports the rest of the library: the caller passes one :class:`Profile` per family.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = [
    "DELIMITER_SHARE",
    "EVIDENCE_RATIO",
    "MIN_CONFIDENCE",
    "MIN_SCORE",
    "Profile",
    "Score",
    "compact",
    "confidence",
    "decide",
    "profile_tokens",
    "rank",
]

#: A family whose score is below this is not a candidate (too few of its markers are present).
MIN_SCORE = 0.6
#: The best candidate is the answer only when its confidence reaches this; else the match is ambiguous.
MIN_CONFIDENCE = 0.4
#: Two complete rules with as many markers: the winner needs this many times the other's evidence.
EVIDENCE_RATIO = 1.25
#: How much of the part its best marker rule misses a family can make up by its delimiters.
DELIMITER_SHARE = 0.5

_WHITESPACE = re.compile(r"\s+")
# Special-token shapes: <|x|>, <｜x｜> (DeepSeek's full-width bars), <|x>, <x|>, [X], <x>, </x>, <x:y>.
_TOKEN = re.compile(
    r"<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|<\|[A-Za-z_]{2,30}>|<[A-Za-z_]{2,30}\|>"
    r"|\[/?[A-Z][A-Z_]{1,30}\]|</?[A-Za-z][\w:.\-]{1,30}>|\]~[a-z]\]"
)
# Regex escapes removed before looking for tokens in a pattern (``<\|im_end\|>`` -> ``<|im_end|>``).
_ESCAPE = re.compile(r"\\([\[\]|.^$*+?(){}\\/-])")
# Regex syntax that looks like a tag: named groups and look-behinds.
_GROUP = re.compile(r"\(\?P?<[=!]?\w*>?|\(\?P=\w+\)")
_TEMPLATE_KEYS = ("open", "close", "open_pattern", "close_pattern", "start_anchor")


def compact(text: str) -> str:
    """``text`` without any whitespace: what matching compares."""
    return _WHITESPACE.sub("", text)


_marker = cache(compact)  # markers are few and asked for on every template


@dataclass(frozen=True)
class Profile:
    """What identifies one family: its marker rules and its delimiter tokens."""

    name: str
    #: The family whose template it uses (itself unless the format is shared).
    format: str
    rules: tuple[tuple[str, ...], ...]
    delimiters: tuple[str, ...]


@dataclass(frozen=True)
class Score:
    """How well one family's profile matches a chat template."""

    name: str
    format: str
    score: float
    confidence: float
    #: Markers of the best rule that are present / absent, and delimiter tokens present.
    matched: tuple[str, ...]
    missing: tuple[str, ...]
    delimiters: tuple[str, ...]
    #: Markers found and their total length: ranks families whose rules match equally completely.
    specificity: tuple[int, int]
    #: Rarity-weighted sum of the markers and delimiters found.
    evidence: float


def profile_tokens(template: Mapping[str, Any] | None, prompts: Iterable[str]) -> tuple[str, ...]:
    """The delimiter tokens of a response template (as JSON data) and of the family's generation prompts."""
    strings: list[str] = list(prompts)
    if template is not None:
        strings.extend(_template_strings(template))
    found: dict[str, None] = {}
    for text in strings:
        for token in _TOKEN.findall(_ESCAPE.sub(r"\1", _GROUP.sub("", text))):
            found.setdefault(compact(token), None)
    return tuple(token for token in found if len(token) >= 3)


def _template_strings(template: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    anchor = template.get("start_anchor")
    if isinstance(anchor, str):
        out.append(anchor)
    fields = template.get("fields", {})
    if isinstance(fields, Mapping):
        for spec in fields.values():
            if not isinstance(spec, Mapping):
                continue
            for key in _TEMPLATE_KEYS:
                value = spec.get(key)
                values = value if isinstance(value, list) else [value]
                out.extend(v for v in values if isinstance(v, str))
    return out


@cache
def _weights(profiles: tuple[Profile, ...]) -> dict[str, float]:
    """Token -> 1 / (number of formats whose markers or delimiters contain it)."""
    users: dict[str, set[str]] = {}
    for prof in profiles:
        for token in {compact(m) for rule in prof.rules for m in rule} | set(prof.delimiters):
            users.setdefault(token, set()).add(prof.format)
    return {token: 1.0 / len(formats) for token, formats in users.items()}


def _score_one(prof: Profile, text: str, weights: Mapping[str, float]) -> Score | None:
    best: tuple[float, int, int, tuple[str, ...], tuple[str, ...]] | None = None
    for rule in prof.rules:
        if not rule:
            continue
        present = tuple(m for m in rule if _marker(m) in text)
        absent = tuple(m for m in rule if _marker(m) not in text)
        # The share present, then the specificity: more markers, then more characters.
        candidate = (len(present) / len(rule), len(present), sum(map(len, present)), present, absent)
        if best is None or candidate[:3] > best[:3]:
            best = candidate
    if best is None or not best[3]:
        return None
    coverage, count, chars, present, absent = best
    delims = tuple(d for d in prof.delimiters if d in text)
    total_d = sum(weights[d] for d in prof.delimiters)
    support = sum(weights[d] for d in delims) / total_d if total_d else 0.0
    score = coverage + (1.0 - coverage) * DELIMITER_SHARE * support
    evidence = sum(weights[t] for t in {_marker(m) for m in present} | set(delims))
    return Score(
        prof.name, prof.format, round(score, 4), 0.0, present, absent, delims, (count, chars), evidence
    )


def _explains(a: Score, b: Score) -> bool:
    """Whether ``a``, a complete rule, accounts for what ``b`` found: each marker ``b`` found is (part of)
    a marker or delimiter ``a`` found, or ``b``'s rule is complete too but has fewer markers (or as many
    and clearly less evidence)."""
    if a.missing or b.score > a.score:
        return False
    found = [_marker(t) for t in (*a.matched, *a.delimiters)]
    if all(any(_marker(m) in t for t in found) for m in b.matched):
        return True
    if b.missing:
        return False
    count_a, count_b = a.specificity[0], b.specificity[0]
    return count_a > count_b or (count_a == count_b and a.evidence >= EVIDENCE_RATIO * b.evidence)


def confidence(score: float, rival: float) -> float:
    """``score`` lowered by how close the best rival comes: ``score * (1 - (rival / score) ** 2)``.

    >>> confidence(1.0, 0.0), confidence(1.0, 0.5), confidence(0.8, 0.8)
    (1.0, 0.75, 0.0)
    """
    if score <= 0.0 or rival >= score:
        return 0.0
    return score * (1.0 - (rival / score) ** 2)


def decide(ranked: Sequence[Score]) -> tuple[Score | None, list[Score]]:
    """The answer among ranked scores, or ``None`` and the contenders (several formats: ambiguous).

    A complete marker rule decides, if it explains every other complete rule of another format (the old
    rule: the most specific complete rule wins). Without one, the best partial match must score
    :data:`MIN_SCORE` and be :data:`MIN_CONFIDENCE` ahead of the other formats.
    """
    complete = [s for s in ranked if not s.missing]
    if complete:
        top = max(complete, key=lambda s: (s.specificity[0], s.evidence, s.specificity[1]))
        rivals = [s for s in complete if s.format != top.format and not _explains(top, s)]
        return (None, [top, *rivals]) if rivals else (top, [])
    good = [s for s in ranked if s.score >= MIN_SCORE]
    if not good:
        return None, []
    top = max(good, key=lambda s: (s.confidence, s.score))
    if top.confidence >= MIN_CONFIDENCE:
        return top, []
    return None, sorted(good, key=lambda s: -s.score)


def rank(profiles: Sequence[Profile], chat_template: str) -> list[Score]:
    """Every family with at least one marker present, with its score and confidence: the answer of
    :func:`decide` first, then by confidence and score."""
    text = compact(chat_template)
    weights = _weights(tuple(profiles))
    scores = [s for p in profiles if (s := _score_one(p, text, weights)) is not None]
    ranked: list[Score] = []
    for own in scores:
        rivals = [o.score for o in scores if o.format != own.format and not _explains(own, o)]
        sure = round(confidence(own.score, max(rivals, default=0.0)), 4)
        ranked.append(dataclasses.replace(own, confidence=sure))
    ranked.sort(key=lambda s: (-s.confidence, -s.score, tuple(-x for x in s.specificity), s.name))
    winner, _ = decide(ranked)
    if winner is not None:
        ranked.remove(winner)
        ranked.insert(0, winner)
    return ranked

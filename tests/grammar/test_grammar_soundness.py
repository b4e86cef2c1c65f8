"""Soundness: whatever a model writes under a family's grammar, our parser reads as a valid answer.

For each family whose template compiles, random walks go through the grammar token by token: at each
step a random token that llguidance's mask allows, from a BPE tokenizer trained here with the family's
special tokens, until EOS or the grammar stops (walks lean towards EOS, special tokens and closing
characters, and are capped in length; a capped walk is counted, not checked). Each finished walk is
parsed with the family's template, and the message must honour the request: every call names a declared
tool with arguments valid for its JSON schema; ``required``: at least one call; a named choice: only that
tool; ``none``: no call; ``parallel_tool_calls=False``: at most one call.

The default suite runs ``GRAMMAR_WALKS`` walks per family and setting (2 by default, to stay within the
CI budget); ``GRAMMAR_WALKS=50 pytest tests/grammar/test_grammar_soundness.py`` runs the large count
whose figures docs/grammar.md records (``scripts``-free: the same test, more walks).
"""

from __future__ import annotations

import os
import zlib

import grammar_harness as gh
import pytest

from response_templates import grammar

WALKS = int(os.environ.get("GRAMMAR_WALKS", "2"))
FAMILIES = sorted(name for name, cov in grammar.coverage().items() if cov.compiles)

#: Families whose grammar lets through an output that breaks the request (found by these walks; each
#: entry says what). Strict: once the grammar is fixed the test passes and the entry must go.
UNSOUND: dict[str, str] = {}


def _seed(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


def test_some_families_compile() -> None:
    assert len(FAMILIES) >= 10


@pytest.mark.parametrize(
    "family",
    [
        pytest.param(f, marks=[pytest.mark.xfail(reason=UNSOUND[f], strict=True)] if f in UNSOUND else [])
        for f in FAMILIES
    ],
)
def test_random_walks_parse_to_valid_answers(family: str) -> None:
    # A family without a tool-call field compiles only where no call is forced.
    calls = grammar.coverage()[family].calls
    reports = [
        gh.walk_family(family, grammar, choice, parallel, WALKS, _seed(family, choice, parallel))
        for choice, parallel in gh.WALK_MODES
        if calls or choice in ("auto", "none")
    ]
    failures = [f"[{r.mode}] {f}" for r in reports for f in r.failures]
    assert not failures, "\n".join(failures[:10])
    finished = sum(r.finished for r in reports)
    walks = sum(r.walks for r in reports)
    assert finished * 3 >= walks, f"only {finished} of {walks} walks finished"
    # Walks that must call produced calls (else the check above would be vacuous for them).
    forced = [r for r in reports if r.mode.startswith(("required", "named"))]
    assert all(r.with_calls == r.finished for r in forced)

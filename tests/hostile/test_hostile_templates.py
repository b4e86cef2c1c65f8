"""Hostile templates (issue 12), as if downloaded from an untrusted hub: catastrophic patterns in every
pattern-taking key, huge literals and repeat counts, deep nesting, random type mutations of the library
templates. Loading either succeeds or raises a documented typed error, and parsing with a template that
loaded raises only documented typed errors (docs/spec.md 3.20, 9.1, section 12).

The pattern-taking keys are ``start_anchor_pattern`` (docs/spec.md 3.3), ``open_pattern`` and
``close_pattern`` (3.8; a ``close_pattern`` of the implicit field too) and the ``xml-inline`` argument
``tag_pattern`` (6.7); the other ``content_args`` (``string_delims``, ``kv_sep``, ``line_sep``,
``tag_prefix``...) are literals, and the blow-up cases give them huge values as well.

Templates that may exhaust memory or the C stack are loaded in a child process with a 3 GB cap on its
address space (``hostile_inputs.run_isolated``): a ``MemoryError`` there is a failure of the child, not
of the test run.
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile_inputs import (
    BLOWUPS,
    CATASTROPHIC_TEXT,
    HostileOutput,
    catastrophic_cases,
    chunkings,
    library_template_data,
    mutate,
    prompts,
    run_isolated,
    run_stream,
    template_words,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
import response_templates.content as content_pkg
from hypothesis_profiles import examples

NAMES = rt.templates.names()
#: Seconds one pattern search may take here: a catastrophic pattern times out fast.
FAST = 0.02


def _typed_only(template: Any, prefix: str, text: str) -> None:
    """Parse ``text`` whole, one character at a time and with ``parse_response``: typed errors only."""
    output = HostileOutput("t", text)
    for way, chunks in chunkings(output).items():
        result = run_stream(template, prefix, chunks)
        assert result.untyped is None, (way, result.untyped)
    with contextlib.suppress(rt.ResponseTemplateError):
        rt.parse_response(text, template, prefix=prefix)


# ------------------------------------------------------------------------------ catastrophic patterns


@pytest.mark.parametrize(
    ("template", "prefix", "text"),
    [pytest.param(t, p, x, id=label) for label, t, p, x in catastrophic_cases()],
)
def test_catastrophic_pattern(
    template: dict[str, Any], prefix: str, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(content_pkg, "REGEX_TIMEOUT", FAST)
    try:
        compiled = rt.load_template(template, regex_timeout=FAST)
    except rt.TemplateError:
        return
    _typed_only(compiled, prefix, text)


def test_catastrophic_patterns_reach_every_pattern_key() -> None:
    """The cases put each pattern in every key that takes one, and at least one of them times out (so
    the budget is exercised, not only patterns that happen to be fast)."""
    labels = [label for label, *_ in catastrophic_cases()]
    for key in ("open_pattern", "close_pattern", "implicit close_pattern", "start_anchor_pattern"):
        assert sum(label.startswith(key + " ") for label in labels) >= 6, key
    assert sum(label.startswith("tag_pattern ") for label in labels) >= 12
    template = {
        "start_anchor": "<A>",
        "fields": {"x": {"open_pattern": "(?:a|aa)+c", "close": "</x>"}, "content": {}},
    }
    with pytest.raises(rt.PatternTimeoutError):
        # with the "c" every match ends with (a text without it holds no match: nothing is searched)
        rt.parse_response(CATASTROPHIC_TEXT + "c", rt.load_template(template, regex_timeout=FAST), prefix="")


# ---------------------------------------------------------------------------------------- blow-ups

#: Blow-ups that fail today (strict xfails; none left since the load-time limits); label -> what happens.
HOLE_2: dict[str, str] = {}


@pytest.mark.parametrize(
    "label",
    [
        pytest.param(
            label,
            marks=[pytest.mark.xfail(strict=True, reason=f"issue 12 hole 2: {HOLE_2[label]}")]
            if label in HOLE_2
            else [],
        )
        for label in BLOWUPS
    ],
)
def test_blowup_template(label: str, blowups: dict[str, dict[str, Any]]) -> None:
    """Huge literals, huge and nested repeat counts, 100,000-deep nesting, 10,000 fields: the template
    loads (and parses) or raises a documented typed error, within the child's memory cap."""
    result = blowups[label]
    assert result["outcome"] in ("ok", "typed"), result


@pytest.fixture(scope="module")
def blowups() -> dict[str, dict[str, Any]]:
    """Every blow-up case, run once in child processes (see ``hostile_inputs.run_isolated``)."""
    return run_isolated(list(BLOWUPS), timeout=15)


def test_deep_template_file_on_the_command_line(tmp_path: Path) -> None:
    """The CLI reports a 100,000-deep template as a template error (exit code 2, one ``error:`` line),
    with no traceback."""
    path = tmp_path / "deep.json"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text('{"start_anchor": "<A>", "fields": {"content": {"transform": ' + deep + "}}}")
    proc = subprocess.run(
        [sys.executable, "-m", "response_templates", "parse", "-t", str(path), "--no-prefix", "-"],
        input="hello",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error:"), proc.stderr[-500:]


# --------------------------------------------------------------------------------- type mutations


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_type_mutated_library_templates(name: str, seed: int, steps: int) -> None:
    """A library template with values of the wrong type, keys dropped, renamed or added: loading
    succeeds or raises a documented error; a template that loads parses its own delimiters (mixed with
    hostile characters) with typed errors only; ``lint`` reports or raises a typed error too."""
    rng = random.Random(seed)
    data = mutate(library_template_data(name), rng, steps)
    try:
        template = rt.load_template(data, regex_timeout=FAST)
    except rt.ResponseTemplateError:
        template = None
    except Exception as exc:  # pragma: no cover - this is what the test looks for
        pytest.fail(f"load_template raised {type(exc).__name__}: {exc!r:.300}")
    try:
        text = json.dumps(data)
    except (TypeError, ValueError):
        text = None
    if text is not None:
        with contextlib.suppress(rt.ResponseTemplateError):
            rt.load_template(text, regex_timeout=FAST)
    with contextlib.suppress(rt.ResponseTemplateError):
        rt.lint(data)
    if template is None:
        return
    words = template_words(name)
    sample = "".join(
        rng.choice(words) + rng.choice(["x", "\x00", "\ud800", "[[", '{"a": 1}', "9" * 50]) for _ in range(12)
    )
    _typed_only(template, rng.choice(prompts(name)), sample)

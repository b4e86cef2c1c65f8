"""The reference is transformers 5.24.0: what that version changed, and what docs/differences.md says.

* The pinned oracle is 5.24.0, and the benchmarks' baseline label says so.
* Every difference slug a conformance case uses has a row in docs/differences.md, and every row's slug
  is used by a case or named with its own tests (so a row cannot outlive its difference silently).
* ``chunking-exact`` is still real in 5.24: the reference's result still depends on where the input is
  split for each input the row lists (5.24 fixed only the ``$`` before the prefix's final newline, now
  an ordinary conformance case), while ours never does.
* Where 5.24 reads a case differently from 5.23, the case's notes record what 5.23 gave (5.23 itself
  is not a test dependency).
"""

from __future__ import annotations

import copy
import logging
import re
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt

try:
    from conformance.cases import CASES, RESULTS_523
except ImportError:  # pragma: no cover
    from tests.conformance.cases import CASES, RESULTS_523

reference = pytest.importorskip("transformers.utils.chat_parsing")
logging.getLogger("transformers").setLevel(logging.ERROR)

ROOT = Path(__file__).resolve().parent.parent
DIFFERENCES = (ROOT / "docs" / "differences.md").read_text(encoding="utf-8")


def test_the_oracle_is_transformers_5_24() -> None:
    assert version("transformers") == "5.24.0"


def test_benchmark_baseline_label() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _common
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert version("transformers") == _common.REFERENCE_BASELINE
    assert _common.reference_label() == "transformers 5.24.0"
    assert _common.reference_label("5.23.0") == "transformers 5.23.0 (baseline is 5.24.0)"


def _rows() -> dict[str, str]:
    rows = {}
    for line in DIFFERENCES.splitlines():
        found = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if found:
            rows[found.group(1)] = line
    return rows


def test_the_intro_names_5_24() -> None:
    intro = DIFFERENCES.split("\n## ", 1)[0]
    assert "`transformers.utils.chat_parsing` in transformers 5.24" in intro


def test_every_slug_used_by_a_case_has_a_row() -> None:
    rows = _rows()
    used = {c.difference for c in CASES if c.difference} | {
        c.events_difference for c in CASES if c.events_difference
    }
    assert used - set(rows) == set()


def test_every_row_names_its_tests() -> None:
    for slug, line in _rows().items():
        tests_cell = line.rstrip(" |").rsplit(" | ", 1)[-1]
        assert "`" in tests_cell, f"the row {slug!r} names no test"


def test_rows_for_differences_5_24_fixed_are_gone() -> None:
    rows = _rows()
    assert "close-captures" not in rows and "json-unquoted-keys" not in rows
    assert "merge_duplicates" not in rows.get("xml-inline-groups", "")


def test_5_23_results_are_recorded_for_cases_whose_meaning_changed() -> None:
    by_id = {c.id: c for c in CASES}
    assert set(RESULTS_523) <= set(by_id)
    for case_id, result in RESULTS_523.items():
        assert result in by_id[case_id].notes and result.startswith("transformers 5.23: ")


STILL_CHUNKING_DEPENDENT: list[tuple[dict[str, Any], str]] = [
    ({"r": {"open": "<r>", "close": ["STOP", "STOPPED"]}, "content": {}}, "<r>wait STOPPED here"),
    (
        {
            "calls": {"open": "<invoke>", "close_pattern": r"</invoke>(?:\s*</mm>)?", "repeats": True},
            "content": {},
        },
        "<invoke>a</invoke>\n</mm>done",
    ),
    ({"r": {"open": "<r>", "close_pattern": r"x(?!yz)"}, "content": {}}, "<r>axyz then x."),
    ({"r": {"open": "<r>", "close_pattern": r"abcd|c"}, "content": {}}, "<r>xabcdy"),
    ({"m": {"open": "<m>", "close_pattern": r"</m>|$"}, "content": {}}, "<m>x\nmore</m>after"),
]


def _stream(parser_class: Any, fields: dict[str, Any], pieces: list[str]) -> Any:
    parser = parser_class(copy.deepcopy({"start_anchor": "<A>", "fields": fields}), prefix="")
    for piece in pieces:
        parser.feed(piece)
    return dict(parser.finalize()[0])


@pytest.mark.parametrize(("fields", "text"), STILL_CHUNKING_DEPENDENT)
def test_chunking_exact_is_still_a_difference(fields: dict[str, Any], text: str) -> None:
    ours_whole = _stream(rt.ResponseParser, fields, [text])
    ref_whole = _stream(reference.ResponseParser, fields, [text])
    assert ours_whole == ref_whole  # whole, both read it alike
    splits = [[text[i : i + n] for i in range(0, len(text), n)] for n in (1, 2, 3, 5)]
    assert all(_stream(rt.ResponseParser, fields, pieces) == ours_whole for pieces in splits)
    assert any(_stream(reference.ResponseParser, fields, pieces) != ref_whole for pieces in splits)

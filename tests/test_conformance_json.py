"""The conformance suite as data (issue 10, item 7): conformance/cases.json and conformance/run.py.

The committed JSON is what scripts/gen_conformance_json.py makes of tests/conformance/cases.py, and
``run.py --impl ours`` passes every case that this runner can run (all but the ones that need Python
functions as tools). The transformers score is documented in docs/conformance.md, not asserted here.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES_JSON = ROOT / "conformance" / "cases.json"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


gen = _load(ROOT / "scripts" / "gen_conformance_json.py", "gen_conformance_json")
runner = _load(ROOT / "conformance" / "run.py", "conformance_run")


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    data: dict[str, Any] = runner.load(CASES_JSON)
    return data


def test_the_json_is_in_sync_with_cases_py() -> None:
    committed = CASES_JSON.read_text(encoding="utf-8")
    regenerated = gen.build()
    if committed != regenerated:
        old = {c["id"]: c for c in json.loads(committed)["cases"]}
        new = {c["id"]: c for c in json.loads(regenerated)["cases"]}
        changed = sorted(i for i in old.keys() & new.keys() if old[i] != new[i])
        pytest.fail(
            "conformance/cases.json is out of date (run python scripts/gen_conformance_json.py): "
            f"added {sorted(new.keys() - old.keys())[:10]}, removed {sorted(old.keys() - new.keys())[:10]}, "
            f"changed {changed[:10]}"
        )


def test_every_case_follows_the_schema(suite: dict[str, Any]) -> None:
    assert suite["format"] == "response-templates-conformance" and suite["version"] == 1
    assert suite["count"] == len(suite["cases"]) >= 600
    ids = [c["id"] for c in suite["cases"]]
    assert len(ids) == len(set(ids))
    errors = set(suite["error_classes"])
    for case in suite["cases"]:
        assert set(case) <= {
            "id", "category", "template", "prefix", "output", "tools", "expect", "events", "region_texts",
            "chunkings", "difference", "events_difference", "pending", "requires", "tools_note", "notes",
        }, case["id"]  # fmt: skip
        assert case["id"].startswith(case["category"] + "/")
        assert len(case["expect"]) == 1 and ("message" in case["expect"] or case["expect"]["error"] in errors)
        for chunking in case.get("chunkings", ()):
            splits = chunking["splits"]
            assert splits == "every" or (
                splits == sorted(set(splits)) and all(0 < s < len(case["output"]) for s in splits)
            )
        if "events" in case:
            assert {e["type"] for e in case["events"]} <= {"region_open", "region_close"}
            assert all("captures" not in e for e in case["events"])  # our additive key is not part of it


def test_non_finite_floats_survive_the_round_trip() -> None:
    encoded = gen.encode({"a": [math.nan, math.inf, -math.inf, 1.5, 1]})
    text = json.dumps(encoded, allow_nan=False)
    decoded = json.loads(text, object_hook=runner._decode)
    assert runner.same(decoded, {"a": [math.nan, math.inf, -math.inf, 1.5, 1]})
    assert not runner.same({"a": 1}, {"a": 1.0}) and not runner.same([True], [1])


def test_error_classes_are_language_neutral_names() -> None:
    import response_templates as rt

    assert gen.error_name("ParseError") == "parse_error"
    assert gen.error_name("TemplateError") == "template_error"
    assert gen.error_name(rt.AnchorNotFoundError("x")) == "anchor_not_found"
    assert gen.error_name("ResponseTemplateError") == "error"


def test_ours_passes_every_case_it_can_run(suite: dict[str, Any]) -> None:
    impl = runner.implementation("ours")
    score = runner.run(impl, suite["cases"], supports=set())
    failures = [(case_id, problems[:1]) for case_id, _, problems in score.failures]
    assert not failures, failures[:20]
    assert {case_id for case_id, _ in score.skipped} == {c["id"] for c in suite["cases"] if c.get("requires")}
    out = io.StringIO()
    runner.report(impl, score, out, max_failures=5)
    assert "failed: 0" in out.getvalue()


def test_the_runner_finds_a_wrong_implementation(suite: dict[str, Any]) -> None:
    """A parser that drops the reasoning fails cases, and the failures are listed with their ids."""
    import response_templates as rt

    def parse_without_reasoning(*args: Any, **kwargs: Any) -> dict[str, Any]:
        parsed: Any = rt.parse_response(*args, **kwargs)
        message = dict(parsed)
        message.pop("reasoning_content", None)
        return message

    ours = runner.implementation("ours")
    broken = runner.Implementation("broken", parse_without_reasoning, rt.ResponseParser, ours.classify)
    cases = [c for c in suite["cases"] if c["category"] == "feature"]
    score = runner.run(broken, cases, supports=set())
    assert score.failed(("conformance",)) > 0
    assert "feature/literal-open-close" in {case_id for case_id, _, _ in score.failures}
    assert runner.main(["--impl", "ours", "--category", "feature"]) == 0

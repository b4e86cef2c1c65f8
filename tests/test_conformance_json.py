"""The conformance suite as data (issue 10, item 7): conformance/cases.json and conformance/run.py.

The committed JSON is what scripts/gen_conformance_json.py makes of tests/conformance/cases.py and
tests/conformance/token_cases.py, and ``run.py --impl ours`` passes every case that this runner can run
(all but the ones that need Python functions as tools), the token-id cases included. transformers 5.25
passes every token-id case but the listed differences; its score on the text cases is documented in
docs/conformance.md, not asserted here.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import sys
import types
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


COMMON_KEYS = {
    "id", "category", "template", "tools", "expect", "events", "region_texts", "chunkings", "difference",
    "events_difference", "pending", "requires", "tools_note", "notes",
}  # fmt: skip
TEXT_KEYS = {"prefix", "output"}
TOKEN_KEYS = {"tokenizer", "control_tokens", "prefix_ids", "token_ids"}


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(type(i) is int and i >= 0 for i in value)


def test_every_case_follows_the_schema(suite: dict[str, Any]) -> None:
    assert suite["format"] == "response-templates-conformance" and suite["version"] == 1
    assert suite["count"] == len(suite["cases"]) >= 600
    ids = [c["id"] for c in suite["cases"]]
    assert len(ids) == len(set(ids))
    errors = set(suite["error_classes"])
    tokenizers = suite["tokenizers"]
    assert tokenizers and all(isinstance(t, str) and json.loads(t)["model"] for t in tokenizers.values())
    for case in suite["cases"]:
        given = runner.input_of(case)
        if given == "token_ids":
            assert TOKEN_KEYS <= set(case) <= COMMON_KEYS | TOKEN_KEYS, case["id"]
            assert case["tokenizer"] in tokenizers, case["id"]
            assert _ints(case["token_ids"]) and case["token_ids"] and _ints(case["prefix_ids"]), case["id"]
            added = {
                t["content"]: t["special"] for t in json.loads(tokenizers[case["tokenizer"]])["added_tokens"]
            }
            controls = case["control_tokens"]
            # every control token is an added token, and every special token is listed
            assert set(controls) <= set(added) and {t for t, sp in added.items() if sp} <= set(controls)
            length = len(case["token_ids"])
        else:
            assert given == "text" and set(case) <= COMMON_KEYS | TEXT_KEYS, case["id"]
            length = len(case["output"])
        assert case["id"].startswith(case["category"] + "/")
        assert len(case["expect"]) == 1 and ("message" in case["expect"] or case["expect"]["error"] in errors)
        for chunking in case.get("chunkings", ()):
            splits = chunking["splits"]
            assert splits == "every" or (
                splits == sorted(set(splits)) and all(0 < s < length for s in splits)
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
    score = runner.run(impl, suite["cases"], supports=set(), tokenizers=suite["tokenizers"])
    failures = [(case_id, problems[:1]) for case_id, _, problems in score.failures]
    assert not failures, failures[:20]
    assert {case_id for case_id, _ in score.skipped} == {c["id"] for c in suite["cases"] if c.get("requires")}
    token_cases = [c for c in suite["cases"] if "token_ids" in c]
    assert score.by_input["token_ids"] == [len(token_cases), 0] and len(token_cases) >= 10
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


def _token_cases(suite: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in suite["cases"] if runner.input_of(c) == "token_ids"]


def test_the_token_id_cases_cover_the_control_token_rules(suite: dict[str, Any]) -> None:
    cases = {c["id"]: c for c in _token_cases(suite)}
    assert 10 <= len(cases) <= 30
    spelled = cases["ids/spelled-im-end-in-content"]
    assert spelled["expect"]["message"]["content"] == "Type <|im_end|> to stop."
    assert spelled["region_texts"][-1] == ["content", "Type <|im_end|> to stop."]
    assert [k["name"] for k in spelled["chunkings"]][:2] == ["whole", "1-id"]
    fdd2 = cases["ids/u-fdd2-in-output"]
    assert fdd2["difference"] == "control-token-marker" and "\ufdd2" in fdd2["expect"]["message"]["content"]
    assert cases["ids/tool-calls-typed"]["expect"]["message"]["tool_calls"][0]["function"]["arguments"] == {
        "city": "Paris </tool_call>",
        "days": 3,
    }
    assert cases["ids/real-close-inside-json-string"]["expect"] == {"error": "parse_error"}
    differences = (ROOT / "docs" / "differences.md").read_text(encoding="utf-8")
    for case in cases.values():
        if "difference" in case:
            assert f"| `{case['difference']}` |" in differences, case["id"]
    # the tokenizer is small: the suite does not grow by megabytes
    assert all(len(text) < 20_000 for text in suite["tokenizers"].values())


def test_a_wrong_token_reading_fails_the_token_id_cases(suite: dict[str, Any]) -> None:
    """Reading the ids as decoded text (no control tokens) fails the spelled-marker cases: the check can
    fail; an implementation that takes no ids skips them, listed."""
    pytest.importorskip("tokenizers")
    ours = runner.implementation("ours")
    assert ours.ids is not None and "token_ids" in ours.inputs
    as_text = runner.IdReader(
        lambda text, _controls: ours.ids.tokenizer(text, ()), ours.ids.parse, ours.ids.parser
    )
    broken = runner.Implementation(
        "text-reading", ours.parse_response, ours.parser_class, ours.classify, as_text
    )
    score = runner.run(broken, _token_cases(suite), supports=set(), tokenizers=suite["tokenizers"])
    failed = {case_id for case_id, _, _ in score.failures}
    assert {
        "ids/spelled-im-end-in-content",
        "ids/spelled-close-in-json-string",
        "ids/forged-turn-in-content",
    } <= failed
    assert "ids/all-delimiters-real" not in failed  # real ids read the same either way
    no_ids = runner.Implementation("text only", ours.parse_response, ours.parser_class, ours.classify)
    skipped = runner.run(no_ids, _token_cases(suite), supports=set(), tokenizers=suite["tokenizers"]).skipped
    assert len(skipped) == len(_token_cases(suite)) and "does not take it" in skipped[0][1]
    # a module with the interface before transformers 5.25 (no tokenizer=) takes no ids
    old_interface = types.SimpleNamespace(
        parse_response=lambda output, template, *, prefix=None, tools=None: {},
        ResponseParser=lambda template, prefix=None, *, tools=None: None,
    )
    assert runner._reference_ids(old_interface) is None


@pytest.mark.skipif(
    not importlib.util.find_spec("transformers"), reason="the reference is transformers (a test dependency)"
)
def test_transformers_5_25_passes_the_token_id_cases_but_the_differences(suite: dict[str, Any]) -> None:
    import transformers

    impl = runner.implementation("transformers")
    if tuple(int(x) for x in transformers.__version__.split(".")[:2]) < (5, 25):
        assert impl.ids is None  # it parses ids from 5.25 on: the cases are skipped
        pytest.skip("transformers parses token ids from 5.25 on")
    cases = _token_cases(suite)
    score = runner.run(impl, cases, supports=set(), tokenizers=suite["tokenizers"])
    assert not score.skipped
    failed = {case_id: problems for case_id, _, problems in score.failures}
    # every difference is real (5.25 gives something else), and nothing else differs
    assert set(failed) == {c["id"] for c in cases if "difference" in c}, failed
    assert "ab <|im_end|> c" in failed["ids/u-fdd2-in-output"][0]  # it deletes the U+FDD2s


def test_cases_of_an_input_the_runner_cannot_check_are_skipped(suite: dict[str, Any]) -> None:
    """A case that feeds neither text nor ids is listed as skipped, never run as text."""
    text_case = next(c for c in suite["cases"] if c["id"] == "feature/literal-open-close")
    odd_case = {"id": "odd/no-input", "category": "odd", "template": text_case["template"], "expect": {}}
    impl = runner.implementation("ours")
    score = runner.run(impl, [text_case, odd_case], supports=set())
    assert [case_id for case_id, _ in score.skipped] == ["odd/no-input"]
    assert "unknown" in score.skipped[0][1]
    assert score.by_kind == {"conformance": [1, 0]} and not score.failures


def test_a_token_id_case_naming_a_missing_tokenizer_fails(suite: dict[str, Any]) -> None:
    pytest.importorskip("tokenizers")
    case = {**_token_cases(suite)[0], "tokenizer": "nope"}
    score = runner.run(runner.implementation("ours"), [case], supports=set(), tokenizers=suite["tokenizers"])
    assert score.failures and "no tokenizer 'nope'" in score.failures[0][2][0]

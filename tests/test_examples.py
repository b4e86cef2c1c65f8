"""The documentation's code runs: code blocks in README.md and docs/*.md, and the scripts in examples/.

Markdown code blocks:

* `python` blocks are executed in order, one shared namespace per file (a later block may use what an
  earlier one defined). A block fails the test by raising, e.g. through an `assert`.
* `pycon` blocks (`>>>` sessions) are run as doctests, so the output they show must be the real output.
* Any other language, or a second word in the info string (`python no-run`), is not executed; use that for
  illustrations that cannot run on their own (and say so next to them).
"""

from __future__ import annotations

import contextlib
import doctest
import io
import runpy
import sys
from pathlib import Path

import pytest

from doc_runner import code_blocks

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A server runs until stopped: tests/wire/test_wire_example_server.py and tests/serve/test_serve.py serve
# them and query them instead.
SERVERS = {"openai_server.py", "serve_in_front_of_an_engine.py"}
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if p.name not in SERVERS)


def test_fence_parser() -> None:
    text = "x\n```python\na = 1\n```\n\n````md\n```python\nnested\n```\n````\n```pycon\n>>> 1\n1\n```\n"
    assert code_blocks(text) == [
        ("python", "a = 1\n", 2),
        ("md", "```python\nnested\n```\n", 6),
        ("pycon", ">>> 1\n1\n", 11),
    ]


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_code_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not path.exists():
        pytest.skip(f"{path.name} not written yet")
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": f"doc:{path.name}"}
    parser = doctest.DocTestParser()
    ran = 0
    for info, code, line in code_blocks(path.read_text(encoding="utf-8")):
        where = f"{path.relative_to(ROOT)}:{line}"
        if info == "python":
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    exec(compile(code, where, "exec"), namespace)
                except Exception as exc:
                    pytest.fail(f"python block at {where} raised {type(exc).__name__}: {exc}")
            ran += 1
        elif info == "pycon":
            test = parser.get_doctest(code, namespace, where, str(path), line)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
            report = io.StringIO()
            runner.run(test, out=report.write, clear_globs=False)
            namespace.update(test.globs)  # DocTest works on a copy; later blocks build on this one
            assert runner.failures == 0, f"pycon block at {where}:\n{report.getvalue()}"
            ran += 1
    if path.name in ("README.md", "usage.md", "streaming.md", "errors.md"):
        assert ran, f"{path.name} should contain runnable examples"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_script_runs(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", [str(script)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exc:
            assert exc.code in (None, 0), f"{script.name} exited with {exc.code}"
    assert out.getvalue().strip(), f"{script.name} printed nothing"


def test_examples_exist() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"stream_qwen3.py", "parse_batch.py"} <= names

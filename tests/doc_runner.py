"""Run documentation pages' code blocks, or import examples, with only some packages importable.

* ``python -S tests/doc_runner.py --site SITE FILE`` (tests/test_install_extras.py): ``-S`` leaves the
  environment's site-packages off ``sys.path``; ``SITE`` is a folder holding links to the packages a
  ``pip install 'response-templates[EXTRA]'`` would install, and nothing else.
* ``python tests/doc_runner.py --extra EXTRA`` (``make test-install``, in a fresh venv where the wheel was
  installed with that extra): every page and example that needs exactly that extra (:data:`NEEDS`;
  ``core``: those that need none).

Runs the ``python`` blocks in order in one namespace and the ``pycon`` blocks as doctests, as
tests/test_examples.py does; a ``.py`` file is imported (not run as ``__main__``: a server example would
serve forever). Exits 1 with the failure on stderr. Needs nothing but the standard library.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The extra each page or example needs beyond the core install (the page says so); the others need none.
NEEDS = {
    "docs/tokenizers.md": "transformers",
    "docs/batch.md": "datasets",
    "docs/grammar.md": "grammar",
    "docs/derive.md": "verify",
    "examples/openai_server.py": "serve",
    "examples/serve_in_front_of_an_engine.py": "serve",
}


def targets() -> list[Path]:
    """Every page and example."""
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "examples").glob("*.py")),
    ]


_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)\n", re.MULTILINE)


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """``(info string, code, line number)`` of each fenced code block in a Markdown text."""
    blocks = []
    pos = 0
    while (start := _FENCE.search(text, pos)) is not None:
        fence = start.group("fence")
        closing = re.compile(rf"^ {{0,3}}{fence[0]}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, start.end())
        line = text.count("\n", 0, start.start()) + 1
        blocks.append(
            (start.group("info").strip(), text[start.end() : end.start() if end else len(text)], line)
        )
        pos = end.end() if end else len(text)
    return blocks


def run_page(path: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"doc:{path.name}"}
    parser = doctest.DocTestParser()
    for info, code, line in code_blocks(path.read_text(encoding="utf-8")):
        where = f"{path.name}:{line}"
        if info == "python":
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, where, "exec"), namespace)
        elif info == "pycon":
            test = parser.get_doctest(code, namespace, where, str(path), line)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
            report = io.StringIO()
            runner.run(test, out=report.write, clear_globs=False)
            namespace.update(test.globs)
            if runner.failures:
                raise AssertionError(f"pycon block at {where}:\n{report.getvalue()}")


def run(target: Path) -> bool:
    try:
        if target.suffix == ".py":
            runpy.run_path(str(target), run_name="doc_runner_import")
        else:
            run_page(target)
    except BaseException as exc:
        sys.stderr.write(f"{target.name}: {type(exc).__name__}: {exc}\n")
        return False
    return True


def main() -> int:
    os.chdir(ROOT)  # the pages read files relative to the repository
    if sys.argv[1] == "--site":
        sys.path.insert(0, sys.argv[2])
        return 0 if run(Path(sys.argv[3])) else 1
    assert sys.argv[1] == "--extra", "usage: doc_runner.py --site SITE FILE | --extra EXTRA"
    extra = None if sys.argv[2] == "core" else sys.argv[2]
    chosen = [t for t in targets() if NEEDS.get(str(t.relative_to(ROOT))) == extra]
    failed = [t for t in chosen if not run(t)]
    print(f"{len(chosen) - len(failed)} passed, {len(failed)} failed (with the {sys.argv[2]} install)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

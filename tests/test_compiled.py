"""The optional compiled build (mypyc): what the sources declare for it, and which build a run uses.

``make test-mypyc`` runs this whole suite against the compiled wheel with
``RESPONSE_TEMPLATES_EXPECT_COMPILED=1``; ``make test`` runs it against the pure-Python sources.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

from response_templates import compiled

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src"


def test_the_run_uses_the_build_it_was_started_for() -> None:
    """A compiled run really runs compiled code, and the ordinary run the Python sources."""
    expected = os.environ.get("RESPONSE_TEMPLATES_EXPECT_COMPILED") == "1"
    assert compiled.is_compiled() is expected
    for name in compiled.HOT_MODULES:
        path = str(importlib.import_module(name).__file__)
        assert path.endswith(".py") is not expected, path


def test_every_hot_module_is_a_source_file_of_the_package() -> None:
    """setup.py compiles these files: each name must be a module of the sources (or a package)."""
    assert len(set(compiled.HOT_MODULES)) == len(compiled.HOT_MODULES)
    for name in compiled.HOT_MODULES:
        base = SOURCE.joinpath(*name.split("."))
        assert base.with_suffix(".py").is_file() or (base / "__init__.py").is_file(), name


def test_setup_reads_the_same_list() -> None:
    """setup.py reads HOT_MODULES from compiled.py without importing the package: same list of files."""
    code = (
        "import runpy, setuptools; setuptools.setup = lambda **kw: None; "
        "ns = runpy.run_path('setup.py'); print('\\n'.join(ns['_hot_paths']()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    expected = []
    for name in compiled.HOT_MODULES:
        base = Path("src", *name.split("."))
        expected.append(str(base / "__init__.py") if (ROOT / base).is_dir() else str(base.with_suffix(".py")))
    assert out == expected


def test_class_options_are_a_no_op_without_mypy_extensions() -> None:
    """The pure package does not need mypy_extensions: without it, mypyc_attr leaves a class as it is."""
    code = (
        "import sys; sys.modules['mypy_extensions'] = None\n"
        "from response_templates.compiled import mypyc_attr\n"
        "class A: pass\n"
        "assert mypyc_attr(allow_interpreted_subclasses=True)(A) is A\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "ok"

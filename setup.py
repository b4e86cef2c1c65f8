"""Build hook for the optional compiled build (docs/streaming.md, "The compiled build").

The package is pure Python and builds as such from ``pyproject.toml`` alone. With
``RESPONSE_TEMPLATES_MYPYC=1`` in the environment (``make wheel-mypyc``), the modules listed in
``response_templates.compiled.HOT_MODULES`` are also compiled to C extensions by mypyc, from the same
sources; that needs ``mypy`` (which ships mypyc) and a C compiler where the build runs, so it is built
without build isolation, in a venv that has them.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from setuptools import setup


def _hot_paths() -> list[str]:
    """The source files of ``HOT_MODULES``, read from compiled.py without importing the package."""
    source = Path("src/response_templates/compiled.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "HOT_MODULES" for t in node.targets):
            modules = ast.literal_eval(node.value)
            break
    else:  # pragma: no cover - compiled.py always defines it
        raise RuntimeError("HOT_MODULES not found in src/response_templates/compiled.py")
    paths = []
    for module in modules:
        base = Path("src", *module.split("."))
        paths.append(str(base / "__init__.py") if base.is_dir() else str(base.with_suffix(".py")))
    return paths


ext_modules = []
if os.environ.get("RESPONSE_TEMPLATES_MYPYC") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(["--config-file", "pyproject.toml", *_hot_paths()], opt_level="3")

setup(ext_modules=ext_modules)

"""The examples in the package's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import response_templates

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(response_templates.__path__, "response_templates.")
    if m.name != "response_templates.__main__"
)
#: The engines whose plugin submodules (not the packages themselves) need the engine installed.
ENGINES = ("vllm", "sglang")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    for engine in ENGINES:
        if name.startswith(f"response_templates.engines.{engine}."):
            pytest.importorskip(engine)  # the plugin's engine-side modules import the engine
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0

"""The ``cli`` package: its submodules are internal, and the console script still points at ``main``."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

from response_templates import cli

ROOT = Path(__file__).resolve().parents[2]
SUBMODULES = sorted(m.name for m in pkgutil.iter_modules(cli.__path__, "response_templates.cli."))


def test_the_package_has_submodules() -> None:
    assert SUBMODULES, "response_templates.cli is expected to be a package"


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodules_are_internal_and_declare_their_names(name: str) -> None:
    module = importlib.import_module(name)
    assert (module.__doc__ or "").startswith("Internal:"), name
    assert all(hasattr(module, n) for n in module.__all__), name


def test_console_script_resolves_to_main() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^response-templates = "([\w.]+):(\w+)"$', pyproject, re.MULTILINE)
    assert found is not None
    module, attr = found.groups()
    assert getattr(importlib.import_module(module), attr) is cli.main


@pytest.mark.parametrize("command", ["demo", "parse", "list", "show", "detect", "verify", "lint"])
def test_every_command_is_registered(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command, "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: response-templates {command} ")

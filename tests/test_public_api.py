"""The public API is declared, documented and the only thing the documentation uses (issue 9, item 6).

``response_templates.__all__`` is the top-level API; the package docstring says which modules are public
and which are internal, and these tests keep the code to it: every exported name exists and has a
docstring, every module declares ``__all__``, internal modules say so in their first docstring line, and
the code in README.md, docs/ and examples/ imports only public names. Running that code is the job of
``test_examples.py``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

import response_templates as rt

ROOT = Path(__file__).resolve().parent.parent

#: Public modules and packages (the package docstring describes each one).
PUBLIC = (
    "templates",
    "controls",
    "batch",
    "library",
    "export",
    "errors",
    "events",
    "content",
    "transforms",
    "tools",
    "calls",
    "toolstream",
    "wire",
    "hf",
    "verify",
    "derivation",
    "lint",
    "cli",
    "demo",
    "grammar",
    "engines",
    "serve",
)
#: Internal modules; for a package, all of its modules. ``language.`` means the submodules of
#: ``language`` (the package itself is the home of ``load_template``, exported at the top level).
INTERNAL = ("matching", "values", "assembly", "jsonlex", "policy", "utf8", "compiled", "language.")
#: Homes of public names whose other contents are internal (named in the package docstring too).
HOMES = ("language", "parser", "whole")


def _all_modules() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.walk_packages(rt.__path__, "response_templates.")
        if m.name != "response_templates.__main__"
    )


def _is_internal(name: str) -> bool:
    short = name.removeprefix("response_templates.")
    return any(short.startswith(p) if p.endswith(".") else short.split(".")[0] == p for p in INTERNAL)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"response_templates.{name}")


def _documented(obj: object) -> bool:
    """Whether ``obj`` carries a docstring of its own (not one inherited from its type)."""
    if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj):
        return bool((obj.__doc__ or "").strip())
    return True  # constants are documented where they are defined (``#:`` comments, module docstrings)


# ------------------------------------------------------------------------------------- the top level


@pytest.mark.pure_python("compiled classes and modules have no run-time docstrings")
@pytest.mark.parametrize("name", rt.__all__)
def test_every_exported_name_exists_and_is_documented(name: str) -> None:
    obj = getattr(rt, name)
    if name == "__version__":
        assert isinstance(obj, str)
        assert re.fullmatch(r"\d+\.\d+\.\d+\S*", obj)
        return
    assert inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj), name
    assert _documented(obj), f"response_templates.{name} has no docstring"


def test_star_import_gives_exactly_the_api() -> None:
    namespace: dict[str, object] = {}
    exec("from response_templates import *", namespace)
    namespace.pop("__builtins__")
    assert sorted(namespace) == sorted(rt.__all__)


def test_every_public_top_level_name_is_exported() -> None:
    """A public-looking name at the top level is in ``__all__`` (modules are reached by their path)."""
    names = {
        name
        for name, value in vars(rt).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert names <= set(rt.__all__), names - set(rt.__all__)


def test_package_docstring_names_every_module_it_classifies() -> None:
    doc = rt.__doc__ or ""
    for name in (*PUBLIC, *(p.rstrip(".") for p in INTERNAL), *HOMES):
        assert f"``{name}``" in doc, name


def test_readme_lists_the_public_modules() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = next(p for p in readme.split("\n\n") if p.startswith("API:"))
    named = set(re.findall(r"`(\w+)`", paragraph))
    assert set(PUBLIC) <= named, set(PUBLIC) - named
    assert {p.rstrip(".") for p in INTERNAL} <= named


def test_the_package_ships_its_type_hints() -> None:
    assert (Path(rt.__file__).parent / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_every_module_is_classified() -> None:
    for module in _all_modules():
        top = module.split(".")[1]
        assert top in PUBLIC or top in HOMES or _is_internal(module), f"{module}: public or internal?"


# ------------------------------------------------------------------------------------------ modules


@pytest.mark.parametrize("name", _all_modules())
def test_every_module_declares_its_names(name: str) -> None:
    for engine in ("vllm", "sglang"):
        if name.startswith(f"response_templates.engines.{engine}."):
            pytest.importorskip(engine)  # the plugin's engine-side modules import the engine
            if name.endswith("._unsupported"):
                pytest.skip("importing it is the error it reports")
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists names it does not define: {missing}"


@pytest.mark.pure_python("compiled classes and modules have no run-time docstrings")
@pytest.mark.parametrize("name", PUBLIC)
def test_public_modules_document_their_api(name: str) -> None:
    module = _module(name)
    doc = module.__doc__ or ""
    assert doc.strip() and not doc.startswith("Internal:"), name
    undocumented = [n for n in module.__all__ if not _documented(getattr(module, n))]
    assert not undocumented, f"response_templates.{name}: no docstring on {undocumented}"


@pytest.mark.pure_python("compiled modules have no run-time docstrings")
@pytest.mark.parametrize("name", [m for m in _all_modules() if _is_internal(m)])
def test_internal_modules_say_so(name: str) -> None:
    doc = importlib.import_module(name).__doc__ or ""
    assert doc.startswith("Internal:"), f"{name}: the docstring's first line must start with 'Internal:'"


# ------------------------------------------------------------------------------- the documentation

_FENCED = re.compile(r"^```(python|pycon)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_FROM = re.compile(r"^\s*(?:>>> |\.\.\. )?from response_templates(\.[\w.]+)? import ([^\n#]+)", re.MULTILINE)
_IMPORT = re.compile(r"^\s*(?:>>> )?import response_templates((?:\.\w+)*)(?: as (\w+))?", re.MULTILINE)
#: Pages about the inside of the package, whose code may name internal modules.
_INTERNALS_PAGES = ("architecture.md",)


def _doc_code() -> list[tuple[str, str]]:
    """``(where, code)`` for the Python code of README.md, docs/*.md and examples/*.py."""
    found = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        if page.name in _INTERNALS_PAGES or not page.exists():
            continue
        for match in _FENCED.finditer(page.read_text(encoding="utf-8")):
            found.append((page.name, match.group(2)))
    for script in sorted((ROOT / "examples").glob("*.py")):
        found.append((f"examples/{script.name}", script.read_text(encoding="utf-8")))
    return found


def _public_name(module: str, name: str) -> bool:
    if not module:
        return name in rt.__all__ or name in PUBLIC
    return module in PUBLIC and name in getattr(_module(module), "__all__", ())


def test_the_documentation_uses_only_the_public_api() -> None:
    used = []
    for where, code in _doc_code():
        for match in _FROM.finditer(code):
            module = (match.group(1) or "").lstrip(".")
            names = [n.split(" as ")[0].strip(" ()") for n in match.group(2).split(",")]
            used += [(where, module, n) for n in names if n]
        aliases = ["rt"]
        for match in _IMPORT.finditer(code):
            module = match.group(1).lstrip(".")
            if module:
                used.append((where, module.rpartition(".")[0], module.rpartition(".")[2]))
            elif match.group(2):
                aliases.append(match.group(2))
        for alias in set(aliases):
            used += [(where, "", n) for n in re.findall(rf"(?<![\w.]){alias}\.(\w+)", code)]
    assert used, "no uses of the package found: the patterns are wrong"
    bad = sorted({(w, m, n) for w, m, n in used if not _public_name(m, n)})
    assert not bad, "documentation code uses non-public names:\n" + "\n".join(
        f"  {w}: response_templates{'.' if m else ''}{m}.{n}" for w, m, n in bad
    )

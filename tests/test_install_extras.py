"""Each documentation page and example runs after ``pip install 'response-templates[EXTRA]'`` of the extra
it names, with nothing else installed.

The packages such an install brings are read from the metadata: the core dependencies and the extra's
requirements in pyproject.toml, closed over the requirements of each installed distribution (markers
evaluated). Each page then runs in a fresh interpreter whose only third-party packages are those
(``python -S`` with a folder of links to them: tests/doc_runner.py), so an import the extra does not
provide, including one made inside a library (transformers' ``apply_chat_template`` needs jinja2), fails
the test. README.md says how to install each extra; it and the other pages must say which one they need.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from doc_runner import NEEDS, targets

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

#: Extras for users (the others are for working on the project).
USER_EXTRAS = ["hf", "verify", "transformers", "serve", "parquet", "fast", "datasets", "ray", "grammar"]
#: The engine plugins' extras: documented in the README like the others, but installed only in their own
#: venvs (``make test-engines``), not in the test venv this file links sites from.
ENGINE_EXTRAS = ["vllm", "sglang"]


def requirements(extra: str | None) -> list[Requirement]:
    """The requirements of ``pip install 'response-templates[extra]'`` (self-references expanded)."""
    names = [*PYPROJECT["dependencies"], *(PYPROJECT["optional-dependencies"][extra] if extra else [])]
    out = []
    for text in names:
        req = Requirement(text)
        if canonicalize_name(req.name) == "response-templates":
            out += [r for e in req.extras for r in requirements(e)]
        else:
            out.append(req)
    return out


def installed_closure(extra: str | None) -> dict[str, metadata.Distribution]:
    """The distributions that install brings, found among the installed ones (name -> distribution)."""
    found: dict[str, metadata.Distribution] = {}
    seen: set[tuple[str, str]] = set()  # (distribution, extra) already expanded
    todo: list[tuple[Requirement, str]] = [(r, "") for r in requirements(extra)]
    while todo:
        req, parent_extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": parent_extra}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req} (needed by the {extra or 'core'} install) is not installed in the test venv")
        for wanted in ["", *sorted(req.extras)]:
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            found[name] = dist
            todo += [(Requirement(r), wanted) for r in dist.requires or []]
    return found


def site_folder(extra: str | None, folder: Path) -> Path:
    """A folder of links to the top-level files and packages of the install (and to our package)."""
    folder.mkdir(parents=True, exist_ok=True)
    for dist in installed_closure(extra).values():
        tops = {Path(str(f)).parts[0] for f in dist.files or []}
        for top in sorted(tops):
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (folder / top).exists():
                (folder / top).symlink_to(source)
    (folder / "response_templates").symlink_to(ROOT / "src" / "response_templates")
    return folder


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, Path]:
    base = tmp_path_factory.mktemp("installs")
    return {extra: site_folder(extra, base / (extra or "core")) for extra in [None, *USER_EXTRAS]}


def run_isolated(site: Path, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-S", str(ROOT / "tests" / "doc_runner.py"), "--site", str(site), str(target)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def name_of(path: Path) -> str:
    return str(path.relative_to(ROOT))


#: Pages whose examples start worker processes that this ``python -S`` harness cannot host: ``datasets``'
#: ``num_proc`` workers pickle with dill, which cannot find pyarrow's types through the linked site
#: folder. ``make test-install`` runs these pages in a real fresh venv with their extra.
REAL_VENV_ONLY = {"docs/batch.md"}


@pytest.mark.parametrize("path", targets(), ids=name_of)
def test_runs_with_the_extra_it_names(path: Path, sites: dict[str | None, Path]) -> None:
    extra = NEEDS.get(name_of(path))
    if extra is not None:
        assert f"response-templates[{extra}]" in path.read_text(encoding="utf-8"), "say which extra it needs"
    if name_of(path) in REAL_VENV_ONLY:
        pytest.skip("worker processes need a real venv: make test-install runs this page")
    result = run_isolated(sites[extra], path)
    assert result.returncode == 0, f"after pip install 'response-templates[{extra or ''}]': {result.stderr}"


def test_the_isolation_is_real(sites: dict[str | None, Path]) -> None:
    """The tokenizers page does not run with the ``hf`` extra alone (it uses transformers), and the core
    install has nothing but regex (and typing_extensions on old Pythons)."""
    result = run_isolated(sites["hf"], ROOT / "docs" / "tokenizers.md")
    assert result.returncode == 1 and "transformers" in result.stderr
    tops = {p.name.split("-")[0] for p in sites[None].iterdir() if not p.name.endswith(".dist-info")}
    assert tops <= {"regex", "typing_extensions.py", "response_templates"}


def test_readme_documents_every_user_extra() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Install") :]
    install = install[: install.index("\n## ", 3)]
    assert "pip install response-templates" in install
    for extra in [*USER_EXTRAS, *ENGINE_EXTRAS]:
        assert f"response-templates[{extra}]" in install, extra
    assert set(USER_EXTRAS) | set(ENGINE_EXTRAS) | {"test", "reference", "dev"} == set(
        PYPROJECT["optional-dependencies"]
    )


# --------------------------------------------------------------------------------- a README on its own

#: Where the project lives; the wheel's README (its PyPI page) links there.
REPOSITORY = "https://github.com/response-templates/response-templates"
_LINK = re.compile(r"\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)|^\[[^\]]+\]:\s*(?P<ref>\S+)", re.MULTILINE)


def test_readme_links_are_absolute() -> None:
    """README.md is the wheel's long description: shown without the repository around it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [m.group("target") or m.group("ref") for m in _LINK.finditer(readme)]
    assert targets, "no links found: the pattern is wrong"
    relative = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert relative == []
    for target in targets:
        if target.startswith(REPOSITORY + "/blob/main/"):
            local = target.removeprefix(REPOSITORY + "/blob/main/").split("#")[0]
            assert (ROOT / local).exists(), target


def test_project_urls_and_license() -> None:
    assert PYPROJECT["urls"]["Repository"] == REPOSITORY
    assert PYPROJECT["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text

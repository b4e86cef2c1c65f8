"""The package's import graph: no cycles, and the core never imports the outer rings (issue 9, item 6).

The graph is read from the source with :mod:`ast`, not by importing: every ``import`` and ``from ...
import`` of the package, relative or absolute, at module level or inside a function. An edge goes from
the importing module to each module whose code the statement needs:

* ``import a.b.c`` and ``from a.b.c import name`` need ``a.b.c``; ``from a.b import c`` needs the
  submodule ``a.b.c`` when there is one, else the package ``a.b`` (whose ``__init__`` defines ``c``);
* importing ``a.b.c`` also runs the ``__init__`` of ``a.b``, which counts unless it is a package that
  contains the importing module (Python has initialised those before).

Imports under ``if TYPE_CHECKING:`` never run, so they are left out of the cycle check; the layer check
counts them, since a type from an outer ring is a dependency on it all the same.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "response_templates"
SOURCE = Path(__file__).resolve().parent.parent / "src" / PACKAGE

#: The core and the outer rings, by top-level module or package under ``response_templates``.
CORE = frozenset(
    {
        "controls",
        "errors",
        "events",
        "matching",
        "language",
        "parser",
        "policy",
        "utf8",
        "whole",
        "values",
        "assembly",
        "content",
        "jsonlex",
        "calls",
        "tools",
        "transforms",
        "compiled",
    }
)
OUTER = frozenset(
    {
        "library",
        "templates",
        "batch",
        "export",
        "toolstream",
        "wire",
        "hf",
        "cli",
        "lint",
        "verify",
        "demo",
        "grammar",
        "derivation",
        "engines",
        "serve",
        "__main__",
    }
)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    in_function: bool
    type_only: bool

    def __str__(self) -> str:
        where = ", inside a function" if self.in_function else ""
        where += ", under TYPE_CHECKING" if self.type_only else ""
        return f"{self.source} -> {self.target} (line {self.line}{where})"


def discover(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package rooted at ``root``."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join([package, *parts])] = path
    return modules


def _parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for i in range(1, len(parts)):
        yield ".".join(parts[:i])


class _Collector(ast.NodeVisitor):
    """The import statements of one module with their context (function body, TYPE_CHECKING block)."""

    def __init__(self) -> None:
        self.found: list[tuple[ast.Import | ast.ImportFrom, bool, bool]] = []
        self._function = 0
        self._type_checking = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._function += 1
        self.generic_visit(node)
        self._function -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        guarded = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )
        if not guarded:
            self.generic_visit(node)
            return
        self._type_checking += 1
        for child in node.body:
            self.visit(child)
        self._type_checking -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.append((node, self._function > 0, self._type_checking > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.found.append((node, self._function > 0, self._type_checking > 0))


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, modules: dict[str, Path], package: str
) -> Iterator[str]:
    """The modules of the package one import statement needs (see the module docstring)."""
    wanted: list[str] = []
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = module.split(".")
            keep = len(here) - node.level + (1 if modules[module].name == "__init__.py" else 0)
            base = ".".join(here[:keep] + ([node.module] if node.module else []))
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            wanted.append(submodule if submodule in modules else base)
    containing = {module, *_parents(module)}
    for name in wanted:
        if name != package and not name.startswith(package + "."):
            continue
        while name not in modules:  # `import pkg.mod.attr`-like spellings: the longest module prefix
            name = name.rpartition(".")[0]
        for parent in _parents(name):
            if parent not in containing:
                yield parent
        if name != module:
            yield name


def import_graph(root: Path = SOURCE, package: str = PACKAGE) -> list[Edge]:
    """Every import edge inside the package (one per statement and target)."""
    modules = discover(root, package)
    edges = []
    for module, path in modules.items():
        collector = _Collector()
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for node, in_function, type_only in collector.found:
            for target in dict.fromkeys(_targets(node, module, modules, package)):
                edges.append(Edge(module, target, node.lineno, in_function, type_only))
    return edges


def cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _ring(module: str, package: str = PACKAGE) -> str:
    """``core``, ``outer`` or ``root`` (the package's own ``__init__``, which re-exports both)."""
    if module == package:
        return "root"
    top = module.split(".")[1]
    if top in CORE:
        return "core"
    assert top in OUTER, f"{module}: add {top!r} to CORE or OUTER in {Path(__file__).name}"
    return "outer"


def layer_violations(edges: Iterable[Edge]) -> list[Edge]:
    """Edges from the core to an outer ring or to the package root (which imports the outer rings)."""
    return [e for e in edges if _ring(e.source) == "core" and _ring(e.target) != "core"]


def _cycle_edges(edges: list[Edge], component: list[str]) -> list[str]:
    members = set(component)
    return [str(e) for e in edges if e.source in members and e.target in members]


# ------------------------------------------------------------------------------------------------ tests


def test_every_module_belongs_to_a_layer() -> None:
    for module in discover(SOURCE, PACKAGE):
        _ring(module)


def test_no_import_cycles() -> None:
    edges = [e for e in import_graph() if not e.type_only]
    found = cycles(edges)
    report = "\n".join(
        "cycle among " + ", ".join(c) + ":\n  " + "\n  ".join(_cycle_edges(edges, c)) for c in found
    )
    assert not found, report


def test_core_never_imports_the_outer_rings() -> None:
    bad = layer_violations(import_graph())
    assert not bad, "the core imports an outer ring:\n  " + "\n  ".join(map(str, bad))


# -------------------------------------------------------------------- the graph builder on a toy package


def _toy(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "toy"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _pairs(edges: Iterable[Edge]) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in edges}


def test_graph_resolves_every_import_form(tmp_path: Path) -> None:
    root = _toy(
        tmp_path,
        {
            "__init__.py": "from . import a\nfrom .sub import thing\n",
            "a.py": "import toy.b\n\ndef f():\n    from .sub import c\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import X\n",
            "sub/__init__.py": "from .c import thing\n",
            "sub/c.py": "from .. import b\nfrom ..b import y\nimport os\n",
        },
    )
    edges = import_graph(root, "toy")
    assert _pairs(edges) == {
        ("toy", "toy.a"),
        ("toy", "toy.sub"),
        ("toy.a", "toy.b"),
        ("toy.a", "toy.sub"),
        ("toy.a", "toy.sub.c"),
        ("toy.b", "toy.a"),
        ("toy.sub", "toy.sub.c"),
        ("toy.sub.c", "toy.b"),
    }
    assert _pairs(e for e in edges if e.in_function) == {("toy.a", "toy.sub"), ("toy.a", "toy.sub.c")}
    assert _pairs(e for e in edges if e.type_only) == {("toy.b", "toy.a")}


def test_cycles_are_found(tmp_path: Path) -> None:
    root = _toy(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from .b import x\n",
            "b.py": "def f():\n    from . import c\n",
            "c.py": "from .a import y\n",
            "d.py": "from . import a\n",
        },
    )
    edges = import_graph(root, "toy")
    assert cycles(edges) == [["toy.a", "toy.b", "toy.c"]]
    assert cycles(e for e in edges if e.source != "toy.b") == []


@pytest.mark.parametrize(
    ("source", "target", "bad"),
    [
        ("response_templates.parser", "response_templates.matching", False),
        ("response_templates.content", "response_templates.wire._base", True),
        ("response_templates.jsonlex.end", "response_templates", True),
        ("response_templates.hf.parsing", "response_templates.parser", False),
    ],
)
def test_layer_rule(source: str, target: str, bad: bool) -> None:
    assert bool(layer_violations([Edge(source, target, 1, False, False)])) is bad

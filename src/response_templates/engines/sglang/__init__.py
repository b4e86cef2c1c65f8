"""Our parser inside SGLang: the ``sglang.srt.plugins`` entry point (docs/engines.md, "SGLang").

``pip install 'response-templates[sglang]'`` installs the entry point. SGLang's ``load_plugins()`` loads
every entry point of that group and calls it, in each of its processes, before the command line is
parsed. :func:`register` then makes a tool-call detector and a reasoning detector, both named
``response_templates``, known to SGLang:

    sglang serve --model-path MODEL --tool-call-parser response_templates \\
        --reasoning-parser response_templates

SGLang computes the choices of both flags when it builds its argument parser: from the registries
(``FunctionCallParser.ToolCallParserEnum``, ``ReasoningParser.DetectorMap``) when their modules are
already imported, else from two dependency-free lists of names. :func:`register` adds our name to the
lists, and adds our classes to the registries as soon as their modules are imported (at once when they
already are), so a process that never parses output never imports them. Importing this module imports no
part of SGLang.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from importlib import import_module, metadata
from types import ModuleType
from typing import Any

from ..common import ENGINE_REQUIREMENTS, PLUGIN_NAME

__all__ = ["NAME", "REQUIREMENT", "SUPPORTED", "register", "supported_version"]

#: The name of both detectors on SGLang's command line (SGLang's own ``response_template``, singular,
#: is its vendored parser and is left alone).
NAME = PLUGIN_NAME
#: The SGLang releases the plugin is written against (``major.minor.patch``): SGLang's serving path changes
#: between patch releases.
SUPPORTED = ((0, 5, 23),)
#: The same range as a requirement (the ``sglang`` extra pins it).
REQUIREMENT = ENGINE_REQUIREMENTS["sglang"]

logger = logging.getLogger("response_templates.engines.sglang")

TOOL_REGISTRY = "sglang.srt.function_call.function_call_parser"
REASONING_REGISTRY = "sglang.srt.parser.reasoning_parser"
SERVING_CHAT = "sglang.srt.entrypoints.openai.serving_chat"
_TOOL_NAMES = "sglang.srt.function_call.parser_names"
_REASONING_NAMES = "sglang.srt.parser.reasoning_parser_names"


def _release(version: str) -> tuple[int, int, int] | None:
    parts = version.split(".")
    try:
        patch = "".join(ch for ch in parts[2] if ch.isdigit()) if len(parts) > 2 else "0"
        return int(parts[0]), int(parts[1]), int(patch or "x")
    except (IndexError, ValueError):
        return None


def supported_version(version: str) -> bool:
    """Whether ``version`` (an SGLang version string) is in :data:`SUPPORTED`."""
    return _release(version) in SUPPORTED


def _sglang_version() -> str:
    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError:  # pragma: no cover - SGLang calls this, so it is installed
        return str(getattr(import_module("sglang"), "__version__", "unknown"))


# ------------------------------------------------------------------------------------ after-import hooks

_lock = threading.RLock()
_pending: dict[str, list[Callable[[ModuleType], None]]] = {}


class _AfterExec(importlib.abc.Loader):
    """A loader that runs the real one, then the callbacks waiting for the module."""

    def __init__(self, loader: Any, name: str) -> None:
        self.loader = loader
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        # The module's spec keeps the real loader (tools that read __spec__.loader see it).
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        _run_callbacks(self.name, module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


class _Watcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of a module that callbacks wait for."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _AfterExec(spec.loader, fullname)
        return spec


_watcher = _Watcher()


def _run_callbacks(name: str, module: ModuleType) -> None:
    with _lock:
        callbacks = _pending.pop(name, [])
    for callback in callbacks:
        try:
            callback(module)
        except Exception:  # a failed registration must not break SGLang's own import
            logger.exception("response_templates: could not register with %s", name)


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Run ``callback(module)`` once the module ``name`` is imported (now, when it already is)."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    with _lock:
        _pending.setdefault(name, []).append(callback)
        if _watcher not in sys.meta_path:
            sys.meta_path.insert(0, _watcher)


# ------------------------------------------------------------------------------------ registration


def _add_name(module_name: str, attribute: str) -> None:
    """Add :data:`NAME` to one of SGLang's dependency-free lists of parser names (the flags' choices)."""
    try:
        names = getattr(import_module(module_name), attribute)
    except (ImportError, AttributeError):
        logger.warning(
            "response_templates: SGLang has no %s.%s; the flag may refuse %s", module_name, attribute, NAME
        )
        return
    if isinstance(names, list) and NAME not in names:
        names.append(NAME)


def _install(_module: ModuleType) -> None:
    """Register our classes with the SGLang modules imported so far (a callback of :func:`when_imported`)."""
    name = f"{__name__}.detectors"
    current = sys.modules.get(name)
    if current is not None and not getattr(current, "READY", False):
        return  # being imported (it imports the registries): it installs itself when done
    import_module(name).install()


def _register_unsupported(version: str) -> None:
    def tool(module: ModuleType) -> None:
        from ._unsupported import unsupported_class

        module.FunctionCallParser.ToolCallParserEnum.setdefault(NAME, unsupported_class(version))

    def reasoning(module: ModuleType) -> None:
        from ._unsupported import unsupported_class

        module.ReasoningParser.DetectorMap.setdefault(NAME, unsupported_class(version))

    when_imported(TOOL_REGISTRY, tool)
    when_imported(REASONING_REGISTRY, reasoning)


_registered = False


def register() -> None:
    """Register the ``response_templates`` tool-call and reasoning detectors with SGLang (the entry point).

    Idempotent: SGLang loads its plugins in every process, once each, and a caller may call this again.
    With an SGLang outside :data:`SUPPORTED`, the names are accepted on the command line but stand for a
    class that fails with a message naming the supported range when a server uses it, so an installed
    plugin never breaks a server that does not ask for it.
    """
    global _registered
    with _lock:
        if _registered:
            return
        _registered = True
    version = _sglang_version()
    _add_name(_TOOL_NAMES, "TOOL_CALL_PARSER_NAMES")
    _add_name(_REASONING_NAMES, "REASONING_PARSER_NAMES")
    if not supported_version(version):
        logger.warning(
            "response_templates: SGLang %s is not supported (%s); --tool-call-parser/--reasoning-parser %s "
            "will fail",
            version,
            REQUIREMENT,
            NAME,
        )
        _register_unsupported(version)
        return
    for module in (TOOL_REGISTRY, REASONING_REGISTRY, SERVING_CHAT):
        when_imported(module, _install)

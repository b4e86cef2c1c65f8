"""Our parser inside vLLM: the ``vllm.general_plugins`` entry point (docs/engines.md, "vLLM").

``pip install 'response-templates[vllm]'`` installs the entry point; vLLM calls :func:`register` in each of
its processes, which registers a tool-call parser and a reasoning parser both named ``response_templates``:

    vllm serve MODEL --enable-auto-tool-choice --tool-call-parser response_templates \\
        --reasoning-parser response_templates

vLLM composes the pair into one parser per request (``ParserManager._compose_parser``); :func:`register`
wraps that function so that when either flag names ``response_templates`` the pair becomes our unified
:class:`~response_templates.engines.vllm.parsers.ResponseTemplatesParser` (token ids in, the prompt's ids
as the prefix), and leaves every other name to vLLM. Importing this module imports no part of vLLM.
"""

from __future__ import annotations

import logging
from importlib import import_module, metadata
from typing import Any

from ..common import ENGINE_REQUIREMENTS, PLUGIN_NAME

__all__ = ["NAME", "REQUIREMENT", "SUPPORTED", "register", "supported_version"]

#: The name of both parsers on vLLM's command line.
NAME = PLUGIN_NAME
#: The vLLM releases the plugin is written against (``major.minor``): the serving path it reads changes
#: between minor releases.
SUPPORTED = ((0, 34),)
#: The same range as a requirement (the ``vllm`` extra pins it).
REQUIREMENT = ENGINE_REQUIREMENTS["vllm"]

logger = logging.getLogger("response_templates.engines.vllm")

_MARK = "_response_templates_original"


def _release(version: str) -> tuple[int, int] | None:
    parts = version.split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or "x")
    except (IndexError, ValueError):
        return None


def supported_version(version: str) -> bool:
    """Whether ``version`` (a vLLM version string) is in :data:`SUPPORTED`."""
    return _release(version) in SUPPORTED


def register() -> None:
    """Register the ``response_templates`` tool and reasoning parsers with vLLM (the entry point).

    Idempotent: vLLM loads general plugins in every process, and may call this more than once. With a
    vLLM outside :data:`SUPPORTED`, the names are registered to a module whose import fails with a
    message naming the supported range, so that only a server that asks for the parsers fails (an
    installed plugin never breaks an unrelated ``vllm serve``).
    """
    try:
        version = metadata.version("vllm")
    except metadata.PackageNotFoundError:  # pragma: no cover - vLLM calls this, so it is installed
        version = str(getattr(import_module("vllm"), "__version__", "unknown"))
    tools: Any = import_module("vllm.tool_parsers.abstract_tool_parser").ToolParserManager
    reasoning: Any = import_module("vllm.reasoning.abs_reasoning_parsers").ReasoningParserManager
    if not supported_version(version):
        logger.warning(
            "response_templates: vLLM %s is not supported (%s); --tool-call-parser/--reasoning-parser "
            "%s will fail",
            version,
            REQUIREMENT,
            NAME,
        )
        module = f"{__name__}._unsupported"
        tools.register_lazy_module(NAME, module, "ResponseTemplatesToolParser")
        reasoning.register_lazy_module(NAME, module, "ResponseTemplatesReasoningParser")
        return
    module = f"{__name__}.parsers"
    # Lazy: the worker processes never build a parser, and need not import ours.
    tools.register_lazy_module(NAME, module, "ResponseTemplatesToolParser")
    reasoning.register_lazy_module(NAME, module, "ResponseTemplatesReasoningParser")
    _wrap_compose()


def _wrap_compose() -> None:
    """Route ``ParserManager._compose_parser`` to ours when a flag names :data:`NAME` (once per process)."""
    manager: Any = import_module("vllm.parser.parser_manager").ParserManager
    current = manager.__dict__["_compose_parser"]
    if getattr(current.__func__, _MARK, None) is not None:
        return
    original = current.__func__

    def _compose_parser(cls: Any, *args: Any, **kwargs: Any) -> Any:
        names = (kwargs.get("tool_parser_name"), kwargs.get("reasoning_parser_name"))
        if args or NAME not in names:
            return original(cls, *args, **kwargs)
        from .parsers import compose

        return compose(original, cls, **kwargs)

    setattr(_compose_parser, _MARK, original)
    _compose_parser.__doc__ = original.__doc__
    manager._compose_parser = classmethod(_compose_parser)

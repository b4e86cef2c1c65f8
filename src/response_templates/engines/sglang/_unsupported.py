"""What ``--tool-call-parser/--reasoning-parser response_templates`` stand for under an SGLang the plugin
does not support: a class whose every use fails, naming the supported range."""

from __future__ import annotations

from typing import Any

from ..common import ENGINE_REQUIREMENTS
from ..common import PLUGIN_NAME as NAME

REQUIREMENT = ENGINE_REQUIREMENTS["sglang"]

__all__ = ["unsupported_class"]


def unsupported_class(version: str) -> type:
    """A stand-in detector class for SGLang ``version`` (outside :data:`~.REQUIREMENT`)."""
    message = (
        f"{NAME} supports {REQUIREMENT}, this is SGLang {version}: "
        f"install a supported SGLang (pip install 'response-templates[sglang]')"
    )

    class Unsupported:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Not a ValueError: SGLang turns that into a warning at start-up; this must stop the server.
            raise RuntimeError(message)

        @classmethod
        def parses_without_tools(cls) -> bool:
            raise RuntimeError(message)

    Unsupported.__name__ = Unsupported.__qualname__ = "UnsupportedResponseTemplatesDetector"
    return Unsupported

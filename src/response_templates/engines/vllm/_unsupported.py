"""What ``--tool-call-parser response_templates`` loads under a vLLM the plugin does not support."""

from __future__ import annotations

from importlib import metadata

from ..common import ENGINE_REQUIREMENTS

__all__: list[str] = []  # importing it is the error

REQUIREMENT = ENGINE_REQUIREMENTS["vllm"]

raise ImportError(
    f"response_templates supports {REQUIREMENT}, this is vLLM {metadata.version('vllm')}: "
    f"install a supported vLLM (pip install 'response-templates[vllm]')"
)

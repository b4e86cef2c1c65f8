"""Templates shared by several test modules, from one source: the package's bundled demo data."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

#: Qwen3 / Hermes ChatML: <think> reasoning, JSON tool calls in <tool_call>, implicit content.
QWEN3_TEMPLATE: dict[str, Any] = json.loads(
    files("response_templates").joinpath("data/demo_qwen3_template.json").read_text(encoding="utf-8")
)

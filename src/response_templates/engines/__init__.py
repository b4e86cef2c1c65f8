"""Our parser inside the serving engines: plugins for vLLM and SGLang (docs/engines.md).

* :mod:`response_templates.engines.common`: what both plugins share, with no engine imported: the choice of
  the template (an override, the tokenizer's ``response_template``, the library by model id, the library
  by chat template) and a per-request :class:`~response_templates.engines.common.Session` that takes token
  ids or text and returns deltas (reasoning, content, tool calls with their arguments as they are written).
* :mod:`response_templates.engines.vllm`: the ``vllm.general_plugins`` entry point
  (``--tool-call-parser response_templates --reasoning-parser response_templates``).
* :mod:`response_templates.engines.sglang`: the ``sglang.srt.plugins`` entry point (the same flags).

Importing this package imports no engine: only each plugin's ``register()`` does. The shared layer's
names are here too:

>>> from response_templates.engines import choose_template
>>> choose_template(None, model_id="Qwen/Qwen3-8B").family.name
'qwen3'
"""

from .common import (
    ENGINE_REQUIREMENTS,
    PLUGIN_NAME,
    TEMPLATE_ENV,
    Call,
    CallDelta,
    Delta,
    EngineSetupError,
    Result,
    Serving,
    ServingCache,
    Session,
    TemplateChoice,
    choose_template,
    merge_deltas,
    tool_dicts,
)

__all__ = [
    "ENGINE_REQUIREMENTS",
    "PLUGIN_NAME",
    "TEMPLATE_ENV",
    "Call",
    "CallDelta",
    "Delta",
    "EngineSetupError",
    "Result",
    "Serving",
    "ServingCache",
    "Session",
    "TemplateChoice",
    "choose_template",
    "merge_deltas",
    "tool_dicts",
]

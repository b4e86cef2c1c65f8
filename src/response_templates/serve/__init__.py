"""``response-templates serve``: an OpenAI- and Anthropic-compatible server in front of a completions engine.

The server renders the model's chat template, asks an upstream engine (llama.cpp's server, vLLM,
SGLang, TGI: anything with OpenAI's ``POST /v1/completions``) to continue the prompt, parses the text it
streams back with the model's response template, and answers on ``/v1/chat/completions``,
``/v1/responses`` and ``/v1/messages`` with reasoning, content, tool calls, usage and finish reasons.
See ``docs/serve.md``.

This is an outer ring of the package: the web framework (Starlette, uvicorn) and the HTTP client
(``httpx2``) are imported here only, and only by :mod:`.app` and :mod:`.upstream`; importing this package
and :mod:`.config`, :mod:`.requests` or :mod:`.command` needs none of them.
(``pip install 'response-templates[serve]'``.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import ConfigError, ServeConfig, load_config

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["ConfigError", "ServeConfig", "create_app", "load_config"]


def create_app(config: ServeConfig) -> Starlette:
    """The Starlette app serving ``config`` (see :func:`response_templates.serve.app.create_app`)."""
    from .app import create_app as _create_app

    return _create_app(config)

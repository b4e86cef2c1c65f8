"""Rendering a request's messages with the model's chat template, as transformers renders it.

The Jinja environment is :mod:`response_templates.verify`'s (sandboxed, Hugging Face's ``tojson``,
``raise_exception``, ``strftime_now`` and ``{% generation %}``), so the prompt is the one
``tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False, **kwargs)``
writes.
"""

from __future__ import annotations

from typing import Any

from ..errors import ResponseTemplateError
from ..verify import render_chat_template
from .config import ServeConfig
from .requests import Generation, RequestError

__all__ = ["render_prompt", "upstream_prompt"]


def render_prompt(config: ServeConfig, generation: Generation) -> str:
    """The prompt of ``generation``: its messages and tools through the chat template, ready for the answer.

    A template that refuses the conversation (``raise_exception``, a Jinja error) is a
    :class:`RequestError` carrying the template's message.
    """
    kwargs: dict[str, Any] = {**config.chat_template_kwargs, **generation.chat_template_kwargs}
    for reserved in ("messages", "tools", "add_generation_prompt", "bos_token", "eos_token"):
        if reserved in kwargs:
            raise RequestError(f"'chat_template_kwargs' must not set {reserved!r}", "chat_template_kwargs")
    tools = generation.tools if generation.tool_choice != "none" else None
    try:
        from jinja2.exceptions import TemplateError as JinjaTemplateError
    except ImportError as exc:  # pragma: no cover - jinja2 is part of the serve extra
        raise ResponseTemplateError(
            "the server renders chat templates with jinja2: pip install jinja2"
        ) from exc
    try:
        return render_chat_template(
            config.chat_template,
            generation.messages,
            add_generation_prompt=True,
            tools=tools or None,
            bos_token=config.bos_token,
            eos_token=config.eos_token,
            **kwargs,
        )
    except JinjaTemplateError as exc:
        raise RequestError(f"the model's chat template refused the conversation: {exc}", "messages") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise RequestError(
            f"the model's chat template could not render the conversation: {exc}", "messages"
        ) from None


def upstream_prompt(config: ServeConfig, prompt: str) -> str:
    """The prompt as sent upstream: without the BOS token the upstream's tokenizer adds itself."""
    if config.bos_token and prompt.startswith(config.bos_token):
        return prompt[len(config.bos_token) :]
    return prompt

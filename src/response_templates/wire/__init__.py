"""Wire adapters: the parser's events as the stream chunks OpenAI and Anthropic clients consume.

Each adapter is a small, pure, stateful object (no I/O): feed it the parser's events and it returns the
chunks of its protocol, ready to be written as server-sent events (:meth:`~WireAdapter.encode`). Tool
calls are announced as soon as their name is known and their arguments stream as they are written
(:mod:`response_templates.toolstream`); reasoning and content stream with the exact text of the parsed
message. After ``finish()``, ``final()`` gives the protocol's non-streamed object, equal to what the
official SDKs reassemble from the stream.

* :class:`ChatCompletionsAdapter`: OpenAI Chat Completions (``chat.completion.chunk``).
* :class:`ResponsesAdapter`: OpenAI Responses API events (``response.created`` ... ``response.completed``).
* :class:`AnthropicMessagesAdapter`: Anthropic Messages events (``message_start`` ... ``message_stop``).

:func:`run_stream` drives a parser and an adapter over the model's output, :func:`arun_stream` does it for
an async engine; either takes the finish reason and usage at the end (:class:`StreamEnd`). See
``docs/wire.md``.
"""

from __future__ import annotations

from ._base import DEFAULT_FIELDS, Usage, WireAdapter
from .anthropic import AnthropicMessagesAdapter
from .openai_chat import ChatCompletionsAdapter
from .openai_responses import ResponsesAdapter
from .stream import StreamEnd, arun_stream, run_stream

__all__ = [
    "DEFAULT_FIELDS",
    "AnthropicMessagesAdapter",
    "ChatCompletionsAdapter",
    "ResponsesAdapter",
    "StreamEnd",
    "Usage",
    "WireAdapter",
    "arun_stream",
    "run_stream",
]

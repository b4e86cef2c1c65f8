"""Early, incremental tool calls: an opt-in layer over the parser's events **[ours]**.

The parser's ``region_chunk`` events for a ``json`` tool-call region are raw text (``dirty``), and the
parsed value arrives with ``region_close``. A server streaming tool calls to a client wants more: the
tool's name as soon as it is written, and the arguments as they grow. This module gives both, without
ever re-parsing the text from the start (the work per chunk is proportional to the chunk):

* :class:`JsonScanner` reads one JSON document incrementally. It validates it (it rejects exactly what
  :func:`json.loads` rejects), reports watched values (a tool name, a call id) as soon as they are
  complete, and reports the arguments value as it grows, both as the raw text the model wrote and as
  *canonical* JSON text: the arguments re-written token by token the way :func:`dumps_arguments` writes
  the final value, so that every piece sent is a prefix of the final arguments string.
* :class:`ToolCallStreamer` is fed the parser's events and turns the tool-call field's regions into
  *call events*: ``tool_call_start`` (index, name, id) once the name is known, ``tool_call_delta``
  (argument text), ``tool_call_end`` (the complete argument string, or ``complete: False``). It works out
  from the template where each call's name, id and arguments come from (a capture of the open
  delimiter, a path in the JSON, a literal), types arguments by the request's tools exactly as the parser
  does, and checks every call against the parsed value when its region closes. The wire adapters
  (:mod:`response_templates.wire`) are built on it.

The guarantee, whatever the chunking: for a call that ends complete, the ``tool_call_delta`` texts
concatenate to its final ``arguments`` string, which :func:`json.loads` turns into exactly the typed
arguments of the parsed message (and which equals ``dumps_arguments(arguments)`` unless the model
repeated a key). Each delta keeps the text sent so far a prefix of valid JSON. A call whose region fails
while the output goes on is ended with the text that closes what was sent (:func:`json_completion`), so
that what a client holds is valid JSON; a call that the end of the output cut off is left as it was
sent (``cut_off``): closing it would write values the model never finished.

>>> import response_templates as rt
>>> from response_templates.toolstream import ToolCallStreamer
>>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {
...     "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
...                    "transform": {"type": "function", "function": "{content}"}},
...     "content": {}}}
>>> parser = rt.ResponseParser(template, prefix="")
>>> calls = ToolCallStreamer(template)
>>> calls.feed(parser.feed('<tool_call>{"name": "get_weather", "argu'))
[{'type': 'tool_call_start', 'index': 0, 'name': 'get_weather', 'id': None}]
>>> calls.feed(parser.feed('ments": {"city":  "Par'))
[{'type': 'tool_call_delta', 'index': 0, 'arguments': '{"city": "Par', 'whole': False}]
>>> calls.feed(parser.feed('is", "days": 3}}</tool_call>'))  # doctest: +NORMALIZE_WHITESPACE
[{'type': 'tool_call_delta', 'index': 0, 'arguments': 'is", "days": 3}', 'whole': False},
 {'type': 'tool_call_end', 'index': 0, 'name': 'get_weather', 'id': None,
  'arguments': '{"city": "Paris", "days": 3}', 'input': {'city': 'Paris', 'days': 3}, 'complete': True}]
"""

from __future__ import annotations

from ..calls import arguments_text, call_parts
from ..jsonlex.canonical import dumps_arguments
from ..jsonlex.scanner import JsonScanner
from .completion import json_completion
from .plan import ToolCallPlan, tool_call_plan
from .streamer import ToolCallStreamer

__all__ = [
    "JsonScanner",
    "ToolCallPlan",
    "ToolCallStreamer",
    "arguments_text",
    "call_parts",
    "dumps_arguments",
    "json_completion",
    "tool_call_plan",
]

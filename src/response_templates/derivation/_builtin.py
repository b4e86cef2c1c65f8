"""Calls of tools the template lists by name besides ``tools`` (Llama 3.1's ``builtin_tools``).

A template may render a call differently when its tool is one of a list it is given by name
(``{% if builtin_tools is defined and tool_call.name in builtin_tools %}<|python_tag|>NAME.call(k="v")``).
The one-call probe is rendered again with the probe tools in each such list; a call the render then writes
as ``MARKER NAME[SUFFIX](key="value", ...)`` is read as a Python-like call (extension ``python-calls``,
the suffix ``.call`` as its ``name_suffix``) feeding the tool calls beside the usual syntax.
"""

from __future__ import annotations

import re

from . import _text as tx
from ._findings import Findings
from ._render import CALL_1, CALL_2, Renderer

__all__ = ["builtin_calls"]


def builtin_calls(r: Renderer, f: Findings) -> None:
    """Add a ``builtin_calls`` field for a call syntax the template keeps for tools it lists by name."""
    one = f.renders.get("one call")
    if f.tools is None or one is None:
        return
    lists = sorted(set(re.findall(r"\bin\s+([A-Za-z_]\w*_tools)\b", r.chat_template)))
    name = CALL_1["name"]
    for var in lists:
        kwargs = {**one.kwargs, var: [CALL_1["name"], CALL_2["name"]]}
        rendered = r.probe(f"one call, the tool in {var}", one.message, **kwargs)
        if rendered is None or rendered.turn == one.turn or name not in rendered.turn:
            continue
        turn = rendered.turn
        at = turn.find(name)
        call = re.match(r"([.\w]*)\(", turn[at + len(name) :])
        marker = tx.trailing_marker(turn[:at])
        last_value = str(list(CALL_1["arguments"].values())[-1])
        paren = turn.find(")", turn.find(last_value, at))
        if call is None or not marker or paren < 0 or marker in (f.anchor, f.header.strip()):
            continue
        suffix = call.group(1)
        close = tx.first_token(turn[paren + 1 :])
        closes = [c for c in (close if close.startswith(("<", "[")) else "", f.end) if c]
        spec = {
            "open_pattern": tx.flex(marker) + r"(?=\s*[A-Za-z_][\w.]*" + re.escape(suffix) + r"\()",
            "content": "python-calls",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            "into": "tool_calls",
        }
        if closes:
            spec["close"] = list(dict.fromkeys(closes))
        if suffix:
            spec["content_args"] = {"name_suffix": suffix}
        f.more_fields["builtin_calls"] = spec
        f.renders[f"one call, the tool in {var}"] = rendered
        f.note(f"one call, the tool in {var}", "built-in call syntax", [marker, suffix, close])
        return

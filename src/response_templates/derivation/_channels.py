"""Channel-style turns (OpenAI's harmony): every message of a turn has a header naming its channel.

A chat template of this style writes ``HEADER <channel-marker>NAME [attributes]<message-marker>TEXT<end>``
for every message, the reasoning in one channel and the answer in another, and rewrites the turn's
header between them (``<|start|>assistant<|channel|>analysis<|message|>...<|end|><|start|>assistant
<|channel|>final<|message|>...``). A call is a message with a recipient attribute (``to=functions.NAME``)
and its arguments as the text.

Recognised when the reasoning and the answer openers are the same two markers around different words (the
channel names). The fields then read: any message of the reasoning channel as reasoning (several joined
by a newline), any other channel's message as the answer, a message whose recipient is the functions the
template writes calls to as a call, and a message to any other recipient as a call to something else
(dropped). The header may be rewritten before every message, the recipient may stand before or after the
channel name, and a content type may follow with or without a marker of the template's style
(``json`` or ``<|constrain|>json``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import _text as tx
from ._findings import Findings
from ._render import CALL_1

__all__ = ["channel_fields", "channels"]

_WORD = r"[\w-]+"


def _marker_like(marker: str) -> str:
    """A regex for any marker spelled like ``marker`` (``<|channel|>`` -> ``<\\|[\\w-]+\\|>``)."""
    m = re.fullmatch(r"(\W+)\w[\w-]*(\W+)", marker)
    if not m:
        return re.escape(marker)
    return re.escape(m.group(1)) + _WORD + re.escape(m.group(2))


def channels(f: Findings) -> None:
    """Set ``f.channels`` when the reasoning and the answer are messages in named channels."""
    ro, co = tx.tokens(f.reasoning_open), tx.tokens(f.content_open)
    if len(ro) != 3 or len(co) != 3 or ro[0] != co[0] or ro[2] != co[2] or ro[1] == co[1]:
        return
    channel, message = ro[0], ro[2]
    if not all(t.startswith(("<", "[")) for t in (channel, message)):
        return
    if not all(re.fullmatch(_WORD, w) for w in (ro[1], co[1])):
        return
    spec: dict[str, Any] = {
        "channel": channel,
        "message": message,
        "reasoning": ro[1],
        "answer": co[1],
    }
    f.note("reasoning and plain", "channels", {"marker": channel, "reasoning": ro[1], "answer": co[1]})
    call = _call_header(f, channel, message)
    if call is not None:
        spec.update(call)
        f.note("one call", "call header", {k: call[k] for k in ("recipient", "call_channel")})
    f.channels = spec


def _call_header(f: Findings, channel: str, message: str) -> dict[str, Any] | None:
    """The call's message header in the one-call render: the recipient before the name, the channel,
    the close after the arguments."""
    rendered = f.renders.get("one call")
    if rendered is None:
        return None
    turn = rendered.turn
    name = CALL_1["name"]
    n = turn.find(name)
    m2 = turn.find(message, n)
    if n < 0 or m2 < 0:
        return None
    starts = [
        turn.rfind(s, 0, n) + len(s) for s in (f.anchor, f.reasoning_close, f.end) if s and s in turn[:n]
    ]
    start = max(starts, default=0)
    header = turn[start:m2]
    c = header.find(channel)
    if c < 0:
        return None
    at = n - start
    if at < c:  # ``to=functions.NAME<|channel|>commentary json``
        recipient = header[:at].strip()
        if header[at + len(name) : c].strip():
            return None
        words = header[c + len(channel) :].split()
    else:  # ``<|channel|>commentary to=functions.NAME json``
        words = header[c + len(channel) : at].split()
        if len(words) < 2:
            return None
        recipient = words.pop()
    if not recipient or not words or not re.fullmatch(_WORD, words[0]):
        return None
    try:
        _, after = json.JSONDecoder().raw_decode(turn, m2 + len(message))
    except ValueError:
        return None
    close = tx.first_token(turn[after:])
    if not close.startswith(("<", "[")):
        close = ""
    return {"recipient": recipient, "call_channel": words[0], "call_close": close}


def channel_fields(f: Findings) -> dict[str, Any]:
    """The fields of a channel-style turn (see the module's docstring)."""
    spec = f.channels or {}
    channel, message = tx.flex(spec["channel"]), tx.flex(spec["message"])
    head = r"(?:" + tx.flex(f.anchor) + r"\s*)?" if f.anchor else ""
    attrs = r"(?:\s*" + _marker_like(spec["channel"]) + r"\s*" + _WORD + r"|\s+" + _WORD + ")?"
    ends = [e for e in (f.reasoning_close, f.end) if e]
    fields: dict[str, Any] = {
        "reasoning_content": {
            "open_pattern": head + channel + re.escape(spec["reasoning"]) + attrs + r"\s*" + message,
            "close": list(dict.fromkeys(ends)),
            "repeats": True,
            "join": "\n",
        },
        "content": {
            "open_pattern": head
            + channel
            + f"(?!{re.escape(spec['reasoning'])}(?![\\w-])){_WORD}"
            + attrs
            + r"\s*"
            + message,
            "close": list(dict.fromkeys([f.end, *ends] if f.end else ends)),
            "repeats": True,
            "join": "\n",
        },
    }
    recipient = spec.get("recipient")
    if not recipient:
        return fields
    closes = list(dict.fromkeys(c for c in (spec.get("call_close"), *ends) if c))

    def header(to: str) -> str:
        return (
            head + f"(?:{to}\\s*{channel}\\s*{_WORD}|{channel}\\s*{_WORD}\\s+{to})" + attrs + r"\s*" + message
        )

    key = re.match(r"[^=:\s]+[=:]", recipient)
    if key:  # ``to=container.exec``: a message to another recipient is no call of a function
        # (nor is one addressed to the assistant itself, the role its header names)
        skip = [re.escape(recipient[key.end() :])]
        role = tx.last_token(f.anchor)
        if re.fullmatch(r"\w+", role):
            skip.append(re.escape(role) + r"(?![\w.-])")
        other = tx.flex(key.group(0)) + f"(?!{'|'.join(skip)})" + r"[^\s<=]+"
        fields["other_recipient"] = {"open_pattern": header(other), "close": closes, "transform": ""}
    fields["tool_calls"] = {
        "open_pattern": header(tx.flex(recipient) + r"(?P<name>[\w.\-]+)"),
        "close": closes,
        "repeats": True,
        "content": "json",
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
    }
    return fields

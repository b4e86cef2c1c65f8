"""Building the response template from the findings of the analysis."""

from __future__ import annotations

import json
import re
from typing import Any

from . import _text as tx
from ._findings import Findings

__all__ = ["build"]


def _opener_pattern(opener: str) -> str:
    """The reasoning opener as a pattern: written twice is once (models repeat a pre-opened marker), and a
    word after a marker (``<|channel>thought``) may be left out."""
    toks = tx.tokens(opener)
    if len(toks) == 2 and toks[0].startswith(("<", "[")) and not toks[1].startswith(("<", "[")):
        marker = tx.flex(toks[0])
        return f"{marker}(?:\\s*{marker})?(?:{tx.flex(toks[1])}\\n?)?"
    if len(toks) == 1:
        marker = tx.flex(opener)
        return f"{marker}(?:\\s*{marker})?"
    return tx.flex(opener)


def build(f: Findings) -> dict[str, Any]:
    """The response template the findings describe."""
    ends = [f.end] if f.end else []
    fields: dict[str, Any] = {}
    extensions: list[str] = []
    if f.reasoning_open and f.reasoning_close:
        spec: dict[str, Any] = {"close": [f.reasoning_close, *(e for e in ends if e != f.reasoning_close)]}
        opener = _opener_pattern(f.reasoning_open)
        if f.closed_by_prompt:
            opener += r"|^\s*(?=" + re.escape(f.reasoning_close) + ")"
        spec["open_pattern"] = opener
        fields["reasoning_content"] = spec
    if f.tools is not None:
        tool = dict(f.tools)
        if tool.get("close_json"):
            extensions.append("json-value-end")
        if "?}" in json.dumps(tool.get("transform")):
            extensions.append("optional-placeholders")
        args = tool.get("content_args") or {}
        if "nested" in args or "cdata" in args:
            extensions.append("xml-values")
        if tool.get("transform_each") and "{key}" in json.dumps(tool.get("transform")):
            extensions.append("item-transform")
        if tool.get("close_pattern") is None:
            tool.pop("close_pattern", None)
        if "reasoning_content" in fields:
            # a model may call tools before it closes its reasoning: the call interrupts the reasoning
            tool["within"] = ["reasoning_content"]
            extensions.append("interleaved")
        if f.more_fields:  # several syntaxes: each field feeds the tool calls
            fields["call_blocks"] = {**tool, "into": "tool_calls"}
            fields.update(f.more_fields)
            extensions.append("into")
        else:
            fields["tool_calls"] = tool
    content: dict[str, Any] = {}
    # a stray reasoning closer in the answer ends nothing and is not text: content closes on it and goes on
    closes = [c for c in (f.content_close, *ends, f.reasoning_close) if c]
    if f.content_open and not f.bare_content:
        content["open"] = f.content_open
    elif f.content_open:
        # the answer's wrapper may be left out: the wrapped text and bare text are both the answer
        wrapper_close = [c for c in (f.content_close, *ends) if c]
        fields["content_wrapper"] = {"open": f.content_open, "into": "content"}
        if wrapper_close:
            fields["content_wrapper"]["close"] = list(dict.fromkeys(wrapper_close))
        extensions.append("into")
        closes = [c for c in closes if c != f.content_close]
    if closes:
        content["close"] = list(dict.fromkeys(closes))
    fields["content"] = content
    template: dict[str, Any] = {"defaults": {"role": "assistant"}}
    if extensions:
        template["extensions"] = list(dict.fromkeys(extensions))
    if f.anchor:
        template["start_anchor"] = [f.anchor, *f.more_anchors] if f.more_anchors else f.anchor
    else:
        template["start_anchor_pattern"] = "^"
    template["fields"] = fields
    return template

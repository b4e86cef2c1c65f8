"""Building the response template from the findings of the analysis."""

from __future__ import annotations

import json
import re
from typing import Any

from . import _text as tx
from ._channels import channel_fields
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
        if "reasoning_content" in fields and _call_in_reasoning_is_a_call(tool):
            # a model may call tools before it closes its reasoning: the call interrupts the reasoning
            tool["within"] = ["reasoning_content"]
            extensions.append("interleaved")
        if f.more_fields:  # several syntaxes: each field feeds the tool calls
            fields["call_blocks"] = {**tool, "into": "tool_calls"}
            fields.update(f.more_fields)
            extensions.append("into")
            if any(m.get("content") == "python-calls" for m in f.more_fields.values()):
                extensions.append("python-calls")
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
    if f.channels is not None:  # every message of the turn has a header naming its channel
        fields = channel_fields(f)
        extensions = []
    if f.eos_guess:
        _add_ends(fields, f.eos_guess)
    if f.prompt_marker:
        _optional_at_start(fields, f.prompt_marker)
    repeated = _repeated_header(f)
    if repeated:
        # the model may write the header's last marker again (``<|CHATBOT_TOKEN|>``): it is no text
        fields = {
            "repeated_header": {"open_pattern": repeated, "close_pattern": r"\s*", "transform": ""},
            **fields,
        }
    template: dict[str, Any] = {"defaults": {"role": "assistant"}}
    if extensions:
        template["extensions"] = list(dict.fromkeys(extensions))
    if f.anchor:
        template["start_anchor"] = [f.anchor, *f.more_anchors] if f.more_anchors else f.anchor
    else:
        template["start_anchor_pattern"] = "^"
    template["fields"] = fields
    return template


#: Markers that look like a tokenizer's control tokens (``<|tool_call_begin|>``, ``<｜tool▁calls▁begin｜>``,
#: ``[TOOL_CALLS]``), not like text a model might quote.
_CONTROL_MARKER = re.compile(r"<\\?\||<｜|\\?\[[A-Z_]+\\?\]")


def _call_in_reasoning_is_a_call(tool: dict[str, Any]) -> bool:
    """Whether a call written inside open reasoning is read as a call (``within``) rather than as part
    of the reasoning: when its opener is a control-token-like marker, or its arguments are XML parameters
    (a structure no one writes by accident). A plain tag such as ``<tool_call>`` inside the reasoning is
    as likely the model thinking about a call, and stays reasoning text."""
    if tool.get("content") == "xml-inline":
        return True
    opener = tool.get("open") or tool.get("open_pattern") or ""
    openers = [opener] if isinstance(opener, str) else list(opener)
    return any(_CONTROL_MARKER.search(o) for o in openers)


def _add_ends(fields: dict[str, Any], ends: list[str]) -> None:
    """More spellings of the turn's end: every field closes on them too (a field that ends with its JSON
    value ends there)."""
    alts = "|".join(re.escape(e) for e in ends)
    for name, spec in fields.items():
        if "close" in spec:
            close = [spec["close"]] if isinstance(spec["close"], str) else list(spec["close"])
            spec["close"] = list(dict.fromkeys([*close, *ends]))
        elif spec.get("close_pattern"):
            spec["close_pattern"] = f"{spec['close_pattern']}|{alts}"
        elif name == "content" or not spec.get("close_json"):
            spec["close"] = list(ends)


def _repeated_header(f: Findings) -> str:
    """A pattern for the start anchor's last marker written again at the start of the output, or ""."""
    last = tx.last_token(f.anchor)
    if not re.fullmatch(r"<[^<>\n]+>|\[[^\[\]\n]+\]", last) or f.anchor.rstrip() != f.anchor:
        return ""
    if last in (f.end, f.reasoning_open, f.reasoning_close, f.content_open, f.content_close):
        return ""
    return r"^\s*" + tx.flex(last)


def _optional_at_start(fields: dict[str, Any], marker: str) -> None:
    """Openers that start with the marker the generation prompt ends with may start the output without it
    (a prompt rendered without the marker)."""
    lead = tx.flex(marker)
    for spec in fields.values():
        pattern = spec.get("open_pattern")
        if pattern is None and isinstance(spec.get("open"), str) and spec["open"].startswith(marker):
            pattern = re.escape(spec.pop("open"))
        if isinstance(pattern, str) and pattern.startswith(lead):
            spec["open_pattern"] = f"(?:{lead}|^)" + pattern[len(lead) :]
            if spec.get("into") == "content":  # the answer ends where the next call starts
                closes = spec.pop("close", [])
                spec["close_pattern"] = "|".join([*(re.escape(c) for c in closes), f"(?={lead})"])

"""Deriving a response template from a model's chat template (``rt.templates.derive``).

The chat template says how the model's turns look: rendering a few probe conversations through it
(plain text, reasoning, one and two tool calls with distinctive names, argument names and values, the
thinking switch of the generation prompt on and off, a tool's result, the turn after the assistant's)
and diffing the renders shows the markers of each part of a turn (see docs/derive.md). :func:`derive`
builds a response template from them and checks it by reading back the renders it came from
(:func:`response_templates.verify.round_trip`). It never looks at the built-in library: it is meant for
the model nobody wrote a template for yet.

Rendering needs jinja2 (the ``verify`` extra).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DeriveError, ResponseTemplateError
from ..language import load_template
from ..verify import _compare
from ..whole import parse_response
from ._analyze import Findings, analyze
from ._build import build
from ._render import TOOLS, Renderer

__all__ = ["Derivation", "derive", "read_chat_template"]


@dataclass
class Derivation:
    """The result of :func:`derive`.

    Attributes:
        template: the derived response template (a dict :func:`~response_templates.load_template` reads).
        confidence: 0..1, the share of probe renders the template reads back, lowered for every marker
            guessed by rule rather than seen in a render.
        evidence: which probe showed which marker (``{"probe", "found", "value"}`` dicts).
        warnings: what the chat template does not show (reasoning dropped from history, tool calls it
            does not render, probes it refused, markers guessed by rule).
    """

    template: dict[str, Any]
    confidence: float
    evidence: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "confidence": self.confidence,
            "evidence": self.evidence,
            "warnings": self.warnings,
        }


def _expected(message: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "reasoning_content": None,
        "content": message.get("content") or None,
        "tool_calls": [],
    }
    for key in ("reasoning_content", "reasoning", "thinking", "thought"):
        if message.get(key):
            out["reasoning_content"] = message[key]
    blocks = message.get("content")
    if isinstance(blocks, dict):  # content blocks in a mapping (``{"blocks": [...]}``)
        blocks = blocks.get("blocks")
    if isinstance(blocks, list):  # content blocks: thinking and text
        out["reasoning_content"] = "".join(b.get("thinking", "") for b in blocks) or None
        out["content"] = "".join(b.get("text", "") for b in blocks if "thinking" not in b) or None
    calls = []
    for call in message.get("tool_calls") or ():
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        calls.append(
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": arguments},
            }
        )
    out["tool_calls"] = calls
    return out


def _self_check(template: Mapping[str, Any], findings: Findings) -> tuple[int, int, list[str]]:
    """Parse every probe render the derivation used back with ``template``: ``(passed, total, problems)``."""
    passed, problems = 0, []
    for name, render in findings.renders.items():
        turn = render.turn
        # the turn is read after the generation prompt's header, or after the anchor when the history
        # writes the turn without the block the prompt pre-opens
        head = next((h for h in (findings.header, findings.anchor) if turn.startswith(h)), None)
        if head is None:
            problems.append(f"{name}: the rendered turn does not start with the generation prompt's header")
            continue
        start, end = render.span
        cut = start + len(head)
        prefix, text = render.full[:cut], render.full[cut:end]
        expected = _expected(render.message)
        try:
            got = parse_response(text, template, prefix=prefix, tools=TOOLS)
        except ResponseTemplateError as exc:
            problems.append(f"{name}: {exc}")
            continue
        assert isinstance(got, dict)
        ids = all(c["id"] in text for c in expected["tool_calls"])
        diffs = _compare(expected, got, ids)
        if diffs:
            problems.append(f"{name}: " + "; ".join(map(str, diffs[:2])))
        else:
            passed += 1
    return passed, len(findings.renders), problems


def derive(
    chat_template: str,
    *,
    special_tokens: Mapping[str, str] | None = None,
    check: bool = True,
) -> Derivation:
    """Derive a response template from ``chat_template`` (the Jinja text).

    Args:
        chat_template: the chat template's text.
        special_tokens: the tokenizer's ``bos_token`` / ``eos_token`` as the template sees them (an
            ``eos_token`` the template writes at the end of a turn becomes the turn's stop marker).
        check: read the probe renders back with the derived template (default); the confidence is the
            share read back right.

    Raises :class:`~response_templates.errors.DeriveError` when the template renders no assistant turn
    the probes can use, or when what was derived does not load.
    """
    tokens = dict(special_tokens or {})
    renderer = Renderer(
        chat_template, bos_token=tokens.get("bos_token", ""), eos_token=tokens.get("eos_token", "")
    )
    findings = analyze(renderer)
    warnings = list(findings.warnings)
    warnings.extend(f"probe refused: {what}" for what in renderer.refused)
    warnings.extend(
        f"the chat template needs {name!r}, which no chat request has: rendered with "
        + ("the tools as JSON text" if value else "an empty string")
        for name, value in renderer.supplied.items()
    )
    if "plain" not in findings.renders or (not findings.end and not findings.anchor):
        detail = "; ".join(renderer.refused) or "no probe rendered a usable assistant turn"
        raise DeriveError(f"nothing usable could be derived: {detail}", where="plain assistant turn")
    template = build(findings)
    try:
        load_template(template)
    except ResponseTemplateError as exc:
        raise DeriveError(f"the derived template does not load: {exc}", where="derived template") from exc
    confidence = 1.0
    evidence = list(findings.evidence)
    if check:
        passed, total, problems = _self_check(template, findings)
        confidence = passed / total if total else 0.0
        evidence.append(
            {"probe": "self-check", "found": "renders read back", "value": f"{passed} of {total}"}
        )
        warnings.extend(f"self-check: {p}" for p in problems)
    confidence *= 0.85 ** (findings.guessed + len(renderer.supplied))
    if findings.tools is None and _has_tools(chat_template):
        confidence *= 0.9  # the model has tools, but how it calls them was not derived
    return Derivation(template, round(confidence, 3), evidence, warnings)


def _has_tools(chat_template: str) -> bool:
    """Whether the chat template reads tools or tool calls at all (a template that never does gives the
    model no tools: no tool-call field is then nothing missed)."""
    return re.search(r"\btools?\b|tool_calls?\b|\bfunctions?\b", chat_template) is not None


def read_chat_template(path: str | Path) -> tuple[str, dict[str, str]]:
    """The chat template of a file or a model folder (``chat_template.jinja`` or ``tokenizer_config.json``'s
    ``chat_template``), with the special tokens the folder's ``tokenizer_config.json`` names."""
    p = Path(path)
    tokens: dict[str, str] = {}
    if not p.is_dir():
        return p.read_text(encoding="utf-8"), tokens
    config: dict[str, Any] = {}
    cfg_path = p / "tokenizer_config.json"
    if cfg_path.is_file():
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
        for key in ("bos_token", "eos_token"):
            value = config.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                tokens[key] = value
    jinja = p / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8"), tokens
    chat = config.get("chat_template")
    if isinstance(chat, list):
        chat = next((c.get("template") for c in chat if c.get("name") == "default"), None) or (
            chat[0].get("template") if chat else None
        )
    if isinstance(chat, str):
        return chat, tokens
    raise DeriveError(
        "no chat template found (chat_template.jinja or tokenizer_config.json's chat_template)", where=str(p)
    )

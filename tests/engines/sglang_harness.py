"""SGLang 0.5.23's own OpenAI chat serving (``OpenAIServingChat``) around stand-ins that replay recorded
generations; shared by ``tests/engines/test_sglang*.py`` and ``benchmarks/bench_engines_sglang.py``.

The recorded outputs, their tokenizers and our own parse of each come from ``vllm_harness`` (engine
neutral: a tokenizer trained on the spot, ``Case.ours``).

* **Tokenizer manager**: ``generate_request`` encodes the recorded output and yields what SGLang's
  tokenizer manager yields: dicts with the text decoded so far under the request's sampling parameters
  (``skip_special_tokens``; a final special token is the matched stop and its text is left out, as
  SGLang trims it), the output ids and ``meta_info`` (``finish_reason`` on the last one), a few ids at a
  time when streaming, once otherwise. It keeps the sampling parameters it was sent (:attr:`sent`).
* **Prompt**: the recorded generation prompt, sent as the request's ``input_ids`` (SGLang then skips
  rendering); the template manager says the reasoning is forced when that prompt opens it, as SGLang's
  template detection says of a chat template that does.
* **Server configuration**: SGLang's ``get_serving()`` bag, replaced by :class:`Config` in every module
  that reads it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import vllm_harness as VH

from response_templates import grammar, library

Case = VH.Case
cases = VH.cases
families_with_samples = VH.families_with_samples
hf_tokenizer = VH.hf_tokenizer


class Config:
    """SGLang's serving configuration (``get_serving()``): the values given, else off."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


_bags: dict[str, Config] = {"get_serving": Config(), "get_model": Config()}


def _get_serving() -> Config:
    return _bags["get_serving"]


def _get_model() -> Config:
    return _bags["get_model"]


def install_config(**values: Any) -> Config:
    """Publish ``values`` as SGLang's serving configuration (``get_serving()``; ``get_model()`` is empty),
    for every module that reads them."""
    import sglang.srt.runtime_context as rc

    _bags["get_serving"] = Config(incremental_streaming_output=False, enable_cache_report=False, **values)
    for name, ours in (("get_serving", _get_serving), ("get_model", _get_model)):
        original = rc.__dict__.setdefault(f"_rt_original_{name}", getattr(rc, name))
        for module in list(sys.modules.values()):
            if module is not None and getattr(module, name, None) in (original, ours):
                setattr(module, name, ours)
    return _bags["get_serving"]


class Permissive(SimpleNamespace):
    """An object with the attributes given; any other reads as ``None``."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


@dataclass
class TokenizerManager:
    """The tokenizer manager stand-in: replays :attr:`output_ids`, :attr:`chunk` ids at a time."""

    tokenizer: Any
    config: dict[str, Any]
    model_config: Any
    served_model_name: str
    output_ids: list[int] = field(default_factory=list)
    stop_id: int | None = None
    chunk: int = 3
    sent: list[dict[str, Any]] = field(default_factory=list)
    server_args: Any = None
    request_logger: Any = field(default_factory=lambda: Permissive(log_requests=False, log_requests_level=0))

    @property
    def model_path(self) -> str:
        return self.served_model_name

    def config_value(self, name: str) -> Any:
        return self.config.get(name)

    def create_abort_task(self, *_: Any, **__: Any) -> None:
        return None

    def _handle_abort_finish_reason(self, *_: Any, **__: Any) -> None:
        return None

    async def generate_request(self, obj: Any, request: Any = None) -> AsyncIterator[dict[str, Any]]:
        params = dict(obj.sampling_params or {})
        self.sent.append(params)
        skip = params.get("skip_special_tokens", True)
        ids = list(self.output_ids)
        text_ids = ids[:-1] if self.stop_id is not None and ids and ids[-1] == self.stop_id else ids
        stream = bool(obj.stream)
        steps = list(range(self.chunk, len(ids), self.chunk)) if stream else []
        steps.append(len(ids))
        prompt = len(obj.input_ids or [])
        for n, end in enumerate(steps):
            last = n == len(steps) - 1
            text = self.tokenizer.decode(
                text_ids[:end], skip_special_tokens=skip, clean_up_tokenization_spaces=False
            )
            if not last and text.endswith("\ufffd"):
                continue  # SGLang's detokenizer holds back an incomplete character
            finish = None
            if last:
                finish = (
                    {"type": "stop", "matched": self.stop_id}
                    if self.stop_id is not None
                    else {"type": "length", "length": len(ids)}
                )
            yield {
                "text": text,
                "output_ids": ids[:end],
                "index": 0,
                "meta_info": {
                    "id": "req-0",
                    "finish_reason": finish,
                    "prompt_tokens": prompt,
                    "completion_tokens": end,
                    "cached_tokens": 0,
                    "weight_version": "default",
                },
            }
            await asyncio.sleep(0)


@dataclass
class Server:
    """``OpenAIServingChat`` of one family and parser pair."""

    family: str
    tokenizer: Any
    manager: TokenizerManager
    templates: Any
    chat: Any
    #: The server's configuration, published again before each request (servers share the process).
    config: dict[str, Any] = field(default_factory=dict)

    def prepare(self, case: Case) -> list[int]:
        tok = self.tokenizer
        template = library.family(self.family).template()
        self.templates._force_reasoning = grammar.reasoning_state(template, case.prefix) == "open"
        ids = list(tok.encode(case.raw, add_special_tokens=False))
        # A generation that ends with the special token that ends the turn (the content's closer) stopped
        # on it: SGLang reports it as the matched stop and trims its text.
        last = tok.added_tokens_decoder.get(ids[-1]) if ids else None
        spec = template.by_name.get("content")
        closers = set(spec.close.literals or ()) if spec is not None and spec.close is not None else set()
        ends = last is not None and last.special and last.content in closers
        self.manager.stop_id = ids[-1] if ends else None
        self.manager.output_ids = ids
        return list(tok.encode(case.prefix, add_special_tokens=False)) or [0]

    def run(self, case: Case, *, stream: bool, **request: Any) -> dict[str, Any]:
        """What the client gets for ``case`` (streamed chunks reassembled), in our dict form (SGLang's
        random ``call_...`` ids dropped), or ``{"error": ...}``."""
        return asyncio.run(self.arun(case, stream=stream, **request))

    async def arun(self, case: Case, *, stream: bool, **request: Any) -> dict[str, Any]:
        from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, ErrorResponse

        install_config(**self.config)
        body: dict[str, Any] = {
            "model": self.manager.served_model_name,
            "messages": [{"role": "user", "content": "hi"}],
            "stream": stream,
            "input_ids": self.prepare(case),
        }
        if case.tools:
            body["tools"] = case.tools
            body["tool_choice"] = "auto"
        body.update(request)
        req = ChatCompletionRequest(**body)
        result = await self.chat.handle_request(req, None)
        if isinstance(result, ErrorResponse):
            return {"error": result.model_dump()}
        if hasattr(result, "body_iterator"):
            return await _reassemble(result.body_iterator)
        if not hasattr(result, "choices"):  # an ORJSONResponse: an error
            return {"error": json.loads(result.body)}
        message = result.choices[0].message
        calls = [(_kept(c.id), c.function.name, c.function.arguments) for c in message.tool_calls or []]
        return VH.to_ours(message.reasoning_content, message.content, calls)


async def _reassemble(frames: Any) -> dict[str, Any]:
    reasoning, content = "", ""
    calls: dict[int, list[Any]] = {}
    async for frame in frames:
        frame = frame.decode() if isinstance(frame, bytes) else frame
        for line in frame.splitlines():
            text = line[len("data: ") :].strip() if line.startswith("data: ") else line.strip()
            if not text:
                continue
            if text == "[DONE]":
                return VH.to_ours(reasoning, content, [tuple(calls[i]) for i in sorted(calls)])
            data = json.loads(text)
            if "error" in data:
                return {"error": data["error"]}
            for choice in data.get("choices") or ():
                delta = choice.get("delta") or {}
                reasoning += delta.get("reasoning_content") or ""
                content += delta.get("content") or ""
                for call in delta.get("tool_calls") or ():
                    slot = calls.setdefault(call["index"], [None, "", ""])
                    slot[0] = _kept(call.get("id")) or slot[0]
                    function = call.get("function") or {}
                    slot[1] += function.get("name") or ""
                    slot[2] += function.get("arguments") or ""
    return VH.to_ours(reasoning, content, [tuple(calls[i]) for i in sorted(calls)])


def _kept(call_id: Any) -> str | None:
    """A tool-call id worth comparing: not SGLang's random ``call_...`` (it writes ``functions.NAME:N``
    for its ``kimi_k2`` parser)."""
    return call_id if isinstance(call_id, str) and call_id and not call_id.startswith("call_") else None


def without_ids(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` without tool-call ids (SGLang makes its own: ``call_...``, ``functions.NAME:N``)."""
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in out["tool_calls"]]
    return out


def server(family: str, *, tool_parser: str | None, reasoning_parser: str | None, **config: Any) -> Server:
    """SGLang's ``OpenAIServingChat`` for ``family`` with the named parsers."""
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat

    values = {"tool_call_parser": tool_parser, "reasoning_parser": reasoning_parser, **config}
    published = {"served_model_name": f"local/{family}", **values}
    install_config(**published)
    tokenizer = hf_tokenizer(family)
    model_config = Permissive(
        hf_config=Permissive(model_type=VH.model_type(family), architectures=[]),
        is_multimodal=False,
        get_default_sampling_params=lambda: {},
    )
    manager = TokenizerManager(tokenizer, values, model_config, f"local/{family}")
    templates = Permissive(_force_reasoning=False, chat_template_name=None, reasoning_config=None)
    type(templates).force_reasoning = property(lambda self: self._force_reasoning)  # type: ignore[attr-defined]
    chat = OpenAIServingChat(manager, templates)  # type: ignore[arg-type]
    return Server(family, tokenizer, manager, templates, chat, published)

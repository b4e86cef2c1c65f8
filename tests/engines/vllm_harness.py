"""vLLM 0.34's own OpenAI chat serving (``OpenAIServingChat``) around an engine stand-in that replays
recorded generations as token ids; shared by ``tests/engines/test_vllm*.py`` and
``benchmarks/bench_engines_vllm.py``.

* **Tokenizer**: a byte-level BPE trained on the spot (no hub) on the family's samples, with the family's
  token-like delimiters as added tokens, so that each comes as one id: ``<|...|>``, ``<｜...｜>``,
  ``[TOOL_CALLS]``-style words and ``◁think▷`` are *special* (real tokenizers mark them so, and vLLM drops
  special tokens from the text unless a parser asks for them), tags such as ``<think>`` and
  ``<tool_call>`` are added but not special (as in Qwen3's ``tokenizer.json``). Wrapped as the
  transformers fast tokenizer vLLM uses.
* **Engine**: ``generate()`` encodes the recorded output, detokenizes it with vLLM's own incremental
  detokenizer under the request's sampling parameters (``skip_special_tokens``, the stop token left out
  of the text) and yields ``RequestOutput`` objects in chunks (streaming) or one final one; it keeps the
  sampling parameters it was sent (:attr:`Engine.sent`).
* **Renderer**: the prompt is the recorded generation prompt (``library_samples.prefix_for``), encoded.
* **Model config**: the few attributes the serving path reads.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import SimpleNamespace
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

import library_samples as ls
from response_templates import library

EOS = "<|rt_eos|>"
_SPECIAL = re.compile(r"<\|[^<>\s]+\|>|<｜[^｜]+｜>|\[/?[A-Z][A-Z_]*\]|◁/?[a-z]+▷")
_TAG = re.compile(r"</?[A-Za-z_][A-Za-z0-9_:.|\-]*>")
_META = re.compile(r"[()?*+]")
_GROUP_NAME = re.compile(r"\(\?P<\w+>")
_OPTIONAL = re.compile(r"\(\?:[^()]*\)\?")
_CORPUS = (
    "The weather in Paris is sunny today, with a high of 21 degrees.",
    "Let me think about this step by step. First, I need the user's location.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "unit": "celsius"}}',
    '[{"id": 1, "tags": ["a", "b"], "score": 0.5, "ok": false, "next": null}]',
    "def f(x):\n    return x * 2\n\nprint(f(21))",
)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def delimiters(family: str) -> tuple[list[str], list[str]]:
    """``(special, added)``: the token-like delimiters of a family's template and generation prompts."""
    fam = library.family(family)
    # Patterns spelled with optional parts (``<think(?::\w+)?>``) give their shortest spelling too.
    strings = [_GROUP_NAME.sub("(", s) for s in _strings(fam.template_dict())]
    texts = [s.replace("\\", "") for s in strings] + [_OPTIONAL.sub("", s).replace("\\", "") for s in strings]
    texts += [v.generation_prompt for v in fam.variants] + [fam.generation_prompt]
    special = sorted(
        {m.group(0) for t in texts for m in _SPECIAL.finditer(t) if not _META.search(m.group(0))}
    )
    added = sorted({m.group(0) for t in texts for m in _TAG.finditer(t)} - set(special))
    return special, added


@cache
def _tokenizer_json(family: str) -> str:
    special, added = delimiters(family)
    corpus = [s["raw"] for s in samples_of(family)] + [
        ls.prefix_for(s, library.family(family))[0] for s in samples_of(family)
    ]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=900,
        special_tokens=[EOS, *special],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([*_CORPUS, *corpus] * 2, trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
    return tok.to_str()


def hf_tokenizer(family: str) -> Any:
    """A fresh transformers fast tokenizer for ``family``."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(_tokenizer_json(family)), eos_token=EOS)
    tok.name_or_path = f"local/{family}"
    return tok


# ---------------------------------------------------------------------------------------------- samples


@cache
def _all_samples() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, dict[str, str]]]:
    return ls.load_samples(), ls.load_tools(), ls.load_exceptions()


@dataclass
class Case:
    """One recorded output of a library family, with its prompt, tools and expected message."""

    id: str
    family: str
    raw: str
    prefix: str
    tools: list[dict[str, Any]] | None
    expected: dict[str, Any]
    ours: dict[str, Any]  # our own parse (rt.parse_response), normalized
    ours_right: bool  # the library judge's verdict for our parse
    kind: str | None = None  # the sample's exception kind in the library's records, if any

    def right(self, got: Any) -> bool:
        """Whether a parse ``got`` (a message in our dict form) is right for this output, by the library
        judge's rule: equal to the expected message, or for a source whose policy keeps reasoning
        inline, equal once the reasoning is written back (``library_samples.policy_match``)."""
        if not isinstance(got, dict) or "error" in got:
            return False
        if ls.same(got, self.expected):
            return True
        if self.kind == "source-policy":
            return ls.policy_match(got, self.expected, library.family(self.family), {})
        return False


@cache
def samples_of(family: str) -> list[dict[str, Any]]:
    samples, table, exceptions = _all_samples()
    out = []
    for sample in samples:
        if ls.family_of(sample) != family or not isinstance(sample.get("raw"), str):
            continue
        verdict = ls.judge(sample, table, exceptions.get(sample["id"]))
        if verdict.status not in ("pass", "fail"):
            continue
        if exceptions.get(sample["id"], {}).get("kind") == "needs-extension":
            continue
        out.append(sample)
    return out


def cases(family: str, limit: int | None = None) -> list[Case]:
    """The applicable recorded outputs of ``family`` (judged as ``tests/library_samples.py`` does)."""
    _, table, exceptions = _all_samples()
    fam = library.family(family)
    out = []
    for sample in samples_of(family)[:limit]:
        verdict = ls.judge(sample, table, exceptions.get(sample["id"]))
        prefix, _ = ls.prefix_for(sample, fam)
        tools, _ = ls.tools_for(sample, table)
        kind = exceptions.get(sample["id"], {}).get("kind")
        out.append(
            Case(
                sample["id"],
                family,
                sample["raw"],
                prefix,
                [_chat_tool(t) for t in tools] if tools else None,
                sample["expected"],
                ls.normalize(verdict.got),
                verdict.status == "pass" or kind in ("source-policy", "alternative"),
                kind,
            )
        )
    return out


def families_with_samples() -> list[str]:
    samples, _, _ = _all_samples()
    names = {ls.family_of(s) for s in samples}
    return sorted(n for n in names if n is not None and library.family(n).has_template and samples_of(n))


def _chat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool in the chat-completions shape vLLM's request model takes."""
    if tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
        function = dict(tool["function"])
    else:
        function = {k: v for k, v in tool.items() if k in ("name", "description", "parameters")}
        if "input_schema" in tool:
            function["parameters"] = tool["input_schema"]
    function.setdefault("parameters", {"type": "object", "properties": {}})
    return {"type": "function", "function": function}


# ---------------------------------------------------------------------------------------------- serving


class ModelConfig:
    """What vLLM's serving path reads of its ``ModelConfig``."""

    def __init__(self, model: str, model_type: str) -> None:
        self.model = model
        self.served_model_name = model
        self.tokenizer = model
        self.hf_config = SimpleNamespace(model_type=model_type)
        self.hf_text_config = self.hf_config
        self.hf_overrides: dict[str, Any] = {}
        self.max_model_len = 32768
        self.generation_config = "vllm"
        self.override_generation_config: dict[str, Any] = {}
        self.multimodal_config = None
        self.enable_prompt_embeds = False
        self.is_encoder_decoder = False
        self.skip_tokenizer_init = False
        self.logits_processors = None
        self.runner_type = "generate"
        self.allowed_local_media_path = ""
        self.allowed_media_domains = None

    def get_diff_sampling_param(self) -> dict[str, Any]:
        return {}

    def __getattr__(self, name: str) -> Any:  # anything else the path reads: absent
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class Renderer:
    """The chat renderer stand-in: the rendered prompt is :attr:`prompt_ids`."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.prompt_ids: list[int] = []

    def get_tokenizer(self) -> Any:
        return self.tokenizer

    async def render_chat_async(
        self, conversations: Sequence[Any], chat_params: Any, tok_params: Any = None, **_: Any
    ) -> Any:
        from vllm.inputs.engine import tokens_input

        self.chat_params = chat_params
        return [list(c) for c in conversations], [tokens_input(list(self.prompt_ids))]

    def validate_token_ids(self, *_: Any, **__: Any) -> None:
        return None

    def warmup(self, *_: Any, **__: Any) -> None:
        return None


@dataclass
class Engine:
    """The engine client stand-in: replays :attr:`output_ids` in chunks of :attr:`chunk` ids."""

    model_config: ModelConfig
    renderer: Renderer
    output_ids: list[int] = field(default_factory=list)
    stop_terminated: bool = True
    chunk: int = 3
    sent: list[Any] = field(default_factory=list)
    input_processor: Any = None
    vllm_config: Any = None
    errored: bool = False
    dead_error: Exception = field(default_factory=lambda: RuntimeError("dead"))

    def check_admission(self, n: int) -> None:
        return None

    async def generate(
        self, prompt: Any, sampling_params: Any, request_id: str, **kwargs: Any
    ) -> AsyncIterator[Any]:
        from vllm.outputs import CompletionOutput, RequestOutput
        from vllm.sampling_params import RequestOutputKind
        from vllm.v1.engine.detokenizer import IncrementalDetokenizer

        self.sent.append((sampling_params, kwargs))
        prompt_ids = list(prompt["prompt_token_ids"])
        request = SimpleNamespace(
            request_id=request_id,
            sampling_params=sampling_params,
            prompt_token_ids=prompt_ids,
            prompt_embeds=None,
        )
        detok = IncrementalDetokenizer.from_new_request(self.renderer.tokenizer, request)
        ids = self.output_ids
        delta = sampling_params.output_kind == RequestOutputKind.DELTA
        pieces = [ids[i : i + self.chunk] for i in range(0, len(ids), self.chunk)] or [[]]
        for n, piece in enumerate(pieces):
            last = n == len(pieces) - 1
            detok.update(piece, stop_terminated=last and self.stop_terminated)
            if not delta and not last:
                continue
            text = detok.get_next_output_text(last, delta)
            out = CompletionOutput(
                index=0,
                text=text,
                token_ids=list(piece) if delta else list(ids),
                cumulative_logprob=None,
                logprobs=None,
                finish_reason="stop" if last else None,
                stop_reason=None,
            )
            yield RequestOutput(
                request_id=request_id,
                prompt=None,
                prompt_token_ids=prompt_ids,
                prompt_logprobs=None,
                outputs=[out],
                finished=last,
            )
            await asyncio.sleep(0)


@dataclass
class Server:
    """``OpenAIServingChat`` of one family and parser pair."""

    family: str
    tokenizer: Any
    engine: Engine
    chat: Any

    def run(self, case: Case, *, stream: bool, **request: Any) -> dict[str, Any] | Any:
        """The message the client gets for ``case`` (streamed chunks reassembled), as our dict form; an
        ``ErrorResponse`` as it is."""
        return asyncio.run(self.arun(case, stream=stream, **request))

    def prepare(self, case: Case) -> None:
        tok = self.tokenizer
        self.engine.renderer.prompt_ids = list(tok.encode(case.prefix, add_special_tokens=False))
        ids = list(tok.encode(case.raw, add_special_tokens=False))
        # A generation that ends with a special token ended there (the engine stops on it): vLLM keeps
        # its id in the output but not its text.
        self.engine.stop_terminated = bool(ids) and ids[-1] in set(tok.all_special_ids)
        self.engine.output_ids = ids

    async def arun(self, case: Case, *, stream: bool, **request: Any) -> dict[str, Any] | Any:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.serve.engine.protocol import ErrorResponse

        self.prepare(case)
        body: dict[str, Any] = {
            "model": self.engine.model_config.model,
            "messages": [{"role": "user", "content": "hi"}],
            "stream": stream,
        }
        if case.tools:
            body["tools"] = case.tools
            body["tool_choice"] = "auto"
        body.update(request)
        req = ChatCompletionRequest(**body)
        result = await self.chat.create_chat_completion(req, None)
        if isinstance(result, ErrorResponse):
            return result
        if not stream:
            message = result.choices[0].message
            return to_ours(
                message.reasoning,
                message.content,
                [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []],
            )
        reasoning, content = "", ""
        calls: dict[int, list[Any]] = {}
        async for frame in result:
            text = frame[len("data: ") :].strip() if frame.startswith("data: ") else frame
            if text == "[DONE]":
                break
            data = json.loads(text)
            if "error" in data:
                return data
            for choice in data.get("choices") or ():
                delta = choice.get("delta") or {}
                reasoning += delta.get("reasoning") or ""
                content += delta.get("content") or ""
                for call in delta.get("tool_calls") or ():
                    slot = calls.setdefault(call["index"], [None, "", ""])
                    slot[0] = call.get("id") or slot[0]
                    function = call.get("function") or {}
                    slot[1] += function.get("name") or ""
                    slot[2] += function.get("arguments") or ""
        return to_ours(reasoning, content, [tuple(calls[i]) for i in sorted(calls)])


def to_ours(reasoning: str | None, content: str | None, calls: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
    """A vLLM message in the form ``rt.parse_response`` returns (arguments parsed; vLLM's random ids
    dropped), normalized as the library judge normalizes."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    out = []
    for call_id, name, arguments in calls:
        try:
            args: Any = json.loads(arguments) if arguments else {}
        except ValueError:
            args = arguments
        call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
        if call_id and not str(call_id).startswith("chatcmpl-tool-"):
            call["id"] = call_id
        out.append(call)
    message["tool_calls"] = out
    return ls.normalize(message)


def model_type(family: str) -> str:
    if family.startswith("kimi-k2"):
        return "kimi_k2"
    return family.replace("-", "_").replace(".", "_")


def server(family: str, *, tool_parser: str | None, reasoning_parser: str | None) -> Server:
    """vLLM's ``OpenAIServingChat`` for ``family`` with the named parsers (``--enable-auto-tool-choice``)."""
    from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
    from vllm.entrypoints.openai.models.protocol import BaseModelPath
    from vllm.entrypoints.openai.models.serving import OpenAIServingModels
    from vllm.renderers.online_renderer import OnlineRenderer

    tokenizer = hf_tokenizer(family)
    config = ModelConfig(f"local/{family}", model_type(family))
    renderer = Renderer(tokenizer)
    engine = Engine(config, renderer)
    models_ = OpenAIServingModels(engine, [BaseModelPath(name=config.model, model_path=config.model)])  # type: ignore[arg-type]
    common: dict[str, Any] = {
        "chat_template": None,
        "chat_template_content_format": "auto",
        "enable_auto_tools": tool_parser is not None,
        "tool_parser": tool_parser,
        "reasoning_parser": reasoning_parser or "",
    }
    online = OnlineRenderer(
        config,  # type: ignore[arg-type]
        renderer,  # type: ignore[arg-type]
        request_logger=None,
        **{**common, "reasoning_parser": reasoning_parser},
    )
    chat = OpenAIServingChat(
        engine, models_, "assistant", online_renderer=online, request_logger=None, **common
    )  # type: ignore[arg-type]
    return Server(family, tokenizer, engine, chat)


def chat_request(family: str, **body: Any) -> Any:
    """A ``ChatCompletionRequest`` for ``family``'s served model."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    return ChatCompletionRequest(
        **{"model": f"local/{family}", "messages": [{"role": "user", "content": "hi"}], **body}
    )


def responses_server(srv: Server, *, tool_parser: str | None, reasoning_parser: str | None) -> Any:
    """vLLM's ``OpenAIServingResponses`` over the same engine stand-in and renderer as ``srv``."""
    from vllm.entrypoints.openai.responses.serving import OpenAIServingResponses

    return OpenAIServingResponses(
        srv.engine,  # type: ignore[arg-type]
        srv.chat.models,
        srv.chat.online_renderer,
        request_logger=None,
        chat_template=None,
        chat_template_content_format="auto",
        reasoning_parser=reasoning_parser or "",
        enable_auto_tools=tool_parser is not None,
        tool_parser=tool_parser,
    )


def run_responses(srv: Server, responses: Any, case: Case, *, stream: bool) -> dict[str, Any]:
    """The message the Responses API gives for ``case`` (the final response's output items), in our
    dict form."""
    from vllm.entrypoints.openai.responses.protocol import ResponsesRequest

    srv.prepare(case)
    body: dict[str, Any] = {"model": srv.engine.model_config.model, "input": "hi", "stream": stream}
    if case.tools:
        body["tools"] = [{"type": "function", **t["function"]} for t in case.tools]

    async def go() -> Any:
        result = await responses.create_responses(ResponsesRequest(**body), None)
        if not stream:
            return result
        last = None
        async for event in result:
            last = event
        return last.response  # type: ignore[union-attr]

    response = asyncio.run(go())
    reasoning, content, calls = "", "", []
    for item in response.output:
        if item.type == "reasoning":
            reasoning += "".join(c.text for c in item.content or [])
        elif item.type == "message":
            content += "".join(getattr(c, "text", "") for c in item.content)
        elif item.type == "function_call":
            calls.append((item.call_id, item.name, item.arguments))
    return to_ours(reasoning, content, calls)

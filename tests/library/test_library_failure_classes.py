"""Family-level regression tests for the failure classes found on real outputs the library had not seen.

Each test takes a real model id through ``rt.templates.for_model`` (as a server does), a prompt rendered
from the family's real chat template where the test data has one (``tests/data/chat_templates``), and an
output written in the family's format, and checks the message whole, one character at a time and in random
pieces. The classes:

1. a turn that continues after a tool result without a new assistant header (the prompt ends with the
   tool output): the message is the new generation only, nothing of the earlier turn;
2. a reasoning opener the model repeats although the prompt opened the block: a delimiter, not reasoning;
3. end-of-turn and stop tokens are never part of a value (reasoning cut off, a call interrupting reasoning);
4. Llama 3.1/3.2/3.3 built-in tools read by the template ``for_model`` gives for those ids;
5. LFM2 JSON calls read by the ``lfm2`` template beside its Python calls;
6. Hunyuan-A13B calls inside ``<answer>``, ERNIE-4.5-Thinking's ChatML prompt, Apriel 1.6's prose opener;
7. Mistral: text after a call's JSON arguments is content;
9. non-thinking variants of thinking families: a stray ``<think>`` is content (docs/models.md says which
   choice each family makes).
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from library_checks import call, random_pieces
from response_templates import library

ROOT = Path(__file__).resolve().parents[2]
CHAT_TEMPLATES = ROOT / "tests" / "data" / "chat_templates"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TOOLS = [WEATHER]
HELLO: list[dict[str, Any]] = [{"role": "user", "content": "Hi there!"}]
ASK: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]
#: A user question, the assistant's call (Mistral needs 9-character alphanumeric ids) and the tool's answer.
TOOL_TURN: list[dict[str, Any]] = [
    *ASK,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "abc123XYZ",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "abc123XYZ", "name": "get_weather", "content": "22 degrees, sunny"},
]


def render(chat_template: str, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> str:
    """The prompt a server sends: the real chat template rendered with the generation prompt and tools."""
    text = (CHAT_TEMPLATES / chat_template).read_text(encoding="utf-8")
    kwargs.setdefault("tools", TOOLS)
    return rt.verify.render_chat_template(text, messages, add_generation_prompt=True, **kwargs)


def message(
    content: str | None = None, reasoning: str | None = None, calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    if reasoning is not None:
        out["reasoning_content"] = reasoning
    if content is not None:
        out["content"] = content
    if calls is not None:
        out["tool_calls"] = calls
    return out


def _chunkings(text: str) -> Iterator[list[str]]:
    rng = random.Random(len(text) * 7919 + text.count("<"))
    yield [text]
    yield list(text)
    for size in (2, 5):
        yield [text[i : i + size] for i in range(0, len(text), size)]
    for longest in (3, 8, 25):
        yield random_pieces(text, rng, longest)


def parse_every_way(model_id: str, prompt: str, text: str, tools: list[Any] | None = TOOLS) -> dict[str, Any]:
    """The message ``for_model(model_id)`` reads from ``text`` after ``prompt``, the same whole, one
    character at a time and in random pieces (streaming)."""
    template = rt.templates.for_model(model_id)
    whole = rt.parse_response(text, template, prefix=prompt, tools=tools)
    for chunks in _chunkings(text):
        parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
        for chunk in chunks:
            parser.feed(chunk)
        streamed, _ = parser.finalize()
        assert streamed == whole, [len(c) for c in chunks]
    assert isinstance(whole, dict)
    return dict(whole)


def strings(value: Any) -> Iterator[str]:
    """Every string inside a message (keys excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def normalized(msg: Mapping[str, Any]) -> dict[str, Any]:
    """Text values stripped (the text parser strips), empty values dropped."""
    out: dict[str, Any] = {}
    for key, value in msg.items():
        if isinstance(value, str) and key != "role":
            value = value.strip()
        if value in ("", None, []):
            continue
        out[key] = value
    return out


@dataclass(frozen=True)
class Case:
    """One output of a real model id after a realistic prompt, and the message it must give."""

    cls: int
    model_id: str
    family: str
    prompt: str
    text: str
    expected: dict[str, Any]
    #: Strings that must appear in no value (stop tokens, delimiters of earlier turns).
    absent: tuple[str, ...] = ()
    source: str = "written here from the family's chat template and documented format"
    tools: list[Any] | None = field(default_factory=lambda: list(TOOLS))
    #: A case the old templates read right too, kept beside the fixes (the syntax they must not break).
    control: bool = False

    @property
    def id(self) -> str:
        return f"{self.cls}-{self.model_id.split('/')[-1]}-{zlib.crc32(self.text.encode()) % 10_000:04d}"


#: The family each model id of the cases belongs to (what ``for_model`` must choose).
FAMILY_OF = {
    "deepseek-ai/DeepSeek-V3.1": "deepseek-v3.1",
    "deepseek-ai/DeepSeek-V3.1-Terminus": "deepseek-v3.1",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": "deepseek-r1",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3.2": "deepseek-v3.2",
    "deepseek-ai/DeepSeek-V4-Flash": "deepseek-v4",
    "deepseek-ai/DeepSeek-V4": "deepseek-v4",
    "deepseek-ai/DeepSeek-V3-0324": "deepseek-v3",
    "mistralai/Ministral-3-14B-Reasoning-2512": "mistral-v11",
    "mistralai/Devstral-Small-2507": "mistral-v11",
    "mistralai/Magistral-Small-2509": "mistral-v11",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": "mistral-v11-call-id",
    "mistralai/Mistral-Nemo-Instruct-2407": "mistral-v3",
    "Qwen/Qwen3-8B": "qwen3",
    "Qwen/Qwen3-30B-A3B-Thinking-2507": "qwen3",
    "Qwen/Qwen3-4B-Instruct-2507": "qwen3-instruct-2507",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": "qwen3-instruct-2507",
    "Qwen/Qwen3-Next-80B-A3B-Instruct": "qwen3-instruct-2507",
    "Qwen/Qwen3.5-4B": "qwen3-coder",
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": "qwen3-coder-instruct",
    "Qwen/Qwen2.5-7B-Instruct": "hermes",
    "speakleash/Bielik-11B-v3.0-Instruct": "hermes",
    "XiaomiMiMo/MiMo-7B-RL": "hermes",
    "Hcompany/Holo2-8B": "holo2",
    "HuggingFaceTB/SmolLM3-3B": "smollm3",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "nemotron-3-nano",
    "nvidia/NVIDIA-Nemotron-Nano-9B-v2": "nemotron-nano-v2",
    "zai-org/GLM-4.6": "glm-4.5",
    "zai-org/GLM-4.7-Flash": "glm-4.7",
    "MiniMaxAI/MiniMax-M2": "minimax-m2",
    "MiniMaxAI/MiniMax-M3": "minimax-m3",
    "stepfun-ai/Step-3.5-Flash": "step-3.5",
    "stepfun-ai/step3": "step-3",
    "openbmb/MiniCPM5-1B": "minicpm5",
    "poolside/Laguna-XS.2": "laguna",
    "RekaAI/reka-edge-2603": "reka-edge",
    "CohereLabs/command-a-reasoning-08-2025": "cohere-command-a-reasoning",
    "tencent/Hy3": "hy3",
    "tencent/Hunyuan-A13B-Instruct": "hunyuan-a13b",
    "baidu/ERNIE-4.5-21B-A3B-Thinking": "ernie-4.5",
    "baidu/ERNIE-4.5-21B-A3B-PT": "ernie-4.5-pt",
    "allenai/Olmo-3-7B-Think": "olmo-3",
    "moonshotai/Kimi-K3": "kimi-k3",
    "moonshotai/Kimi-K2-Thinking": "kimi-k2",
    "moonshotai/Kimi-K2-Instruct": "kimi-k2-instruct",
    "moonshotai/Kimi-K2-Instruct-0905": "kimi-k2-instruct",
    "moonshotai/Kimi-VL-A3B-Thinking-2506": "kimi-k1.5",
    "ServiceNow-AI/Apriel-1.6-15b-Thinker": "apriel-1.6",
    "ServiceNow-AI/Apriel-1.5-15b-Thinker": "apriel-1.5",
    "ibm-granite/granite-4.0-h-small": "granite-4",
    "ibm-granite/granite-3.3-8b-instruct": "granite-3",
    "ByteDance-Seed/Seed-OSS-36B-Instruct": "seed-oss",
    "swiss-ai/Apertus-8B-Instruct-2509": "apertus",
    "meituan-longcat/LongCat-Flash-Thinking": "longcat",
    "internlm/Intern-S1": "internlm2",
    "internlm/internlm2_5-7b-chat": "internlm2",
    "ai21labs/AI21-Jamba-Mini-1.7": "jamba",
    "meituan-longcat/LongCat-Flash-Chat": "longcat",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3-json",
    "meta-llama/Llama-3.2-3B-Instruct": "llama-3-json",
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3-json",
    "LiquidAI/LFM2-1.2B": "lfm2",
    "LiquidAI/LFM2-8B-A1B": "lfm2",
    "LiquidAI/LFM2.5-1.2B-Instruct": "lfm2",
    "LiquidAI/LFM2.5-8B-A1B": "lfm2",
    # the families added beside the fixes
    "meta-models/Muse-Glimmer-30B": "muse-glimmer",
    "MBZUAI-IFM/K2-Horizon-7B": "k2-horizon",
    "inclusionAI/Ling-3.0-flash": "ling-3",
    "deepseek-ai/DeepSeek-V4.1": "deepseek-v4.1",
    "ai-sage/GigaChat3.5-10B-A1.8B": "gigachat3.5",
    "upstage/Solar-Open2-250B": "solar-open-2",
    "LGAI-EXAONE/EXAONE-4.0-32B": "exaone-4",
    "deepcogito/cogito-671b-v2.1": "cogito-v2.1",
    "rednote-hilab/dots.llm2.inst": "dots",
    "tencent/HY-V4-A20B": "hy-v4",
    "PrimeIntellect/INTELLECT-3-FP8": "intellect-3",
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1_5": "llama-nemotron",
    "XiaomiMiMo/MiMo-V2-Flash": "mimo-v2-flash",
    "IQuestLab/IQuest-Coder-V1-40B-Thinking": "iquest-coder",
    "stepfun-ai/Step-Audio-2-mini": "step-audio-2",
    "stepfun-ai/Step-Audio-R1": "step-audio-2",
    "naver-hyperclovax/HyperCLOVAX-SEED-Think-32B": "hyperclovax-seed-think",
    "Aleph-Alpha/Kolibri-1": "kolibri-1",
    "arcee-ai/Trinity-Mini": "trinity",
    "llm-jp/llm-jp-4.1-8b-thinking": "llm-jp-4",
    "zai-org/GLM-OCR": "glm-ocr",
}

CASES: list[Case] = []

#: Prompts of the families added beside the fixes that have no chat template in the test data, as their
#: peers' renderers and parser docstrings write them (the family files' variants): model id -> (prompt for
#: a greeting, prompt for the weather question).
LING3_SYSTEM = "<role>SYSTEM</role>detailed thinking on<|role_end|>"
SOLAR2_USER = "<|im:start|>user<|im:content|>{}<|im:end|>\n<|im:start|>assistant<|im:content|>"
CHATML = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"
HY_V4 = "<｜hy_User｜>{}<｜hy_Assistant｜>"


def _prompts(template: str, suffix: str = "") -> tuple[str, str]:
    return template.format("Hi there!") + suffix, template.format("What is the weather in Paris?") + suffix


NO_FILE: dict[str, tuple[str, str]] = {
    "inclusionAI/Ling-3.0-flash": _prompts(
        LING3_SYSTEM + "<role>HUMAN</role>{}<|role_end|><role>ASSISTANT</role>", "\n<think>"
    ),
    "deepseek-ai/DeepSeek-V4.1": _prompts("<｜begin▁of▁sentence｜><｜User｜>{}<｜Assistant｜>", "<think>"),
    "upstage/Solar-Open2-250B": _prompts(SOLAR2_USER, "<|think:start|>"),
    "LGAI-EXAONE/EXAONE-4.0-32B": _prompts("[|user|]\n{}[|endofturn|]\n[|assistant|]\n", "<think>\n"),
    "rednote-hilab/dots.llm2.inst": _prompts("<|userprompt|>{}<|endofuserprompt|><|response|>", "<think>\n"),
    "stepfun-ai/Step-Audio-2-mini": _prompts("<|BOT|>human\n{}<|EOT|><|BOT|>assistant\n"),
    "stepfun-ai/Step-Audio-R1": _prompts("<|BOT|>human\n{}<|EOT|><|BOT|>assistant\n", "<think>\n"),
    "naver-hyperclovax/HyperCLOVAX-SEED-Think-32B": _prompts(CHATML, "<think>\n"),
    "arcee-ai/Trinity-Mini": _prompts(CHATML, "<think>\n"),
    "tencent/HY-V4-A20B": _prompts(HY_V4, "<think>"),
    "PrimeIntellect/INTELLECT-3-FP8": _prompts(CHATML, "<think>"),
    "XiaomiMiMo/MiMo-V2-Flash": _prompts(CHATML, "<think>\n"),
    "IQuestLab/IQuest-Coder-V1-40B-Thinking": _prompts(CHATML, "<think>\n"),
    "Aleph-Alpha/Kolibri-1": _prompts(CHATML),
}


def case(*args: Any, **kwargs: Any) -> None:
    new = Case(*args, **kwargs)
    assert new.family == FAMILY_OF[new.model_id], new.model_id
    CASES.append(new)


# ---------------------------------------------------------------------------------------------------------
# Class 1: the prompt ends with a tool result and no new assistant header; the model continues the turn.
DS_EOS = "<｜end▁of▁sentence｜>"
SUNNY = "It is 22 degrees and sunny in Paris."
EARLIER = ("22 degrees, sunny", "Paris", "get_weather", "abc123XYZ", "<｜tool", "[TOOL_", "[ARGS]")

case(
    1,
    "deepseek-ai/DeepSeek-V3.1",
    "deepseek-v3.1",
    render("deepseek-ai-DeepSeek-V3.1.jinja", TOOL_TURN),
    f"It is 22 degrees and sunny.{DS_EOS}",
    message("It is 22 degrees and sunny."),
    (*EARLIER, DS_EOS),
)
case(
    1,
    "deepseek-ai/DeepSeek-V3.1-Terminus",
    "deepseek-v3.1",
    render("deepseek-ai-DeepSeek-V3.1.jinja", TOOL_TURN, thinking=True),
    f"</think>It is 22 degrees and sunny.{DS_EOS}",
    message("It is 22 degrees and sunny."),
    (*EARLIER, DS_EOS),
)
case(
    1,
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    "deepseek-r1",
    render("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", TOOL_TURN),
    f"<think>\nThe tool answered.\n</think>\n\nIt is 22 degrees and sunny.{DS_EOS}",
    message("It is 22 degrees and sunny.", "The tool answered."),
    (*EARLIER, DS_EOS),
)
case(
    1,
    "deepseek-ai/DeepSeek-V3.2",
    "deepseek-v3.2",
    render("deepseek-ai-DeepSeek-V3.2.jinja", TOOL_TURN),
    f"It is 22 degrees and sunny.{DS_EOS}",
    message("It is 22 degrees and sunny."),
    (*EARLIER, DS_EOS),
)
case(
    1,
    "deepseek-ai/DeepSeek-V4-Flash",
    "deepseek-v4",
    '<｜User｜>Weather in Paris?<｜Assistant｜></think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    f"</｜DSML｜tool_calls>{DS_EOS}<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>22 degrees, sunny"
    "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
    f"It is 22 degrees and sunny.{DS_EOS}",
    message("It is 22 degrees and sunny."),
    (*EARLIER, DS_EOS),
    source="the prompt form reported for DeepSeek V4 servers (tool outputs appended to the turn)",
)
for _model, _file in (
    ("mistralai/Ministral-3-14B-Reasoning-2512", "mistralai-Ministral-3-14B-Reasoning-2512.jinja"),
    ("mistralai/Devstral-Small-2507", "unsloth-mistral-Devstral-Small-2507.jinja"),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "Mistral-Small-3.2-24B-Instruct-2506.jinja"),
    ("mistralai/Mistral-Nemo-Instruct-2407", "mistralai-Mistral-Nemo-Instruct-2407.jinja"),
):
    _fam = FAMILY_OF[_model]
    _prompt = render(_file, TOOL_TURN, eos_token="</s>")
    case(
        1, _model, _fam, _prompt, f"{SUNNY}</s>", message(SUNNY), ("22 degrees, sunny", "get_weather", "</s>")
    )
    if _fam != "mistral-v3":  # a second call after the result: only the new call, not the earlier one
        case(
            1,
            _model,
            _fam,
            _prompt,
            '[TOOL_CALLS]get_weather[ARGS]{"city": "Lyon"}</s>',
            message(calls=[call("get_weather", city="Lyon")]),
            ("Paris", "</s>"),
        )

# A new call after the tool result: only the new call, never the one of the earlier turn.
LYON = message(calls=[call("get_weather", city="Lyon")])
case(
    1,
    "deepseek-ai/DeepSeek-V3.1",
    "deepseek-v3.1",
    render("deepseek-ai-DeepSeek-V3.1.jinja", TOOL_TURN),
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Lyon"}<｜tool▁call▁end｜>'
    f"<｜tool▁calls▁end｜>{DS_EOS}",
    LYON,
    ("Paris", DS_EOS, "22 degrees"),
)
case(
    1,
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    "deepseek-r1",
    render("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", TOOL_TURN),
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
    f'{{"city": "Lyon"}}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>{DS_EOS}',
    LYON,
    ("Paris", DS_EOS, "22 degrees"),
)
case(
    1,
    "deepseek-ai/DeepSeek-V3.2",
    "deepseek-v3.2",
    render("deepseek-ai-DeepSeek-V3.2.jinja", TOOL_TURN),
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">'
    f"Lyon</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>{DS_EOS}",
    LYON,
    ("Paris", DS_EOS, "22 degrees"),
)

# DeepSeek V4.1 (the V4 prompt form: tool outputs appended to the turn) and Cogito v2.1 (DeepSeek-R1's
# template; its chat template writes a new <｜Assistant｜> after the outputs). The other families added beside
# the fixes render a new assistant header after a tool result (K2 Horizon, GigaChat 3.5, Muse Glimmer,
# Llama-Nemotron, LLM-jp 4 by their chat templates; Ling 3, Solar Open 2, EXAONE 4, dots, Step-Audio 2,
# HyperCLOVA X, Trinity and the ChatML families by their peers' renderers), so the class does not arise.
V41_TOOL_PROMPT = (
    '<｜User｜>Weather in Paris?<｜Assistant｜></think><｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n'
    '<｜DSML｜ parameter name="city" string="true">Paris</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n'
    f"</｜DSML｜ calls>{DS_EOS}<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>22 degrees, sunny"
    "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
)
case(
    1,
    "deepseek-ai/DeepSeek-V4.1",
    "deepseek-v4.1",
    V41_TOOL_PROMPT,
    f"It is 22 degrees and sunny.{DS_EOS}",
    message("It is 22 degrees and sunny."),
    (*EARLIER, DS_EOS, "DSML"),
    source="the prompt form reported for DeepSeek V4 servers (tool outputs appended to the turn), as V4.1",
)
case(
    1,
    "deepseek-ai/DeepSeek-V4.1",
    "deepseek-v4.1",
    V41_TOOL_PROMPT,
    '<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n<｜DSML｜ parameter name="city" string="true">'
    f"Lyon</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>{DS_EOS}",
    LYON,
    ("Paris", DS_EOS, "22 degrees"),
    source="the prompt form reported for DeepSeek V4 servers (tool outputs appended to the turn), as V4.1",
)
case(
    1,
    "deepcogito/cogito-671b-v2.1",
    "cogito-v2.1",
    render("deepcogito-cogito-v2.1.jinja", TOOL_TURN),
    f"It is 22 degrees and sunny.{DS_EOS}",
    message("It is 22 degrees and sunny."),
    (*EARLIER, DS_EOS),
)

# ---------------------------------------------------------------------------------------------------------
# Class 2: the prompt opened the reasoning block and the model writes the opener again.
GREET = "The user greets me. I should greet back."
PRE_OPENED: list[tuple[str, str, str, str, str]] = [  # model id, prompt, opener, closer, stop
    (
        "Qwen/Qwen3-30B-A3B-Thinking-2507",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n<think>\n",
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    ("Qwen/Qwen3.5-4B", render("Qwen3.5-4B.jinja", HELLO), "<think>", "</think>", "<|im_end|>"),
    (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        render("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", HELLO),
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    (
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        render("NVIDIA-Nemotron-Nano-v2.jinja", HELLO),
        "<think>",
        "</think>",
        "<SPECIAL_12>",
    ),
    (
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        render("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", HELLO),
        "<think>",
        "</think>",
        DS_EOS,
    ),
    (
        "deepseek-ai/DeepSeek-V3.1",
        render("deepseek-ai-DeepSeek-V3.1.jinja", HELLO, thinking=True),
        "<think>",
        "</think>",
        DS_EOS,
    ),
    (
        "deepseek-ai/DeepSeek-V3.2",
        render("deepseek-ai-DeepSeek-V3.2.jinja", HELLO, thinking=True),
        "<think>",
        "</think>",
        DS_EOS,
    ),
    (
        "deepseek-ai/DeepSeek-V4",
        render("deepseek-ai-DeepSeek-V4.jinja", HELLO, thinking=True),
        "<think>",
        "</think>",
        DS_EOS,
    ),
    ("zai-org/GLM-4.7-Flash", render("GLM-4.7-Flash.jinja", HELLO), "<think>", "</think>", "<|user|>"),
    ("MiniMaxAI/MiniMax-M2", render("MiniMax-M2.jinja", HELLO), "<think>", "</think>", "[e~["),
    (
        "stepfun-ai/Step-3.5-Flash",
        render("stepfun-ai-Step-3.5-Flash.jinja", HELLO),
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    (
        "openbmb/MiniCPM5-1B",
        render("openbmb-MiniCPM5-1B.jinja", HELLO, enable_thinking=True),
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    (
        "poolside/Laguna-XS.2",
        render("poolside-Laguna-XS.2.jinja", HELLO, enable_thinking=True),
        "<think>",
        "</think>",
        "</assistant>",
    ),
    (
        "RekaAI/reka-edge-2603",
        render("Reka-Edge.jinja", HELLO, enable_thinking=True),
        "<think>",
        "</think>",
        "<sep>",
    ),
    (
        "speakleash/Bielik-11B-v3.0-Instruct",
        render("Bielik-11B-v3.0-Instruct.jinja", HELLO, enable_thinking=True),
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    (
        "CohereLabs/command-a-reasoning-08-2025",
        render("Cohere2MoE.jinja", HELLO),
        "<|START_THINKING|>",
        "<|END_THINKING|>",
        "<|END_OF_TURN_TOKEN|>",
    ),
    (
        "tencent/Hy3",
        render("tencent-Hy3.jinja", HELLO, reasoning_effort="high"),
        "<think:opensource>",
        "</think:opensource>",
        "<｜hy_eos:opensource｜>",
    ),
    (
        "baidu/ERNIE-4.5-21B-A3B-Thinking",
        "<|im_start|>user\nHi there!<|im_end|>\n\n<|im_start|>assistant\n<think>\n",
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    (
        "Hcompany/Holo2-8B",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n<think>\n",
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    (
        "allenai/Olmo-3-7B-Think",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n<think>",
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    (
        "stepfun-ai/step3",
        "<|BOT|>user\nHi there!<|EOT|><|BOT|>assistant\n<think>\n",
        "<think>",
        "</think>",
        "<|EOT|>",
    ),
    (
        "moonshotai/Kimi-K3",
        '<|open|>message role="user"<|sep|>Hi there!<|close|>message<|sep|>'
        '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>',
        "<|open|>think<|sep|>",
        "<|close|>think<|sep|>",
        "",
    ),
    (
        "ServiceNow-AI/Apriel-1.6-15b-Thinker",
        render("Apriel-1.6-15b-Thinker-fixed.jinja", HELLO),
        "Here are my reasoning steps:",
        "[BEGIN FINAL RESPONSE]",
        "<|end|>",
    ),
    # the families added beside the fixes (Muse Glimmer, Llama-Nemotron and LLM-jp 4 never pre-open: their
    # prompts end with the assistant header and the model writes the whole reasoning header itself)
    (
        "MBZUAI-IFM/K2-Horizon-7B",
        render("k2-horizon.jinja", HELLO),
        "<ifm|think>",
        "</ifm|think>",
        "<|ifm|im_end|>",
    ),
    (
        "inclusionAI/Ling-3.0-flash",
        NO_FILE["inclusionAI/Ling-3.0-flash"][0],
        "<think>",
        "</think>",
        "<|role_end|>",
    ),
    ("deepseek-ai/DeepSeek-V4.1", NO_FILE["deepseek-ai/DeepSeek-V4.1"][0], "<think>", "</think>", DS_EOS),
    (
        "ai-sage/GigaChat3.5-10B-A1.8B",
        render("GigaChat3.5.jinja", HELLO, reasoning=True),
        "<think>",
        "</think>",
        "<|message_sep|>",
    ),
    (
        "upstage/Solar-Open2-250B",
        NO_FILE["upstage/Solar-Open2-250B"][0],
        "<|think:start|>",
        "<|think:end|>",
        "<|im:end|>",
    ),
    (
        "LGAI-EXAONE/EXAONE-4.0-32B",
        NO_FILE["LGAI-EXAONE/EXAONE-4.0-32B"][0],
        "<think>",
        "</think>",
        "[|endofturn|]",
    ),
    (
        "rednote-hilab/dots.llm2.inst",
        NO_FILE["rednote-hilab/dots.llm2.inst"][0],
        "<think>",
        "</think>",
        "<|endofresponse|>",
    ),
    ("stepfun-ai/Step-Audio-R1", NO_FILE["stepfun-ai/Step-Audio-R1"][0], "<think>", "</think>", "<|EOT|>"),
    (
        "naver-hyperclovax/HyperCLOVAX-SEED-Think-32B",
        NO_FILE["naver-hyperclovax/HyperCLOVAX-SEED-Think-32B"][0],
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    ("arcee-ai/Trinity-Mini", NO_FILE["arcee-ai/Trinity-Mini"][0], "<think>", "</think>", "<|im_end|>"),
    (
        "deepcogito/cogito-671b-v2.1",
        render("deepcogito-cogito-v2.1.jinja", HELLO, enable_thinking=True),
        "<think>",
        "</think>",
        DS_EOS,
    ),
    ("tencent/HY-V4-A20B", NO_FILE["tencent/HY-V4-A20B"][0], "<think>", "</think>", "<｜hy_eos｜>"),
    (
        "PrimeIntellect/INTELLECT-3-FP8",
        NO_FILE["PrimeIntellect/INTELLECT-3-FP8"][0],
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
    ("XiaomiMiMo/MiMo-V2-Flash", NO_FILE["XiaomiMiMo/MiMo-V2-Flash"][0], "<think>", "</think>", "<|im_end|>"),
    (
        "IQuestLab/IQuest-Coder-V1-40B-Thinking",
        NO_FILE["IQuestLab/IQuest-Coder-V1-40B-Thinking"][0],
        "<think>",
        "</think>",
        "<|im_end|>",
    ),
]
for _model, _prompt, _open, _close, _stop in PRE_OPENED:
    assert _prompt.rstrip().endswith(_open), (_model, _prompt[-60:])
    _fam = FAMILY_OF[_model]
    _answer = "Hello! How can I help?"
    _tail = (
        "<|open|>response<|sep|>Hello! How can I help?<|close|>response<|sep|>"
        if _fam == "kimi-k3"
        else _answer
    )
    if _fam == "apriel-1.6":
        _tail = f"\n{_answer}\n[END FINAL RESPONSE]"
    case(
        2,
        _model,
        _fam,
        _prompt,
        f"{_open}\n{GREET}\n{_close}\n\n{_tail}{_stop}",
        message(_answer, GREET),
        tuple(x for x in (_open, _close, _stop) if x),
    )

# ---------------------------------------------------------------------------------------------------------
# Class 3: stop tokens never inside a value.
case(
    3,
    "moonshotai/Kimi-K2-Thinking",
    "kimi-k2",
    render("Kimi-K2-Thinking.jinja", ASK),
    "<think>The user wants the weather. I will call the tool.<|tool_calls_section_begin|><|tool_call_begin|>"
    'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
    "<|tool_calls_section_end|><|im_end|>",
    message(
        reasoning="The user wants the weather. I will call the tool.",
        calls=[
            {
                "type": "function",
                "id": "functions.get_weather:0",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    ),
    ("<|im_end|>", "<|tool_call"),
)
case(
    3,
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "nemotron-3-nano",
    render("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", ASK),
    "The user wants the weather in Paris.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
    "</parameter>\n</function>\n</tool_call>\n<|im_end|>",
    message(reasoning="The user wants the weather in Paris.", calls=[call("get_weather", city="Paris")]),
    ("<|im_end|>", "<tool_call>"),
)
case(
    3,
    "deepseek-ai/DeepSeek-V4",
    "deepseek-v4",
    render("deepseek-ai-DeepSeek-V4.jinja", ASK, thinking=True),
    'The user wants the weather in Paris.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    f"</｜DSML｜tool_calls>{DS_EOS}",
    message(reasoning="The user wants the weather in Paris.", calls=[call("get_weather", city="Paris")]),
    (DS_EOS, "DSML"),
)
case(
    3,
    "Qwen/Qwen2.5-7B-Instruct",
    "hermes",
    render("Qwen-Qwen2.5-7B-Instruct.jinja", ASK),
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n<|im_end|>',
    message(calls=[call("get_weather", city="Paris")]),
    ("<|im_end|>",),
)
#: Reasoning cut off by the end of the turn (max thinking budget, a stop sequence): model id, prompt, opener
#: ("" when the prompt opened it), stop token.
CUT_OFF: list[tuple[str, str, str, str]] = [
    ("Qwen/Qwen3-8B", render("Qwen-Qwen3-0.6B.jinja", HELLO), "<think>\n", "<|im_end|>"),
    ("Qwen/Qwen3.5-4B", render("Qwen3.5-4B.jinja", HELLO), "", "<|im_end|>"),
    (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        render("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", HELLO),
        "",
        "<|im_end|>",
    ),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", render("NVIDIA-Nemotron-Nano-v2.jinja", HELLO), "", "<SPECIAL_12>"),
    ("moonshotai/Kimi-K2-Thinking", render("Kimi-K2-Thinking.jinja", HELLO), "<think>", "<|im_end|>"),
    (
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        render("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", HELLO),
        "",
        DS_EOS,
    ),
    (
        "deepseek-ai/DeepSeek-V3.1",
        render("deepseek-ai-DeepSeek-V3.1.jinja", HELLO, thinking=True),
        "",
        DS_EOS,
    ),
    (
        "deepseek-ai/DeepSeek-V3.2",
        render("deepseek-ai-DeepSeek-V3.2.jinja", HELLO, thinking=True),
        "",
        DS_EOS,
    ),
    ("deepseek-ai/DeepSeek-V4", render("deepseek-ai-DeepSeek-V4.jinja", HELLO, thinking=True), "", DS_EOS),
    ("zai-org/GLM-4.6", render("GLM-4.6.jinja", HELLO), "<think>", "<|user|>"),
    ("zai-org/GLM-4.7-Flash", render("GLM-4.7-Flash.jinja", HELLO), "", "<|user|>"),
    ("MiniMaxAI/MiniMax-M2", render("MiniMax-M2.jinja", HELLO), "", "[e~["),
    ("MiniMaxAI/MiniMax-M3", render("MiniMax-M3.jinja", HELLO), "<mm:think>", "[e~["),
    ("stepfun-ai/Step-3.5-Flash", render("stepfun-ai-Step-3.5-Flash.jinja", HELLO), "", "<|im_end|>"),
    (
        "openbmb/MiniCPM5-1B",
        render("openbmb-MiniCPM5-1B.jinja", HELLO, enable_thinking=True),
        "",
        "<|im_end|>",
    ),
    (
        "poolside/Laguna-XS.2",
        render("poolside-Laguna-XS.2.jinja", HELLO, enable_thinking=True),
        "",
        "</assistant>",
    ),
    ("RekaAI/reka-edge-2603", render("Reka-Edge.jinja", HELLO, enable_thinking=True), "", "<sep>"),
    ("HuggingFaceTB/SmolLM3-3B", render("HuggingFaceTB-SmolLM3-3B.jinja", HELLO), "<think>\n", "<|im_end|>"),
    ("XiaomiMiMo/MiMo-7B-RL", render("MiMo-VL.jinja", HELLO), "<think>\n", "<|im_end|>"),
    (
        "ibm-granite/granite-4.0-h-small",
        render("ibm-granite-granite-4.0.jinja", HELLO),
        "<think>",
        "<|end_of_text|>",
    ),
    (
        "ibm-granite/granite-3.3-8b-instruct",
        render("ibm-granite-granite-3.3-2B-Instruct.jinja", HELLO),
        "<think>",
        "<|end_of_text|>",
    ),
    (
        "ByteDance-Seed/Seed-OSS-36B-Instruct",
        render("ByteDance-Seed-OSS.jinja", HELLO),
        "<seed:think>",
        "<seed:eos>",
    ),
    ("LiquidAI/LFM2.5-8B-A1B", render("LFM2.5-8B-A1B.jinja", HELLO), "<think>", "<|im_end|>"),
    (
        "CohereLabs/command-a-reasoning-08-2025",
        render("Cohere2MoE.jinja", HELLO),
        "",
        "<|END_OF_TURN_TOKEN|>",
    ),
    (
        "tencent/Hy3",
        render("tencent-Hy3.jinja", HELLO, reasoning_effort="high"),
        "",
        "<｜hy_eos:opensource｜>",
    ),
    (
        "swiss-ai/Apertus-8B-Instruct-2509",
        render("Apertus-8B-Instruct.jinja", HELLO),
        "<|inner_prefix|>",
        "<|assistant_end|>",
    ),
    (
        "ServiceNow-AI/Apriel-1.5-15b-Thinker",
        render("unsloth-Apriel-1.5.jinja", HELLO),
        "<thinking>",
        "<|end|>",
    ),
    (
        "ServiceNow-AI/Apriel-1.6-15b-Thinker",
        render("Apriel-1.6-15b-Thinker-fixed.jinja", HELLO),
        "",
        "<|end|>",
    ),
    (
        "mistralai/Magistral-Small-2509",
        render("mistralai-Ministral-3-14B-Reasoning-2512.jinja", HELLO),
        "[THINK]",
        "</s>",
    ),
    ("tencent/Hunyuan-A13B-Instruct", "<|startoftext|>Hi there!<|extra_0|>", "<think>\n", "<|eos|>"),
    (
        "baidu/ERNIE-4.5-21B-A3B-Thinking",
        "<|im_start|>user\nHi there!<|im_end|>\n\n<|im_start|>assistant\n<think>\n",
        "",
        "<|im_end|>",
    ),
    (
        "meituan-longcat/LongCat-Flash-Thinking",
        "[Round 0] USER:Hi there! ASSISTANT:",
        "<longcat_think>",
        "</longcat_s>",
    ),
    (
        "internlm/Intern-S1",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
        "<think>",
        "<|im_end|>",
    ),
    (
        "allenai/Olmo-3-7B-Think",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n<think>",
        "",
        "<|im_end|>",
    ),
    ("stepfun-ai/step3", "<|BOT|>user\nHi there!<|EOT|><|BOT|>assistant\n<think>\n", "", "<|EOT|>"),
    (
        "moonshotai/Kimi-VL-A3B-Thinking-2506",
        "<|im_user|>user<|im_middle|>Hi there!<|im_end|><|im_assistant|>assistant<|im_middle|>",
        "◁think▷",
        "<|im_end|>",
    ),
    # the families added beside the fixes; LLM-jp 4's Harmony messages end structurally (<|end|>, <|return|>,
    # <|call|> are the delimiters themselves), so the class is its reading of those (test_library_samples)
    (
        "meta-models/Muse-Glimmer-30B",
        render("muse-glimmer.jinja", HELLO),
        " to=self<|message|>",
        "<|end_of_text|>",
    ),
    ("MBZUAI-IFM/K2-Horizon-7B", render("k2-horizon.jinja", HELLO), "", "<|ifm|im_end|>"),
    ("inclusionAI/Ling-3.0-flash", NO_FILE["inclusionAI/Ling-3.0-flash"][0], "", "<|role_end|>"),
    ("deepseek-ai/DeepSeek-V4.1", NO_FILE["deepseek-ai/DeepSeek-V4.1"][0], "", DS_EOS),
    (
        "ai-sage/GigaChat3.5-10B-A1.8B",
        render("GigaChat3.5.jinja", HELLO, reasoning=True),
        "",
        "<|message_sep|>",
    ),
    ("ai-sage/GigaChat3.5-10B-A1.8B", render("GigaChat3.5.jinja", HELLO), "<think>", "</s>"),
    ("upstage/Solar-Open2-250B", NO_FILE["upstage/Solar-Open2-250B"][0], "", "<|im:end|>"),
    ("LGAI-EXAONE/EXAONE-4.0-32B", NO_FILE["LGAI-EXAONE/EXAONE-4.0-32B"][0], "", "[|endofturn|]"),
    ("rednote-hilab/dots.llm2.inst", NO_FILE["rednote-hilab/dots.llm2.inst"][0], "", "<|endofresponse|>"),
    (
        "nvidia/Llama-3_3-Nemotron-Super-49B-v1_5",
        render("nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja", HELLO),
        "<think>\n",
        "<|eot_id|>",
    ),
    ("stepfun-ai/Step-Audio-R1", NO_FILE["stepfun-ai/Step-Audio-R1"][0], "", "<|EOT|>"),
    (
        "naver-hyperclovax/HyperCLOVAX-SEED-Think-32B",
        NO_FILE["naver-hyperclovax/HyperCLOVAX-SEED-Think-32B"][0],
        "",
        "<|im_end|>",
    ),
    ("arcee-ai/Trinity-Mini", NO_FILE["arcee-ai/Trinity-Mini"][0], "", "<|im_end|>"),
    (
        "deepcogito/cogito-671b-v2.1",
        render("deepcogito-cogito-v2.1.jinja", HELLO, enable_thinking=True),
        "",
        DS_EOS,
    ),
    ("tencent/HY-V4-A20B", NO_FILE["tencent/HY-V4-A20B"][0], "", "<｜hy_eos｜>"),
    ("PrimeIntellect/INTELLECT-3-FP8", NO_FILE["PrimeIntellect/INTELLECT-3-FP8"][0], "", "<|im_end|>"),
    ("XiaomiMiMo/MiMo-V2-Flash", NO_FILE["XiaomiMiMo/MiMo-V2-Flash"][0], "", "<|im_end|>"),
    (
        "IQuestLab/IQuest-Coder-V1-40B-Thinking",
        NO_FILE["IQuestLab/IQuest-Coder-V1-40B-Thinking"][0],
        "",
        "<|im_end|>",
    ),
    ("Aleph-Alpha/Kolibri-1", NO_FILE["Aleph-Alpha/Kolibri-1"][0], "<think>\n", "<|im_end|>"),
]
for _model, _prompt, _open, _stop in CUT_OFF:
    _fam = FAMILY_OF[_model]
    _text = f"{_open}The user greets me. Let me think about what to say{_stop}"
    case(
        3,
        _model,
        _fam,
        _prompt,
        _text,
        message(reasoning="The user greets me. Let me think about what to say"),
        (_stop,),
    )

#: A tool call cut off by the end of the turn (its close never written): the call is read, the stop token is
#: not part of its arguments. Model id, prompt, text, stop, expected reasoning.
CUT_CALL: list[tuple[str, str, str, str, str | None]] = [
    (
        "Qwen/Qwen3-8B",
        render("Qwen-Qwen3-0.6B.jinja", ASK),
        '<think>\nNeed the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
        "<|im_end|>",
        "Need the weather.",
    ),
    (
        "ibm-granite/granite-4.0-h-small",
        render("ibm-granite-granite-4.0.jinja", ASK),
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
        "<|end_of_text|>",
        None,
    ),
    (
        "internlm/internlm2_5-7b-chat",
        "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n",
        '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}',
        "<|im_end|>",
        None,
    ),
    (
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        render("NVIDIA-Nemotron-Nano-v2.jinja", ASK),
        'Need the weather.\n</think>\n<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "<SPECIAL_12>",
        "Need the weather.",
    ),
    (
        "ai21labs/AI21-Jamba-Mini-1.7",
        "<|bom|><|user|>What is the weather in Paris?<|eom|><|bom|><|assistant|>",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "<|eom|>",
        None,
    ),
    (
        "ServiceNow-AI/Apriel-1.5-15b-Thinker",
        render("unsloth-Apriel-1.5.jinja", ASK),
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "<|end|>",
        None,
    ),
    (
        "meituan-longcat/LongCat-Flash-Chat",
        "[Round 0] USER:What is the weather in Paris? ASSISTANT:",
        '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "</longcat_s>",
        None,
    ),
    (
        "RekaAI/reka-edge-2603",
        render("Reka-Edge.jinja", ASK),
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
        "<sep>",
        None,
    ),
    (
        "tencent/Hunyuan-A13B-Instruct",
        "<|startoftext|>What is the weather in Paris?<|extra_0|>",
        '<think>\nCall the tool.\n</think>\n<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "<|eos|>",
        "Call the tool.",
    ),
    (
        "openbmb/MiniCPM5-1B",
        render("openbmb-MiniCPM5-1B.jinja", ASK),
        '<function name="get_weather"><param name="city">Paris</param>',
        "<|im_end|>",
        None,
    ),
    (
        "Qwen/Qwen3.5-4B",
        render("Qwen3.5-4B.jinja", ASK),
        "Need the weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
        "<|im_end|>",
        "Need the weather.",
    ),  # the families added beside the fixes
    (
        "meta-models/Muse-Glimmer-30B",
        render("muse-glimmer.jinja", ASK),
        ' to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">\n'
        '<atem:parameter name="city">Paris</atem:parameter>\n',
        "<|eot|>",
        None,
    ),
    (
        "MBZUAI-IFM/K2-Horizon-7B",
        render("k2-horizon.jinja", ASK),
        "Need the weather.\n</ifm|think>\n<ifm|tool_calls>\n<ifm|tool_call>get_weather\n<ifm|arg_key>city</ifm|arg_key>\n"
        "<ifm|arg_value>Paris</ifm|arg_value>\n",
        "<|ifm|im_end|>",
        "Need the weather.",
    ),
    (
        "MBZUAI-IFM/K2-Horizon-7B",
        render("k2-horizon.jinja", ASK),
        'Need the weather.\n</ifm|think>\n<ifm|tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "<|ifm|im_end|>",
        "Need the weather.",
    ),
    (
        "inclusionAI/Ling-3.0-flash",
        NO_FILE["inclusionAI/Ling-3.0-flash"][1],
        "Need the weather.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n",
        "<|role_end|>",
        "Need the weather.",
    ),
    (
        "deepseek-ai/DeepSeek-V4.1",
        NO_FILE["deepseek-ai/DeepSeek-V4.1"][1],
        'Need the weather.</think><｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n'
        '<｜DSML｜ parameter name="city" string="true">Paris</｜DSML｜ parameter>\n',
        DS_EOS,
        "Need the weather.",
    ),
    (
        "ai-sage/GigaChat3.5-10B-A1.8B",
        render("GigaChat3.5.jinja", ASK),
        '<｜GCML｜tool_calls><｜GCML｜invoke name="get_weather"><｜GCML｜parameter name="city" string="true">Paris'
        "</｜GCML｜parameter>",
        "<|message_sep|>",
        None,
    ),
    (
        "upstage/Solar-Open2-250B",
        NO_FILE["upstage/Solar-Open2-250B"][1],
        "Need the weather.<|think:end|><|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Paris"
        "<|tool_arg:end|>",
        "<|im:end|>",
        "Need the weather.",
    ),
    (
        "LGAI-EXAONE/EXAONE-4.0-32B",
        NO_FILE["LGAI-EXAONE/EXAONE-4.0-32B"][1],
        'Need the weather.\n</think>\n\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "[|endofturn|]",
        "Need the weather.",
    ),
    (
        "rednote-hilab/dots.llm2.inst",
        NO_FILE["rednote-hilab/dots.llm2.inst"][1],
        'Need the weather.</think><dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "<|endofresponse|>",
        "Need the weather.",
    ),
    (
        "rednote-hilab/dots.llm2.inst",
        NO_FILE["rednote-hilab/dots.llm2.inst"][1],
        'Need the weather.</think><dots_function_call><invoke name="get_weather"><parameter name="city">Paris'
        "</parameter>",
        "<|endofresponse|>",
        "Need the weather.",
    ),
    (
        "nvidia/Llama-3_3-Nemotron-Super-49B-v1_5",
        render("nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja", ASK),
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "<|eot_id|>",
        None,
    ),
    (
        "stepfun-ai/Step-Audio-2-mini",
        NO_FILE["stepfun-ai/Step-Audio-2-mini"][1],
        '<tool_call>function\nget_weather\n{"city": "Paris"}',
        "<|EOT|>",
        None,
    ),
    (
        "naver-hyperclovax/HyperCLOVAX-SEED-Think-32B",
        NO_FILE["naver-hyperclovax/HyperCLOVAX-SEED-Think-32B"][1],
        "Need the weather.</think>\n\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n",
        "<|im_end|>",
        "Need the weather.",
    ),
    (
        "arcee-ai/Trinity-Mini",
        NO_FILE["arcee-ai/Trinity-Mini"][1],
        'Need the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
        "<|im_end|>",
        "Need the weather.",
    ),
    (
        "Aleph-Alpha/Kolibri-1",
        NO_FILE["Aleph-Alpha/Kolibri-1"][1],
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
        "<|im_end|>",
        None,
    ),
]
#: GLM-OCR (GLM-4.5's template; its renderer closes an empty reasoning block): a call cut off by the next turn's
#: header. LLM-jp 4 (Harmony): its stop tokens are its message delimiters, so the reading that keeps them out of
#: values is the structural one, kept here beside the fixes.
CUT_CALL.append(
    (
        "zai-org/GLM-OCR",
        "[gMASK]<sop><|user|>\nWhat is the weather in Paris?/nothink<|assistant|>\n<think></think>\n",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n",
        "<|user|>",
        None,
    )
)
case(
    3,
    "llm-jp/llm-jp-4.1-8b-thinking",
    "llm-jp-4",
    render("llm-jp-llm-jp-4.1-8b-thinking.jinja", HELLO),
    "<|channel|> analysis<|message|> The user greets me.<|end|><|start|> assistant<|channel|> final<|message|> "
    "Hello! How can I help?<|return|>",
    message("Hello! How can I help?", "The user greets me."),
    ("<|end|>", "<|return|>", "<|channel|>", "<|start|>"),
    control=True,
)
#: Cut-off calls the old templates read right too (their XML argument readers skip a stray stop token): by
#: model id, and by how the cut-off call ends (a complete XML argument of the families added beside the fixes).
CUT_CALL_CONTROLS = {"openbmb/MiniCPM5-1B", "Qwen/Qwen3.5-4B"}
XML_CALL_ENDS = (
    "</atem:parameter>\n",
    "</ifm|arg_value>\n",
    "</arg_value>\n",
    "</｜DSML｜ parameter>\n",
    "</｜GCML｜parameter>",
    "<|tool_arg:end|>",
    "</parameter>",
)
for _model, _prompt, _text, _stop, _reasoning in CUT_CALL:
    case(
        3,
        _model,
        FAMILY_OF[_model],
        _prompt,
        _text + _stop,
        message(reasoning=_reasoning, calls=[call("get_weather", city="Paris")]),
        (_stop,),
        # the XML argument readers skipped the stray stop token before too
        control=_model in CUT_CALL_CONTROLS or _text.endswith(XML_CALL_ENDS),
    )

# ---------------------------------------------------------------------------------------------------------
# Class 4: Llama 3.1/3.2/3.3 built-in tools next to the JSON calls, through for_model.
BUILTIN_TOOLS = ["brave_search", "wolfram_alpha"]
for _model, _file in (
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
    ("meta-llama/Llama-3.2-3B-Instruct", "meta-llama-Llama-3.2-3B-Instruct.jinja"),
    ("meta-llama/Llama-3.3-70B-Instruct", "meta-llama-Llama-3.3-70B-Instruct.jinja"),
):
    _prompt = render(_file, ASK, builtin_tools=BUILTIN_TOOLS)
    case(
        4,
        _model,
        "llama-3-json",
        _prompt,
        '<|python_tag|>brave_search.call(query="weather in Paris today")<|eom_id|>',
        message(calls=[call("brave_search", query="weather in Paris today")]),
        ("<|python_tag|>", "<|eom_id|>"),
    )
    case(
        4,
        _model,
        "llama-3-json",
        _prompt,
        '<|python_tag|>wolfram_alpha.call(query="2+2")<|eom_id|>',
        message(calls=[call("wolfram_alpha", query="2+2")]),
        ("<|python_tag|>", "<|eom_id|>"),
    )
    case(
        4,
        _model,
        "llama-3-json",
        _prompt,
        "<|python_tag|>import math\nprint(math.sqrt(2))<|eom_id|>",
        message(calls=[call("code_interpreter", code="import math\nprint(math.sqrt(2))")]),
        ("<|python_tag|>", "<|eom_id|>"),
    )
    case(
        4,
        _model,
        "llama-3-json",
        _prompt,
        '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>',
        message(calls=[call("get_weather", city="Paris")]),
        ("<|eot_id|>",),
        control=True,
    )

# ---------------------------------------------------------------------------------------------------------
# Class 5: LFM2 writes JSON calls inside the same markers as its Python calls.
for _model, _file in (
    ("LiquidAI/LFM2-1.2B", "llama-cpp-lfm2.jinja"),
    ("LiquidAI/LFM2-8B-A1B", "LFM2-8B-A1B.jinja"),
    ("LiquidAI/LFM2.5-1.2B-Instruct", "LFM2.5-Instruct.jinja"),
):
    _prompt = render(_file, ASK)
    case(
        5,
        _model,
        "lfm2",
        _prompt,
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|tool_call_end|>'
        "Checking the weather.<|im_end|>",
        message("Checking the weather.", calls=[call("get_weather", city="Paris")]),
        ("<|tool_call", "<|im_end|>"),
    )
    case(
        5,
        _model,
        "lfm2",
        _prompt,
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Lyon"}}]<|tool_call_end|>'
        '<|tool_call_start|>[get_weather(city="Nice")]<|tool_call_end|><|im_end|>',
        message(calls=[call("get_weather", city=c) for c in ("Paris", "Lyon", "Nice")]),
        ("<|tool_call",),
    )

#: Test vectors of llama.cpp's LFM2 JSON-tools parser (tests of llama.cpp, taken as data): output, calls,
#: content.
LFM2_PEER: list[tuple[str, list[dict[str, Any]], str | None]] = [
    (
        '<|tool_call_start|>[{"name": "special_function", "arguments": {"arg1": 1}}]<|tool_call_end|>',
        [call("special_function", arg1=1)],
        None,
    ),
    (
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"location": "Paris"}}]<|tool_call_end|>',
        [call("get_weather", location="Paris")],
        None,
    ),
    (
        '<|tool_call_start|>[{"name": "calculate", "arguments": {"x": 10, "y": 20, "operation": "add"}}]<|tool_call_end|>',
        [call("calculate", x=10, y=20, operation="add")],
        None,
    ),
    (
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"location": "Paris"}}, '
        '{"name": "get_time", "arguments": {"timezone": "UTC"}}]<|tool_call_end|>',
        [call("get_weather", location="Paris"), call("get_time", timezone="UTC")],
        None,
    ),
    (
        'Let me check the weather for you.<|tool_call_start|>[{"name": "get_weather", "arguments": {"location": "Paris"}}]'
        "<|tool_call_end|>",
        [call("get_weather", location="Paris")],
        "Let me check the weather for you.",
    ),
    (
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"location": "Paris"}}]<|tool_call_end|>'
        "Here's the result.",
        [call("get_weather", location="Paris")],
        "Here's the result.",
    ),
    (
        '<|tool_call_start|>[{\n    "name": "get_current_time",\n    "arguments": {\n        "location": "Paris"\n    }\n}]'
        "<|tool_call_end|>",
        [call("get_current_time", location="Paris")],
        None,
    ),
]
for _text, _calls, _content in LFM2_PEER:
    case(
        5,
        "LiquidAI/LFM2-1.2B",
        "lfm2",
        render("llama-cpp-lfm2.jinja", HELLO),
        _text,
        message(_content, calls=_calls),
        ("<|tool_call",),
        source="ggml-org/llama.cpp tests (LFM2 with JSON tools parser), as data",
        tools=None,
    )

# ---------------------------------------------------------------------------------------------------------
# Class 6: Hunyuan-A13B, ERNIE-4.5-Thinking, Apriel 1.6.
case(
    6,
    "tencent/Hunyuan-A13B-Instruct",
    "hunyuan-a13b",
    "<|startoftext|>What is the weather in Paris?<|extra_0|>",
    "<think>\nThe user wants the weather; call the tool.\n</think>\n<answer>\n<tool_calls>"
    '[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>\n</answer><|eos|>',
    message(
        reasoning="The user wants the weather; call the tool.", calls=[call("get_weather", city="Paris")]
    ),
    ("<tool_calls>", "<answer>", "<|eos|>"),
)
case(
    6,
    "tencent/Hunyuan-A13B-Instruct",
    "hunyuan-a13b",
    "<|startoftext|>Hi there!<|extra_0|>",
    "<think>\nA greeting.\n</think>\n<answer>\nHello! How can I help?\n</answer><|eos|>",
    message("Hello! How can I help?", "A greeting."),
    ("<answer>", "<|eos|>"),
    control=True,
)
case(
    6,
    "baidu/ERNIE-4.5-21B-A3B-Thinking",
    "ernie-4.5",
    "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n\n<|im_start|>assistant\n<think>\n",
    "The user wants the weather.\n</think>\n\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<|im_end|>',
    message(reasoning="The user wants the weather.", calls=[call("get_weather", city="Paris")]),
    ("</think>", "<|im_end|>"),
)
case(
    6,
    "baidu/ERNIE-4.5-21B-A3B-Thinking",
    "ernie-4.5",
    "<|im_start|>user\nHi there!<|im_end|>\n\n<|im_start|>assistant\n<think>\n",
    "A greeting.\n</think>\n\n<response>\nHello! How can I help?\n</response><|im_end|>",
    message("Hello! How can I help?", "A greeting."),
    ("</think>", "<response>", "<|im_end|>"),
)
case(
    6,
    "ServiceNow-AI/Apriel-1.6-15b-Thinker",
    "apriel-1.6",
    render("Apriel-1.6-15b-Thinker-fixed.jinja", ASK),
    "The user wants the weather in Paris.\n[BEGIN FINAL RESPONSE]\n<tool_calls>"
    '[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls><|end|>',
    message(reasoning="The user wants the weather in Paris.", calls=[call("get_weather", city="Paris")]),
    ("Here are my reasoning steps", "[BEGIN FINAL RESPONSE]", "<|end|>"),
)
case(
    6,
    "ServiceNow-AI/Apriel-1.6-15b-Thinker",
    "apriel-1.6",
    render("Apriel-1.6-15b-Thinker-fixed.jinja", HELLO),
    "A greeting; answer briefly.\n[BEGIN FINAL RESPONSE]\nHello! How can I help?\n[END FINAL RESPONSE]<|end|>",
    message("Hello! How can I help?", "A greeting; answer briefly."),
    ("Here are my reasoning steps", "[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]"),
)

# ---------------------------------------------------------------------------------------------------------
# Class 7: Mistral: text after a call's JSON arguments.
for _model, _file in (
    ("mistralai/Ministral-3-14B-Reasoning-2512", "mistralai-Ministral-3-14B-Reasoning-2512.jinja"),
    ("mistralai/Devstral-Small-2507", "unsloth-mistral-Devstral-Small-2507.jinja"),
    ("mistralai/Magistral-Small-2509", "mistralai-Ministral-3-14B-Reasoning-2512.jinja"),
):
    _prompt = render(_file, ASK, eos_token="</s>")
    _fam = FAMILY_OF[_model]
    case(
        7,
        _model,
        _fam,
        _prompt,
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"} I will report back.</s>',
        message("I will report back.", calls=[call("get_weather", city="Paris")]),
        ("[TOOL_CALLS]", "</s>"),
    )
    case(
        7,
        _model,
        _fam,
        _prompt,
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}\n\n[TOOL_CALLS]get_weather[ARGS]{"city": "Lyon"}\n</s>',
        message(calls=[call("get_weather", city="Paris"), call("get_weather", city="Lyon")]),
        ("[TOOL_CALLS]", "</s>"),
        control=True,
    )
case(
    7,
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
    "mistral-v11-call-id",
    render("Mistral-Small-3.2-24B-Instruct-2506.jinja", ASK, eos_token="</s>"),
    '[TOOL_CALLS]get_weather[CALL_ID]k9Xq2LmP0[ARGS]{"city": "Paris"}Checking now.</s>',
    message(
        "Checking now.",
        calls=[
            {
                "type": "function",
                "id": "k9Xq2LmP0",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    ),
    ("[TOOL_CALLS]", "[CALL_ID]", "</s>"),
)

# ---------------------------------------------------------------------------------------------------------
# Class 9: non-thinking variants read a stray <think> as content; their thinking siblings read reasoning.
STRAY = "<think>\nhmm\n</think>\n\nHello! How can I help?"
# The families added beside the fixes add no case here: their model ids are hybrid (the prompt opens or closes
# the block: DeepSeek V4.1, GigaChat 3.5, Solar Open 2, K2 Horizon, Ling 3, EXAONE 4, HyperCLOVA X SEED Think,
# Llama-Nemotron, Cogito v2.1, HY V4, MiMo-V2-Flash, Kolibri 1) or thinking models, or their reasoning has
# markers of its own (Muse Glimmer, LLM-jp 4). Ids whose thinking is unclear from the data here (dots.llm1,
# Step-Audio-2-mini, AFM, GLM-OCR, IQuest-Coder *-Instruct) keep their family's reading; see docs/models.md.
NON_THINKING: list[tuple[str, str, str]] = [  # model id, prompt, end of turn
    (
        "Qwen/Qwen3-4B-Instruct-2507",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
        "<|im_end|>",
    ),
    (
        "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
        "<|im_end|>",
    ),
    (
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
        "<|im_end|>",
    ),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", render("Qwen3-Coder.jinja", HELLO), "<|im_end|>"),
    ("moonshotai/Kimi-K2-Instruct", render("Kimi-K2-Instruct.jinja", HELLO), "<|im_end|>"),
    ("moonshotai/Kimi-K2-Instruct-0905", render("moonshotai-Kimi-K2.jinja", HELLO), "<|im_end|>"),
    ("deepseek-ai/DeepSeek-V3-0324", "<｜begin▁of▁sentence｜><｜User｜>Hi there!<｜Assistant｜>", DS_EOS),
    (
        "baidu/ERNIE-4.5-21B-A3B-PT",
        "<|begin_of_sentence|>User: Hi there!\nAssistant: ",
        "<|end_of_sentence|>",
    ),
]
for _model, _prompt, _stop in NON_THINKING:
    case(9, _model, FAMILY_OF[_model], _prompt, STRAY + _stop, message(STRAY), (_stop,))
THINKING_SIBLINGS: list[tuple[str, str, str]] = [
    ("Qwen/Qwen3-8B", "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>"),
    ("Qwen/Qwen3.5-4B", "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>"),
    ("moonshotai/Kimi-K2-Thinking", render("Kimi-K2-Thinking.jinja", HELLO), "<|im_end|>"),
    ("deepseek-ai/DeepSeek-R1-0528", "<｜begin▁of▁sentence｜><｜User｜>Hi there!<｜Assistant｜>", DS_EOS),
    (
        "baidu/ERNIE-4.5-21B-A3B-Thinking",
        "<|im_start|>user\nHi there!<|im_end|>\n\n<|im_start|>assistant\n",
        "<|im_end|>",
    ),
]
for _model, _prompt, _stop in THINKING_SIBLINGS:
    case(
        9,
        _model,
        FAMILY_OF[_model],
        _prompt,
        STRAY + _stop,
        message("Hello! How can I help?", "hmm"),
        (_stop, "<think>"),
        control=True,
    )


# ---------------------------------------------------------------------------------------------------------
def _cases(cls: int) -> list[Any]:
    return [pytest.param(c, id=c.id) for c in CASES if c.cls == cls and not c.control]


def check(c: Case) -> None:
    assert library.family_for_model(c.model_id).name == c.family
    got = parse_every_way(c.model_id, c.prompt, c.text, c.tools)
    assert normalized(got) == normalized(c.expected)
    leaked = [
        word
        for word in c.absent
        for text in strings({k: v for k, v in got.items() if k != "role"})
        if word in text
    ]
    assert not leaked, f"{leaked} inside a value of {got}"


@pytest.mark.parametrize("c", _cases(1))
def test_a_turn_continued_after_a_tool_result_is_only_the_new_generation(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", _cases(2))
def test_a_reasoning_opener_repeated_after_the_prompt_opened_the_block_is_a_delimiter(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", _cases(3))
def test_no_stop_token_is_part_of_a_value(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", _cases(4))
def test_llama_built_in_tools_are_read_by_the_template_for_the_model(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", _cases(5))
def test_lfm2_json_and_python_calls_are_both_read(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", _cases(6))
def test_hunyuan_ernie_and_apriel_outputs(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", _cases(7))
def test_mistral_text_after_the_json_arguments_is_content(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", _cases(9))
def test_non_thinking_variants_keep_a_stray_think_in_content(c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", [pytest.param(c, id=c.id) for c in CASES if c.control])
def test_what_the_fixed_templates_still_read(c: Case) -> None:
    """Syntax beside the fixes: Llama JSON calls, several Mistral calls, a plain Hunyuan answer, cut-off XML
    calls, and the thinking siblings of the non-thinking variants reading their reasoning."""
    check(c)


def test_for_model_is_unambiguous_for_the_variant_ids() -> None:
    """Every model id of the cases matches its family's patterns more specifically than any other family's."""
    for c in CASES:
        scores = sorted(
            (
                library._pattern_score(p.lower()),
                fam.name,
            )
            for fam in library.families()
            for p in fam.models
            if re.fullmatch(re.escape(p.lower()).replace(r"\*", ".*").replace(r"\?", "."), c.model_id.lower())
        )
        assert scores, c.model_id
        best = {name for score, name in scores if score == scores[-1][0]}
        assert best == {c.family}, (c.model_id, scores)


def test_every_family_says_how_it_reads_an_unprompted_think_block() -> None:
    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    notes = page.split("## Family notes", 1)[1]
    for fam in library.families():
        if not fam.has_template:
            continue
        section = notes.split(f"\n### {fam.name}\n", 1)[1].split("\n### ", 1)[0]
        assert "written without the prompt opening it" in section, fam.name

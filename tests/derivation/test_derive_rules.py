"""``rt.templates.derive``: the rules of docs/derive.md's "What it recognises" on small chat templates
of their own (markers nobody has seen) and on the chat templates of ``../shared/chat_templates/`` they were
written for: harmony-style channels, an end-of-sequence token guessed by rule, a repeated header marker,
markers read off the system prompt's prose, a variable no chat request has."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")

import response_templates as rt
from response_templates.derivation import Derivation, derive

ROOT = Path(__file__).resolve().parents[2]
CHAT_TEMPLATES = ROOT.parent / "shared" / "chat_templates"

needs_templates = pytest.mark.skipif(
    not CHAT_TEMPLATES.is_dir(), reason="../shared/chat_templates is not available"
)


@cache
def derived(name: str) -> Derivation:
    return derive((CHAT_TEMPLATES / name).read_text(encoding="utf-8"))


def parse(template: dict[str, Any], out: str, prefix: str) -> dict[str, Any]:
    message = rt.parse_response(out, template, prefix=prefix)
    assert isinstance(message, dict)
    return message


# ------------------------------------------------------------------------------------- harmony channels

#: A harmony-style template with markers, channel names and a recipient of its own.
CHANNELS = """\
{%- for m in messages -%}
{%- if m.role == 'user' -%}<|begin|>user<|msg|>{{ m.content }}<|stop|>
{%- elif m.role == 'assistant' -%}
{%- if m.reasoning_content -%}<|begin|>bot<|chan|>thinking<|msg|>{{ m.reasoning_content }}<|stop|>{%- endif -%}
{%- for c in m.tool_calls or [] -%}<|begin|>bot to=tools.{{ c.function.name }}<|chan|>calls json<|msg|>\
{{ c.function.arguments | tojson }}<|invoke|>{%- endfor -%}
{%- if m.content -%}<|begin|>bot<|chan|>answer<|msg|>{{ m.content }}<|stop|>{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|begin|>bot{%- endif -%}"""


def test_channels_are_read_off_the_renders() -> None:
    d = derive(CHANNELS)
    assert d.confidence == 1.0
    assert any(e["found"] == "channels" for e in d.evidence)
    t = d.template
    # the header rewritten between messages, the recipient after the channel, a marked content type
    out = (
        "<|chan|>thinking<|msg|>Hmm.<|stop|><|begin|>bot<|chan|>thinking<|msg|>More.<|stop|>"
        '<|begin|>bot<|chan|>calls to=tools.f <|constrain|>json<|msg|>{"x": 1}<|invoke|>'
    )
    message = parse(t, out, "<|begin|>bot")
    assert message["reasoning_content"] == "Hmm.\nMore."
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"x": 1}}
    # any channel but the reasoning one is the answer; a message to another recipient is dropped
    out = (
        "<|chan|>calls<|msg|>Let me look.<|stop|><|begin|>bot to=web.search<|chan|>calls<|msg|>"
        '{"q": 1}<|invoke|><|begin|>bot<|chan|>answer<|msg|>Done.<|stop|>'
    )
    assert parse(t, out, "<|begin|>bot") == {"role": "assistant", "content": "Let me look.\nDone."}


@needs_templates
def test_gpt_oss_channels_and_recipients() -> None:
    t = derived("openai-gpt-oss-120b.jinja").template
    out = (
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>'
    )
    message = parse(t, out, "<|start|>assistant")
    assert message["reasoning_content"] == "Think."
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    # addressed to the assistant itself: a message, not a call elsewhere
    out = "<|channel|>commentary to=assistant<|channel|>final<|message|>Hi."
    assert parse(t, out, "<|start|>assistant")["content"] == "Hi."


# ---------------------------------------------------------------------------- end-of-sequence token


@needs_templates
def test_an_eos_token_the_template_writes_is_guessed_by_rule() -> None:
    name = "mistralai-Mistral-Nemo-Instruct-2407.jinja"
    d = derived(name)
    assert any(w.startswith("end-of-sequence token guessed by rule") for w in d.warnings)
    assert d.confidence < 1.0
    assert "</s>" in d.template["fields"]["content"]["close"]
    assert parse(d.template, "Sunny.</s>", "[/INST]")["content"] == "Sunny."
    # special_tokens stay authoritative: no guess, no lost confidence
    given = derive((CHAT_TEMPLATES / name).read_text(encoding="utf-8"), special_tokens={"eos_token": "<E>"})
    assert not any("guessed by rule" in w for w in given.warnings)
    assert "<E>" in given.template["fields"]["content"]["close"]
    assert "</s>" not in given.template["fields"]["content"]["close"]


def test_no_guess_for_a_template_that_does_not_write_eos_token() -> None:
    d = derive(CHANNELS)
    assert not any("end-of-sequence" in w for w in d.warnings)


# ---------------------------------------------------------------------------- a repeated header marker


@needs_templates
def test_the_headers_last_marker_written_again_is_no_text() -> None:
    t = derived("CohereForAI-c4ai-command-r-plus-tool_use.jinja").template
    prefix = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
    assert parse(t, "<|CHATBOT_TOKEN|>Hello<|END_OF_TURN_TOKEN|>", prefix)["content"] == "Hello"
    assert parse(t, "Hello<|END_OF_TURN_TOKEN|>", prefix)["content"] == "Hello"


# ------------------------------------------------------------------------------- the system prompt's prose

#: A template that never renders reasoning or calls, but says how in its system prompt.
PROSE = """\
{%- if tools %}<|sys|>Use tools. To call a function, reply with <|fn|> followed by a JSON list of calls.<|eot|>
{%- endif %}
{%- if thoughtful %}<|sys|>Write your thoughts between <ponder></ponder> and your answer between \
<reply></reply>.<|eot|>
{%- endif %}
{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|eot|>{% endfor %}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""


def test_markers_are_read_off_the_system_prompts_prose() -> None:
    d = derive(PROSE)
    fields = d.template["fields"]
    assert fields["reasoning_content"]["open_pattern"].startswith("<ponder>")
    assert fields["content_wrapper"]["open"] == "<reply>"
    assert fields["tool_calls"]["open_pattern"].startswith(r"<\|fn\|>")
    assert sum("system prompt's prose" in w for w in d.warnings) == 3
    assert d.confidence <= 0.85**3
    out = '<ponder>Hmm.</ponder><reply>Yes.</reply><|fn|>[{"name": "f", "arguments": {"x": 1}}]'
    message = parse(d.template, out, "<|assistant|>")
    assert message["reasoning_content"] == "Hmm." and message["content"] == "Yes."
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"x": 1}}


@needs_templates
def test_granite_3_3_reads_its_prose() -> None:
    t = derived("ibm-granite-granite-3.3-2B-Instruct.jinja").template
    prefix = "<|start_of_role|>assistant<|end_of_role|>"
    message = parse(t, "<think>Hm.</think><response>Hi.</response><|end_of_text|>", prefix)
    assert message["reasoning_content"] == "Hm." and message["content"] == "Hi."
    call = parse(t, '<|tool_call|>[{"name": "f", "arguments": {"a": 1}}]', prefix)["tool_calls"][0]
    assert call["function"] == {"name": "f", "arguments": {"a": 1}}


@needs_templates
def test_a_closer_the_template_splits_on_gives_the_opener_by_rule() -> None:
    d = derived("LFM2.5-Instruct.jinja")  # splits on "</think>" and never writes "<think>"
    assert d.template["fields"]["reasoning_content"]["open_pattern"].startswith("<think>")
    assert any("split" in w or "splits" in w for w in d.warnings)


# ---------------------------------------------------------------------------- a variable no request has


def test_a_variable_no_chat_request_has_is_supplied() -> None:
    template = (
        "{{ '<|sys|>' + functions + '<|eot|>' }}{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}"
        "<|eot|>{% endfor %}{%- if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    d = derive(template)
    assert any("needs 'functions'" in w for w in d.warnings)
    assert d.confidence < 1.0
    assert parse(d.template, "Hi.<|eot|>", "<|assistant|>")["content"] == "Hi."


@needs_templates
def test_firefunction_v2_derives_with_its_functions_supplied() -> None:
    t = derived("fireworks-ai-llama-3-firefunction-v2.jinja").template
    out = ' functools[{"name": "f", "arguments": {"a": 1}}]'
    call = parse(t, out, "<|start_header_id|>assistant<|end_header_id|>\n\n")["tool_calls"][0]
    assert call["function"] == {"name": "f", "arguments": {"a": 1}}


# ----------------------------------------------------------------------- more syntaxes the renders show


@needs_templates
def test_calls_of_tools_listed_by_name_are_read_too() -> None:
    d = derived("meta-llama-Llama-3.1-8B-Instruct.jinja")
    assert d.template["fields"]["builtin_calls"]["content_args"] == {"name_suffix": ".call"}
    prefix = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    out = '<|python_tag|>brave_search.call(query="weather")<|eom_id|>'
    call = parse(d.template, out, prefix)["tool_calls"][0]
    assert call["function"] == {"name": "brave_search", "arguments": {"query": "weather"}}
    out = '{"name": "f", "parameters": {"a": 1}}'
    assert parse(d.template, out, prefix)["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


@needs_templates
def test_a_call_marker_the_generation_prompt_ends_with() -> None:
    d = derived("meetkai-functionary-medium-v3.2.jinja")
    assert d.confidence == 1.0
    header = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    assert d.template["start_anchor"] == header
    out = 'all\nLet me see.>>>get_weather\n{"city": "Paris"}'
    for prefix, text in ((header + ">>>", out), (header, out)):  # with and without the marker
        message = parse(d.template, text, prefix)
        assert message["content"] == "Let me see."
        assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    # the wrapper's word is no opener inside the text
    assert parse(d.template, "all\nI call them all.", header + ">>>")["content"] == "I call them all."


@needs_templates
def test_an_answer_opened_by_name_closes_by_the_naming_rule() -> None:
    d = derived("Apriel-1.6-15b-Thinker-fixed.jinja")
    assert any("[END FINAL RESPONSE]" in w for w in d.warnings)
    out = "Think.\n[BEGIN FINAL RESPONSE]\nHi.\n[END FINAL RESPONSE]<|end|>"
    message = parse(d.template, out, "\n<|begin_assistant|>\nHere are my reasoning steps:\n")
    assert message["reasoning_content"] == "Think." and message["content"] == "Hi."


def test_reasoning_from_the_templates_own_content_blocks() -> None:
    template = """\
{%- for m in messages %}<|{{ m.role }}|>
{%- if m.content is mapping and 'blocks' in m.content %}
{%- for b in m.content.blocks %}{% if b.type == 'reasoning_steps' %}<|muse|>{{ b.text }}{% elif b.type == 'response' %}\
<|/muse|>{{ b.text }}{% else %}{{ raise_exception('Invalid block type: ' + b.type) }}{% endif %}{% endfor %}
{%- else %}{{ m.content }}{% endif %}<|eot|>{% endfor %}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""
    d = derive(template)
    assert d.confidence == 1.0
    message = parse(d.template, "<|muse|>Hm.<|/muse|>Hi.<|eot|>", "<|assistant|>")
    assert message["reasoning_content"] == "Hm." and message["content"] == "Hi."

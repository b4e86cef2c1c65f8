"""parse_response / get_response_parser with a tokenizer: ids in, the same messages as text in.

Real chat templates (Qwen3, SmolLM3) render the prompts; small tokenizers trained on the spot encode
them. Where transformers already has ``tokenizer.parse_response`` (5.x, the reference), ours must give
the same messages on inputs where the two engines agree (docs/differences.md lists where they do not).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypothesis_profiles import examples

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

import hf_fixtures as fx
import response_templates as rt
from response_templates import hf

logging.getLogger("transformers").setLevel(logging.ERROR)

FAST = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TOKS: dict[str, Any] = {}


def tok_of(kind: str) -> Any:
    if kind not in _TOKS:
        tok = fx.hf_tokenizer(kind)
        tok.response_template = copy.deepcopy(fx.QWEN3_TEMPLATE)
        _TOKS[kind] = tok
    return _TOKS[kind]


def text_parse(tok: Any, output_ids: list[int], prompt_ids: list[int], **kwargs: Any) -> dict[str, Any]:
    """The message from parsing the decoded whole as text (generation decoded after its prompt)."""
    prompt = tok.decode(prompt_ids)
    output = tok.decode(prompt_ids + output_ids)[len(prompt) :]
    return rt.parse_response(output, kwargs.pop("template", tok.response_template), prefix=prompt, **kwargs)


def stream_ids(parser: hf.TokenResponseParser, ids: list[int], sizes: list[int]) -> tuple[dict, list[dict]]:
    events = list(parser.initial_events)
    i = k = 0
    while i < len(ids):
        n = sizes[k % len(sizes)]
        events += parser.feed_tokens(ids[i : i + n])
        i, k = i + n, k + 1
    message, final = parser.finalize()
    return message, events + final


def structure(events: list[dict]) -> list[tuple]:
    """Open/close events with values, and each region's concatenated chunk text."""
    out: list[tuple] = []
    text: dict[str, str] = {}
    for e in events:
        if e["type"] == "region_chunk":
            text[e["field"]] = text.get(e["field"], "") + e["text"]
        elif e["type"] == "region_close":
            out.append(("close", e["field"], repr(e["value"]), text.pop(e["field"], "")))
        else:
            out.append(("open", e["field"]))
    return out


# ------------------------------------------------------------------------------------------------
# ids and text give the same message
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", fx.KINDS)
@pytest.mark.parametrize("output", fx.OUTPUTS, ids=range(len(fx.OUTPUTS)))
def test_ids_and_text_give_the_same_message(kind: str, output: str) -> None:
    tok = tok_of(kind)
    prompt = fx.prompt_ids(tok, tools=[fx.WEATHER_TOOL])
    ids = fx.encode(tok, output)
    by_ids = hf.parse_response(tok, ids, prefix=prompt, tools=[fx.WEATHER_TOOL])
    by_text = hf.parse_response(tok, tok.decode(ids), prefix=tok.decode(prompt), tools=[fx.WEATHER_TOOL])
    assert (
        by_ids
        == by_text
        == rt.parse_response(output, fx.QWEN3_TEMPLATE, prefix=tok.decode(prompt), tools=[fx.WEATHER_TOOL])
    )


def test_the_qwen3_message() -> None:
    tok = tok_of("sp_llama")
    ids = fx.encode(tok, fx.OUTPUTS[0])
    message = hf.parse_response(tok, ids, prefix=fx.prompt_ids(tok), tools=[fx.WEATHER_TOOL])
    assert message == {
        "role": "assistant",
        "reasoning_content": "The user wants the weather 🌦️ in 東京.",
        "content": "Let me check.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "東京", "days": 3}},
            }
        ],
    }


def test_prompt_that_opens_and_closes_reasoning_smollm3() -> None:
    """SmolLM3 with thinking off writes an empty <think></think> in the prompt; ids carry it."""
    tok = fx.hf_tokenizer("byte_level", chat_template=fx.SMOLLM3_CHAT_TEMPLATE)
    prompt = fx.prompt_ids(tok, enable_thinking=False)
    assert tok.decode(prompt).endswith("<|im_start|>assistant\n<think>\n\n</think>\n")
    ids = fx.encode(tok, "Sure: 42 🙂<|im_end|>")
    message = hf.parse_response(tok, ids, prefix=prompt, template=fx.QWEN3_TEMPLATE)
    assert message == {"role": "assistant", "content": "Sure: 42 🙂"}
    thinking = fx.prompt_ids(tok, enable_thinking=True)
    ids = fx.encode(tok, "<think>\nHmm.\n</think>\n42<|im_end|>")
    assert hf.parse_response(tok, ids, prefix=thinking, template=fx.QWEN3_TEMPLATE) == {
        "role": "assistant",
        "reasoning_content": "Hmm.",
        "content": "42",
    }


def test_prompt_that_opens_reasoning() -> None:
    """A chat template that writes <think>\\n itself: the generation continues inside the region."""
    tok = tok_of("byte_level")
    prompt = fx.prompt_ids(tok) + fx.encode(tok, "<think>\n")
    ids = fx.encode(tok, "Hmm 🤔</think>Done.<|im_end|>")
    parser = hf.get_response_parser(tok, prefix=prompt)
    assert parser.initial_events[0] == {"type": "region_open", "field": "reasoning_content"}
    message, _ = stream_ids(parser, ids, [1])
    assert message == {"role": "assistant", "reasoning_content": "Hmm 🤔", "content": "Done."}
    assert hf.parse_response(tok, ids, prefix=prompt) == message


# ------------------------------------------------------------------------------------------------
# Streaming ids: any split, same message and events as the decoded whole
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", fx.KINDS)
def test_streamed_ids_equal_parsing_the_decoded_whole(kind: str) -> None:
    tok = tok_of(kind)
    prompt = fx.prompt_ids(tok)
    prompt_text = tok.decode(prompt)
    vocab = len(tok)

    @FAST
    @given(
        output=st.sampled_from(fx.OUTPUTS),
        # any token but the pad token, which parse_response drops at both ends of a sequence
        noise=st.lists(st.integers(0, vocab - 1).filter(lambda i: i != tok.pad_token_id), max_size=6),
        at=st.integers(0, 200),
        sizes=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    )
    def check(output: str, noise: list[int], at: int, sizes: list[int]) -> None:
        ids = fx.encode(tok, output)
        ids[at:at] = noise  # arbitrary tokens, broken characters included
        whole_text = tok.decode(prompt + ids)
        if not whole_text.startswith(prompt_text):
            return
        try:
            expected_message = rt.parse_response(
                whole_text[len(prompt_text) :], fx.QWEN3_TEMPLATE, prefix=prompt_text
            )
        except rt.ParseError:
            expected_message = None
        text_parser = rt.ResponseParser(fx.QWEN3_TEMPLATE, prefix=prompt_text)
        parser = hf.get_response_parser(tok, prefix=prompt)
        if expected_message is None:
            with pytest.raises(rt.ParseError):
                stream_ids(parser, ids, sizes)
            return
        message, events = stream_ids(parser, ids, sizes)
        text_events = text_parser.initial_events + text_parser.feed(whole_text[len(prompt_text) :])
        text_message, final = text_parser.finalize()
        assert message == expected_message == text_message
        assert structure(events) == structure(text_events + final)
        assert hf.parse_response(tok, ids, prefix=prompt) == expected_message

    check()


def test_feed_tokens_accepts_generate_shapes() -> None:
    np = pytest.importorskip("numpy")
    tok = tok_of("byte_level")
    ids = fx.encode(tok, fx.OUTPUTS[0])
    parser = hf.get_response_parser(tok, prefix=np.array([fx.prompt_ids(tok)]))  # [1, n]
    for i in ids:
        parser.feed_tokens(np.array([[i]]))  # [1, 1]
    assert parser.finalize()[0] == hf.parse_response(tok, ids, prefix=fx.prompt_ids(tok))
    with pytest.raises(rt.ResponseTemplateError, match="one sequence"):
        hf.get_response_parser(tok, prefix="").feed_tokens(np.array([[1], [2]]))
    with pytest.raises(rt.ResponseTemplateError, match="one prompt"):
        hf.get_response_parser(tok, prefix=[[1, 2], [3, 4]])


def test_feed_text_between_tokens() -> None:
    tok = tok_of("byte_level")
    parser = hf.get_response_parser(tok, prefix="")
    ids = fx.encode(tok, "<think>a🌦")
    parser.feed_tokens(ids[:-1])  # the emoji's last byte is missing
    with pytest.raises(rt.ResponseTemplateError, match="still being decoded"):
        parser.feed("x")
    parser.feed_tokens(ids[-1:])
    parser.feed("</think>")
    parser.feed(b"ok")
    assert parser.finalize()[0] == {"role": "assistant", "reasoning_content": "a🌦", "content": "ok"}
    with pytest.raises(rt.ParserStateError):
        parser.feed_tokens([1])
    with pytest.raises(rt.ParserStateError):
        parser.finalize()


def test_finalize_decodes_what_the_decoder_still_holds() -> None:
    tok = tok_of("sp_llama")
    ids = fx.encode(tok, "Answer: 東")  # ends with a run of byte tokens: held until the end
    parser = hf.get_response_parser(tok, prefix="")
    events = [e for i in ids for e in parser.feed_tokens(i)]
    assert "".join(e.get("text", "") for e in events) == "Answer: "
    message, final = parser.finalize()
    assert message == {"role": "assistant", "content": "Answer: 東"}
    assert {"type": "region_chunk", "field": "content", "text": "東", "dirty": False} in final


def test_parse_error_while_flushing_the_decoder_keeps_the_message() -> None:
    tok = tok_of("sp_llama")
    template = {"start_anchor": "X", "fields": {"n": {"open": "<think>", "close": "東", "content": "int"}}}
    ids = fx.encode(tok, "<think>seven東")
    parser = hf.get_response_parser(tok, prefix="", template=template)
    for i in ids:
        parser.feed_tokens(i)
    with pytest.raises(rt.ParseError) as info:
        parser.finalize()
    assert info.value.field == "n" and info.value.partial_message == {}
    assert info.value.events[-1]["type"] == "region_close"
    assert parser.finalized


# ------------------------------------------------------------------------------------------------
# Batches and padding
# ------------------------------------------------------------------------------------------------


def _right_pad(rows: list[list[int]], pad: int) -> list[list[int]]:
    width = max(map(len, rows))
    return [row + [pad] * (width - len(row)) for row in rows]


@pytest.mark.parametrize("kind", fx.KINDS)
def test_padded_batch_gives_the_messages_of_the_unpadded_items(kind: str) -> None:
    tok = tok_of(kind)
    prompt = fx.prompt_ids(tok)
    rows = [fx.encode(tok, out) for out in fx.OUTPUTS]
    expected = [hf.parse_response(tok, row, prefix=prompt) for row in rows]
    padded = _right_pad(rows, tok.pad_token_id)
    assert hf.parse_response(tok, padded, prefix=prompt) == expected
    np = pytest.importorskip("numpy")
    assert hf.parse_response(tok, np.array(padded), prefix=np.array(prompt)) == expected
    assert hf.parse_response(tok, [np.array(r) for r in rows], prefix=prompt) == expected


def test_left_padded_prompts_with_attention_mask() -> None:
    tok = fx.hf_tokenizer("sp_llama")
    tok.response_template = fx.QWEN3_TEMPLATE
    tok.padding_side = "left"
    conversations = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "user", "content": "Weather in 東京 for the next days, please? 🌦️"}],
    ]
    singles = [fx.prompt_ids(tok, c) for c in conversations]
    batch = tok.apply_chat_template(conversations, add_generation_prompt=True, padding=True, return_dict=True)
    assert batch["input_ids"][0][0] == tok.pad_token_id and 0 in batch["attention_mask"][0]
    outputs = [fx.encode(tok, fx.OUTPUTS[1]), fx.encode(tok, fx.OUTPUTS[0])]
    expected = [hf.parse_response(tok, o, prefix=p) for o, p in zip(outputs, singles, strict=True)]
    padded_outputs = _right_pad(outputs, tok.pad_token_id)
    assert hf.parse_response(tok, padded_outputs, prefix=batch) == expected
    # without the mask, leading pad tokens are dropped too
    assert hf.parse_response(tok, padded_outputs, prefix=batch["input_ids"]) == expected


def test_pad_token_that_is_also_eos() -> None:
    """pad == eos (or no pad token, where generate pads with eos): one eos is kept at the end."""
    template = copy.deepcopy(fx.QWEN3_TEMPLATE)
    template["fields"]["content"] = {"content_args": {"strip": False}}  # no close: <|im_end|> would show
    for tok in (
        fx.hf_tokenizer("byte_level", pad_token="<|im_end|>"),
        fx.hf_tokenizer("byte_level", pad_token=None),
    ):
        eos = tok.eos_token_id
        rows = [fx.encode(tok, "Hi<|im_end|>"), fx.encode(tok, "Hello there<|im_end|>")]
        messages = hf.parse_response(tok, _right_pad(rows, eos), prefix="", template=template)
        assert [m["content"] for m in messages] == ["Hi<|im_end|>", "Hello there<|im_end|>"]
        assert hf.parse_response(tok, [eos, eos, eos], prefix="", template=template) == {
            "role": "assistant",
            "content": "<|im_end|>",
        }


def test_prefix_one_for_all_or_one_per_item() -> None:
    tok = tok_of("byte_level")
    think = fx.prompt_ids(tok) + fx.encode(tok, "<think>\n")
    plain = fx.prompt_ids(tok)
    outputs = [fx.encode(tok, "a</think>b<|im_end|>")] * 2
    assert hf.parse_response(tok, outputs, prefix=[think, plain]) == [
        {"role": "assistant", "reasoning_content": "a", "content": "b"},
        {"role": "assistant", "content": "a</think>b"},
    ]
    assert hf.parse_response(
        tok, outputs, prefix=[tok.decode(think), tok.decode(plain)]
    ) == hf.parse_response(tok, outputs, prefix=[think, plain])
    assert (
        hf.parse_response(tok, outputs, prefix=think)
        == [{"role": "assistant", "reasoning_content": "a", "content": "b"}] * 2
    )
    assert (
        hf.parse_response(tok, [tok.decode(o) for o in outputs], prefix=[])
        == [{"role": "assistant", "content": "a</think>b"}] * 2
    )
    assert hf.parse_response(tok, outputs[0], prefix=[think]) == {  # a batch of one prompt for one output
        "role": "assistant",
        "reasoning_content": "a",
        "content": "b",
    }
    with pytest.raises(rt.ResponseTemplateError, match="batch of 2 outputs but 3 prefixes"):
        hf.parse_response(tok, outputs, prefix=[think, plain, plain])
    with pytest.raises(rt.ResponseTemplateError, match="prefix is a batch of 2"):
        hf.parse_response(tok, outputs[0], prefix=[think, plain])
    assert hf.parse_response(tok, [], prefix="") == []


def test_batch_errors_name_the_item() -> None:
    tok = tok_of("byte_level")
    good = fx.encode(tok, "fine<|im_end|>")
    bad = fx.encode(tok, "<tool_call>{oops}</tool_call><|im_end|>")
    with pytest.raises(rt.ParseError) as info:
        hf.parse_response(tok, [good, bad], prefix="")
    assert info.value.index == 1 and info.value.field == "tool_calls"
    with pytest.raises(rt.ResponseTemplateError) as bad_id:
        hf.parse_response(tok, [good, [1, -5]], prefix="")
    assert bad_id.value.index == 1


def test_input_shapes_and_mistakes() -> None:
    tok = tok_of("byte_level")
    ids = fx.encode(tok, "fine<|im_end|>")
    assert hf.parse_response(tok, tuple(ids), prefix=()) == {"role": "assistant", "content": "fine"}
    assert hf.parse_response(tok, b"fine", prefix="") == {"role": "assistant", "content": "fine"}
    assert hf.parse_response(tok, {"input_ids": ids, "attention_mask": [1] * len(ids)}, prefix="") == {
        "role": "assistant",
        "content": "fine",
    }
    for bad, match in [
        ([ids, "text"], "mixes"),
        (["text", ids], "mixes"),
        ([[ids]], "1-D"),
        (3.5, "must be text, token ids"),
        ({"ids": ids}, "input_ids"),
        ({"input_ids": ids, "attention_mask": [1]}, "shape"),
    ]:
        with pytest.raises(rt.ResponseTemplateError, match=match):
            hf.parse_response(tok, bad, prefix="")
    with pytest.raises(rt.ResponseTemplateError, match="prefix is required"):
        hf.parse_response(tok, ids)
    with pytest.raises(rt.ResponseTemplateError, match="prefix is required"):
        hf.get_response_parser(tok, prefix=None)


def test_torch_batches() -> None:
    torch = pytest.importorskip("torch")
    tok = tok_of("byte_level")
    rows = [fx.encode(tok, out) for out in fx.OUTPUTS[:3]]
    prompt = fx.prompt_ids(tok)
    expected = [hf.parse_response(tok, r, prefix=prompt) for r in rows]
    padded = torch.tensor(_right_pad(rows, tok.pad_token_id))
    assert hf.parse_response(tok, padded, prefix=torch.tensor([prompt])) == expected
    assert hf.parse_response(tok, padded[0], prefix=torch.tensor(prompt)) == expected[0]


# ------------------------------------------------------------------------------------------------
# Templates: from the tokenizer, from the argument, or a clear error
# ------------------------------------------------------------------------------------------------


def test_template_argument_and_missing_template() -> None:
    tok = fx.hf_tokenizer("byte_level")
    ids = fx.encode(tok, "<think>x</think>y<|im_end|>")
    with pytest.raises(hf.MissingTemplateError, match="save_response_template") as info:
        hf.parse_response(tok, ids, prefix="")
    assert isinstance(info.value, AttributeError) and isinstance(info.value, ValueError)
    with pytest.raises(hf.MissingTemplateError):
        hf.get_response_parser(tok, prefix="")
    assert hf.parse_response(tok, ids, prefix="", template=fx.QWEN3_TEMPLATE)["content"] == "y"
    tok.response_template = fx.QWEN3_TEMPLATE
    override = {"start_anchor": "x", "fields": {"all": {}}}
    assert hf.parse_response(tok, ids, prefix="", template=override) == {"all": "<think>x</think>y<|im_end|>"}
    tok.response_template = {"fields": {}}
    with pytest.raises(rt.TemplateError):
        hf.parse_response(tok, ids, prefix="")


def test_auto_template_comes_from_the_library_by_chat_template() -> None:
    tok = fx.hf_tokenizer("byte_level")  # Qwen3's chat template, no response_template
    ids = fx.encode(tok, "<think>x</think>y<|im_end|>")
    assert hf.parse_response(tok, ids, prefix="", template="auto") == {
        "role": "assistant",
        "reasoning_content": "x",
        "content": "y",
    }
    parser = hf.get_response_parser(tok, prefix="", template="auto")
    assert parser.template is rt.templates.detect(tok)
    tok.response_template = {"start_anchor": "x", "fields": {"all": {}}}  # the tokenizer's own still wins
    assert hf.parse_response(tok, ids, prefix="", template="auto") == {"all": "<think>x</think>y<|im_end|>"}
    unknown = fx.hf_tokenizer("byte_level", chat_template=None)
    unknown.chat_template = "{{ messages[0]['content'] }}"
    with pytest.raises(hf.MissingTemplateError, match="model library") as info:
        hf.parse_response(unknown, ids, prefix="", template="auto")
    assert "unknown model" in str(info.value)


def test_bare_tokenizers_tokenizer_needs_a_template_argument() -> None:
    raw = fx.raw_tokenizer("sp_metaspace")
    ids = fx.encode(raw, fx.OUTPUTS[0])
    with pytest.raises(hf.MissingTemplateError):
        hf.parse_response(raw, ids, prefix="")
    message = hf.parse_response(raw, ids, prefix="", template=fx.QWEN3_TEMPLATE)
    assert message == rt.parse_response(fx.OUTPUTS[0], fx.QWEN3_TEMPLATE, prefix="")


# ------------------------------------------------------------------------------------------------
# The reference: transformers' own tokenizer.parse_response (5.x)
# ------------------------------------------------------------------------------------------------


def _reference_tokenizer(kind: str, template: dict[str, Any]) -> Any:
    tok = fx.hf_tokenizer(kind)
    if not callable(getattr(type(tok), "parse_response", None)) or hf.methods._ours(type(tok).parse_response):
        pytest.skip("this transformers has no parse_response of its own")
    tok.response_template = copy.deepcopy(template)
    return tok


@pytest.mark.parametrize("kind", fx.KINDS)
@pytest.mark.parametrize(
    "template", [fx.QWEN3_TEMPLATE, fx.QWEN3_PATTERN_TEMPLATE], ids=["literal", "pattern"]
)
def test_same_results_as_the_reference_tokenizer_methods(kind: str, template: dict[str, Any]) -> None:
    tok = _reference_tokenizer(kind, template)
    prompt = fx.prompt_ids(tok, tools=[fx.WEATHER_TOOL])
    tools = [fx.WEATHER_TOOL]
    rows = [fx.encode(tok, out) for out in fx.OUTPUTS]
    for row in rows:
        ours = hf.parse_response(tok, row, prefix=prompt, tools=tools)
        assert ours == tok.parse_response(row, prefix=prompt, tools=tools)
        assert hf.parse_response(tok, tok.decode(row), prefix=tok.decode(prompt), tools=tools) == ours
    ours = hf.parse_response(tok, rows, prefix=prompt, tools=tools)
    assert ours == tok.parse_response(rows, prefix=prompt, tools=tools)
    assert hf.parse_response(tok, rows, prefix=[prompt] * len(rows)) == tok.parse_response(
        rows, prefix=[prompt] * len(rows)
    )
    # streaming: same open/close events and values as the reference's parser
    for row in rows:
        ref_parser = tok.get_response_parser(prefix=prompt, tools=tools)
        ref_events = list(ref_parser.initial_events) + list(ref_parser.feed(tok.decode(row)))
        ref_message, ref_final = ref_parser.finalize()
        ours_parser = hf.get_response_parser(tok, prefix=prompt, tools=tools)
        message, events = stream_ids(ours_parser, row, [1])
        assert message == ref_message
        closes = [(e["type"], e["field"], e.get("value")) for e in events if e["type"] != "region_chunk"]
        ref_closes = [
            (e["type"], e["field"], e.get("value"))
            for e in ref_events + list(ref_final)
            if e["type"] != "region_chunk"
        ]
        assert closes == ref_closes


def test_reference_difference_first_token_space_with_prompt_ids() -> None:
    """A deliberate difference: with the prompt as ids, the generation is decoded after it, so a
    SentencePiece word at the very start keeps its space (the reference decodes the output alone and
    loses it). Visible only where the template keeps whitespace."""
    template = copy.deepcopy(fx.QWEN3_TEMPLATE)
    template["fields"]["content"]["content_args"] = {"strip": False}
    tok = _reference_tokenizer("sp_llama", template)
    prompt = fx.prompt_ids(tok)
    ids = fx.encode(tok, "Hello world")
    assert tok.convert_ids_to_tokens(ids)[0].startswith("▁")
    assert hf.parse_response(tok, ids, prefix=prompt)["content"] == " Hello world"
    assert tok.parse_response(ids, prefix=prompt)["content"] == "Hello world"
    assert hf.parse_response(tok, ids, prefix=tok.decode(prompt))["content"] == "Hello world"  # text prefix

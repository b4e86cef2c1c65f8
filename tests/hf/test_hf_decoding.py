"""TokenDecoder: exact incremental detokenization with real (small, trained on the spot) tokenizers.

The contract: the text pieces concatenate to ``tokenizer.decode(all ids)`` (special tokens kept), or
with a prompt to ``decode(prompt + ids)`` minus the prompt's text; no piece holds a U+FFFD that the
whole decode does not have; the work per token does not grow with the stream.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypothesis_profiles import examples

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

import hf_fixtures as fx
from response_templates import ParserStateError, ResponseTemplateError
from response_templates.hf import TokenDecoder, clean_up_applies, decode_text

FAST = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tok(kind: str, **kwargs: object):
    return fx.hf_tokenizer(kind, **kwargs)


_TOKS: dict[tuple[str, bool], object] = {}


def tok_of(kind: str, cleanup: bool = False):
    """One tokenizer per kind for the property tests (tokenizers are read-only here)."""
    key = (kind, cleanup)
    if key not in _TOKS:
        extra = (
            {
                "clean_up_tokenization_spaces": True,
                "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output": True,
            }
            if cleanup
            else {}
        )
        _TOKS[key] = _tok(kind, **extra)
    return _TOKS[key]


def stream(decoder: TokenDecoder, ids: list[int], sizes: list[int] | None = None) -> list[str]:
    """Feed ``ids`` in chunks of the given sizes (cycled; default one at a time), then flush."""
    pieces = []
    sizes = sizes or [1]
    i = k = 0
    while i < len(ids):
        n = max(1, sizes[k % len(sizes)])
        pieces.append(decoder.step(ids[i : i + n]))
        i += n
        k += 1
    pieces.append(decoder.flush())
    return pieces


# ------------------------------------------------------------------------------------------------
# Real outputs: emoji, CJK, accents, special tokens and markers
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", fx.KINDS)
@pytest.mark.parametrize("text", fx.OUTPUTS, ids=range(len(fx.OUTPUTS)))
def test_token_by_token_is_exact_and_never_shows_a_broken_character(kind: str, text: str) -> None:
    tok = tok_of(kind)
    ids = fx.encode(tok, text)
    pieces = stream(TokenDecoder(tok), ids)
    assert "".join(pieces) == tok.decode(ids) == text
    assert not any("\ufffd" in p for p in pieces)


@pytest.mark.parametrize("kind", fx.KINDS)
def test_characters_really_are_split_across_tokens(kind: str) -> None:
    """The fixtures do exercise the hard case: one character spread over several tokens."""
    tok = tok_of(kind)
    ids = fx.encode(tok, "🌦️東京")
    singles = [tok.decode([i]) for i in ids]
    assert len(ids) >= 6 and sum("\ufffd" in s or s == "" for s in singles) >= 3
    pieces = stream(TokenDecoder(tok), ids)
    assert "".join(pieces) == "🌦️東京"
    assert sum(1 for p in pieces if p) < len(ids)  # some tokens had to wait for the rest of a character


@pytest.mark.parametrize("kind", fx.KINDS)
def test_special_tokens_come_out_as_their_text(kind: str) -> None:
    tok = tok_of(kind)
    ids = fx.encode(tok, "a<|im_end|><think>b<|endoftext|>")
    assert tok.convert_tokens_to_ids("<|im_end|>") in ids
    assert "".join(stream(TokenDecoder(tok), ids)) == tok.decode(ids) == "a<|im_end|><think>b<|endoftext|>"


def test_single_token_decoding_is_what_goes_wrong() -> None:
    """Why the decoder exists: per-token decode loses spaces and breaks characters."""
    tok = tok_of("sp_llama")
    prompt = fx.prompt_ids(tok)
    ids = fx.encode(tok, "The weather 🌦️ in 東京")
    naive = "".join(tok.decode([i]) for i in ids)
    assert naive != "The weather 🌦️ in 東京"
    assert "\ufffd" in naive or " " not in naive
    dec = TokenDecoder(tok, prompt_ids=prompt)
    primed = "".join(stream(dec, ids))
    assert primed == tok.decode(prompt + ids)[len(tok.decode(prompt)) :]


# ------------------------------------------------------------------------------------------------
# Leading spaces and priming (SentencePiece-style decoders strip the first space of a text)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sp_llama", "sp_metaspace"])
def test_priming_keeps_the_leading_space_of_the_first_generated_word(kind: str) -> None:
    tok = tok_of(kind)
    prompt = fx.encode(tok, "Hello")
    ids = fx.encode(tok, "Hello world")[len(prompt) :]
    assert tok.convert_ids_to_tokens(ids)[0].startswith("▁")
    assert tok.decode(ids).startswith("w")  # decoded alone, the space is gone
    assert "".join(stream(TokenDecoder(tok, prompt_ids=prompt), ids)) == " world"
    assert "".join(stream(TokenDecoder(tok), ids)) == tok.decode(ids) == "world"


@pytest.mark.parametrize("kind", fx.KINDS)
def test_priming_with_a_chat_prompt(kind: str) -> None:
    tok = tok_of(kind)
    prompt = fx.prompt_ids(tok)
    for text in fx.OUTPUTS:
        ids = fx.encode(tok, text)
        whole = tok.decode(prompt + ids)
        expected = whole[len(tok.decode(prompt)) :]
        assert "".join(stream(TokenDecoder(tok, prompt_ids=prompt), ids, [1, 3, 2])) == expected


def test_prompt_ending_inside_a_byte_run() -> None:
    """A prompt ending with byte-fallback tokens ("\\n" is <0x0A>): the run continues into the output."""
    tok = tok_of("sp_llama")
    prompt = fx.encode(tok, "Hi\n")
    assert tok.convert_ids_to_tokens(prompt)[-1] == "<0x0A>"
    ids = fx.encode(tok, "Hi\n東")[len(prompt) :]
    assert "".join(stream(TokenDecoder(tok, prompt_ids=prompt), ids)) == "東"


# ------------------------------------------------------------------------------------------------
# Property: any ids, any chunking
# ------------------------------------------------------------------------------------------------


def _vocab_ids(kind: str) -> st.SearchStrategy[int]:
    return st.integers(0, len(tok_of(kind)) - 1)


def _partial_ids(kind: str) -> list[int]:
    """Ids whose own text is (or holds) a broken character: bytes of multi-byte characters."""
    tok = tok_of(kind)
    return [i for i in range(len(tok)) if "\ufffd" in tok.decode([i])]


@st.composite
def id_streams(draw: st.DrawFn, kind: str) -> list[int]:
    partial = _partial_ids(kind)
    tok = tok_of(kind)
    pieces = st.one_of(
        st.lists(_vocab_ids(kind), max_size=8),
        st.lists(st.sampled_from(partial), max_size=8),
        st.text(max_size=12).map(lambda t: fx.encode(tok, t)),
        st.sampled_from(fx.OUTPUTS).map(lambda t: fx.encode(tok, t)[:20]),
    )
    return [i for part in draw(st.lists(pieces, max_size=8)) for i in part]


@pytest.mark.parametrize("kind", fx.KINDS)
def test_any_ids_any_chunking_equals_decode_of_the_whole(kind: str) -> None:
    tok = tok_of(kind)

    @FAST
    @given(ids=id_streams(kind), sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6))
    def check(ids: list[int], sizes: list[int]) -> None:
        pieces = stream(TokenDecoder(tok), ids, sizes)
        assert "".join(pieces) == tok.decode(ids)

    check()


@pytest.mark.parametrize("kind", fx.KINDS)
def test_any_ids_after_a_prompt_equal_the_joint_decode(kind: str) -> None:
    tok = tok_of(kind)
    prompt = fx.prompt_ids(tok)
    prompt_text = tok.decode(prompt)

    @FAST
    @given(ids=id_streams(kind), sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6))
    def check(ids: list[int], sizes: list[int]) -> None:
        joint = tok.decode(prompt + ids)
        if not joint.startswith(prompt_text):
            return  # the output rewrote the prompt's last character (a byte run): nothing to compare
        pieces = stream(TokenDecoder(tok, prompt_ids=prompt), ids, sizes)
        assert "".join(pieces) == joint[len(prompt_text) :]

    check()


@pytest.mark.parametrize("kind", fx.KINDS)
def test_valid_text_never_produces_a_replacement_character(kind: str) -> None:
    tok = tok_of(kind)

    @FAST
    @given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
    def check(text: str) -> None:
        ids = fx.encode(tok, text)
        expected = tok.decode(ids)
        pieces = stream(TokenDecoder(tok), ids)
        assert "".join(pieces) == expected
        if "\ufffd" not in expected:
            assert not any("\ufffd" in p for p in pieces)

    check()


@pytest.mark.parametrize("kind", fx.KINDS)
def test_long_runs_of_broken_bytes(kind: str) -> None:
    """Garbage output (hundreds of tokens that never form a character) stays exact and bounded."""
    tok = tok_of(kind)
    partial = _partial_ids(kind)
    rng = random.Random(7)
    for _ in range(20):
        ids = [rng.choice(partial) for _ in range(rng.randint(50, 300))]
        dec = TokenDecoder(tok)
        pieces = []
        for i in ids:
            pieces.append(dec.step(i))
            if kind == "byte_level":
                assert len(dec._win) < 80  # the window is searched for a restart point and stays small
        pieces.append(dec.flush())
        assert "".join(pieces) == tok.decode(ids)


# ------------------------------------------------------------------------------------------------
# transformers' clean_up_tokenization_spaces, reproduced incrementally
# ------------------------------------------------------------------------------------------------


def test_clean_up_is_detected_as_decode_does_it() -> None:
    assert not clean_up_applies(tok_of("byte_level"))
    plain = _tok("byte_level", clean_up_tokenization_spaces=True)  # transformers 5 ignores it for BPE
    assert clean_up_applies(plain) == (plain.decode(fx.encode(plain, "a .")) == "a.")
    forced = tok_of("byte_level", cleanup=True)
    assert forced.decode(fx.encode(forced, "a .")) == "a."
    assert clean_up_applies(forced)


def test_changing_the_clean_up_flag_is_noticed() -> None:
    tok = _tok("sp_llama")
    assert not clean_up_applies(tok)
    tok.clean_up_tokenization_spaces = True
    tok.clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output = True
    assert clean_up_applies(tok) == (tok.decode(fx.encode(tok, "a .")) == "a.")


@pytest.mark.parametrize("kind", fx.KINDS)
def test_clean_up_spaces_streamed_exactly(kind: str) -> None:
    tok = tok_of(kind, cleanup=True)
    words = [
        " .",
        " ?",
        " !",
        " ,",
        " ' ",
        " n't",
        " 'm",
        " 's",
        " 've",
        " 're",
        " ",
        "a",
        "n",
        "t",
        "'",
        "re",
    ]
    parts = [fx.encode(tok, w) for w in words]

    @FAST
    @given(
        choice=st.lists(
            st.one_of(st.sampled_from(parts), st.lists(_vocab_ids(kind), max_size=3)), max_size=30
        ),
        sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    )
    def check(choice: list[list[int]], sizes: list[int]) -> None:
        ids = [i for part in choice for i in part]
        assert "".join(stream(TokenDecoder(tok), ids, sizes)) == tok.decode(ids)

    check()
    text = fx.OUTPUTS[1]
    ids = fx.encode(tok, text)
    assert "".join(stream(TokenDecoder(tok), ids)) == tok.decode(ids) != text  # " ." and " ," cleaned


# ------------------------------------------------------------------------------------------------
# Other tokenizer objects, inputs, errors
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", fx.KINDS)
def test_bare_tokenizers_tokenizer(kind: str) -> None:
    raw = fx.raw_tokenizer(kind)
    for text in fx.OUTPUTS:
        ids = fx.encode(raw, text)
        assert "".join(stream(TokenDecoder(raw), ids)) == raw.decode(ids, skip_special_tokens=False) == text
    assert decode_text(raw, fx.encode(raw, "<|im_end|>")) == "<|im_end|>"


@pytest.mark.parametrize("kind", fx.KINDS)
def test_agrees_with_tokenizers_decode_stream(kind: str) -> None:
    """Where tokenizers' DecodeStream is defined (it has no flush), both give the same text."""
    decoders = pytest.importorskip("tokenizers.decoders")
    if not hasattr(decoders, "DecodeStream"):
        pytest.skip("tokenizers too old for DecodeStream")
    tok = tok_of(kind)
    ids = [i for text in fx.OUTPUTS for i in fx.encode(tok, text)]
    ds = decoders.DecodeStream(skip_special_tokens=False)
    theirs = "".join(piece or "" for piece in (ds.step(tok.backend_tokenizer, i) for i in ids))
    ours = "".join(stream(TokenDecoder(tok), ids))
    assert ours == theirs == tok.decode(ids)


def test_slow_decode_path_gives_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokenizers whose class decodes in its own way go through tokenizer.decode (the path of slow
    tokenizers): same text, token by token."""
    from response_templates.hf import decoding

    tok = _tok("sp_llama")
    monkeypatch.setattr(decoding, "_backend_decode", lambda tokenizer: None)
    monkeypatch.setattr(decoding, "_INFO", type(decoding._INFO)())
    ids = [i for text in fx.OUTPUTS for i in fx.encode(tok, text)]
    assert "".join(stream(TokenDecoder(tok), ids, [1, 2])) == tok.decode(ids)


def test_ids_as_numpy_and_nested_shapes() -> None:
    np = pytest.importorskip("numpy")
    tok = tok_of("byte_level")
    ids = fx.encode(tok, fx.OUTPUTS[0])
    dec = TokenDecoder(tok, prompt_ids=np.array(fx.prompt_ids(tok)))
    text = "".join(dec.step(np.array(ids[i : i + 3])) for i in range(0, len(ids), 3)) + dec.flush()
    assert text == fx.OUTPUTS[0]
    dec = TokenDecoder(tok)
    assert (
        dec.step(np.int64(ids[0])) + dec.step([np.int32(i) for i in ids[1:]]) + dec.flush() == fx.OUTPUTS[0]
    )


def test_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    tok = tok_of("byte_level")
    ids = fx.encode(tok, fx.OUTPUTS[0])
    dec = TokenDecoder(tok, prompt_ids=torch.tensor(fx.prompt_ids(tok)))
    assert "".join(dec.step(torch.tensor([i])) for i in ids) + dec.flush() == fx.OUTPUTS[0]


def test_invalid_ids_and_order_errors() -> None:
    tok = tok_of("byte_level")
    dec = TokenDecoder(tok)
    for bad in (-1, 1 << 40, "abc", [1, "x"], [1.5], None):
        with pytest.raises(ResponseTemplateError):
            dec.step(bad)
    assert dec.step([]) == ""
    assert dec.decode(fx.encode(tok, "ok")) == "ok"
    assert dec.flush() == ""  # flushing again is harmless
    with pytest.raises(ParserStateError):
        dec.step(1)


def test_pending_and_holding() -> None:
    tok = tok_of("byte_level")
    ids = fx.encode(tok, "🌦")
    dec = TokenDecoder(tok)
    assert dec.step(ids[0]) == "" and dec.pending == 1 and dec.holding
    assert dec.step(ids[1:]) == "🌦" and dec.pending == 0 and not dec.holding
    with pytest.raises(ResponseTemplateError, match="expected a Hugging Face tokenizer"):
        TokenDecoder(object())


def test_window_stays_small_on_long_streams() -> None:
    """O(1) per token: the decoded window does not grow with the stream (it is bounded by the longest
    character or run of byte tokens, here the 24 byte tokens of "こんにちは世界。")."""
    tok = tok_of("sp_llama")
    once = [i for text in fx.OUTPUTS for i in fx.encode(tok, text)]

    def biggest_window(ids: list[int]) -> int:
        dec = TokenDecoder(tok)
        biggest = 0
        for i in ids:
            dec.step(i)
            biggest = max(biggest, len(dec._win))
        return biggest

    assert biggest_window(once * 40) == biggest_window(once) <= 32

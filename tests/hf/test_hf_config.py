"""The response template saved with the tokenizer, and the opt-in tokenizer methods.

transformers 5.23 (installed here) knows ``response_template``; transformers 4.x does not, but keeps
unknown ``tokenizer_config.json`` keys in ``init_kwargs`` and writes them back. ``LegacyTokenizer``
below reproduces exactly that behaviour (and nothing of the 5.x methods) so that the 4.x paths run
here too.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

from tokenizers import Tokenizer

import hf_fixtures as fx
import response_templates as rt
from response_templates import hf

logging.getLogger("transformers").setLevel(logging.ERROR)

TEMPLATE = fx.QWEN3_TEMPLATE


class LegacyTokenizer:
    """What a transformers 4.x fast tokenizer does with tokenizer_config.json, and no more."""

    def __init__(self, tokenizer_object: Tokenizer, **kwargs: Any) -> None:
        self.init_kwargs = copy.deepcopy(kwargs)  # 4.x keeps every config key here, known or not
        self._tokenizer = tokenizer_object
        self.eos_token_id = tokenizer_object.token_to_id(kwargs.get("eos_token", "<|im_end|>"))
        self.pad_token_id = tokenizer_object.token_to_id(kwargs.get("pad_token", "<|endoftext|>"))

    @property
    def backend_tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False, **kwargs: Any) -> str:
        return self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self._tokenizer.id_to_token(i) for i in ids]

    def save_pretrained(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._tokenizer.save(str(directory / "tokenizer.json"))
        config = copy.deepcopy(self.init_kwargs)
        for key in list(config):  # 4.x: attributes named like init kwargs override them
            if hasattr(self, key):
                config[key] = getattr(self, key)
        (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2, sort_keys=True))

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> LegacyTokenizer:
        directory = Path(directory)
        config = json.loads((directory / "tokenizer_config.json").read_text())
        return cls(Tokenizer.from_file(str(directory / "tokenizer.json")), **config)


@pytest.fixture
def legacy_class() -> Any:
    cls = type("LegacyTokenizerForTest", (LegacyTokenizer,), {})
    yield cls
    hf.uninstall(cls)


# ------------------------------------------------------------------------------------------------
# transformers 5: native attribute, and the helpers
# ------------------------------------------------------------------------------------------------


def test_round_trip_through_save_pretrained(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = fx.hf_tokenizer("sp_llama")
    hf.save_response_template(tok, TEMPLATE)  # works whether or not transformers knows the key
    tok.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["response_template"] == TEMPLATE
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert hf.load_response_template(loaded) == hf.load_response_template(tmp_path) == TEMPLATE
    if hf.knows_response_template(loaded):  # transformers 5
        assert loaded.response_template == TEMPLATE
    ids = fx.encode(loaded, fx.OUTPUTS[0])
    assert hf.parse_response(loaded, ids, prefix=fx.prompt_ids(loaded)) == hf.parse_response(
        tok, ids, prefix=fx.prompt_ids(tok)
    )


def test_native_attribute_assignment_round_trips(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = fx.hf_tokenizer("byte_level")
    if not hf.knows_response_template(tok):
        pytest.skip("this transformers does not know response_template")
    tok.response_template = TEMPLATE  # the transformers 5 way
    tok.save_pretrained(tmp_path)
    assert AutoTokenizer.from_pretrained(tmp_path).response_template == TEMPLATE


def test_save_into_a_saved_directory(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = fx.hf_tokenizer("byte_level")
    tok.save_pretrained(tmp_path)
    before = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert hf.load_response_template(tmp_path) is None
    hf.save_response_template(tmp_path, json.dumps(TEMPLATE))  # a JSON string is fine too
    after = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert after == {**before, "response_template": TEMPLATE}
    assert hf.load_response_template(AutoTokenizer.from_pretrained(tmp_path)) == TEMPLATE
    hf.save_response_template(tmp_path / "tokenizer_config.json", None)  # the file path works too
    assert hf.load_response_template(tmp_path) is None
    assert not list(tmp_path.glob(".tokenizer_config.*"))  # no temporary files left behind


def test_saved_templates_are_validated(tmp_path: Path) -> None:
    with pytest.raises(rt.TemplateError, match="'oops'"):
        hf.save_response_template(fx.hf_tokenizer(), {"fields": {"x": {"oops": 1}}, "start_anchor": "a"})
    with pytest.raises(FileNotFoundError, match="save_pretrained"):
        hf.save_response_template(tmp_path, TEMPLATE)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"response_template": {"fields": {}}}))
    with pytest.raises(rt.TemplateError):
        hf.load_response_template(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(rt.ResponseTemplateError, match="not valid JSON"):
        hf.load_response_template(tmp_path)


def test_a_bare_tokenizers_tokenizer_holds_a_template_in_memory() -> None:
    raw = fx.raw_tokenizer()
    assert hf.load_response_template(raw) is None
    hf.save_response_template(raw, TEMPLATE)  # in memory only: tokenizer.json has no place for it
    assert hf.load_response_template(raw) == TEMPLATE
    ids = fx.encode(raw, fx.OUTPUTS[0])
    assert hf.parse_response(raw, ids, prefix="") == rt.parse_response(fx.OUTPUTS[0], TEMPLATE, prefix="")


# ------------------------------------------------------------------------------------------------
# transformers 4.x behaviour (simulated): the helpers work without patching anything
# ------------------------------------------------------------------------------------------------


def test_legacy_round_trip_with_the_helpers(tmp_path: Path) -> None:
    tok = LegacyTokenizer(fx.raw_tokenizer("sp_llama"), eos_token="<|im_end|>", pad_token="<|endoftext|>")
    assert not hf.knows_response_template(tok)
    hf.save_response_template(tok, TEMPLATE)
    assert tok.init_kwargs["response_template"] == TEMPLATE
    tok.save_pretrained(tmp_path)
    loaded = LegacyTokenizer.from_pretrained(tmp_path)
    assert not hasattr(type(loaded), "response_template")  # nothing was patched
    assert hf.load_response_template(loaded) == TEMPLATE  # found in init_kwargs
    ids = fx.encode(loaded, fx.OUTPUTS[0])
    prompt = fx.encode(loaded, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert hf.parse_response(loaded, ids, prefix=prompt) == rt.parse_response(
        fx.OUTPUTS[0], TEMPLATE, prefix="<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_install_on_a_class_without_the_methods(legacy_class: Any, tmp_path: Path) -> None:
    assert sorted(hf.install(legacy_class)) == ["get_response_parser", "parse_response", "response_template"]
    assert hf.install(legacy_class) == []
    tok = legacy_class(fx.raw_tokenizer("byte_level"), eos_token="<|im_end|>")
    assert tok.response_template is None
    with pytest.raises(hf.MissingTemplateError):
        tok.parse_response("x", prefix="")
    tok.response_template = TEMPLATE
    assert tok.init_kwargs["response_template"] == TEMPLATE
    with pytest.raises(rt.TemplateError):
        tok.response_template = {"fields": {}}
    tok.save_pretrained(tmp_path)
    loaded = legacy_class.from_pretrained(tmp_path)
    assert loaded.response_template == TEMPLATE
    ids = fx.encode(loaded, fx.OUTPUTS[2])
    assert loaded.parse_response(ids, prefix=[]) == hf.parse_response(loaded, ids, prefix="")
    assert loaded.parse_response([ids, ids], prefix="") == [hf.parse_response(loaded, ids, prefix="")] * 2
    other = {"start_anchor": "x", "fields": {"all": {}}}
    assert loaded.parse_response("abc", other, prefix="") == {"all": "abc"}  # schema= positional, as in 5.x
    parser = loaded.get_response_parser(prefix="")
    events = [e for i in ids for e in parser.feed_tokens(i)]
    message, final = parser.finalize()
    assert message == hf.parse_response(loaded, ids, prefix="")
    assert [e["type"] for e in events + final].count("region_close") == 3
    assert loaded.get_response_parser(other, prefix="").template.to_dict() == other
    ids_parser = loaded.get_response_parser(prefix=[], token_ids=True)  # transformers 5.25's flag
    for i in ids:
        ids_parser.feed([i])
    assert ids_parser.finalize()[0] == message
    assert sorted(hf.uninstall(legacy_class)) == [
        "get_response_parser",
        "parse_response",
        "response_template",
    ]
    assert not hasattr(legacy_class, "parse_response")


def test_install_leaves_existing_methods_unless_forced() -> None:
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    original = PreTrainedTokenizerBase.__dict__.get("parse_response")
    if original is None:
        pytest.skip("this transformers has no parse_response of its own")
    assert hf.install() == []  # transformers 5 has everything
    try:
        assert sorted(hf.install(force=True)) == ["get_response_parser", "parse_response"]
        tok = fx.hf_tokenizer("sp_llama")
        tok.response_template = TEMPLATE
        ids = fx.encode(tok, fx.OUTPUTS[0])
        parser = tok.get_response_parser(prefix=fx.prompt_ids(tok))
        assert isinstance(parser, hf.TokenResponseParser)
        assert tok.parse_response(ids, prefix=fx.prompt_ids(tok)) == hf.parse_response(
            tok, ids, prefix=fx.prompt_ids(tok)
        )
    finally:
        hf.uninstall()
    assert PreTrainedTokenizerBase.__dict__["parse_response"] is original

"""``parse --jsonl IN --tokenizer PATH``: records of token ids parsed as ids, -j 2 as -j 1, --resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers")

from tokenizers import Tokenizer

import hf_fixtures as fx
from cli_runs import run


def _spell(text: str) -> list[int]:
    data = json.loads(fx._trained("byte_level"))
    data["added_tokens"] = []
    return list(Tokenizer.from_str(json.dumps(data)).encode(text, add_special_tokens=False).ids)


def _write(tmp_path: Path) -> tuple[Path, Path]:
    tok = fx.raw_tokenizer()
    path = tmp_path / "tokenizer.json"
    path.write_text(tok.to_str(), encoding="utf-8")
    end = fx.encode(tok, "<|im_end|>")
    prompt = fx.encode(tok, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    lines = []
    for i in range(6):
        lines.append({"id": i, "prompt": prompt, "output": _spell(f"Type <|im_end|> to stop {i}.") + end})
    lines.append({"id": "far", "prompt": "", "output": [*end, 123456]})
    lines.append({"id": "text", "prompt": "", "output": "a <|im_end|> b<|im_end|>"})
    records = tmp_path / "in.jsonl"
    records.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path, records


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_ids_are_parsed_as_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokenizer, records = _write(tmp_path)
    code, out, _ = run(capsys, "parse", "--jsonl", records, "--model", "qwen3", "--tokenizer", tokenizer)
    assert code == 3  # the id out of range
    got = _lines(out)
    assert got[0]["message"]["content"] == "Type <|im_end|> to stop 0."
    assert got[6]["error"]["type"] == "RecordError" and "123456" in got[6]["error"]["message"]
    assert got[7]["message"]["content"] != "a <|im_end|> b"  # text is read as text

    code, out, _ = run(
        capsys, "parse", "--jsonl", records, "--model", "qwen3", "--tokenizer", tokenizer,
        "--control-tokens", "text",
    )  # fmt: skip
    assert _lines(out)[0]["message"]["content"] != "Type <|im_end|> to stop 0."


def test_jobs_give_the_same_bytes_and_resume_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokenizer, records = _write(tmp_path)
    base = ["parse", "--jsonl", records, "--model", "qwen3", "--tokenizer", tokenizer]
    one, two, resumed = tmp_path / "one.jsonl", tmp_path / "two.jsonl", tmp_path / "resumed.jsonl"
    assert run(capsys, *base, "-o", one)[0] == 3
    assert run(capsys, *base, "-j", "2", "-o", two)[0] == 3
    assert one.read_bytes() == two.read_bytes()
    resumed.write_bytes(b"".join(one.read_bytes().splitlines(keepends=True)[:3]))
    assert run(capsys, *base, "-j", "2", "-o", resumed, "--resume")[0] == 3
    assert resumed.read_bytes() == one.read_bytes()


def test_ids_without_tokenizer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, records = _write(tmp_path)
    code, out, _ = run(capsys, "parse", "--jsonl", records, "--model", "qwen3")
    error = _lines(out)[0]["error"]
    assert code == 3 and error["key"] == "output" and "--tokenizer" in error["message"]


def test_a_tokenizer_that_does_not_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, records = _write(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    for path, said in ((bad, "cannot load the tokenizer"), (tmp_path / "none", "no such file")):
        code, out, err = run(capsys, "parse", "--jsonl", records, "--model", "qwen3", "--tokenizer", path)
        assert code == 2 and said in err and out == ""
    code, _, err = run(capsys, "parse", "--jsonl", records, "--model", "qwen3", "--control-tokens", "text")
    assert code == 2 and "--tokenizer" in err


def test_a_model_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder's chat template makes <think> a control token: spelled, it stays text."""
    pytest.importorskip("transformers")
    tok = fx.hf_tokenizer("byte_level")
    folder = tmp_path / "model"
    tok.save_pretrained(folder)
    output = _spell("<think>\nhm\n</think>\n\nok") + fx.encode(tok, "<|im_end|>")
    records = tmp_path / "in.jsonl"
    records.write_text(json.dumps({"prompt": "", "output": output}) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "parse", "--jsonl", records, "--model", "qwen3", "--tokenizer", f"{folder}/")
    assert code == 0
    assert _lines(out)[0]["message"] == {"role": "assistant", "content": "<think>\nhm\n</think>\n\nok"}

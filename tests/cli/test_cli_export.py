"""The ``export`` command (issue 10, item 4): a template for transformers, vLLM or SGLang, into a model folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import response_templates as rt
from cli_runs import run


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "Qwen3-8B"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {"model_max_length": 40960, "chat_template": "{{ m }}", "eos_token": "<|im_end|>"}, indent=2
        ),
        encoding="utf-8",
    )
    (folder / "config.json").write_text("{}", encoding="utf-8")
    return folder


def test_help_lists_export(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "export" in out
    code, out, _ = run(capsys, "export", "--help")
    assert code == 0 and "--model-dir" in out and "exit codes" in out


@pytest.mark.parametrize("target", ["transformers", "vllm", "sglang"])
def test_prints_the_template_for_a_family(capsys: pytest.CaptureFixture[str], target: str) -> None:
    code, out, err = run(capsys, "export", "qwen3", "--for", target)
    assert code == 0
    assert json.loads(out) == rt.templates.export("qwen3", target=target).template
    assert ("note: field 'reasoning_content' renamed to 'thinking'" in err) == (target != "transformers")


def test_model_id_and_template_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "export", "Qwen/Qwen3-8B", "--for", "vllm")
    thinking = json.loads(out)["fields"]["thinking"]
    assert (
        code == 0
        and thinking["open_pattern"] == "<think>(?:\\s*<think>)?"
        and thinking["close"][0] == "</think>"
    )
    template = tmp_path / "t.json"
    template.write_text(json.dumps(rt.templates.get("qwen3").to_dict()), encoding="utf-8")
    assert run(capsys, "export", template, "--for", "vllm")[1] == out
    config = tmp_path / "tokenizer_config.json"  # a tokenizer_config.json with a response_template
    config.write_text(
        json.dumps({"x": 1, "response_template": rt.templates.get("qwen3").to_dict()}), encoding="utf-8"
    )
    assert run(capsys, "export", config, "--for", "vllm")[1] == out


def test_updates_a_model_folder_in_place(capsys: pytest.CaptureFixture[str], model_dir: Path) -> None:
    code, out, err = run(capsys, "export", "Qwen/Qwen3-8B", "--for", "sglang", "--model-dir", model_dir)
    assert code == 0 and out == ""
    assert "updated" in err and "tokenizer_config.json" in err
    config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert list(config) == ["model_max_length", "chat_template", "eos_token", "response_template"]
    assert config["response_template"] == rt.templates.export("qwen3", target="sglang").template
    assert sorted(p.name for p in model_dir.iterdir()) == ["config.json", "tokenizer_config.json"]
    # again, for another target: replaced where it stands
    code, _, _ = run(capsys, "export", "qwen3", "--for", "transformers", "--model-dir", model_dir)
    config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert code == 0 and list(config)[-1] == "response_template"
    assert "reasoning_content" in config["response_template"]["fields"]


def test_a_folder_without_tokenizer_config_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "export", "qwen3", "--for", "vllm", "--model-dir", tmp_path)
    assert code == 2 and out == ""
    assert err.startswith("error: --model-dir") and "has no tokenizer_config.json" in err
    code, _, err = run(capsys, "export", "qwen3", "--for", "vllm", "--model-dir", tmp_path / "nope")
    assert code == 2 and "is not a folder" in err


def test_writes_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    code, out, err = run(capsys, "export", "kimi-k2", "--for", "vllm", "--output", target)
    assert code == 0 and out == ""
    assert "warning: field 'tool_calls', key 'within'" in err
    assert (
        json.loads(target.read_text(encoding="utf-8"))
        == rt.templates.export("kimi-k2", target="vllm").template
    )


def test_not_exportable_exits_1_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], model_dir: Path
) -> None:
    before = (model_dir / "tokenizer_config.json").read_text(encoding="utf-8")
    code, out, err = run(capsys, "export", "gpt-oss", "--for", "vllm", "--model-dir", model_dir)
    assert code == 1 and out == ""
    assert err.startswith("error: response_template field 'builtin_tool_call': cannot export to vllm")
    assert (model_dir / "tokenizer_config.json").read_text(encoding="utf-8") == before


def test_strict_refuses_approximations(capsys: pytest.CaptureFixture[str], model_dir: Path) -> None:
    before = (model_dir / "tokenizer_config.json").read_text(encoding="utf-8")
    code, out, err = run(capsys, "export", "kimi-k2", "--for", "sglang", "--strict", "--model-dir", model_dir)
    assert code == 1 and out == "" and "error: --strict" in err
    assert (model_dir / "tokenizer_config.json").read_text(encoding="utf-8") == before
    assert run(capsys, "export", "qwen3", "--for", "sglang", "--strict")[0] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["export", "qwen-3", "--for", "vllm"], "no model family called 'qwen-3'"),
        (["export", "Org/Unknown-7B", "--for", "vllm"], "unknown model 'Org/Unknown-7B'"),
        (["export", "qwen3"], "the following arguments are required: --for"),
        (["export", "qwen3", "--for", "tgi"], "invalid choice: 'tgi'"),
        (["export", "missing.json", "--for", "vllm"], "cannot read the template 'missing.json'"),
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and "error: " in err


def test_output_and_model_dir_are_exclusive(capsys: pytest.CaptureFixture[str], model_dir: Path) -> None:
    code, _, err = run(capsys, "export", "qwen3", "--for", "vllm", "-o", "x.json", "--model-dir", model_dir)
    assert code == 2 and "not allowed with argument" in err

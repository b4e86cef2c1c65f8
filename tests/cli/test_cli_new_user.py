"""The command line as a new user meets it (issue 28, items 13, 14 and 19).

* A folder called like a family in the working directory (``qwen3/``, the obvious name for a model
  folder) does not hide the family: ``export qwen3``, ``grammar qwen3``, ``lint qwen3`` use the library;
  a folder written as a path (``./qwen3``) is a model folder, read through its tokenizer_config.json.
* ``detect`` reads model folders, finds the chat template where transformers 5 saves it
  (``chat_template.jinja`` beside a tokenizer_config.json without one) and takes several files at once.
* ``--json`` prints JSON lines everywhere, one line per thing reported on (``lint`` too when it finds
  nothing); ``list``/``show`` explain the extension codes and drop the research-notes column; the README's
  shell example makes its ``qwen3.json`` with a command that works.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

import response_templates as rt
from cli_runs import run
from doc_runner import code_blocks

ROOT = Path(__file__).resolve().parents[2]
QWEN3_JINJA = ROOT / "tests" / "data" / "Qwen-Qwen3-0.6B.jinja"
QWEN3_CODER = ROOT / "tests" / "data" / "chat_templates" / "Qwen3-Coder.jinja"

#: A template lint warns about (an atomic group), to tell a folder's template from the library's.
ATOMIC = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {"a": {"open_pattern": "(?>x)", "close": "y"}, "content": {"close": "<|im_end|>"}},
}


def _json_lines(out: str) -> list[dict[str, object]]:
    lines = out.splitlines()
    assert lines, "nothing on stdout"
    return [json.loads(line) for line in lines]


# -------------------------------------------------------------------- item 13: a folder called qwen3


@pytest.fixture
def qwen3_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``qwen3/`` in the working directory."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "qwen3"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    "argv",
    [["export", "qwen3", "--for", "vllm"], ["grammar", "qwen3"], ["lint", "qwen3"]],
    ids=["export", "grammar", "lint"],
)
def test_a_folder_named_like_a_family_does_not_hide_it(
    qwen3_folder: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "Is a directory" not in err and "cannot read" not in err
    assert out.strip()


def test_lint_of_a_bare_name_is_the_library_family_even_beside_a_model_folder(
    qwen3_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (qwen3_folder / "tokenizer_config.json").write_text(json.dumps({"response_template": ATOMIC}))
    code, out, err = run(capsys, "lint", "qwen3")
    assert code == 0 and out.strip() == "0 errors, 0 warnings, 0 notes"
    assert "./qwen3" in err  # the note says how to name the folder
    for spelled in ("./qwen3", "qwen3/", str(qwen3_folder)):
        code, out, err = run(capsys, "lint", spelled)
        assert code == 1 and "atomic-group" in out, spelled


def test_a_folder_written_as_a_path_is_a_model_folder(
    qwen3_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "lint", "./qwen3")
    assert code == 2 and "is a folder, not a template file" in err and "Is a directory" not in err
    (qwen3_folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": "x"}))
    code, _, err = run(capsys, "export", "./qwen3", "--for", "vllm")
    assert code == 2 and "no response_template" in err and "detect" in err
    template = rt.templates.get("qwen3").to_dict()
    (qwen3_folder / "tokenizer_config.json").write_text(json.dumps({"response_template": template}))
    code, out, err = run(capsys, "export", "./qwen3", "--for", "vllm")
    assert code == 0, err
    code, out, err = run(capsys, "grammar", "./qwen3")
    assert code == 0 and json.loads(out)["type"] == "structural_tag", err
    output = qwen3_folder.parent / "out.txt"
    output.write_text("<think>ok</think>Hi<|im_end|>", encoding="utf-8")
    code, out, err = run(capsys, "parse", "--template", "qwen3/", "--no-prefix", output)
    assert code == 0 and json.loads(out)["content"] == "Hi", err


def test_a_folder_the_library_does_not_know_is_a_model_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "tokenizer_config.json").write_text(json.dumps({"response_template": ATOMIC}))
    code, out, _ = run(capsys, "lint", "my-model")
    assert code == 1 and "atomic-group" in out


# ----------------------------------------------------------------------- item 14: detect, model folders


@pytest.fixture
def transformers5_folder(tmp_path: Path) -> Path:
    """A model folder as transformers 5 saves it: the chat template in chat_template.jinja."""
    folder = tmp_path / "Qwen3-0.6B"
    folder.mkdir()
    (folder / "chat_template.jinja").write_text(QWEN3_JINJA.read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "Qwen2Tokenizer"}))
    return folder


def test_detect_a_transformers5_model_folder(
    transformers5_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for arg in (transformers5_folder, transformers5_folder / "tokenizer_config.json"):
        code, out, err = run(capsys, "detect", arg)
        assert code == 0 and out.startswith("qwen3\t"), (arg, err)


def test_detect_finds_the_chat_template_in_each_place_transformers_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = QWEN3_CODER.read_text(encoding="utf-8")
    v4 = tmp_path / "v4"  # transformers 4: in tokenizer_config.json
    v4.mkdir()
    (v4 / "tokenizer_config.json").write_text(json.dumps({"chat_template": text}))
    processor = tmp_path / "processor"  # processors: chat_template.json
    processor.mkdir()
    (processor / "chat_template.json").write_text(json.dumps({"chat_template": text}))
    both = tmp_path / "both"  # chat_template.jinja wins, as when transformers loads the folder
    both.mkdir()
    (both / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    (both / "chat_template.jinja").write_text(text, encoding="utf-8")
    for folder in (v4, processor, both):
        code, out, err = run(capsys, "detect", folder)
        assert code == 0 and out.startswith("qwen3-coder\t"), (folder.name, err)
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(capsys, "detect", empty)
    assert code == 2 and "chat_template.jinja" in err and "Is a directory" not in err


def test_detect_several_files_in_one_call(
    transformers5_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = tmp_path / "unknown.jinja"
    unknown.write_text("{{ messages[0].content }}", encoding="utf-8")
    code, out, err = run(capsys, "detect", transformers5_folder, QWEN3_CODER)
    assert code == 0, err
    assert [line.split("\t")[:2] for line in out.splitlines()] == [
        [str(transformers5_folder), "qwen3"],
        [str(QWEN3_CODER), "qwen3-coder"],
    ]
    code, out, err = run(capsys, "detect", QWEN3_CODER, unknown)
    assert code == 1 and len(out.splitlines()) == 1 and f"{unknown}: unknown model" in err
    missing = tmp_path / "missing.jinja"
    code, out, err = run(capsys, "detect", "--json", missing, unknown, QWEN3_CODER)
    assert code == 2  # an unreadable file; the others are still reported
    lines = _json_lines(out)
    assert [(d["file"], d["name"]) for d in lines] == [
        (str(missing), None),
        (str(unknown), None),
        (str(QWEN3_CODER), "qwen3-coder"),
    ]
    assert len({tuple(d) for d in lines}) == 1  # every line has the same keys, in the same order
    assert lines[0]["error"] and lines[1]["error"] is None and lines[2]["error"] is None


# --------------------------------------------------------------------------------- item 19: --json


def test_every_json_option_prints_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0 and len(_json_lines(out)) == len(rt.templates.names(include_unsupported=True))
    code, out, _ = run(capsys, "detect", QWEN3_CODER, "--json")
    assert code == 0 and len(_json_lines(out)) == 1
    code, out, _ = run(capsys, "verify", QWEN3_CODER, "--json")
    assert code == 0 and len(_json_lines(out)) == 1 and _json_lines(out)[0]["ok"] is True
    code, out, _ = run(capsys, "lint", "qwen3", "--json")  # a clean template: still a report
    assert code == 0
    assert _json_lines(out) == [{"template": "qwen3", "issues": [], "errors": 0, "warnings": 0, "notes": 0}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(ATOMIC), encoding="utf-8")
    code, out, _ = run(capsys, "lint", bad, "--json")
    (report,) = _json_lines(out)
    assert code == 1 and report["warnings"] == 1 and report["issues"][0]["code"] == "atomic-group"


def test_list_and_show_explain_the_extension_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert not [line for line in out.splitlines() if "(E" in line or "[= " in line]
    code, out, _ = run(capsys, "show", "minimax-m1")
    data = json.loads(out)
    assert "formats_md" not in data
    assert data["uses"] == ["E3"] and data["extension_codes"] == {"E3": rt.library.EXTENSIONS["E3"]}
    code, out, _ = run(capsys, "show", "Qwen/Qwen3-8B")  # a model id names its family too
    assert code == 0 and json.loads(out)["name"] == "qwen3" and "formats_md" not in json.loads(out)


def test_the_readme_shell_example_says_where_its_template_file_comes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [
        line
        for lang, code, _ in code_blocks(readme)
        if lang == "sh"
        for line in code.splitlines()
        if line.startswith("response-templates ") and "qwen3.json" in line
    ]
    makes = [line for line in commands if ">" in line and line.split(">")[1].strip() == "qwen3.json"]
    assert makes, "no command of the README writes qwen3.json"
    assert commands.index(makes[0]) < min(i for i, c in enumerate(commands) if "--template qwen3.json" in c)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(makes[0].split(">")[0])[1:]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    (tmp_path / "qwen3.json").write_text(out, encoding="utf-8")
    (tmp_path / "output.txt").write_text("<think>ok</think>Hi<|im_end|>", encoding="utf-8")
    code, out, err = run(capsys, "parse", "--template", "qwen3.json", "--no-prefix", "output.txt")
    assert code == 0 and json.loads(out)["content"] == "Hi", err


def test_the_readme_says_how_to_install_before_a_release() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Install") :]
    install = install[: install.index("\n## ", 3)]
    lines = [line for lang, code, _ in code_blocks(install) if lang == "sh" for line in code.splitlines()]
    assert any(line.startswith("pip install .") for line in lines)
    assert any(
        "pip install 'git+https://github.com/response-templates/response-templates" in x for x in lines
    )

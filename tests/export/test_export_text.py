"""Export keeps what it only meant to keep (issue 28, item 7).

``update_tokenizer_config`` edits ``tokenizer_config.json`` as text: every byte outside the
``response_template`` member comes back as it was (numbers, escapes, duplicate keys, layout); a link in
the Hub cache's layout is replaced by a file and said so, the blob left as it was; mode and owner are kept.
What the export writes itself is strict JSON (no ``Infinity``/``NaN``, lone surrogates escaped).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import response_templates as rt
from cli_runs import run
from response_templates import export as ex

QWEN = rt.templates.export("qwen3", target="vllm")

# (head, tail): the file is head + tail, and a new response_template goes between them.
CASES: dict[str, tuple[str, str]] = {
    "huge number": ('{\n  "model_max_length": 1e400,\n  "x": -1E+400', "\n}\n"),
    "long decimal": ('{\n  "a": 0.1000000000000000055511151231257827021181583404541015625001', "\n}\n"),
    "big integer": ('{\n  "model_max_length": 1000000000000000019884624838656, "z": -0.0', "\n}"),
    "duplicate keys": ('{\n  "eos_token": "<a>",\n  "eos_token": "<b>",\n  "eos_token": "<c>"', "\n}\n"),
    "lone surrogate": ('{\n  "added": "\\ud800",\n  "pair": "\\ud83d\\ude00", "low": "\\udfff"', "\n}\n"),
    "escapes kept": ('{\n  "s": "\\u00e9\\/\\b\\f\\u0000\\"\\\\", "é": "ü"', "\n}\n"),
    "python constants": ('{\n  "a": NaN,\n  "b": [Infinity, -Infinity]', "\n}\n"),
    "layout": ('\ufeff{\r\n\t"a" :\t[ 1 ,2 ],\r\n\t"b":{ }', "\r\n}"),
    "one line": ('{"a": 1, "b": [true, false, null]', "}"),
    "deep nesting": ('{\n  "deep": ' + "[" * 3000 + "]" * 3000, "\n}\n"),
}


def write(folder: Path, text: str) -> Path:
    path = folder / "tokenizer_config.json"
    path.write_bytes(text.encode("utf-8"))
    return path


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_other_byte_comes_back(tmp_path: Path, case: str) -> None:
    head, tail = CASES[case]
    path = write(tmp_path, head + tail)
    QWEN.update_tokenizer_config(tmp_path)
    new = read(path)
    assert new.startswith(head) and new.endswith(tail), new[:200]
    added = new[len(head) : len(new) - len(tail)]
    assert added.startswith(",")
    assert json.loads("{" + added[1:] + "}") == {"response_template": QWEN.template}
    # a second export replaces the value where it stands: still every other byte as it was
    start = len(head) + added.index(":") + 1
    again = rt.templates.export("qwen3")
    again.update_tokenizer_config(tmp_path)
    newer = read(path)
    assert newer.startswith(new[:start]) and newer.endswith(tail)
    value = newer[start : len(newer) - len(tail)]
    assert json.loads(value) == again.template


def test_an_existing_key_written_with_escapes_is_replaced_where_it_stands(tmp_path: Path) -> None:
    head, tail = '{"a": 1e400, "response\\u005ftemplate": ', ', "b": 0.10000000000000000001}'
    path = write(tmp_path, head + "null" + tail)
    QWEN.update_tokenizer_config(tmp_path)
    new = read(path)
    assert new.startswith(head) and new.endswith(tail)
    assert json.loads(new[len(head) : len(new) - len(tail)]) == QWEN.template


def test_each_duplicate_response_template_gets_the_template(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "response_template": 1,\n  "x": 1e400,\n  "response_template": 2\n}\n')
    notes: list[str] = []
    QWEN.update_tokenizer_config(tmp_path, notes=notes)
    new = read(path)
    assert '\n  "x": 1e400,\n' in new and new.count('"response_template": {') == 2
    assert json.loads(new)["response_template"] == QWEN.template
    assert notes == [f"{str(path)!r} has 2 top-level 'response_template' keys: each now holds the template"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,}', r"not valid JSON: a string key was expected at line 1 column 9"),
        ('{"a": "\t"}', r"not valid JSON: a value was expected at line 1 column 7"),
        ('{"a": 01}', r"not valid JSON: ',' or the end of the container was expected"),
        ('{"a": 1} {}', r"not valid JSON: text follows the JSON value at line 1 column 10"),
    ],
)
def test_a_file_that_is_not_a_json_object_is_refused_and_kept(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ex.ModelFolderError, match=message):
        QWEN.update_tokenizer_config(tmp_path)
    assert read(path) == text


# ------------------------------------------------------------------------------ what export writes


def surrogate_template() -> dict[str, Any]:
    return {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "content": {},
            "marker": {"open": "\ud800", "close": "</m>", "transform": {"tag": "\udfff"}},
        },
    }


def test_a_lone_surrogate_is_written_as_its_escape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = rt.templates.export(surrogate_template())
    text = result.to_json()
    assert "\\ud800" in text and "\\udfff" in text
    assert json.loads(text.encode("utf-8")) == result.template  # UTF-8 encodable, reads back the same
    path = write(tmp_path, '{"a": 1}')
    result.update_tokenizer_config(tmp_path)
    assert json.loads(path.read_bytes())["response_template"] == result.template
    template_file = tmp_path / "t.json"
    template_file.write_text(json.dumps(surrogate_template()), encoding="utf-8")
    out_file = tmp_path / "out.json"
    code, _, err = run(capsys, "export", template_file, "--for", "transformers", "-o", out_file)
    assert code == 0 and "internal error" not in err
    assert json.loads(out_file.read_bytes()) == result.template
    # numbers are written as the shortest text of the same double
    values = [0.1, 1e-300, 2.5e300, 123456789012345678901234567890, -0.0, 1 / 3]
    template = surrogate_template()
    template["fields"]["marker"]["transform"] = {"v": values}
    got = json.loads(rt.templates.export(template).to_json(indent=None))["fields"]["marker"]["transform"]
    assert [repr(v) for v in got["v"]] == [repr(v) for v in values]


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")])
def test_a_number_json_cannot_write_is_refused(tmp_path: Path, number: float) -> None:
    template = surrogate_template()
    template["fields"]["marker"]["transform"] = {"limit": [1, {"x": number}]}
    with pytest.raises(
        ex.ExportError, match=r"field 'marker', key 'transform': .* JSON cannot write"
    ) as info:
        rt.templates.export(template, target="transformers")
    assert info.value.field == "marker" and info.value.key == "transform"


# ----------------------------------------------------------------------- links, mode and owner


def hub_snapshot(tmp_path: Path, text: str) -> tuple[Path, Path]:
    """A Hub cache repo: snapshots/<rev>/tokenizer_config.json -> ../../blobs/<hash>."""
    blob = tmp_path / "blobs" / "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
    blob.parent.mkdir()
    blob.write_bytes(text.encode("utf-8"))
    snapshot = tmp_path / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer_config.json").symlink_to(Path("..", "..", "blobs", blob.name))
    return snapshot, blob


def test_a_linked_config_is_replaced_by_a_file_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = '{\n  "model_max_length": 1e400\n}\n'
    snapshot, blob = hub_snapshot(tmp_path, text)
    os.chmod(blob, 0o640)
    other = tmp_path / "snapshots" / "4567ef01"  # another revision sharing the blob
    other.mkdir()
    (other / "tokenizer_config.json").symlink_to(Path("..", "..", "blobs", blob.name))
    code, _, err = run(capsys, "export", "qwen3", "--for", "vllm", "--model-dir", snapshot)
    assert code == 0
    config = snapshot / "tokenizer_config.json"
    assert not config.is_symlink() and config.is_file()
    assert f"note: {str(config)!r} was a link to '../../blobs/{blob.name}': it is now a file" in err
    assert read(config).startswith('{\n  "model_max_length": 1e400,\n  "response_template": {')
    assert json.loads(read(config))["response_template"] == QWEN.template
    assert read(blob) == text and read(other / "tokenizer_config.json") == text  # the blob is untouched
    assert os.stat(config).st_mode & 0o7777 == 0o640  # the mode of the file it linked to
    assert sorted(p.name for p in snapshot.iterdir()) == ["tokenizer_config.json"]
    assert sorted(p.name for p in blob.parent.iterdir()) == [blob.name]


def test_a_broken_link_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tokenizer_config.json").symlink_to("../../blobs/missing")
    with pytest.raises(ex.ModelFolderError, match=r"is a link to '\.\./\.\./blobs/missing'.*broken link"):
        QWEN.update_tokenizer_config(tmp_path)
    code, _, err = run(capsys, "export", "qwen3", "--for", "vllm", "--model-dir", tmp_path)
    assert code == 2 and "(a broken link)" in err
    assert (tmp_path / "tokenizer_config.json").is_symlink()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away")
def test_owner_and_group_are_kept(tmp_path: Path) -> None:
    path = write(tmp_path, '{"a": 1}')
    os.chown(path, 4321, 8765)
    os.chmod(path, 0o660)
    notes: list[str] = []
    QWEN.update_tokenizer_config(tmp_path, notes=notes)
    stat = os.stat(path)
    assert (stat.st_uid, stat.st_gid, stat.st_mode & 0o7777) == (4321, 8765, 0o660)
    assert notes == []


# ------------------------------------------------------------------------------ every JSON text

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=12,
)
LAYOUTS = st.sampled_from([None, 0, 1, 2, "\t"])


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "response_template", "é", "\ud800", "a"]), JSON_VALUES), max_size=5
    ),
    LAYOUTS,
    st.booleans(),
)
def test_any_json_object_keeps_every_other_member(
    pairs: list[tuple[str, Any]], indent: int | str | None, ascii_only: bool
) -> None:
    from response_templates.export.folder import KEY, _edit
    from response_templates.export.jsontext import scan

    # a JSON text with duplicate keys, any escapes and any layout, written member by member
    inner = [json.dumps({k: v}, indent=indent, ensure_ascii=ascii_only)[1:-1].strip() for k, v in pairs]
    text = "{" + ",".join(inner) + "}"
    tree = scan(text)
    values = [json.loads(json.dumps(v)) for _, v in pairs]
    assert [(m.key, json.loads(text[m.value_start : m.value_end])) for m in tree.members] == list(
        zip([k for k, _ in pairs], values, strict=True)
    )
    new, count = _edit(text, tree, QWEN.template)
    assert count == sum(k == KEY for k, _ in pairs)
    want = [(k, QWEN.template if k == KEY else v) for (k, _), v in zip(pairs, values, strict=True)]
    if not count:
        want.append((KEY, QWEN.template))
    after = scan(new)
    assert [(m.key, json.loads(new[m.value_start : m.value_end])) for m in after.members] == want
    # outside the response_template values, every byte is the old text's
    old_spans = [text[m.key_start : m.value_end] for m in tree.members if m.key != KEY]
    new_spans = [new[m.key_start : m.value_end] for m in after.members if m.key != KEY]
    assert old_spans == new_spans
    assert new[: after.open_brace] == text[: tree.open_brace]

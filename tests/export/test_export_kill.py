"""An export killed mid-write leaves nothing in the model folder (issue 28, item 9).

A real ``response-templates export --model-dir`` runs in a subprocess with a hook that stops it at a chosen
point of the write (half the bytes written, the data synced, the file about to be moved over the old one)
and tells the test; the test SIGKILLs it there and looks at the folder, then runs the next export.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import response_templates as rt
from response_templates import export as ex

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

ORIGINAL = '{\n  "model_max_length": 1e400,\n  "chat_template": "' + "x" * 200_000 + '"\n}\n'

# The child: patch the hook, run the command, report "ready" when the hook is reached, then wait to be killed.
CHILD = textwrap.dedent(
    """
    import os, sys, time
    hook, folder, named = sys.argv[1], sys.argv[2], sys.argv[3] == "named"

    def stop():
        sys.stdout.write("ready\\n")
        sys.stdout.flush()
        while True:
            time.sleep(1)

    if hook == "write":
        real_write = os.write
        def write(fd, data):
            if len(data) > 100_000:
                real_write(fd, bytes(data)[: len(data) // 2])
                stop()
            return real_write(fd, data)
        os.write = write
    elif hook == "fsync":
        def fsync(fd):
            stop()
        os.fsync = fsync
    elif hook == "replace":
        def replace(src, dst):
            stop()
        os.replace = replace
    if named:
        from response_templates.export import folder as folder_module
        folder_module._anonymous = lambda folder: None
    from response_templates import cli
    sys.exit(cli.main(["export", "qwen3", "--for", "vllm", "--model-dir", folder]))
    """
)


def model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "Qwen3-8B"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(ORIGINAL, encoding="utf-8")
    (folder / "config.json").write_text("{}", encoding="utf-8")
    return folder


def kill_at(hook: str, folder: Path, *, named: bool = False) -> None:
    """Run the export in a subprocess, stopped at ``hook``, and SIGKILL it there."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, hook, str(folder), "named" if named else "anonymous"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if line != "ready\n":  # the export ended without reaching the hook
            _, err = child.communicate()
            pytest.fail(
                f"the export did not stop at {hook!r}: exit {child.returncode}, stderr {err[-2000:]!r}"
            )
        child.send_signal(signal.SIGKILL)
    finally:
        child.communicate()
    assert child.returncode == -signal.SIGKILL


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("hook", ["write", "fsync"])
def test_killed_while_writing_leaves_nothing(tmp_path: Path, hook: str) -> None:
    folder = model_folder(tmp_path)
    kill_at(hook, folder)
    assert names(folder) == ["config.json", "tokenizer_config.json"]
    assert (folder / "tokenizer_config.json").read_text(encoding="utf-8") == ORIGINAL
    # the next export runs as if nothing had happened
    notes: list[str] = []
    result = rt.templates.export("qwen3", target="vllm")
    result.update_tokenizer_config(folder, notes=notes)
    assert names(folder) == ["config.json", "tokenizer_config.json"] and notes == []
    text = (folder / "tokenizer_config.json").read_text(encoding="utf-8")
    assert text.startswith(ORIGINAL[:-3]) and json.loads(text)["response_template"] == result.template


@pytest.mark.parametrize(("hook", "named"), [("replace", False), ("fsync", True), ("write", True)])
def test_a_named_temporary_file_left_by_a_kill_is_removed_by_the_next_export(
    tmp_path: Path, hook: str, named: bool
) -> None:
    # Killed in the instant the anonymous file has a name, or where there are no anonymous files: the
    # named temporary file stays until the next export into the folder removes it.
    folder = model_folder(tmp_path)
    kill_at(hook, folder, named=named)
    [left] = [name for name in names(folder) if name not in ("config.json", "tokenizer_config.json")]
    assert left.startswith(".tokenizer_config.") and left.endswith(".tmp")
    assert (folder / "tokenizer_config.json").read_text(encoding="utf-8") == ORIGINAL
    notes: list[str] = []
    ex.update_tokenizer_config(folder, rt.templates.export("qwen3", target="vllm"), notes=notes)
    assert names(folder) == ["config.json", "tokenizer_config.json"]
    assert notes == ["removed 1 temporary file(s) that an interrupted export left in the folder"]


def test_a_temporary_file_a_live_export_holds_is_left_alone(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    folder = model_folder(tmp_path)
    busy = folder / ".tokenizer_config.0a1b2c3d.tmp"
    old = folder / ".tokenizer_config.k3_9xq2a.tmp"  # the name an earlier version's mkstemp gave
    busy.write_text("{", encoding="utf-8")
    old.write_text("{", encoding="utf-8")
    (folder / ".tokenizer_config.json.swp").write_text("", encoding="utf-8")  # not ours: kept
    fd = os.open(busy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the export writing it holds it
        notes: list[str] = []
        ex.update_tokenizer_config(folder, rt.templates.export("qwen3", target="vllm"), notes=notes)
        assert busy.exists() and not old.exists()
        assert notes == ["removed 1 temporary file(s) that an interrupted export left in the folder"]
    finally:
        os.close(fd)
    ex.update_tokenizer_config(folder, rt.templates.export("qwen3", target="vllm"))
    assert names(folder) == [".tokenizer_config.json.swp", "config.json", "tokenizer_config.json"]

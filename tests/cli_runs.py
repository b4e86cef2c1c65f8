"""Running the command line in-process for the tests of tests/cli/."""

from __future__ import annotations

from typing import Any

import pytest

from response_templates import cli


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``response-templates ARGV``; a traceback on stderr fails the test."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err

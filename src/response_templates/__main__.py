"""``python -m response_templates``: the command-line interface (see :mod:`response_templates.cli`)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())

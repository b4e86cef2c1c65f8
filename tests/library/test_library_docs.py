"""docs/models.md is generated from the library and the check results (issue 4, item 7): it must be current."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_models_page_is_up_to_date() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_models_doc
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    expected = gen_models_doc.generate()
    current = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    assert current == expected, "docs/models.md is out of date: run python scripts/gen_models_doc.py"

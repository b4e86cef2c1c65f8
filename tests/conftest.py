"""Test-suite configuration shared by every directory under ``tests/``.

``tests/`` itself is on ``sys.path`` (``pythonpath`` in pyproject.toml), so the helper modules at its top
(``common_templates``, ``hf_fixtures``, ``hypothesis_profiles``, ``library_checks``, ``library_samples``,
``toolstream_fixtures``, ``wire_checks``, ``conformance``) import by name from any subdirectory. Test
basenames are unique across the tree and the test directories have no ``__init__.py``.

Hypothesis profiles: ``ci`` (the default) and ``thorough``, chosen by the environment variable
``HYPOTHESIS_PROFILE``; see ``hypothesis_profiles``.
"""

from __future__ import annotations

import pytest

from hypothesis_profiles import register_profiles
from response_templates.compiled import is_compiled

register_profiles()


# The compiled build (make test-mypyc) runs this same suite. A test marked ``pure_python`` checks what
# only the Python sources have (run-time docstrings, instance dicts and weak references, ``raise ... from``
# causes, library errors for arguments of a type the signature excludes): it is skipped there, with its
# reason; docs/streaming.md ("The compiled build") lists these differences.
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "pure_python(reason): skipped on the compiled build, for that reason")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not is_compiled():
        return
    for item in items:
        marker = item.get_closest_marker("pure_python")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"compiled build: {marker.args[0]}"))

"""Test-suite configuration shared by every directory under ``tests/``.

``tests/`` itself is on ``sys.path`` (``pythonpath`` in pyproject.toml), so the helper modules at its top
(``common_templates``, ``hf_fixtures``, ``hypothesis_profiles``, ``library_checks``, ``library_samples``,
``toolstream_fixtures``, ``wire_checks``, ``conformance``) import by name from any subdirectory. Test
basenames are unique across the tree and the test directories have no ``__init__.py``.

Hypothesis profiles: ``ci`` (the default) and ``thorough``, chosen by the environment variable
``HYPOTHESIS_PROFILE``; see ``hypothesis_profiles``.
"""

from __future__ import annotations

from hypothesis_profiles import register_profiles

register_profiles()

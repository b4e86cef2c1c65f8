"""Hypothesis example counts that scale with the active profile (the profiles are registered in
``tests/conftest.py``).

A property test that wants more examples than hypothesis' default writes ``@settings(max_examples=examples(300))``
instead of a bare ``300``: under the ``ci`` profile (the default) that is exactly 300, under ``thorough``
(``HYPOTHESIS_PROFILE=thorough``, ``make test-thorough``) ten times as many. Tests that keep hypothesis'
default count get the profile's ``max_examples`` directly.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: the examples of a test that sets no count of its own, per profile; ``examples`` scales by the ratio
#: to ``BASE_EXAMPLES`` (hypothesis' own default, which the ``ci`` profile keeps).
BASE_EXAMPLES = 100
PROFILE_EXAMPLES = {"ci": BASE_EXAMPLES, "thorough": 10 * BASE_EXAMPLES}
DEFAULT_PROFILE = "ci"


def register_profiles() -> None:
    """Register ``ci`` and ``thorough`` and load the one named by ``HYPOTHESIS_PROFILE`` (default ``ci``).

    Both profiles drop the per-example deadline: the suite runs in parallel (pytest-xdist), where a slow
    neighbour would otherwise fail a correct test. ``--hypothesis-profile NAME`` on the pytest command
    line still wins (the hypothesis plugin applies it after this).
    """
    settings.register_profile("ci", max_examples=PROFILE_EXAMPLES["ci"], deadline=None, print_blob=True)
    settings.register_profile(
        "thorough",
        max_examples=PROFILE_EXAMPLES["thorough"],
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    name = os.environ.get("HYPOTHESIS_PROFILE", DEFAULT_PROFILE)
    if name not in PROFILE_EXAMPLES:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: expected one of {sorted(PROFILE_EXAMPLES)}")
    settings.load_profile(name)


def examples(n: int) -> int:
    """``n`` examples under the ``ci`` profile, scaled by the active profile's ``max_examples``."""
    return max(1, n * settings.default.max_examples // BASE_EXAMPLES)

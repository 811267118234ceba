"""Example counts of the generated suites, scaled to the loaded hypothesis profile.

A suite states the count it runs under the "ci" profile (CI's full tier); the quick tier (README's
``pytest -q``) and the repeat passes run the same fraction of it as their profile runs of the default.
"""

from __future__ import annotations

from hypothesis import settings

CI_EXAMPLES = 300  # the "ci" profile's max_examples (tests/conftest.py)


def examples(at_ci: int, *, least: int = 1) -> int:
    """``at_ci`` examples under the ci profile, scaled by the loaded profile's ``max_examples`` (at least ``least``)."""
    return max(least, round(at_ci * settings().max_examples / CI_EXAMPLES))

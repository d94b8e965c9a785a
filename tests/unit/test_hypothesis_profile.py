"""The suite's Hypothesis profile: no per-example deadline, so a loaded machine cannot fail a property."""

from __future__ import annotations

from hypothesis import settings


def test_the_suite_profile_has_no_deadline():
    """tests/conftest.py registers and loads the "suite" profile: every property runs without a deadline."""
    assert settings._current_profile == "suite"  # type: ignore[attr-defined]
    assert settings().deadline is None

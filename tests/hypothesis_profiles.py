"""Hypothesis profiles for the suite: ``suite`` (the default under ``make test``) and ``long``.

``HYPOTHESIS_PROFILE=long`` runs every property and state machine with many more examples, for a
search beyond what a ``make test`` run can afford. Neither has a per-example deadline: CPU-bound
properties on a loaded 2-core machine would fail it for the machine's sake, not the code's.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("suite", deadline=None)
settings.register_profile("long", deadline=None, max_examples=1000, stateful_step_count=60)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "suite")
settings.load_profile(PROFILE)


def bounded(max_examples: int, stateful_step_count: int) -> settings:
    """Settings for an expensive test: these bounds under ``suite``, the loaded profile's under ``long``."""
    if PROFILE == "long":
        return settings()
    return settings(max_examples=max_examples, stateful_step_count=stateful_step_count)

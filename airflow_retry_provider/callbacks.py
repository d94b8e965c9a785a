"""Adding a task callback beside those a DAG author already set, never replacing one."""

from __future__ import annotations

from typing import Any


def with_callback(existing: Any, callback: Any) -> list[Any]:
    """``existing`` callbacks (None, one, or a list) plus ``callback``, never replacing any."""
    callbacks = (
        [] if existing is None else list(existing) if isinstance(existing, (list, tuple)) else [existing]
    )
    if callback not in callbacks:
        callbacks.append(callback)
    return callbacks

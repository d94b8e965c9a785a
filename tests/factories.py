"""Test data: a dead letter with sensible defaults, overridden per test."""

from __future__ import annotations

from typing import Any

from airflow_retry_provider.dlq.models import NewLetter

_DEFAULTS: dict[str, Any] = {
    "dag_id": "etl",
    "run_id": "r1",
    "task_id": "load",
    "map_index": -1,
    "try_number": 1,
    "attempts_used": 1,
    "max_attempts": 3,
    "work_unit_key": None,  # derived from dag, task and run unless given
    "data_interval_start": None,
    "data_interval_end": None,
    "workspace_id": "w1",
    "failure_class": "poison",
    "category": "not-found",
    "rule": "message-not-found",
    "exception_type": "RuntimeError",
    "message": 'relation "x" not found',
    "reason": "[attempt 1/3] dead letter poison/not-found",
    "fingerprint": "0123456789abcdef",
}


def new_letter(**overrides: Any) -> NewLetter:
    """A poison/not-found letter of ``etl.load`` (try 1 of 3); any field can be overridden."""
    fields = {**_DEFAULTS, **overrides}
    if fields["work_unit_key"] is None:
        fields["work_unit_key"] = f"{fields['dag_id']}/{fields['task_id']}/-1/run={fields['run_id']}"
    return NewLetter(**fields)

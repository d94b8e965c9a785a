"""Stable identity of a unit of work: from the data interval, never from ``now()`` or the try number.

Two tries of one task instance get the same key and the same remote job id; two data
intervals get different ones; a new processing version gets a new one (recorded, not hidden).
When the run has no data interval (``airflow dags trigger`` without a logical date) the
identity falls back to the run id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from airflow_retry_provider.policy.decide import format_timestamp as _utc

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
MAX_REMOTE_JOB_ID = 1024


def _map_index(ti: Any) -> int:
    map_index = getattr(ti, "map_index", None)
    return -1 if map_index is None else int(map_index)


def key_parts(context: Mapping[str, Any]) -> dict[str, Any]:
    """dag_id, task_id, map_index, run_id and the data interval of the task instance in ``context``."""
    ti = context["ti"]
    return {
        "dag_id": ti.dag_id,
        "task_id": ti.task_id,
        "map_index": _map_index(ti),
        "run_id": ti.run_id,
        "data_interval_start": context.get("data_interval_start"),
        "data_interval_end": context.get("data_interval_end"),
    }


def make_work_unit_key(
    dag_id: str,
    task_id: str,
    map_index: int,
    data_interval_start: datetime | None,
    data_interval_end: datetime | None,
    run_id: str,
    version: str | None = None,
) -> str:
    """``dag/task/map_index/<interval or run>[@version]``: the same for every try of one unit of work."""
    if data_interval_start is not None and data_interval_end is not None:
        when = f"{_utc(data_interval_start)}--{_utc(data_interval_end)}"
    else:
        when = f"run={run_id}"
    key = f"{dag_id}/{task_id}/{map_index}/{when}"
    return f"{key}@{version}" if version else key


def work_unit_key(context: Mapping[str, Any], version: str | None = None) -> str:
    """The work-unit key of the task instance in an Airflow task ``context``."""
    return make_work_unit_key(**key_parts(context), version=version)


def make_remote_job_id(key: str, prefix: str) -> str:
    """A deterministic id valid for common job systems: ``[A-Za-z0-9_-]``, at most 1024 characters.

    The readable part is kept short; a hash of the full key keeps ids of different keys apart.
    """
    if not prefix or _UNSAFE.search(prefix):
        raise ValueError(f"prefix must be non-empty letters, digits, '_' or '-', got {prefix!r}")
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    readable = _UNSAFE.sub("_", key).strip("_")[:160]
    return f"{prefix}_{readable}_{digest}"[:MAX_REMOTE_JOB_ID]


def remote_job_id(context: Mapping[str, Any], prefix: str, version: str | None = None) -> str:
    """The remote job id of the task instance in ``context`` (see :func:`make_remote_job_id`)."""
    return make_remote_job_id(work_unit_key(context, version), prefix)

"""Work-unit keys and remote job ids are stable across tries and differ across data intervals."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pendulum
import pytest

from airflow_retry_provider.identity import make_remote_job_id, remote_job_id, work_unit_key

DAY1 = datetime(2026, 11, 28, 10, tzinfo=timezone.utc)
DAY2 = datetime(2026, 11, 29, 10, tzinfo=timezone.utc)
DAY3 = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)


def _context(try_number=1, start=DAY1, end=DAY2, run_id="r1"):
    ti = SimpleNamespace(dag_id="d", task_id="t", map_index=3, run_id=run_id, try_number=try_number)
    return {"ti": ti, "data_interval_start": start, "data_interval_end": end}


def test_same_unit_same_key_across_tries():
    """Two tries of one task instance share the key and the remote job id."""
    assert (
        work_unit_key(_context(1))
        == work_unit_key(_context(2))
        == "d/t/3/2026-11-28T10:00:00Z--2026-11-29T10:00:00Z"
    )
    assert remote_job_id(_context(1), "bq") == remote_job_id(_context(2), "bq")


def test_different_intervals_and_versions_differ():
    """Another data interval, or a new processing version, is another unit of work."""
    assert remote_job_id(_context(), "bq") != remote_job_id(_context(start=DAY2, end=DAY3), "bq")
    assert remote_job_id(_context(), "bq") != remote_job_id(_context(), "bq", version="v2")
    assert work_unit_key(_context(), version="v2").endswith("@v2")


def test_run_id_when_no_interval():
    """A run without a data interval is identified by its run id."""
    assert work_unit_key(_context(start=None, end=None, run_id="manual__x")) == "d/t/3/run=manual__x"


def test_remote_job_id_is_safe_and_bounded():
    """Only [A-Za-z0-9_-], at most 1024 characters, even for very long keys."""
    job_id = make_remote_job_id("x/" * 2000 + "ü ∆ :", "load")
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,1024}", job_id)
    assert make_remote_job_id("a" * 3000, "p") != make_remote_job_id("a" * 2999, "p")


@pytest.mark.parametrize("prefix", ["", "has space", "slash/"])  # empty and unsafe prefixes
def test_remote_job_id_rejects_bad_prefix(prefix):
    """A prefix that would break the id is refused, naming the value."""
    with pytest.raises(ValueError, match="prefix"):
        make_remote_job_id("k", prefix)


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 28, 10, 0, 59, 999_999, tzinfo=timezone.utc),
        datetime(2026, 11, 28, 7, 0, 59, tzinfo=timezone(timedelta(hours=-3))),
        pendulum.datetime(2026, 11, 28, 7, 0, 59, tz="America/Sao_Paulo"),
        pendulum.datetime(2026, 11, 28, 10, 0, 59, tz="UTC"),
    ],
    ids=["utc-with-microseconds", "fixed-offset", "pendulum-zone", "pendulum-utc"],
)
def test_interval_bounds_are_written_in_utc_whole_seconds(moment):
    """Any aware datetime Airflow may hand over gives the same key text for the same instant."""
    context = _context(start=moment, end=DAY2)
    assert work_unit_key(context) == "d/t/3/2026-11-28T10:00:59Z--2026-11-29T10:00:00Z"

"""The work-unit ledger on a real PostgreSQL: one winner per claim, lease takeover, the dedup window."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

import psycopg
import pytest

from airflow_retry_provider.ledger import (
    IdempotentMixin,
    LeaseLost,
    Ledger,
    WorkUnitBusy,
    apply_ledger_schema,
    idempotent,
    run_once,
)


@pytest.fixture
def ledger_dsn(pg_dsn) -> str:
    """A fresh provider database with the ledger table."""
    with psycopg.connect(pg_dsn) as conn:
        apply_ledger_schema(conn)
    return pg_dsn


def test_applying_the_ledger_schema_again_keeps_every_row(ledger_dsn):
    """A second apply_ledger_schema is safe: a unit recorded before it is still there, unchanged, after."""
    ledger = Ledger.from_dsn(ledger_dsn)
    before = ledger.complete(ledger.claim("survivor"), {"rows": 7})
    with psycopg.connect(ledger_dsn) as conn:
        apply_ledger_schema(conn)
    after = ledger.get("survivor")
    assert after is not None
    assert (after.status, after.result_ref, after.claims, after.finished_at) == (
        "succeeded",
        {"rows": 7},
        1,
        before.finished_at,
    )


def _rows(dsn: str, sql: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql).fetchall()


def _let_time_pass(dsn: str, key: str) -> None:
    """Move one unit's lease and dedup expiry into the past: an hour-long window ends without a sleep.

    The windows in these tests are an hour long, so no scheduling pause on a loaded machine can cross
    them by accident; the end of a window is an explicit event, not a race with the wall clock.
    """
    with psycopg.connect(dsn) as conn:
        moved = conn.execute(
            "UPDATE retry_work_units SET lease_expires_at = lease_expires_at - interval '2 hours',"
            " dedup_expires_at = dedup_expires_at - interval '2 hours' WHERE work_unit_key = %s",
            (key,),
        ).rowcount
    assert moved == 1


def test_concurrent_claims_run_the_unit_exactly_once(ledger_dsn):
    """Eight workers claim one unit at the same moment: the work runs once, the others never run it."""
    runs: list[str] = []
    outcomes: list[str] = []
    barrier = threading.Barrier(8)
    lock = threading.Lock()

    def worker(name: str) -> None:
        ledger = Ledger.from_dsn(ledger_dsn)

        def work() -> dict:
            with lock:
                runs.append(name)
            time.sleep(0.5)
            return {"rows": 3}

        barrier.wait()
        try:
            result = run_once(work, ledger=ledger, key="dag/load/-1/2026-11-01")
            with lock:
                outcomes.append("ran" if runs and runs[0] == name else f"done:{result}")
        except WorkUnitBusy:
            with lock:
                outcomes.append("busy")

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(runs) == 1
    assert outcomes.count("ran") == 1
    assert set(outcomes) - {"ran"} <= {"busy", "done:{'rows': 3}"}
    assert _rows(ledger_dsn, "SELECT status, claims, result_ref FROM retry_work_units") == [
        ("succeeded", 1, {"rows": 3})
    ]


def test_a_dead_workers_claim_is_taken_over_after_its_lease(ledger_dsn):
    """A running claim blocks others until its lease expires; then it is taken over and the dead owner cannot finish."""
    ledger = Ledger.from_dsn(ledger_dsn, lease=timedelta(hours=1))
    dead = ledger.claim("unit", owner="worker-that-died")
    assert dead.outcome == "claimed"
    assert ledger.claim("unit", owner="other").outcome == "busy"
    _let_time_pass(ledger_dsn, "unit")
    taken = ledger.claim("unit", owner="rescuer")
    assert (taken.outcome, taken.unit.owner, taken.unit.claims) == ("taken_over", "rescuer", 2)
    with pytest.raises(LeaseLost):
        ledger.complete(dead, {"late": True})
    assert ledger.complete(taken, {"ok": 1}).status == "succeeded"


def test_a_later_try_of_the_same_task_instance_takes_over_at_once(ledger_dsn):
    """Airflow never runs two tries of one task instance together, so try 2 need not wait for try 1's lease."""
    ledger = Ledger.from_dsn(ledger_dsn)
    ti = "dag/run/load/-1"
    ledger.claim("unit", owner="try1", owner_ti=ti, owner_try=1)
    assert (
        ledger.claim("unit", owner="other-ti", owner_ti="dag/other-run/load/-1", owner_try=1).outcome
        == "busy"
    )
    assert ledger.claim("unit", owner="try2", owner_ti=ti, owner_try=2).outcome == "taken_over"


def test_success_is_remembered_for_the_dedup_window_only(ledger_dsn):
    """Inside the window a success is 'done' with its result; after it the unit may run again."""
    ledger = Ledger.from_dsn(ledger_dsn, dedup_window=timedelta(hours=1))
    claim = ledger.claim("unit")
    unit = ledger.complete(claim, {"file": "s3://bucket/x.parquet"})
    assert unit.dedup_expires_at > unit.finished_at
    again = ledger.claim("unit")
    assert (again.outcome, again.unit.result_ref) == ("done", {"file": "s3://bucket/x.parquet"})
    _let_time_pass(ledger_dsn, "unit")
    assert ledger.claim("unit").outcome == "claimed"


def test_a_failed_unit_may_be_claimed_again_at_once(ledger_dsn):
    """fail() records the error and frees the unit for the next try."""
    ledger = Ledger.from_dsn(ledger_dsn)
    claim = ledger.claim("unit")
    assert ledger.fail(claim, "ConnectionResetError: reset").error == "ConnectionResetError: reset"
    retry = ledger.claim("unit")  # the last error stays visible while the retry runs
    assert (retry.outcome, retry.unit.claims, retry.unit.error) == (
        "claimed",
        2,
        "ConnectionResetError: reset",
    )
    assert ledger.complete(retry).error is None


def test_default_window_is_an_hour_and_configurable_by_env(ledger_dsn, monkeypatch):
    """The dedup window defaults to 3600 s; [retry_provider] ledger_dedup_seconds changes it."""
    assert Ledger.from_dsn(ledger_dsn).dedup_window == timedelta(seconds=3600)
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__LEDGER_DEDUP_SECONDS", "120")
    assert Ledger.from_dsn(ledger_dsn).dedup_window == timedelta(seconds=120)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_decorator_skips_a_done_unit_and_returns_the_recorded_result(ledger_dsn):
    """The second call of a succeeded unit does not run the function, logs the skip and returns the first result."""
    calls: list[int] = []
    ledger = Ledger.from_dsn(ledger_dsn)

    @idempotent(key="dag/report/-1/2026-11-01", ledger=ledger)
    def report(n: int) -> dict:
        calls.append(n)
        return {"sent": n}

    assert report(1) == {"sent": 1}
    logger = logging.getLogger("airflow_retry_provider.ledger.decorator")
    records, level = _Records(), logger.level
    logger.addHandler(records)
    logger.setLevel(logging.INFO)
    try:
        assert report(2) == {"sent": 1}
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)
    assert calls == [1]
    assert any("already succeeded" in m and "not run again" in m for m in records.messages), records.messages


def test_the_error_column_is_redacted_and_cut(ledger_dsn):
    """A failure's secrets never reach the ledger's error column, and the error fits MAX_ERROR_CHARS."""
    ledger = Ledger.from_dsn(ledger_dsn)
    error = "OperationalError: postgresql://etl:p@ss/w0rd@db/x Cookie: sid=abc123 " + "-password" * 2000
    ledger.fail(ledger.claim("unit"), error)
    [(stored,)] = _rows(ledger_dsn, "SELECT error FROM retry_work_units")
    assert "p@ss" not in stored and "w0rd" not in stored and "abc123" not in stored
    assert stored.startswith("OperationalError: postgresql://etl:***@db/x Cookie: ***")
    assert len(stored) <= 2000


def test_decorator_records_a_failure_and_runs_again_next_time(ledger_dsn):
    """An exception is recorded as failed and re-raised; the next call runs the function."""
    attempts: list[int] = []
    ledger = Ledger.from_dsn(ledger_dsn)

    @idempotent(key="unit", ledger=ledger)
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionResetError(104, "Connection reset by peer")
        return "ok"

    with pytest.raises(ConnectionResetError):
        flaky()
    assert ledger.get("unit").status == "failed"
    assert flaky() == "ok" and len(attempts) == 2


def test_mixin_runs_work_once_per_key(ledger_dsn):
    """IdempotentMixin.run_idempotent applies the same rules to a classic operator's work."""

    class Load(IdempotentMixin):
        def __init__(self) -> None:
            self.ran = 0

        def work_unit_key(self, context):
            return "classic/unit"

        def ledger(self) -> Ledger:
            return Ledger.from_dsn(ledger_dsn)

        def execute(self, context):
            return self.run_idempotent(context, self._load)

        def _load(self) -> int:
            self.ran += 1
            return 42

    op = Load()
    assert op.execute({}) == 42 and op.execute({}) == 42
    assert op.ran == 1


def test_a_ledger_table_from_before_claimed_from_is_upgraded(pg_dsn):
    """A table created by an earlier release (no claimed_from, no version) gains the column; claims then work on it."""
    with psycopg.connect(pg_dsn) as conn:
        apply_ledger_schema(conn)
        conn.execute("ALTER TABLE retry_work_units DROP COLUMN claimed_from")
        conn.execute("DROP TABLE retry_provider_schema_version")  # a database from before versioning
        conn.commit()
        apply_ledger_schema(conn)
    ledger = Ledger.from_dsn(pg_dsn)
    first = ledger.claim("old-table-unit", owner="first")
    assert (first.outcome, first.unit.claimed_from) == ("claimed", None)
    ledger.fail(first, "boom")
    again = ledger.claim("old-table-unit", owner="second")
    assert (again.outcome, again.unit.claimed_from) == ("claimed", "failed")


def test_the_ledger_commits_each_call_on_a_connection_it_was_given(ledger_dsn):
    """With ``conn=`` in transaction mode the ledger commits each call: another session sees it at once."""
    with psycopg.connect(ledger_dsn) as conn:
        ledger = Ledger(conn=conn)
        ledger.complete(ledger.claim("given-conn-unit"), {"rows": 1})
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert _rows(
        ledger_dsn, "SELECT status FROM retry_work_units WHERE work_unit_key = 'given-conn-unit'"
    ) == [("succeeded",)]

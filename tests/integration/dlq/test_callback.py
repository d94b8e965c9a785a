"""The failure callback on a real PostgreSQL: what it files, what it redacts, what it logs when the database is down."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

from airflow_retry_provider.dlq.callback import UNFILED_EVENT, build_letter, file_dead_letter, file_letter
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy
from devstack.postgres import free_port
from tests.integration.dlq import support
from tests.integration.dlq.support import SECRET

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=timezone.utc)


def _context(exception: BaseException) -> dict[str, Any]:
    """The context Airflow hands an on_failure_callback, with a real policy that judged the try."""
    policy = ClassifiedRetryPolicy("report")
    task = SimpleNamespace(retry_policy=policy, retries=2, task_id="load_positions")
    ti = SimpleNamespace(
        dag_id="positions",
        run_id="scheduled__2026-11-01",
        task_id="load_positions",
        map_index=-1,
        try_number=1,
    )
    ti.max_tries = 2
    context = {
        "ti": ti,
        "task": task,
        "exception": exception,
        "params": {},
        "data_interval_start": T0 - timedelta(days=1),
        "data_interval_end": T0,
    }
    policy.assess(exception, 1, 2, context)
    return context


def test_a_password_in_a_connection_uri_reaches_neither_the_row_nor_our_logs(provider_conn, caplog):
    """The real callback redacts the URI's password in the stored message, the reason and every log line."""
    exc = RuntimeError(
        f"password authentication failed for postgresql://etl:{SECRET}@db.internal:5432/positions"
    )
    with caplog.at_level(logging.DEBUG):
        file_dead_letter(_context(exc))
    (row,) = support.rows(provider_conn)
    assert (row["failure_class"], row["category"], row["status"]) == ("poison", "auth-failed", "dlq")
    assert "postgresql://etl:***@db.internal" in row["message"]
    assert all(SECRET not in str(value) for value in row.values())
    assert caplog.records, "the callback logs what it filed"
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_unreachable_postgres_logs_one_unfiled_event_with_the_redacted_record(caplog):
    """With PostgreSQL down, file_letter retries, logs exactly one UNFILED_EVENT line (no secret) and returns None."""
    exc = RuntimeError(f"password authentication failed for postgresql://etl:{SECRET}@db.internal/positions")
    letter = build_letter(_context(exc))
    down = DeadLetterStore.from_dsn(f"postgresql://postgres:{SECRET}@127.0.0.1:{free_port()}/nowhere")
    pauses: list[float] = []
    with caplog.at_level(logging.DEBUG):
        assert file_letter(letter, down, replay_cap=3, sleep=pauses.append) is None
    assert pauses == [0.5, 1.0]
    unfiled = [r.getMessage() for r in caplog.records if UNFILED_EVENT in r.getMessage()]
    assert len(unfiled) == 1
    assert '"dag_id": "positions"' in unfiled[0] and '"category": "auth-failed"' in unfiled[0]
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_a_connection_that_does_not_exist_is_not_tried_again(caplog, monkeypatch):
    """Without the provider's connection, filing fails at once (no pauses: trying again cannot create it),
    and outside dag.test() the record is still logged whole, at error level."""
    monkeypatch.delenv("AIRFLOW_CONN_NO_SUCH_PROVIDER_DB", raising=False)
    letter = build_letter(_context(ConnectionResetError("reset")))
    missing = DeadLetterStore.from_conn_id("no_such_provider_db")
    pauses: list[float] = []
    with caplog.at_level(logging.INFO):
        assert file_letter(letter, missing, replay_cap=3, sleep=pauses.append) is None
    assert pauses == []
    [unfiled] = [r for r in caplog.records if UNFILED_EVENT in r.getMessage()]
    assert unfiled.levelno == logging.ERROR and "AirflowNotFoundException" in unfiled.getMessage()

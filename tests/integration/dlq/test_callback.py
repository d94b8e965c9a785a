"""The failure callback on a real PostgreSQL: what it files, what it redacts, what it logs when the database is down."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import psycopg

from airflow_retry_provider import database
from airflow_retry_provider.database import close_kept
from airflow_retry_provider.dlq.callback import (
    CROWDED_BACKOFF,
    CROWDED_SECONDS,
    UNFILED_EVENT,
    build_letter,
    crowded,
    file_dead_letter,
    file_letter,
)
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy
from devstack.postgres import free_port
from devstack.provider import impact_queue_counts
from tests.integration.dlq import support
from tests.integration.dlq.support import SECRET
from tests.local_airflow import Reply, serve

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
    """With PostgreSQL refusing connections, file_letter waits it out with the seeded pauses for at most
    CROWDED_SECONDS, then logs exactly one UNFILED_EVENT line (no secret) and returns None."""
    exc = RuntimeError(f"password authentication failed for postgresql://etl:{SECRET}@db.internal/positions")
    letter = build_letter(_context(exc))
    down = DeadLetterStore.from_dsn(f"postgresql://postgres:{SECRET}@127.0.0.1:{free_port()}/nowhere")
    pauses: list[float] = []
    with caplog.at_level(logging.DEBUG):
        assert file_letter(letter, down, replay_cap=3, sleep=pauses.append) is None
    seed = f"{letter.work_unit_key}#{letter.try_number}"
    assert pauses == [CROWDED_BACKOFF.delay(n, seed).total_seconds() for n in range(1, len(pauses) + 1)]
    # 0.5, 1, 2, 4, 8, 8 ... s less up to half each: within the budget, and the next one would pass it
    assert (
        sum(pauses)
        <= CROWDED_SECONDS
        < sum(pauses) + CROWDED_BACKOFF.delay(len(pauses) + 1, seed).total_seconds()
    )
    assert all(0.25 <= pause <= 8 for pause in pauses) and len(pauses) >= 8
    unfiled = [r.getMessage() for r in caplog.records if UNFILED_EVENT in r.getMessage()]
    assert len(unfiled) == 1
    assert '"dag_id": "positions"' in unfiled[0] and '"category": "auth-failed"' in unfiled[0]
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_the_pauses_of_a_storm_are_spread_by_task_instance():
    """Two mapped instances of one task wait different, fixed pauses: a storm's callbacks do not come back together."""
    first = build_letter(_context(ConnectionResetError("reset")))
    second = replace(first, map_index=1, work_unit_key=first.work_unit_key.replace("/-1/", "/1/"))
    seeds = [f"{letter.work_unit_key}#{letter.try_number}" for letter in (first, second)]
    assert CROWDED_BACKOFF.delay(3, seeds[0]) != CROWDED_BACKOFF.delay(3, seeds[1])
    assert CROWDED_BACKOFF.delay(3, seeds[0]) == CROWDED_BACKOFF.delay(3, seeds[0])


def test_too_many_connections_is_waited_out_and_the_letter_filed(pg_server, pg_dsn):
    """A role at its connection limit gets SQLSTATE 53300 from a real PostgreSQL: the callback's write
    waits (a seeded pause) and files the letter once a connection is free, never losing it."""
    role = f"crowded_{uuid.uuid4().hex[:8]}"
    dbname = pg_dsn.rsplit("/", 1)[1]
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 1")
        admin.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        admin.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")
    crowded_dsn = f"postgresql://{role}@{pg_server.host}:{pg_server.port}/{dbname}"
    try:
        holder = psycopg.connect(crowded_dsn)  # the one connection the role may have
        refused: list[BaseException] = []
        try:
            psycopg.connect(crowded_dsn)
        except psycopg.OperationalError as exc:
            refused.append(exc)
        assert refused and crowded(refused[0])
        pauses: list[float] = []

        def pause(seconds: float) -> None:
            pauses.append(seconds)
            if len(pauses) == 2:
                holder.close()  # a connection comes free
                _until_disconnected(pg_dsn, role)  # its backend exits after close() returns

        letter = build_letter(_context(ConnectionResetError("reset")))
        result = file_letter(letter, DeadLetterStore.from_dsn(crowded_dsn), replay_cap=3, sleep=pause)
        assert result is not None and result.created
        assert len(pauses) == 2
        assert len(support.rows(pg_dsn)) == 1
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def _until_disconnected(dsn: str, role: str) -> None:
    """Wait (up to 10 s) until PostgreSQL no longer counts a connection of ``role``."""
    deadline = time.monotonic() + 10
    with psycopg.connect(dsn, autocommit=True) as admin:
        while time.monotonic() < deadline:
            (count,) = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (role,)
            ).fetchone()
            if count == 0:
                return
            time.sleep(0.05)


class _CountingAirflow:
    """A stand-in for Airflow's REST API that answers nothing useful and counts every request."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def answer(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        self.requests.append(f"{method} {path}")
        return Reply(201, {"access_token": "t0ken"}) if path == "/auth/token" else Reply(404, {})


def test_the_failure_callback_makes_no_rest_call(provider_conn, monkeypatch):
    """With the API connection defined (as the worker may hold it), filing sends no request to Airflow's
    REST API: the letter is filed and awaits its impact, which the api-server's thread computes."""
    counting = _CountingAirflow()
    with serve(counting) as url:
        monkeypatch.setenv(
            "AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API", url.replace("http://", "http://admin:admin@")
        )
        file_dead_letter(_context(RuntimeError("relation orders does not exist")))
        for map_index in range(5):  # a small storm of one run
            context = _context(RuntimeError("relation orders does not exist"))
            context["ti"].map_index = map_index
            file_dead_letter(context)
    assert counting.requests == []
    assert len(support.rows(provider_conn)) == 6
    assert impact_queue_counts(provider_conn) == (6, 0)


def _counting_connections(monkeypatch: Any) -> list[Any]:
    """The connections the failure callback opens from now on (``RetryProviderHook.get_conn``)."""
    from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

    opened: list[Any] = []
    connect = RetryProviderHook.get_conn

    def counting(self: Any) -> Any:
        opened.append(connect(self))
        return opened[-1]

    monkeypatch.setattr(RetryProviderHook, "get_conn", counting)
    return opened


def test_a_failure_callback_opens_one_connection_for_the_letter_its_impact_and_its_alerts(
    provider_conn, monkeypatch
):
    """Filing, reading the stored impact and the alerts' transactions share one connection, closed at the
    end: a storm's callbacks each open one, not one per transaction."""
    context = _context(RuntimeError("relation orders does not exist"))
    close_kept()  # a callback with no try recorded before it in its process (a task killed outside its runner)
    opened = _counting_connections(monkeypatch)
    file_dead_letter(context)
    assert len(support.rows(provider_conn)) == 1
    assert len(opened) == 1 and opened[0].closed


def test_a_failed_try_is_recorded_and_filed_on_one_connection(provider_conn, monkeypatch):
    """The retry policy records the try on the task process's kept connection and the failure callback
    files the letter on it, then closes it: a failing task process opens one connection, not two."""
    context = _context(RuntimeError("relation orders does not exist"))  # its policy recorded the try
    recorded_on = database._KEPT[os.getpid()]
    opened = _counting_connections(monkeypatch)
    file_dead_letter(context)
    assert len(support.rows(provider_conn)) == 1
    assert opened == [] and recorded_on.closed and os.getpid() not in database._KEPT


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


PRELOADED_FAILURE = """
import sys
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
import airflow.sdk.execution_time.supervisor  # a task process is forked from its supervisor
import airflow.sdk.execution_time.task_runner
from airflow_retry_provider import preload
preload.preload()
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy
policy = ClassifiedRetryPolicy("report")
before = set(sys.modules)
exc = RuntimeError('relation "orders" does not exist')
end = datetime(2026, 11, 2, 10, tzinfo=timezone.utc)
ti = SimpleNamespace(dag_id="orders", run_id="manual__1", task_id="load", map_index=-1, try_number=1, max_tries=0)
context = {"ti": ti, "task": SimpleNamespace(retry_policy=policy, retries=0, task_id="load"), "exception": exc,
           "params": {}, "data_interval_start": end - timedelta(days=1), "data_interval_end": end}
decision = policy.evaluate(exc, 1, 1, context)
from airflow_retry_provider.dlq import file_dead_letter
file_dead_letter(context)
# what preload controls: the provider, PostgreSQL's driver and hooks (the SDK's own connection lookup aside)
print(sorted(m for m in set(sys.modules) - before if m.startswith(("airflow_retry_provider", "psycopg", "airflow.providers"))))
"""


def test_a_preloaded_failed_try_imports_nothing_more_to_decide_and_file(provider_conn):
    """What preload.py imports is all a failed try's decision and callback need: the forked task
    process (which has what its parent preloaded) imports nothing when it fails; its letter is filed."""
    out = subprocess.run(
        [sys.executable, "-c", PRELOADED_FAILURE],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-2000:]
    assert [(row["dag_id"], row["task_id"], row["status"]) for row in support.rows(provider_conn)] == [
        ("orders", "load", "dlq")
    ]

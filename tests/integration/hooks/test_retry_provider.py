"""The provider's schema is created idempotently through the hook and the CLI."""

from __future__ import annotations

import subprocess

import psycopg

from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore
from tests.conftest import VENV_BIN
from tests.factories import new_letter


def _tables(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return {row[0] for row in rows}


def _db_init(dsn: str) -> None:
    result = subprocess.run(
        [str(VENV_BIN / "airflow-retry"), "db", "init", "--dsn", dsn], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def _letters_and_replays(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT l.id, l.dag_id, l.status, r.actor, r.outcome FROM retry_dead_letters l"
            " JOIN retry_replays r ON r.letter_id = l.id ORDER BY l.id"
        ).fetchall()


def test_db_init_creates_tables_and_is_safe_twice(pg_server):
    """``airflow-retry db init`` creates the tables; run again it keeps every letter and replay already there."""
    dsn = pg_server.create_database("arp_schema_twice")
    try:
        _db_init(dsn)
        assert {"retry_dead_letters", "retry_replays"} <= _tables(dsn)
        store = DeadLetterStore.from_dsn(dsn)
        letter_id = store.file(new_letter(dag_id="survivor"), replay_cap=3).letter_id
        ReplayEngine(store, replay_cap=3).claim(store.get(letter_id), ReplayRequest("ana", "fix", "v1"))  # type: ignore[arg-type]
        seeded = _letters_and_replays(dsn)
        assert seeded == [(letter_id, "survivor", "replaying", "ana", "pending")]
        _db_init(dsn)
        assert _letters_and_replays(dsn) == seeded
    finally:
        pg_server.drop_database("arp_schema_twice")


def test_hook_uses_airflow_connection_from_env(pg_server, monkeypatch):
    """RetryProviderHook finds ``retry_provider_default`` through AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT."""
    from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

    dsn = pg_server.create_database("arp_schema_hook")
    try:
        monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", dsn)
        hook = RetryProviderHook()
        hook.init_schema()
        DeadLetterStore.from_dsn(dsn).file(new_letter(dag_id="survivor"), replay_cap=3)
        hook.init_schema()
        assert {"retry_dead_letters", "retry_replays"} <= _tables(dsn)
        assert hook.get_first("SELECT dag_id, status FROM retry_dead_letters") == ("survivor", "dlq")
    finally:
        pg_server.drop_database("arp_schema_hook")

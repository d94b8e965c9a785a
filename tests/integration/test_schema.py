"""The provider's schema is created idempotently through the hook and the CLI."""

from __future__ import annotations

import subprocess

import psycopg

from tests.conftest import VENV_BIN


def _tables(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return {row[0] for row in rows}


def test_db_init_creates_tables_and_is_safe_twice(pg_server):
    """``airflow-retry db init`` creates the tables on an empty database and changes nothing the second time."""
    dsn = pg_server.create_database("arp_schema_twice")
    try:
        for _ in range(2):
            result = subprocess.run(
                [str(VENV_BIN / "airflow-retry"), "db", "init", "--dsn", dsn], capture_output=True, text=True
            )
            assert result.returncode == 0, result.stderr
            assert {"retry_dead_letters", "retry_replays"} <= _tables(dsn)
    finally:
        pg_server.drop_database("arp_schema_twice")


def test_hook_uses_airflow_connection_from_env(pg_server, monkeypatch):
    """DeadLetterHook finds ``retry_provider_default`` through AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT."""
    from airflow_retry_provider.hooks.dead_letter import DeadLetterHook

    dsn = pg_server.create_database("arp_schema_hook")
    try:
        monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", dsn)
        hook = DeadLetterHook()
        hook.init_schema()
        hook.init_schema()
        assert {"retry_dead_letters", "retry_replays"} <= _tables(dsn)
        assert hook.get_first("SELECT count(*) FROM retry_dead_letters") == (0,)
    finally:
        pg_server.drop_database("arp_schema_hook")

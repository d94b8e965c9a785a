"""RetryProviderHook on a real PostgreSQL: bounded waits by default, a changed connection picked up
without a restart, and a pool that hands each caller its own connection."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

CONN_ENV = "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT"


def _with_user(dsn: str, user: str, query: str = "") -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.hostname}:{parts.port}", query=query))


def _settings(conn) -> tuple[str, str]:
    statement = conn.execute("SHOW statement_timeout").fetchone()[0]
    return statement, conn.info.get_parameters().get("connect_timeout", "")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ("30s", "5")),  # the defaults: no statement runs past 30 s, no connect waits past 5 s
        ("statement_timeout=2min&connect_timeout=2", ("2min", "2")),  # the connection's extras win
    ],
)
def test_every_connection_has_bounded_waits(pg_dsn, monkeypatch, query, expected):
    """get_conn() and the pool's connections carry connect_timeout and statement_timeout (extras override)."""
    monkeypatch.setenv(CONN_ENV, pg_dsn + ("?" + query if query else ""))
    hook = RetryProviderHook()
    with hook.get_conn() as conn:
        assert _settings(conn) == expected
    pool = hook.pool(max_size=2)
    try:
        with pool.connection() as conn:
            assert _settings(conn) == expected
    finally:
        pool.close()


def test_a_changed_connection_is_read_again_when_connecting_fails(pg_dsn, monkeypatch):
    """Credentials rotated (the old role is gone): the same hook reconnects with the connection read again."""
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("CREATE ROLE rotated_user LOGIN")
    try:
        monkeypatch.setenv(CONN_ENV, _with_user(pg_dsn, "rotated_user"))
        hook = RetryProviderHook()
        hook.get_conn().close()  # the hook has read (and keeps) this connection
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("DROP ROLE rotated_user")
        monkeypatch.setenv(CONN_ENV, pg_dsn)  # the secret store now holds the new credentials
        with hook.get_conn() as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == urlsplit(pg_dsn).username
        pool = hook.pool(max_size=1)  # a pool reads the connection for each new connection it opens
        try:
            with pool.connection() as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
        finally:
            pool.close()
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("DROP ROLE IF EXISTS rotated_user")


def test_a_connection_that_still_fails_is_not_retried_forever(monkeypatch):
    """If the connection did not change, the failure is raised at once (one attempt, bounded by connect_timeout)."""
    from devstack.postgres import free_port

    monkeypatch.setenv(CONN_ENV, f"postgresql://u:pw@127.0.0.1:{free_port()}/db")
    with pytest.raises(psycopg.OperationalError):
        RetryProviderHook().get_conn()

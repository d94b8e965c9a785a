"""The one transaction helper, ``sql.transaction``, on a real PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

from airflow_retry_provider.sql import transaction


def _count(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM tx_probe").fetchone()[0]


@pytest.fixture
def probe(pg_dsn: str) -> str:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tx_probe (n int)")
    return pg_dsn


def test_commits_when_the_block_ends_and_closes(probe: str) -> None:
    """A block that ends commits its writes and closes the connection."""
    conn = psycopg.connect(probe)
    with transaction(conn) as same:
        same.execute("INSERT INTO tx_probe VALUES (1)")
    assert same is conn and conn.closed
    assert _count(probe) == 1


def test_rolls_back_when_the_block_raises(probe: str) -> None:
    """A block that raises writes nothing, re-raises, and still closes the connection."""
    conn = psycopg.connect(probe)
    with pytest.raises(RuntimeError, match="boom"), transaction(conn):
        conn.execute("INSERT INTO tx_probe VALUES (1)")
        raise RuntimeError("boom")
    assert conn.closed
    assert _count(probe) == 0


def test_keeps_a_callers_connection_open(probe: str) -> None:
    """``close=False`` commits but leaves the connection to the caller (a rollback likewise)."""
    with psycopg.connect(probe) as conn:
        with transaction(conn, close=False):
            conn.execute("INSERT INTO tx_probe VALUES (1)")
        with pytest.raises(ValueError), transaction(conn, close=False):
            conn.execute("INSERT INTO tx_probe VALUES (2)")
            raise ValueError
        assert not conn.closed
        assert conn.execute("SELECT count(*) FROM tx_probe").fetchone()[0] == 1


def test_autocommit_connection_keeps_each_statement(probe: str) -> None:
    """In autocommit mode each statement is already committed: an error later undoes nothing."""
    conn = psycopg.connect(probe, autocommit=True)
    with pytest.raises(RuntimeError), transaction(conn):
        conn.execute("INSERT INTO tx_probe VALUES (1)")
        raise RuntimeError
    assert _count(probe) == 1

"""The provider's database handle, ``ProviderDatabase``, on a real PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.store import DeadLetterStore
from tests.integration.dlq import support


def test_a_reusing_database_runs_every_transaction_on_one_connection(pg_dsn):
    """A sweep's database opens one connection: every transaction of the block has the same backend."""
    with ProviderDatabase.from_dsn(pg_dsn).reusing() as db:
        pids = set()
        for _ in range(3):
            with db.transaction() as cur:
                cur.execute("SELECT pg_backend_pid()")
                pids.add(cur.fetchone()[0])
        store = DeadLetterStore(db)
        store.file(support.letter(), replay_cap=3)
        assert store.get(1) is not None
    assert len(pids) == 1


def test_a_reusing_database_opens_a_new_connection_when_its_own_was_lost(pg_dsn):
    """A connection the server ended (a failover, a restart) is not reused: the next transaction opens another."""
    with ProviderDatabase.from_dsn(pg_dsn).reusing() as db:
        with db.transaction() as cur:
            cur.execute("SELECT pg_backend_pid()")
            first = cur.fetchone()[0]
        with ProviderDatabase.from_dsn(pg_dsn).transaction() as other:
            other.execute("SELECT pg_terminate_backend(%s)", (first,))
        with pytest.raises(psycopg.OperationalError), db.transaction() as cur:
            cur.execute("SELECT 1")  # the transaction that finds the connection dead fails...
        with db.transaction() as cur:  # ...and the next one reconnects
            cur.execute("SELECT pg_backend_pid()")
            second = cur.fetchone()[0]
    assert second != first

"""The provider's database handle, ``ProviderDatabase``, on a real PostgreSQL."""

from __future__ import annotations

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.store import DeadLetterStore
from tests.integration.dlq import support


def test_a_pinned_database_runs_every_transaction_on_one_connection(pg_dsn):
    """A sweep's database opens one connection: every transaction of the block has the same backend."""
    with ProviderDatabase.from_dsn(pg_dsn).pinned() as db:
        pids = set()
        for _ in range(3):
            with db.transaction() as cur:
                cur.execute("SELECT pg_backend_pid()")
                pids.add(cur.fetchone()[0])
        store = DeadLetterStore(db)
        store.file(support.letter(), replay_cap=3)
        assert store.get(1) is not None
    assert len(pids) == 1

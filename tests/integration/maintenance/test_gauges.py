"""Queue gauges read from a real PostgreSQL in one query."""

from __future__ import annotations

import json

import psycopg

from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.maintenance.gauges import read_gauges
from tests.factories import new_letter


def test_gauges_count_letters_leases_alerts_and_connectors(pg_dsn):
    """Each gauge reflects the rows: statuses (zero included), oldest dlq age, expired leases, connectors."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    for index in range(3):
        store.file(new_letter(task_id=f"t{index}"), replay_cap=3)
    health = [{"connector_id": "c1", "status": "failing"}, {"connector_id": "c2", "status": "healthy"}]
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("UPDATE retry_dead_letters SET status = 'parked' WHERE task_id = 't2'")
        conn.execute(
            "UPDATE retry_dead_letters SET created_at = now() - interval '2 hours' WHERE task_id = 't0'"
        )
        conn.execute(
            "INSERT INTO retry_work_units (work_unit_key, status, owner, lease_expires_at) VALUES "
            "('a', 'running', 'w:1', now() - interval '1 minute'), ('b', 'running', 'w:2', now() + interval '1 hour')"
        )
        conn.execute(
            "INSERT INTO reconciliation_reports (workspace_id, as_of, window_seconds, findings_count, health) "
            "VALUES ('w1', now() - interval '1 day', 60, 0, %s), ('w1', now(), 60, 0, %s)",
            (json.dumps([{"connector_id": "c1", "status": "stopped"}]), json.dumps(health)),
        )
    gauges = read_gauges(store.db)
    assert (gauges["letters.dlq"], gauges["letters.parked"], gauges["letters.replaying"]) == (2, 1, 0)
    assert 7190 < gauges["letters.oldest_dlq_age_seconds"] < 7300
    assert gauges["work_units.lease_expired"] == 1
    assert (gauges["connectors.failing"], gauges["connectors.healthy"], gauges["connectors.stopped"]) == (
        1,
        1,
        0,
    )
    assert gauges["alerts.pending"] == 0 and gauges["replays.pending"] == 0

"""Queue gauges through Airflow's ``Stats``, read in one query (the sweeper DAG emits them every run).

Names (with the ``retry_provider.`` prefix): ``letters.<status>`` for every status,
``letters.oldest_dlq_age_seconds``, ``replays.pending``, ``work_units.lease_expired``,
``alerts.pending`` and ``connectors.<healthy|degraded|failing|stopped>`` (each workspace's latest
reconciliation report). docs/METRICS.md lists them.
"""

from __future__ import annotations

import logging

from airflow_retry_provider import metrics
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.maintenance.sql import query

log = logging.getLogger(__name__)


def read_gauges(db: ProviderDatabase) -> dict[str, float]:
    """Every gauge's current value, by name without the prefix."""
    with db.transaction() as cur:
        cur.execute(query("gauges"))
        return {str(name): float(value) for name, value in cur.fetchall()}


def emit_gauges(db: ProviderDatabase | None = None) -> dict[str, float]:
    """Read the gauges and hand them to Airflow's ``Stats``; returns what was emitted."""
    values = read_gauges(db or ProviderDatabase.from_conn_id())
    for name, value in values.items():
        metrics.gauge(*name.split("."), value=value)
    log.info("airflow-retry-provider: gauges %s", values)
    return values

"""Queue gauges through Airflow's ``Stats``, read in one query (the sweeper DAG emits them every run).

Names (with the ``retry_provider.`` prefix): ``letters.<status>`` for every status,
``letters.oldest_dlq_age_seconds``, ``replays.pending``, ``work_units.lease_expired``,
``alerts.pending`` and ``connectors.<healthy|degraded|failing|stopped>`` (each workspace's latest
reconciliation report). docs/METRICS.md lists them.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow_retry_provider import metrics
from airflow_retry_provider.maintenance.sql import query

log = logging.getLogger(__name__)


def read_gauges(store: Any) -> dict[str, float]:
    """Every gauge's current value, by name without the prefix."""
    with store.transaction() as cur:
        cur.execute(query("gauges"))
        return {str(name): float(value) for name, value in cur.fetchall()}


def emit_gauges(store: Any = None) -> dict[str, float]:
    """Read the gauges and hand them to Airflow's ``Stats``; returns what was emitted."""
    from airflow_retry_provider.dlq.store import DeadLetterStore

    values = read_gauges(store or DeadLetterStore.from_conn_id())
    for name, value in values.items():
        metrics.gauge(*name.split("."), value=value)
    log.info("airflow-retry-provider: gauges %s", values)
    return values

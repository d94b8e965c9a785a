"""Medallion reconciliation: gap findings between layers and per-connector health (pure, stdlib only)."""

from __future__ import annotations

from airflow_retry_provider.reconciliation.health import (
    DEFAULT_WINDOW,
    DEGRADED_ERROR_RATE,
    FAILING_ERROR_RATE,
    connector_health,
    health_status,
    percentile_cont,
)
from airflow_retry_provider.reconciliation.models import (
    LAYERS,
    BronzeTable,
    ConnectorHealth,
    EventLog,
    ExtractionEvent,
    Finding,
    Snapshot,
    SnapshotError,
    SourceRun,
    Transform,
    format_timestamp,
    parse_timestamp,
)
from airflow_retry_provider.reconciliation.rules import find_gaps, finding_sort_key

__all__ = [
    "DEFAULT_WINDOW",
    "DEGRADED_ERROR_RATE",
    "FAILING_ERROR_RATE",
    "LAYERS",
    "BronzeTable",
    "ConnectorHealth",
    "EventLog",
    "ExtractionEvent",
    "Finding",
    "Snapshot",
    "SnapshotError",
    "SourceRun",
    "Transform",
    "connector_health",
    "find_gaps",
    "finding_sort_key",
    "format_timestamp",
    "health_status",
    "parse_timestamp",
    "percentile_cont",
]

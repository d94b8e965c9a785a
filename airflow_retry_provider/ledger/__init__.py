"""The idempotent work-unit ledger: one PostgreSQL row per unit of work, claimed by exactly one worker."""

from __future__ import annotations

from airflow_retry_provider.ledger.decorator import IdempotentMixin, idempotent, run_once
from airflow_retry_provider.ledger.store import (
    DEFAULT_DEDUP_WINDOW,
    DEFAULT_LEASE,
    Claim,
    LeaseLost,
    Ledger,
    LedgerError,
    WorkUnit,
    WorkUnitBusy,
    apply_ledger_schema,
)

__all__ = [
    "DEFAULT_DEDUP_WINDOW",
    "DEFAULT_LEASE",
    "Claim",
    "IdempotentMixin",
    "LeaseLost",
    "Ledger",
    "LedgerError",
    "WorkUnit",
    "WorkUnitBusy",
    "apply_ledger_schema",
    "idempotent",
    "run_once",
]

"""Retention: delete old rows in bounded batches, and record what was deleted.

Ages (days) are the ``[retry_provider] retention_*_days`` settings (docs/CONFIGURATION.md):
``resolved``/``dismissed`` letters and their replays (90); reconciliation reports, findings and
artifact files, each workspace's latest always kept (30); extraction events (30); finished work
units, never inside the dedup window (30); sent alerts and idle root-cause windows (30); recorded
failed tries (30). Each delete takes at most ``retention_batch_size`` rows (5000), one short transaction each.

``dlq``, ``parked`` and ``replaying`` letters are never deleted. A dry run counts the same rows
and deletes nothing.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import Actor, DeadLetterStore
from airflow_retry_provider.maintenance.sql import query

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetentionPolicy:
    """How old (days) each kind of row may get, and how many rows one delete takes."""

    letters_days: int = 90
    reports_days: int = 30
    events_days: int = 30
    ledger_days: int = 30
    alerts_days: int = 30
    tries_days: int = 30
    batch_size: int = 5000

    @classmethod
    def from_settings(cls) -> RetentionPolicy:
        """Each field from ``[retry_provider] retention_<field>``; a bad value is an error naming the key."""
        from airflow_retry_provider import settings

        return cls(
            letters_days=settings.retention_letters_days(),
            reports_days=settings.retention_reports_days(),
            events_days=settings.retention_events_days(),
            ledger_days=settings.retention_ledger_days(),
            alerts_days=settings.retention_alerts_days(),
            tries_days=settings.retention_tries_days(),
            batch_size=settings.retention_batch_size(),
        )

    def cutoffs(self, now: datetime) -> dict[str, datetime]:
        """The cut-off time of each kind of row."""
        days = {
            "letters": self.letters_days,
            "reports": self.reports_days,
            "events": self.events_days,
            "ledger": self.ledger_days,
            "alerts": self.alerts_days,
            "tries": self.tries_days,
        }
        return {kind: now - timedelta(days=n) for kind, n in days.items()}


# table -> (kind of cut-off, count query); the order is the order of deletion
COUNTS = {
    "retry_replays": ("letters", "retention_replays_of_letters_count"),
    "retry_dead_letters": ("letters", "retention_letters_count"),
    "reconciliation_findings": ("reports", "retention_findings_count"),
    "reconciliation_reports": ("reports", "retention_reports_count"),
    "extraction_events": ("events", "retention_events_count"),
    "retry_work_units": ("ledger", "retention_ledger_count"),
    "retry_alerts": ("alerts", "retention_alerts_count"),
    "retry_alert_windows": ("alerts", "retention_windows_count"),
    "retry_delivery_alerts": ("alerts", "retention_delivery_alerts_count"),
    "retry_failed_tries": ("tries", "retention_tries_count"),
}
# simple tables: one statement deletes a batch
SIMPLE_DELETES = {
    "extraction_events": ("events", "retention_events_delete"),
    "retry_work_units": ("ledger", "retention_ledger_delete"),
    "retry_alerts": ("alerts", "retention_alerts_delete"),
    "retry_alert_windows": ("alerts", "retention_windows_delete"),
    "retry_delivery_alerts": ("alerts", "retention_delivery_alerts_delete"),
    "retry_failed_tries": ("tries", "retention_tries_delete"),
}


@dataclass
class RetentionReport:
    """What a run deleted (or, dry, would delete): rows per table, purged letter ids, artifact files."""

    dry_run: bool
    cutoffs: dict[str, datetime]
    deleted: dict[str, int]
    letter_ids: list[int]
    files: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "cutoffs": {kind: when.isoformat() for kind, when in self.cutoffs.items()},
            "deleted": dict(self.deleted),
            "purged_letters": len(self.letter_ids),
            "artifact_files": self.files,
        }

    def lines(self) -> list[str]:
        """The report as text, one table a line."""
        verb = "would delete" if self.dry_run else "deleted"
        out = [f"{verb} {count:>9} row(s) of {table}" for table, count in self.deleted.items()]
        out.append(f"{verb} {self.files:>9} artifact file(s)")
        return out


class Retention:
    """Runs the retention policy on the provider's database.

    :param db: the provider's database.
    :param artifacts: the reconciliation artifact directory (files of purged reports are removed).
    :param pause: seconds to sleep between batches, to leave room for other queries.
    """

    def __init__(
        self,
        db: ProviderDatabase,
        policy: RetentionPolicy,
        artifacts: Path | None = None,
        pause: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.db = db
        self.policy = policy
        self.artifacts = artifacts
        self.pause = pause
        self.sleep = sleep

    def dry_run(self, now: datetime | None = None) -> RetentionReport:
        """Count what a run would delete now; nothing changes."""
        cutoffs = self.policy.cutoffs(now or datetime.now(timezone.utc))
        deleted: dict[str, int] = {}
        with self.db.transaction() as cur:
            for table, (kind, count) in COUNTS.items():
                cur.execute(query(count), {"cutoff": cutoffs[kind]})
                deleted[table] = int(cur.fetchone()[0])
        return RetentionReport(True, cutoffs, deleted, [])

    def run(self, now: datetime | None = None) -> RetentionReport:
        """Delete everything past its age, batch by batch, and record the counts in ``retry_retention_runs``."""
        started = now or datetime.now(timezone.utc)
        cutoffs = self.policy.cutoffs(started)
        report = RetentionReport(False, cutoffs, dict.fromkeys(COUNTS, 0), [])
        self._purge_letters(report)
        self._purge_reports(report)
        for table, (kind, statement) in SIMPLE_DELETES.items():
            self._batches(self._simple(statement, cutoffs[kind]), report, table)
        with self.db.transaction() as cur:
            cur.execute(
                query("record_retention_run"),
                {
                    "started_at": started,
                    "cutoffs": json.dumps(report.to_json()["cutoffs"]),
                    "deleted": json.dumps({**report.deleted, "artifact_files": report.files}),
                },
            )
        log.info("airflow-retry-provider: retention %s", json.dumps(report.to_json(), sort_keys=True))
        return report

    def _batches(self, delete_one: Callable[[Any], int], report: RetentionReport, table: str) -> None:
        while True:
            with self.db.transaction() as cur:
                count = delete_one(cur)
            report.deleted[table] += count
            if count < self.policy.batch_size:
                return
            if self.pause:
                self.sleep(self.pause)

    def _simple(self, statement: str, cutoff: datetime) -> Callable[[Any], int]:
        """One batch of a table a single statement purges."""

        def delete_one(cur: Any) -> int:
            cur.execute(query(statement), {"cutoff": cutoff, "batch": self.policy.batch_size})
            return int(cur.rowcount)

        return delete_one

    def _purge_letters(self, report: RetentionReport) -> None:
        cutoff = report.cutoffs["letters"]

        def delete_one(cur: Any) -> int:
            cur.execute(query("retention_letters_pick"), {"cutoff": cutoff, "batch": self.policy.batch_size})
            ids = [int(row[0]) for row in cur.fetchall()]
            if not ids:
                return 0
            cur.execute(query("retention_replays_delete"), {"ids": ids})
            report.deleted["retry_replays"] += int(cur.rowcount)
            cur.execute(query("retention_letters_delete"), {"ids": ids})
            purged = [int(row[0]) for row in cur.fetchall()]
            for letter_id in purged:  # the history outlives the letter
                DeadLetterStore.record(
                    cur,
                    letter_id,
                    "purged",
                    Actor.system("sweeper"),
                    f"retention: closed before {cutoff.isoformat()}",
                )
            report.letter_ids.extend(purged)
            return len(ids)

        self._batches(delete_one, report, "retry_dead_letters")
        report.deleted["retry_dead_letters"] = len(report.letter_ids)

    def _purge_reports(self, report: RetentionReport) -> None:
        cutoff = report.cutoffs["reports"]

        def delete_one(cur: Any) -> int:
            cur.execute(
                query("retention_reports_delete"), {"cutoff": cutoff, "batch": self.policy.batch_size}
            )
            rows = cur.fetchall()
            if rows:
                report.deleted["reconciliation_findings"] += int(rows[0][2])
            for workspace_id, as_of, _findings in rows:
                report.files += self._remove_artifacts(workspace_id, as_of)
            return len(rows)

        self._batches(delete_one, report, "reconciliation_reports")

    def _remove_artifacts(self, workspace_id: str, as_of: datetime) -> int:
        if self.artifacts is None:
            return 0
        from airflow_retry_provider.reconciliation.report import artifact_paths

        removed = 0
        paths = artifact_paths(self.artifacts, workspace_id, as_of)
        for path in paths.values():
            if path.exists():
                path.unlink()
                removed += 1
        folder = paths["json"].parent
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        return removed


def run_retention(db: ProviderDatabase | None = None, dry_run: bool = False) -> dict[str, Any]:
    """The retention DAG's task: the policy from the settings, artifacts where the reconciliation writes them."""
    from airflow_retry_provider.reconciliation.report import default_output_dir

    retention = Retention(
        db or ProviderDatabase.from_conn_id(), RetentionPolicy.from_settings(), default_output_dir()
    )
    report = retention.dry_run() if dry_run else retention.run()
    return report.to_json()

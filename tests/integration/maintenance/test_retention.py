"""Retention on a real PostgreSQL: what goes, what always stays, dry runs, batches and the record."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest

from airflow_retry_provider.cli import main
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.maintenance.retention import Retention, RetentionPolicy
from airflow_retry_provider.reconciliation.report import artifact_paths
from tests.factories import new_letter

NOW = datetime.now(timezone.utc)
OLD = NOW - timedelta(days=200)


def _count(dsn: str, sql: str) -> int:
    with psycopg.connect(dsn) as conn:
        return int(conn.execute(sql).fetchone()[0])


@pytest.fixture
def seeded(pg_dsn, tmp_path) -> tuple[str, Path]:
    """Old and new rows of every kind, plus the artifact files of the reports."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    statuses = ["resolved", "dismissed", "dlq", "parked", "replaying", "resolved"]
    for index, _status in enumerate(statuses):
        store.file(new_letter(task_id=f"t{index}"), replay_cap=3)
    with psycopg.connect(pg_dsn) as conn:
        for index, status in enumerate(statuses):
            when = NOW if index == 5 else OLD  # t5 is resolved but recent
            conn.execute(
                "UPDATE retry_dead_letters SET status = %s, updated_at = %s WHERE task_id = %s",
                (status, when, f"t{index}"),
            )
        conn.execute(
            "INSERT INTO retry_replays (letter_id, actor, reason, fix_version, try_number_before) "
            "SELECT id, 'ana', 'fixed', 'v2', 1 FROM retry_dead_letters WHERE task_id IN ('t0', 't4')"
        )
        for workspace, days in (("w1", 100), ("w1", 90), ("w1", 80), ("w2", 100)):
            as_of = NOW - timedelta(days=days)
            report_id = conn.execute(
                "INSERT INTO reconciliation_reports (workspace_id, as_of, window_seconds, findings_count, created_at) "
                "VALUES (%s, %s, 60, 1, %s) RETURNING id",
                (workspace, as_of, as_of),
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO reconciliation_findings (report_id, workspace_id, layer, kind, subject, expected_after, action) "
                "VALUES (%s, %s, 'bronze', 'missing', 's', now(), 'rerun')",
                (report_id, workspace),
            )
            for path in artifact_paths(tmp_path, workspace, as_of).values():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("{}")
        conn.execute(
            "INSERT INTO extraction_events (workspace_id, connector_id, run_id, operation, started_at, duration_ms, status) "
            "SELECT 'w1', 'c1', 'r' || g, 'extract', %s, 10, 'ok' FROM generate_series(1, 7) g "
            "UNION ALL SELECT 'w1', 'c1', 'new', 'extract', now(), 10, 'ok'",
            (OLD,),
        )
        conn.execute(
            "INSERT INTO retry_work_units (work_unit_key, status, owner, finished_at, dedup_expires_at) VALUES "
            "('done', 'succeeded', 'w', %(old)s, %(old)s), ('deduping', 'succeeded', 'w', %(old)s, now() + interval '1 day'),"
            "('stuck', 'running', 'w', NULL, NULL), ('fresh', 'succeeded', 'w', now(), NULL)",
            {"old": OLD},
        )
        conn.execute(
            "INSERT INTO retry_alerts (kind, subject_key, channel, title, body, status, created_at) VALUES "
            "('new-root-cause', 'f', 'mail', 't', '{}', 'sent', %(old)s), ('new-root-cause', 'f', 'mail', 't', '{}', 'pending', %(old)s)",
            {"old": OLD},
        )
        conn.execute(
            "INSERT INTO retry_delivery_alerts (fingerprint, delivery, deadline, status, letter_id) VALUES "
            "('f', 'd.t', %(old)s, 'lost', 1), ('f', 'd.t', now() + interval '1 day', 'at-risk', 1)",
            {"old": OLD},
        )
        conn.execute(
            "INSERT INTO retry_failed_tries (dag_id, run_id, task_id, try_number, failure_class, category, recorded_at) "
            "SELECT 'd', 'r', 't', g, 'infra', 'killed', %(old)s FROM generate_series(1, 3) g "
            "UNION ALL SELECT 'd', 'r', 't', 4, 'retryable', 'http-5xx', now()",
            {"old": OLD},
        )
    return pg_dsn, tmp_path


EXPECTED = {
    "retry_replays": 1,  # t0's; t4 is replaying and keeps its replay
    "retry_dead_letters": 2,  # old resolved and dismissed only
    "reconciliation_findings": 2,
    "reconciliation_reports": 2,  # w1's two older ones; w1's latest and w2's only report stay
    "extraction_events": 7,
    "retry_work_units": 1,  # 'deduping' is inside its dedup window, 'stuck' is running
    "retry_alerts": 1,  # the pending one waits for its retry
    "retry_alert_windows": 0,
    "retry_delivery_alerts": 1,  # the delivery whose deadline passed the cut-off; tomorrow's stays
    "retry_failed_tries": 3,  # the three old tries; today's stays
}


def test_dry_run_counts_what_a_run_deletes_and_deletes_nothing(seeded):
    """The dry run's counts equal the run's; after the dry run every row is still there."""
    dsn, artifacts = seeded
    retention = Retention(ProviderDatabase.from_dsn(dsn), RetentionPolicy(batch_size=2), artifacts)
    dry = retention.dry_run()
    assert dry.deleted == EXPECTED
    assert _count(dsn, "SELECT count(*) FROM retry_dead_letters") == 6
    run = retention.run()
    assert run.deleted == EXPECTED
    assert run.files == 4  # the json and md of each purged report


def test_a_run_never_deletes_open_letters_or_latest_reports_and_records_itself(seeded):
    """dlq, parked and replaying letters, recent rows and each workspace's latest report survive; the run and each purge are recorded."""
    dsn, artifacts = seeded
    Retention(ProviderDatabase.from_dsn(dsn), RetentionPolicy(batch_size=2), artifacts).run()
    with psycopg.connect(dsn) as conn:
        left = dict(conn.execute("SELECT task_id, status FROM retry_dead_letters").fetchall())
        reports = conn.execute(
            "SELECT workspace_id, count(*) FROM reconciliation_reports GROUP BY 1 ORDER BY 1"
        ).fetchall()
        units = {row[0] for row in conn.execute("SELECT work_unit_key FROM retry_work_units")}
        [(deleted,)] = conn.execute("SELECT deleted FROM retry_retention_runs").fetchall()
        purged = conn.execute(
            "SELECT event, source, reason FROM retry_letter_events WHERE event = 'purged'"
        ).fetchall()
    assert len(purged) == EXPECTED["retry_dead_letters"]  # each purged letter keeps its history
    assert all(
        src == "sweeper" and reason.startswith("retention: closed before") for _, src, reason in purged
    )
    assert left == {"t2": "dlq", "t3": "parked", "t4": "replaying", "t5": "resolved"}
    assert reports == [("w1", 1), ("w2", 1)]
    assert units == {"deduping", "stuck", "fresh"}
    assert deleted == {**EXPECTED, "artifact_files": 4}
    assert sorted(p.name for p in artifacts.rglob("*.json")) == ["w1.json", "w2.json"]


def test_ages_come_from_the_settings_and_bad_values_name_the_key(monkeypatch):
    """Each age is [retry_provider] retention_<kind>_days; zero or text is refused with the key's name."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__RETENTION_LETTERS_DAYS", "7")
    assert RetentionPolicy.from_settings().letters_days == 7
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__RETENTION_LETTERS_DAYS")
    assert RetentionPolicy.from_settings().letters_days == 90
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__RETENTION_BATCH_SIZE", "0")
    with pytest.raises(
        ValueError,
        match=r"\[retry_provider\] retention_batch_size .* must be an integer from 1 to 1000000, got '0'",
    ):
        RetentionPolicy.from_settings()


def test_cli_dry_run_prints_the_counts_and_leaves_the_rows(seeded, capsys):
    """``airflow-retry retention --dry-run --json`` prints per-table counts; nothing is deleted."""
    dsn, _ = seeded
    assert main(["retention", "--dry-run", "--json", "--dsn", dsn]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["dry_run"] is True and printed["deleted"] == EXPECTED
    assert _count(dsn, "SELECT count(*) FROM extraction_events") == 8
    assert main(["retention", "--yes", "--dsn", dsn]) == 0
    assert "deleted         7 row(s) of extraction_events" in capsys.readouterr().out
    assert _count(dsn, "SELECT count(*) FROM extraction_events") == 1

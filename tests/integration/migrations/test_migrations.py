"""Versioned migrations on a real PostgreSQL: a database from before versioning upgrades without losing a row."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from airflow_retry_provider import migrations
from airflow_retry_provider.dlq.schema import apply_schema
from tests.conftest import VENV_BIN, fresh_database

BEFORE_VERSIONING = Path(__file__).parent / "fixtures" / "schema_before_versioning.sql"

#: One row in every table of the schema before versioning, parents first.
ROWS = """
INSERT INTO retry_dead_letters (dag_id, run_id, task_id, try_number, attempts_used, work_unit_key,
    failure_class, category, rule, exception_type, message, fingerprint)
VALUES ('etl', 'scheduled__2026-11-01', 'load', 3, 3, 'etl/load/-1/2026-11-01',
    'retryable', 'timeout', 'timeout', 'TimeoutError', 'read timed out', 'fp1');
INSERT INTO retry_replays (letter_id, actor, reason, fix_version, try_number_before)
    SELECT id, 'oncall', 'fixed upstream', 'v2', 3 FROM retry_dead_letters;
INSERT INTO retry_work_units (work_unit_key, status, owner, claimed_from) VALUES ('etl/load', 'succeeded', 'w:1', 'failed');
INSERT INTO source_runs (workspace_id, source_id, status, started_at) VALUES ('ws', 'crm', 'ok', '2026-11-01');
INSERT INTO bronze_tables (workspace_id, source_id, table_name) VALUES ('ws', 'crm', 'accounts');
INSERT INTO transforms (workspace_id, transform_id, layer, inputs) VALUES ('ws', 'accounts', 'silver', '{crm/accounts}');
INSERT INTO extraction_events (workspace_id, connector_id, run_id, operation, started_at, duration_ms, status)
    VALUES ('ws', 'crm', 'r1', 'extract', '2026-11-01', 1500, 'ok');
INSERT INTO expected_connectors (workspace_id, connector_id) VALUES ('ws', 'crm');
INSERT INTO reconciliation_reports (workspace_id, as_of, window_seconds, findings_count)
    VALUES ('ws', '2026-11-02', 86400, 1);
INSERT INTO reconciliation_findings (report_id, workspace_id, layer, kind, subject, expected_after, action)
    SELECT id, 'ws', 'bronze', 'stale', 'crm/accounts', '2026-11-01', 'rerun' FROM reconciliation_reports;
"""

TABLES = (
    "retry_dead_letters",
    "retry_replays",
    "retry_work_units",
    "source_runs",
    "bronze_tables",
    "transforms",
    "extraction_events",
    "expected_connectors",
    "reconciliation_reports",
    "reconciliation_findings",
)


@pytest.fixture
def empty_dsn(pg_server) -> Iterator[str]:
    """A fresh database with no table at all."""
    with fresh_database(pg_server, template=None) as dsn:
        yield dsn


def _snapshot(conn: psycopg.Connection, columns_of: dict | None = None) -> dict[str, list[dict]]:
    """Every row of every table as a dict, in a stable order; with ``columns_of``, only the columns it has."""
    snapshot = {}
    for table in TABLES:
        rows = [row[0] for row in conn.execute(f"SELECT to_jsonb(t) FROM {table} AS t ORDER BY t::text")]  # noqa: S608 - fixed names
        if columns_of is not None and columns_of[table]:
            keep = set(columns_of[table][0])
            rows = [{key: value for key, value in row.items() if key in keep} for row in rows]
        snapshot[table] = rows
    return snapshot


def _versions(conn: psycopg.Connection) -> list[tuple[int, str]]:
    return conn.execute("SELECT version, name FROM retry_provider_schema_version ORDER BY version").fetchall()


def test_a_database_from_before_versioning_upgrades_without_losing_a_row(empty_dsn):
    """Today's schema with a row in each table reaches the newest version, every row intact."""
    with psycopg.connect(empty_dsn) as conn:
        conn.execute(BEFORE_VERSIONING.read_text())
        conn.execute(ROWS)
        conn.commit()
        before = _snapshot(conn)
        assert all(len(rows) == 1 for rows in before.values()), before
        assert migrations.current_version(conn) == 0

        assert apply_schema(conn) == (0, migrations.latest_version())

        after = _snapshot(conn, columns_of=before)  # later migrations may add columns: compare the old ones
        assert after == before
        assert migrations.current_version(conn) == migrations.latest_version()
        assert _versions(conn) == [(m.version, m.name) for m in migrations.migrations()]


def test_upgrade_twice_is_a_no_op(empty_dsn):
    """The second upgrade applies nothing and records nothing."""
    latest = migrations.latest_version()
    with psycopg.connect(empty_dsn) as conn:
        assert apply_schema(conn) == (0, latest)
        recorded = _versions(conn)
        assert apply_schema(conn) == (latest, latest)
        assert _versions(conn) == recorded


def test_concurrent_upgrades_do_not_fail(empty_dsn):
    """Four upgrades started together all succeed, and each migration is applied once."""
    barrier = threading.Barrier(4)
    results: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def upgrade() -> None:
        try:
            with psycopg.connect(empty_dsn) as conn:
                barrier.wait()
                results.append(apply_schema(conn))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=upgrade) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    latest = migrations.latest_version()
    assert sorted(results) == [(0, latest)] + [(latest, latest)] * 3
    with psycopg.connect(empty_dsn) as conn:
        assert len(_versions(conn)) == latest


def test_migration_files_are_numbered_from_one_without_gaps():
    """The shipped files are 0001, 0002, ... and the first is the initial schema."""
    found = migrations.migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert found[0].filename == "0001_initial.sql"


def test_cli_upgrade_prints_the_versions_and_init_is_an_alias(empty_dsn):
    """``db upgrade`` says 0 -> newest, ``db init`` then says up to date, ``db current`` prints the version
    and exits 5 while the schema is behind."""
    cli = str(VENV_BIN / "airflow-retry")
    latest = migrations.latest_version()

    def run(*args: str, code: int = 0) -> str:
        result = subprocess.run([cli, "db", *args, "--dsn", empty_dsn], capture_output=True, text=True)
        assert result.returncode == code, result.stderr
        return result.stdout

    assert run("current", code=5) == f"airflow-retry: provider schema version 0 (newest {latest})\n"
    assert run("upgrade") == f"airflow-retry: provider schema upgraded from version 0 to {latest}\n"
    assert run("init") == f"airflow-retry: provider schema is up to date (version {latest})\n"
    assert run("version") == f"airflow-retry: provider schema version {latest} (newest {latest})\n"

"""Versioned migrations: numbered ``NNNN_name.sql`` files, applied in order, recorded in a table.

``upgrade(conn)`` takes an advisory lock (concurrent upgrades wait for each other), reads the
version from ``retry_provider_schema_version`` (0 when the table is absent: a new database or one
created before versioning), runs every newer file in one transaction and records each. ``0001`` is
idempotent, so a database created before versioning is brought up to date without losing a row.

To change the schema, add the next numbered file here; never edit one that has been released.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from airflow_retry_provider import sql

__all__ = ["Migration", "current_version", "latest_version", "migrations", "upgrade"]

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


@dataclass(frozen=True, order=True)
class Migration:
    """One numbered file of this package.

    :param version: its number (1, 2, ...).
    :param name: the rest of its file name, e.g. ``initial``.
    :param filename: e.g. ``0001_initial.sql``.
    """

    version: int
    name: str
    filename: str

    def sql(self) -> str:
        """The file's DDL."""
        return sql.read(__name__, self.filename)


def migrations() -> tuple[Migration, ...]:
    """Every migration, in order; a gap or a repeated number is an error naming the files."""
    found = sorted(
        Migration(int(match[1]), match[2], match[0])
        for entry in resources.files(__name__).iterdir()
        if (match := _FILE.match(entry.name))
    )
    numbers = [migration.version for migration in found]
    if numbers != list(range(1, len(found) + 1)):
        names = [migration.filename for migration in found]
        raise RuntimeError(f"migrations must be numbered 0001, 0002, ... without gaps, found {names}")
    return tuple(found)


def latest_version() -> int:
    """The version ``upgrade`` brings a database to."""
    return len(migrations())


def current_version(conn: Any) -> int:
    """The version the database is at: 0 before the first upgrade (no DDL, no lock)."""
    cursor = conn.cursor()
    try:
        cursor.execute(sql.named(__name__)["version_table_exists"])
        row = cursor.fetchone()
        if not row[0]:
            return 0
        cursor.execute(sql.named(__name__)["current_version"])
        return int(cursor.fetchone()[0])
    finally:
        cursor.close()


def upgrade(conn: Any, *, commit: bool = True) -> tuple[int, int]:
    """Apply the pending migrations in one transaction; return the version before and after.

    A no-op on a database at the newest version. Safe to run concurrently: the second caller waits
    on the lock, then finds nothing to do.

    :param conn: an open DB-API connection (psycopg 3 or psycopg2), not in autocommit mode.
    :param commit: commit at the end; ``False`` leaves it to the caller's transaction.
    """
    queries = sql.named(__name__)
    cursor = conn.cursor()
    try:
        cursor.execute(queries["lock"])
        cursor.execute(queries["create_version_table"])
        cursor.execute(queries["current_version"])
        before = int(cursor.fetchone()[0])
        for migration in migrations()[before:]:
            cursor.execute(migration.sql())
            cursor.execute(queries["record_version"], {"version": migration.version, "name": migration.name})
    finally:
        cursor.close()
    if commit:
        conn.commit()
    return before, max(before, latest_version())

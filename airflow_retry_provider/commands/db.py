"""``airflow-retry db upgrade`` (alias ``init``) and ``db current``: the provider's schema version.

``db current`` exits 5 (as any command on a schema that is behind) when the database is older than
this release, so a script or a Helm hook can check it before starting workers.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import closing

from airflow_retry_provider.commands import EXIT_SCHEMA_BEHIND, add_database_flags, database_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    db = subparsers.add_parser("db", help="manage the provider's tables")
    db_sub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = db_sub.add_parser(
        "upgrade",
        aliases=["init"],
        help="apply the pending schema migrations (creates the tables on a new database; safe twice)",
    )
    upgrade.set_defaults(func=_upgrade)
    current = db_sub.add_parser(
        "current",
        aliases=["version"],
        help="print the schema version the database is at, and the newest; exit 5 when it is behind",
    )
    current.set_defaults(func=_current)
    for parser in (upgrade, current):
        add_database_flags(parser)


def _upgrade(args: argparse.Namespace) -> int:
    from airflow_retry_provider.dlq import apply_schema

    with closing(database_from_args(args).connect()) as conn:
        before, after = apply_schema(conn)
    if before == after:
        print(f"airflow-retry: provider schema is up to date (version {after})")
    else:
        print(f"airflow-retry: provider schema upgraded from version {before} to {after}")
    return 0


def _current(args: argparse.Namespace) -> int:
    from airflow_retry_provider import migrations

    with closing(database_from_args(args).connect()) as conn:
        version = migrations.current_version(conn)
    latest = migrations.latest_version()
    print(f"airflow-retry: provider schema version {version} (newest {latest})")
    if version < latest:
        print("airflow-retry: the schema is behind: run `airflow-retry db upgrade`", file=sys.stderr)
        return EXIT_SCHEMA_BEHIND
    return 0

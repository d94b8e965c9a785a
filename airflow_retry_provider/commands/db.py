"""``airflow-retry db upgrade`` (alias ``init``) and ``db current``: the provider's schema version."""

from __future__ import annotations

import argparse
from contextlib import closing

from airflow_retry_provider.commands import add_database_flags, database_from_args


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
        "current", aliases=["version"], help="print the schema version the database is at, and the newest"
    )
    current.set_defaults(func=_current)
    for parser in (upgrade, current):
        add_database_flags(parser)


def _upgrade(args: argparse.Namespace) -> int:
    from airflow_retry_provider.dlq.schema import apply_schema

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
    print(f"airflow-retry: provider schema version {version} (newest {migrations.latest_version()})")
    return 0

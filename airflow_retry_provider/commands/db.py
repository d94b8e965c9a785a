"""``airflow-retry db upgrade`` (alias ``init``) and ``db current``: the provider's schema version."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any


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
        parser.add_argument(
            "--conn-id",
            default="retry_provider_default",
            help="Airflow connection of the provider's database (default: %(default)s)",
        )
        parser.add_argument("--dsn", help="a postgresql:// URI to use instead of the Airflow connection")


@contextmanager
def _connect(args: argparse.Namespace) -> Iterator[Any]:
    """A connection to the provider's database, from ``--dsn`` or the Airflow connection."""
    if args.dsn:
        import psycopg

        with psycopg.connect(args.dsn) as conn:
            yield conn
    else:
        from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

        with closing(RetryProviderHook(postgres_conn_id=args.conn_id).get_conn()) as conn:
            yield conn


def _upgrade(args: argparse.Namespace) -> int:
    from airflow_retry_provider.dlq.schema import apply_schema

    with _connect(args) as conn:
        before, after = apply_schema(conn)
    if before == after:
        print(f"airflow-retry: provider schema is up to date (version {after})")
    else:
        print(f"airflow-retry: provider schema upgraded from version {before} to {after}")
    return 0


def _current(args: argparse.Namespace) -> int:
    from airflow_retry_provider import migrations

    with _connect(args) as conn:
        version = migrations.current_version(conn)
    print(f"airflow-retry: provider schema version {version} (newest {migrations.latest_version()})")
    return 0

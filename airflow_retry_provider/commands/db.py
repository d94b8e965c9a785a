"""``airflow-retry db init``: create the provider's tables (idempotent)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    db = subparsers.add_parser("db", help="manage the provider's tables")
    db_sub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    init = db_sub.add_parser("init", help="create the provider's tables if they do not exist (safe twice)")
    init.add_argument(
        "--conn-id",
        default="retry_provider_default",
        help="Airflow connection of the provider's database (default: %(default)s)",
    )
    init.add_argument("--dsn", help="a postgresql:// URI to use instead of the Airflow connection")
    init.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    if args.dsn:
        import psycopg

        from airflow_retry_provider.dlq.schema import apply_schema

        with psycopg.connect(args.dsn) as conn:
            apply_schema(conn)
    else:
        from airflow_retry_provider.hooks.dead_letter import DeadLetterHook

        DeadLetterHook(postgres_conn_id=args.conn_id).init_schema()
    print("airflow-retry: provider schema is up to date")
    return 0

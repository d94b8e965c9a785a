"""``airflow-retry retention --dry-run | --yes``: count the rows past their age, or delete them now.

The ages come from the ``[retry_provider] retention_*`` settings (see docs/CONFIGURATION.md). Deleting
asks for ``--yes``: without it or ``--dry-run`` the command refuses (exit 2) and deletes nothing.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from airflow_retry_provider.commands import add_database_flags, database_from_args

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``retention`` to an ``add_subparsers()`` object."""
    parser = subparsers.add_parser(
        "retention",
        help="delete old letters, reports, events, ledger rows and alerts (or count them)",
        description="Retention as the retry_provider_retention DAG runs it: --dry-run counts, --yes deletes.",
    )
    add_database_flags(parser)
    parser.add_argument("--dry-run", action="store_true", help="print what would be deleted; delete nothing")
    parser.add_argument("--yes", action="store_true", help="delete the rows past their age now")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run_retention_command)


def run_retention_command(args: argparse.Namespace) -> int:
    from airflow_retry_provider.commands import UsageError
    from airflow_retry_provider.maintenance.retention import Retention, RetentionPolicy
    from airflow_retry_provider.reconciliation.report import default_output_dir

    if not (args.dry_run or args.yes):
        raise UsageError(
            "retention deletes rows: pass --dry-run to count them first, or --yes to delete them now"
        )
    try:
        policy = RetentionPolicy.from_settings()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    retention = Retention(database_from_args(args), policy, default_output_dir())
    report = retention.dry_run() if args.dry_run else retention.run()
    if args.json:
        print(json.dumps(report.to_json(), sort_keys=True))
    else:
        for kind, cutoff in report.cutoffs.items():
            print(f"{kind}: older than {cutoff.isoformat()}")
        print("\n".join(report.lines()))
    return 0

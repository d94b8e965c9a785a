"""The ``airflow-retry`` console script.

Each group of subcommands lives in ``airflow_retry_provider.commands.<name>`` and exposes
``register(subparsers)``; the module is imported only when listed here, and heavy imports
happen inside the command functions so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from airflow_retry_provider import __version__

COMMAND_MODULES = (
    "airflow_retry_provider.commands.policy",
    "airflow_retry_provider.commands.db",
    "airflow_retry_provider.commands.demo",
    "airflow_retry_provider.commands.reconcile",
    "airflow_retry_provider.commands.dlq",
    "airflow_retry_provider.commands.pools",
)


class UsageError(Exception):
    """Bad input from the user: printed as one line on stderr, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="airflow-retry",
        description="Classified retries, dead letters and reconciliation for Apache Airflow.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"airflow-retry: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

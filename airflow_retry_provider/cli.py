"""The ``airflow-retry`` console script.

Exit codes (``commands.EXIT_CODES``, printed by every command's ``--help``): 0 done, 1 nothing
matched (an empty answer, which says so), 2 bad input or missing configuration, 3 a service down
(the database, Airflow's API), 4 an unexpected error, 5 the provider's schema is missing or older
than this release (run ``airflow-retry db upgrade``). Every failure is one line on stderr; the
traceback only with ``--debug`` (anywhere on the command line), which keeps the exit code.

Connections are looked up as Airflow's own CLI does (``airflow connections get``): the secrets
backend configured in ``[secrets] backend``, then ``AIRFLOW_CONN_*`` environment variables, then
Airflow's metadata database (when this host's Airflow is configured to reach it).

Each group of subcommands lives in ``airflow_retry_provider.commands.<name>`` and exposes
``register(subparsers)``; the module is imported only when listed here, and heavy imports
happen inside the command functions so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from airflow_retry_provider import __version__
from airflow_retry_provider.commands import (
    EXIT_CODES,
    EXIT_SCHEMA_BEHIND,
    Unavailable,
    UsageError,
    where_connections_are_read,
)
from airflow_retry_provider.policy import redact

__all__ = ["COMMAND_MODULES", "EXIT_SCHEMA_BEHIND", "Unavailable", "UsageError", "build_parser", "main"]

PROG = "airflow-retry"
# Airflow's SDK reads connections from its metadata database only in a process that says it is a
# server (its own `airflow connections get` sets this); a console script outside a task is one.
_PROCESS_CONTEXT = "_AIRFLOW_PROCESS_CONTEXT"

COMMAND_MODULES = (
    "airflow_retry_provider.commands.policy",
    "airflow_retry_provider.commands.db",
    "airflow_retry_provider.commands.dags",
    "airflow_retry_provider.commands.demo",
    "airflow_retry_provider.commands.reconcile",
    "airflow_retry_provider.commands.dlq",
    "airflow_retry_provider.commands.pools",
    "airflow_retry_provider.commands.breaker",
    "airflow_retry_provider.commands.retention",
    "airflow_retry_provider.commands.tries",
    "airflow_retry_provider.commands.deliveries",
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag as any bad input: a UsageError (one line, exit code 2); every
    command's ``--help`` ends with the exit codes (``EXIT_CODES``), one convention for all."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        epilog = kwargs.get("epilog")
        kwargs["epilog"] = f"{epilog}\n\n{EXIT_CODES}" if epilog else EXIT_CODES
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        raise UsageError(f"{command}: {message}" if command else message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Classified retries, dead letters and reconciliation for Apache Airflow.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    args_list = [a for a in args_list if a != "--debug"]
    parser = build_parser()
    args = None
    context_before = os.environ.get(_PROCESS_CONTEXT)
    if context_before is None:
        os.environ[_PROCESS_CONTEXT] = "server"
    try:
        args = parser.parse_args(args_list)
        args.console = argv is None  # the console script's own process (commands.logs_to_stderr)
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        return int(args.func(args) or 0)
    except UsageError as exc:
        return _fail(2, str(exc))
    except Unavailable as exc:
        return _fail(3, str(exc))
    except Exception as exc:
        if debug:  # the traceback, then the same line and exit code as without --debug
            traceback.print_exc()
        code, message = explain(exc, getattr(args, "conn_id", None) or "retry_provider_default")
        return _fail(code, message)
    finally:
        if context_before is None:
            os.environ.pop(_PROCESS_CONTEXT, None)


def explain(exc: Exception, conn_id: str) -> tuple[int, str]:
    """The exit code and the one line for an error a command did not handle itself."""
    name = type(exc).__name__
    first_line = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else name)[:300]
    if name == "AirflowNotFoundException":
        return 2, (
            f"no database connection {conn_id!r} (looked in {where_connections_are_read(conn_id)}): "
            f"add it with `airflow connections add {conn_id} --conn-uri postgresql://user:password@host:5432/db`, "
            f"set AIRFLOW_CONN_{conn_id.upper()}=postgresql://..., or pass --dsn postgresql://..."
        )
    if name in _SCHEMA_BEHIND and type(exc).__module__.startswith(("psycopg", "sqlalchemy")):
        return EXIT_SCHEMA_BEHIND, (
            f"the provider's tables are missing or older than this release ({first_line}): "
            "run `airflow-retry db upgrade`"
        )
    if name == "OperationalError" and type(exc).__module__.startswith(("psycopg", "sqlalchemy")):
        return 3, f"database unavailable: {first_line}"
    if name == "AirflowApiError" and getattr(exc, "status_code", 0) is None:
        return 3, f"Airflow's API unavailable: {first_line}"
    return 4, f"unexpected error: {name}: {first_line} (run with --debug for the traceback)"


# what PostgreSQL answers when a statement names a table, column or function a migration adds
_SCHEMA_BEHIND = frozenset({"UndefinedTable", "UndefinedColumn", "UndefinedFunction", "UndefinedObject"})


def _fail(code: int, message: str) -> int:
    print(f"airflow-retry: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())

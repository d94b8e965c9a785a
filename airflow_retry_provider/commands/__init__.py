"""The ``airflow-retry`` subcommands, one module per group (registered in ``cli.py``), and what they share:
the usage error, the provider database's flags and the database they name."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_retry_provider.database import ProviderDatabase
    from airflow_retry_provider.hooks.airflow_api import AirflowApi


EXIT_EMPTY = 1  # the answer is empty (nothing matched): the command says so
EXIT_SCHEMA_BEHIND = 5  # the provider's tables are missing or older than this release: run `db upgrade`
EXIT_CODES = (
    "Exit codes (every command): 0 done, 1 nothing matched (an empty answer, which says so), "
    "2 bad input or missing configuration, 3 a service down (the database, Airflow's API), "
    "4 an unexpected error, 5 the provider's schema is missing or older than this release "
    "(run `airflow-retry db upgrade`)."
)


class UsageError(Exception):
    """Bad input from the user: ``cli.main`` prints ``airflow-retry: <message>`` as one line on
    stderr (naming the flag or field and the value), nothing on stdout, and exits with code 2."""


class Unavailable(Exception):
    """Something the command needs did not answer (the database, Airflow's API): ``cli.main`` prints
    ``airflow-retry: <which>: <why>`` as one line on stderr and exits with code 3."""


def empty(args: argparse.Namespace, text: str) -> int:
    """An empty answer: ``text`` on stdout (on stderr under ``--json``, whose stdout is the document); EXIT_EMPTY."""
    print(text, file=sys.stderr if getattr(args, "json", False) else sys.stdout)
    return EXIT_EMPTY


def deprecated_alias(subparsers: Any, old: str, new: str, add: Any) -> None:
    """Register ``old``, a top-level name of 0.1.0, as an alias of ``airflow-retry <new>`` that warns.

    ``add(subparsers, old)`` builds the parser exactly as the new command's; the alias is left out
    of ``--help`` and prints one line on stderr before it runs.
    """
    parser = add(subparsers, old, None)
    run = parser.get_default("func")

    def warn_then_run(args: argparse.Namespace) -> Any:
        print(f"airflow-retry: '{old}' is deprecated: use 'airflow-retry {new}'", file=sys.stderr)
        return run(args)

    parser.set_defaults(func=warn_then_run)


def where_connections_are_read(conn_id: str) -> str:
    """The places Airflow reads a connection from in this process, in its order, for an error line."""
    try:
        from airflow.sdk.execution_time.supervisor import ensure_secrets_backend_loaded

        backends = ensure_secrets_backend_loaded()
    except Exception:  # no Airflow configuration to read: say what is certain
        return f"the environment variable AIRFLOW_CONN_{conn_id.upper()}"
    places = []
    for backend in backends:
        kind = type(backend).__name__
        if kind == "EnvironmentVariablesBackend":
            places.append(f"the environment variable AIRFLOW_CONN_{conn_id.upper()}")
        elif kind == "MetastoreBackend":
            places.append("Airflow's metadata database ([database] sql_alchemy_conn)")
        else:
            places.append(f"the secrets backend {kind}")
    return ", ".join(places)


def logs_to_stderr(args: argparse.Namespace) -> None:
    """Airflow's log lines (the provider's included) go to stderr from here on: stdout carries only
    what a command prints (its table or its JSON), so ``--json | jq`` always parses.

    Only in the console script's own process (``args.console``, set by ``cli.main`` when it reads
    ``sys.argv``): ``main([...])`` called inside another program (a test, a task) leaves that
    program's logging as it is.
    """
    if not getattr(args, "console", False):
        return
    from airflow.sdk.log import configure_logging

    # the process's own stderr, never a replacement of it that may be closed first (a test's capture)
    configure_logging(output=sys.__stderr__ or sys.stderr)


def add_database_flags(parser: argparse.ArgumentParser) -> None:
    """``--dsn`` and ``--conn-id`` (default ``retry_provider_default``)."""
    parser.add_argument("--dsn", help="a postgresql:// URI instead of the Airflow connection")
    parser.add_argument(
        "--conn-id", default="retry_provider_default", help="Airflow connection of the provider's database"
    )


def database_from_args(args: argparse.Namespace) -> ProviderDatabase:
    """The provider's database on ``--dsn`` or the ``--conn-id`` connection; a bad DSN is a usage error."""
    from airflow_retry_provider.database import ProviderDatabase

    if args.dsn:
        return ProviderDatabase.from_dsn(libpq_dsn(args.dsn))
    logs_to_stderr(args)  # the connection is Airflow's: Airflow is imported, and may log
    return ProviderDatabase.from_conn_id(args.conn_id)


def libpq_dsn(dsn: str) -> str:
    """``dsn`` as libpq reads it: a SQLAlchemy URL's driver (``postgresql+psycopg2://``) is dropped;
    any other scheme is a usage error that shows the scheme typed (never the password)."""
    scheme, sep, rest = dsn.partition("://")
    base = scheme.split("+", 1)[0]
    example = "postgresql://user:password@host:5432/db"
    if not sep:
        raise UsageError(f"--dsn: not a URI (no scheme://): expected {example}")
    if base not in ("postgresql", "postgres"):
        raise UsageError(f"--dsn: the scheme {scheme[:40]!r} is not postgresql: expected {example}")
    return f"{base}://{rest}"


def add_api_flags(parser: argparse.ArgumentParser) -> None:
    """``--api-url/--api-user/--api-password``: Airflow's REST API (else ``AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API``)."""
    parser.add_argument(
        "--api-url", help="Airflow's base URL (default from AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API)"
    )
    parser.add_argument("--api-user", help="Airflow user for the REST API")
    parser.add_argument("--api-password", help="its password (prefer the connection variable)")


def api_client(args: argparse.Namespace, sign_in: bool = False) -> AirflowApi:
    """Airflow's API as the user of :func:`add_api_flags` (a UsageError when none is configured).

    With ``sign_in`` the token is fetched at once: no answer at all is :class:`Unavailable` (exit 3),
    a refused sign-in a :class:`UsageError` naming the user (exit 2), before the command touches anything.
    """
    from airflow_retry_provider.hooks.airflow_api import (
        API_CONN_ENV,
        AirflowApi,
        AirflowApiError,
        ApiCredentials,
    )

    logs_to_stderr(args)
    try:
        credentials = ApiCredentials.resolve(args.api_url, args.api_user, args.api_password)
    except ValueError as exc:
        if args.api_url or os.environ.get(API_CONN_ENV):
            raise UsageError(str(exc)) from None
        credentials = _api_connection_from_airflow(args, str(exc))
    api = AirflowApi(credentials)
    if sign_in:
        try:
            api.sign_in()
        except AirflowApiError as exc:
            api.close()
            if exc.status_code is None:
                raise Unavailable(f"Airflow's API unavailable: {exc}") from None
            raise UsageError(f"--api-user: {exc}") from None
    return api


def _api_connection_from_airflow(args: argparse.Namespace, missing: str) -> Any:
    """The connection ``retry_provider_airflow_api`` where Airflow keeps it (a secrets backend, its
    metadata database); a UsageError naming every place looked in when it is nowhere."""
    from airflow_retry_provider.hooks.airflow_api import API_CONN_ID, credentials_from_airflow

    try:
        found = credentials_from_airflow()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:
        if type(exc).__name__ != "AirflowNotFoundException":
            raise
        raise UsageError(
            f"{missing}; no connection {API_CONN_ID!r} either (looked in {where_connections_are_read(API_CONN_ID)})"
        ) from None
    return replace(
        found, username=args.api_user or found.username, password=args.api_password or found.password
    )

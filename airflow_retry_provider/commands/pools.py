"""``airflow-retry pools sync``: one Airflow pool per declared dependency, created or updated; reports drift."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    pools = subparsers.add_parser("pools", help="Airflow pools from the dependency map")
    pools_sub = pools.add_subparsers(dest="pools_command", metavar="ACTION", required=True)
    sync = pools_sub.add_parser(
        "sync", help="create or update one pool per dependency through the REST API (safe twice)"
    )
    sync.add_argument(
        "--file",
        help="the dependency map (YAML); default [retry_provider] dependencies_file",
    )
    sync.add_argument("--api-url", help="Airflow's base URL, e.g. http://localhost:8080")
    sync.add_argument("--api-user", help="user for POST /auth/token")
    sync.add_argument("--api-password", help="password for POST /auth/token")
    sync.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    sync.set_defaults(func=_sync)


def _sync(args: argparse.Namespace) -> int:
    from airflow_retry_provider.capacity import load_dependencies, sync_pools
    from airflow_retry_provider.commands import Unavailable, UsageError
    from airflow_retry_provider.hooks.airflow_api import AirflowApiError, ApiCredentials

    if args.file is None:
        from airflow_retry_provider import settings
        from airflow_retry_provider.capacity import example_dependencies_path

        if not settings.dependencies_file():
            raise UsageError(
                "--file: missing, and [retry_provider] dependencies_file "
                "(AIRFLOW__RETRY_PROVIDER__DEPENDENCIES_FILE) is not set; the wheel ships an example "
                f"to copy: {example_dependencies_path()}"
            )
    try:
        dependencies = load_dependencies(args.file)
        credentials = ApiCredentials.resolve(args.api_url, args.api_user, args.api_password)
        changes = sync_pools(dependencies, credentials, dry_run=args.dry_run)
    except ValueError as exc:  # CapacityError is a ValueError
        cause = exc.__cause__
        if isinstance(cause, AirflowApiError) and cause.status_code is None:  # no answer at all
            raise Unavailable(f"Airflow's API unavailable: {exc}") from exc
        raise UsageError(str(exc)) from exc
    prefix = "would " if args.dry_run else ""
    for change in changes:
        text = change.describe()
        print(text if change.action == "ok" else f"{prefix}{text}")
    drifted = sum(1 for change in changes if change.action != "ok")
    verb = "would change" if args.dry_run else "changed"
    print(f"airflow-retry: {len(changes)} pools declared, {drifted} {verb}, {len(changes) - drifted} in sync")
    return 0

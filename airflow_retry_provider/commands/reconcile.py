"""``airflow-retry reconcile gaps|health``: the pure reconciliation rules on JSON files.

0.1.0's ``airflow-retry reconcile --input ...`` (now ``reconcile gaps``) and top-level ``health``
(now ``reconcile health``) remain as aliases that warn.

Both read a JSON document from ``--input`` (``-`` for stdin) and print JSON with sorted keys and
UTC timestamps. Bad input raises :class:`~airflow_retry_provider.commands.UsageError` with one line
naming the problem (exit code 2); findings and unhealthy connectors are not errors (exit code 0).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import timedelta
from typing import Any

__all__ = ["register", "run_health", "run_reconcile"]


def register(subparsers: Any) -> None:
    """Add the ``reconcile`` group (``gaps``, ``health``) and the old top-level ``health`` alias."""
    from airflow_retry_provider.commands import deprecated_alias

    reconcile = subparsers.add_parser(
        "reconcile",
        help="the reconciliation rules on JSON files: layer gaps, connector health",
        description="gaps: missing and stale bronze tables, silver and gold transforms; "
        "health: connector health from extraction events.",
    )
    # 0.1.0's `reconcile --input PATH [--workspace W]`, kept: an alias of `reconcile gaps` that warns
    reconcile.add_argument("--input", metavar="PATH", help=argparse.SUPPRESS)
    reconcile.add_argument("--workspace", metavar="W", help=argparse.SUPPRESS)
    reconcile.set_defaults(func=_legacy_reconcile)
    actions = reconcile.add_subparsers(dest="reconcile_command", metavar="ACTION")
    _add_gaps(actions, "gaps", "report gaps between the bronze, silver and gold layers")
    _add_health(actions, "health", "summarise connector health from extraction events")
    deprecated_alias(subparsers, "health", "reconcile health", _add_health)


def _legacy_reconcile(args: argparse.Namespace) -> int:
    from airflow_retry_provider.commands import UsageError

    if args.input is None:
        raise UsageError("reconcile: choose an action: gaps or health (see airflow-retry reconcile --help)")
    print(
        "airflow-retry: 'reconcile --input' is deprecated: use 'airflow-retry reconcile gaps'",
        file=sys.stderr,
    )
    return run_reconcile(args)


def _add_gaps(subparsers: Any, name: str, help_text: str | None) -> argparse.ArgumentParser:
    gaps = subparsers.add_parser(
        name,
        help=help_text,
        description="Report missing and stale bronze tables, silver and gold transforms from a snapshot.",
    )
    gaps.add_argument(
        "--input", required=True, metavar="PATH", help="snapshot JSON file, or - for standard input"
    )
    gaps.add_argument("--workspace", metavar="W", help="only this workspace's findings")
    gaps.set_defaults(func=run_reconcile)
    return gaps


def _add_health(subparsers: Any, name: str, help_text: str | None) -> argparse.ArgumentParser:
    health = subparsers.add_parser(
        name,
        description="Runs, error rate, p50/p95 duration, freshness and status per connector.",
        **({"help": help_text} if help_text else {}),
    )
    health.add_argument(
        "--input", required=True, metavar="PATH", help="events JSON file, or - for standard input"
    )
    health.add_argument(
        "--as-of", required=True, metavar="TS", help="end of the window, ISO 8601 with offset"
    )
    health.add_argument(
        "--window-hours", default="24", metavar="H", help="window length in hours (default: 24)"
    )
    health.set_defaults(func=run_health)
    return health


def run_reconcile(args: argparse.Namespace) -> int:
    """Print ``{"findings": [...]}`` for the snapshot in ``args.input``."""
    from airflow_retry_provider.commands import UsageError
    from airflow_retry_provider.reconciliation import Snapshot, SnapshotError, find_gaps

    name, document = _load(args.input)
    try:
        snapshot = Snapshot.from_dict(document)
    except SnapshotError as exc:
        raise UsageError(f"{name}: {exc}") from None
    findings = find_gaps(snapshot, workspace=args.workspace)
    _emit({"findings": [f.to_dict() for f in findings]})
    return 0


def run_health(args: argparse.Namespace) -> int:
    """Print ``{"connectors": [...]}`` for the events in ``args.input``."""
    from airflow_retry_provider.commands import UsageError
    from airflow_retry_provider.reconciliation import (
        EventLog,
        SnapshotError,
        connector_health,
        parse_timestamp,
    )

    try:
        as_of = parse_timestamp(args.as_of, "--as-of")
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None
    window = _window(args.window_hours)
    name, document = _load(args.input)
    try:
        log = EventLog.from_dict(document)
    except SnapshotError as exc:
        raise UsageError(f"{name}: {exc}") from None
    try:
        report = connector_health(log.events, as_of, window=window, expected=log.connectors)
    except OverflowError:
        raise UsageError(f"{name}: an event's started_at + duration_ms is out of range") from None
    _emit({"connectors": [c.to_dict() for c in report]})
    return 0


def _window(text: str) -> timedelta:
    from airflow_retry_provider.commands import UsageError

    try:
        hours = float(text)
    except ValueError:
        hours = math.nan
    if not math.isfinite(hours) or hours <= 0:
        raise UsageError(f"--window-hours: {text!r} is not a positive number of hours")
    return timedelta(hours=hours)


def _load(path: str) -> tuple[str, Any]:
    """Read and decode the JSON document at ``path`` (``-`` is stdin); return its display name too."""
    from airflow_retry_provider.commands import UsageError

    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{name}: not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        return name, json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{name}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def _emit(document: dict[str, Any]) -> None:
    print(json.dumps(document, sort_keys=True, indent=2))

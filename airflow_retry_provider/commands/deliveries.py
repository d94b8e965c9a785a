"""``airflow-retry deliveries``: today's deliveries a dead letter blocks or blocked, on track / at risk / lost (issue 48)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone


def register(subparsers: argparse._SubParsersAction) -> None:
    from airflow_retry_provider.commands import add_database_flags

    deliveries = subparsers.add_parser(
        "deliveries",
        help="today's deliveries with a deadline that a dead letter blocks: on track, at risk or lost, "
        "the latest replay time and the blocking letters (docs/DEAD_LETTERS.md in the repository)",
        description=(
            "Today's deliveries (a task's delivery deadline, from its retry profile or its params) that a "
            "dead letter blocks or blocked: on track, at risk or lost, the latest time a replay can still "
            "meet the deadline, and each blocking letter with the time to replay it by."
        ),
    )
    deliveries.add_argument("--json", action="store_true", help="print JSON")
    add_database_flags(deliveries)
    deliveries.set_defaults(func=_list)


def _list(args: argparse.Namespace) -> int:
    from airflow_retry_provider.commands import database_from_args, empty
    from airflow_retry_provider.dlq import todays_deliveries

    now = datetime.now(timezone.utc)
    found = todays_deliveries(database_from_args(args), now)
    if args.json:
        document = {"as_of": now.isoformat(), "deliveries": [d.to_json() for d in found]}
        print(json.dumps(document, sort_keys=True, indent=2))
    if not found:
        return empty(args, "no delivery due today is blocked by a dead letter")
    if args.json:
        return 0
    for delivery in found:
        standing = delivery.standing
        print(
            f"{delivery.name}: {standing.status}; due {delivery.deadline:%Y-%m-%d %H:%M %Z}; "
            f"latest replay {standing.latest_replay:%Y-%m-%d %H:%M %Z}; {standing.reason}"
        )
        for letter in delivery.letters:
            print(
                f"  letter {letter.letter_id} ({letter.status}) {letter.dag_id}.{letter.task_id} "
                f"run {letter.run_id}: replay by {letter.latest_replay:%Y-%m-%d %H:%M %Z}"
            )
    return 0

"""``airflow-retry tries``: every try of one task instance, as the Retries tab shows it.

Reads the plugin's JSON API (``GET /retry-provider/api/tries``) on Airflow's api-server, with the
credentials of the other commands that call Airflow (``--api-url/--api-user/--api-password`` or
``AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API``). Exit codes: 0 shown, 1 no such task instance or
Airflow refused, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from airflow_retry_provider.commands import UsageError, add_api_flags, api_client

__all__ = ["register"]

TRIES_PATH = "/retry-provider/api/tries"


def register(subparsers: Any) -> None:
    """Add ``tries`` to an ``add_subparsers()`` object."""
    tries = subparsers.add_parser(
        "tries",
        help="every try of a task instance: class, attempt spent or not, delay, reason, rule, next try and the schedule ahead",
        description="A task instance's tries from the Retries tab's API. Exit 0 ok, 1 not found, 2 bad input.",
    )
    tries.add_argument("--dag", required=True, help="DAG id")
    tries.add_argument("--run", required=True, help="run id")
    tries.add_argument("--task", required=True, help="task id")
    tries.add_argument("--map-index", default="-1", metavar="N", help="map index (default -1: not mapped)")
    tries.add_argument("--json", action="store_true", help="print JSON")
    add_api_flags(tries)
    tries.set_defaults(func=run_tries)


def _map_index(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -2
    if value < -1:
        raise UsageError(f"--map-index: {text!r} is not an integer >= -1")
    return value


def run_tries(args: argparse.Namespace) -> int:
    from airflow_retry_provider.hooks.airflow_api import AirflowApiError

    params = {
        "dag_id": args.dag,
        "run_id": args.run,
        "task_id": args.task,
        "map_index": _map_index(args.map_index),
    }
    try:
        with api_client(args) as api:
            history = api.request("GET", TRIES_PATH, params=params)
    except AirflowApiError as exc:
        print(f"airflow-retry: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(history, sort_keys=True, indent=2))
    else:
        print(render(history))
    return 0


def _cell(value: Any) -> str:
    return "-" if value in (None, "") else str(value)


def _spent(spent: bool | None) -> str:
    return {True: "  attempt spent", False: "  did not spend an attempt", None: ""}[spent]


def render(history: dict[str, Any]) -> str:
    """The tries as text: one line a try, then the next try and the schedule ahead."""
    label = (
        history["task_id"] if history["map_index"] == -1 else f"{history['task_id']}[{history['map_index']}]"
    )
    lines = [
        f"{history['dag_id']} {history['run_id']} {label}: {_cell(history['state'])}, try {history['try_number']}"
    ]
    for t in history["tries"]:
        decision = t["decision"]
        what = f"{decision['failure_class']}/{decision['category']}" if decision["failure_class"] else None
        delay = f"{t['delay_seconds']:g}s" if t["delay_seconds"] is not None else None
        lines.append(
            f"  try {t['try_number']}  {_cell(t['state'])}  {_cell(t['start_date'])} -> {_cell(t['end_date'])}"
            f"  {_cell(what)}{_spent(t.get('spent_attempt'))}  rule {_cell(decision['rule'])}"
            f"  delay {_cell(delay)}  {_cell(t['reason'])}"
        )
    if history["next_try_at"]:
        lines.append(f"next try starts at {history['next_try_at']}")
    schedule = history.get("schedule")
    if schedule and "error" in schedule:
        lines.append(f"schedule: {schedule['error']}")
    elif schedule:
        lines.append(f"schedule ahead (profile {schedule['profile']}, until the {schedule['until']}):")
        for planned in schedule["attempts"]:
            lines.append(
                f"  attempt {planned['attempt']} at +{planned['offset_seconds']:g}s  {_cell(planned['at'])}"
            )
    return "\n".join(lines)

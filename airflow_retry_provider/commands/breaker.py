"""``airflow-retry breaker list|open|close|auto``: each dependency's circuit breaker, and forcing it (recorded)."""

from __future__ import annotations

import argparse
import getpass


def register(subparsers: argparse._SubParsersAction) -> None:
    from airflow_retry_provider.commands import add_database_flags

    breaker = subparsers.add_parser(
        "breaker", help="the circuit breaker of each dependency (docs/BREAKER.md in the repository)"
    )
    actions = breaker.add_subparsers(dest="breaker_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="each dependency's breaker: state, held tasks, recent failures")
    add_database_flags(listing)
    listing.add_argument("--history", metavar="DEPENDENCY", help="also print this dependency's transitions")
    listing.set_defaults(func=_list)
    for name, state, text in (
        ("open", "open", "force the breaker open: tasks on the dependency are held (a planned outage)"),
        ("close", "closed", "force the breaker closed: tasks run whatever the window says"),
        ("auto", None, "hand the breaker back to its automatic state"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("dependency", help="the dependency's name in the map")
        action.add_argument("--reason", required=True, help="why (recorded with your name)")
        action.add_argument("--actor", default=None, help="who (default: the login name)")
        add_database_flags(action)
        action.set_defaults(func=_force, state=state)


def _store(args: argparse.Namespace):
    from airflow_retry_provider.breaker.store import BreakerStore
    from airflow_retry_provider.commands import database_from_args

    return BreakerStore(database_from_args(args))


def _force(args: argparse.Namespace) -> int:
    from airflow_retry_provider.commands import UsageError
    from airflow_retry_provider.policy.text import storable

    for flag, value in (
        ("dependency", args.dependency),
        ("--reason", args.reason),
        ("--actor", args.actor or ""),
    ):
        if storable(value) != value:
            raise UsageError(f"{flag}: {value!r} holds a character the database cannot store")
    if not args.reason.strip():
        raise UsageError("--reason: say why the breaker is forced (it is recorded)")
    actor = f"user:{args.actor or getpass.getuser()}"
    breaker = _store(args).force(args.dependency, args.state, actor, args.reason.strip())
    forced = f" (forced {breaker.forced})" if breaker.forced else ""
    print(f"{args.dependency}: {breaker.status}{forced}")
    return 0


def _list(args: argparse.Namespace) -> int:
    store = _store(args)
    statuses = store.statuses()
    if not statuses:
        print("no breaker has been used yet")
    for status in statuses:
        b = status.breaker
        forced = f", forced {b.forced}" if b.forced else ""
        since = f", open since {b.opened_at:%Y-%m-%d %H:%M:%S %Z}" if b.opened_at else ""
        print(
            f"{status.dependency}: {b.status}{forced}{since}; {status.held} held; "
            f"{status.failures_10m} failures in {status.calls_10m} calls (10 min)"
        )
    if args.history:
        for event in store.events(args.history):
            print(
                f"  {event.at:%Y-%m-%d %H:%M:%S} {event.from_status} -> {event.to_status} by {event.actor}: {event.reason}"
            )
    return 0

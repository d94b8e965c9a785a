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
        action.add_argument(
            "--file",
            help="the dependency map (YAML) the name must be in; default [retry_provider] dependencies_file",
        )
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
    from airflow_retry_provider.breaker.store import state_words

    actor = f"user:{args.actor or getpass.getuser()}"
    store = _store(args)
    _check_known(args, store)
    breaker = store.force(args.dependency, args.state, actor, args.reason.strip())
    print(f"{args.dependency}: {state_words(breaker)}")
    return 0


def _check_known(args: argparse.Namespace, store) -> None:
    """A name in the dependency map (``--file`` or ``[retry_provider] dependencies_file``) or with a
    breaker already; else a usage error listing the known names (a misspelling would force a breaker
    no task asks)."""
    from airflow_retry_provider import settings
    from airflow_retry_provider.capacity import load_dependencies
    from airflow_retry_provider.commands import UsageError

    used = {status.dependency for status in store.statuses()}
    if args.dependency in used and args.file is None:
        return
    path = args.file or settings.dependencies_file() or None
    try:
        declared = set(load_dependencies(path).dependencies) if path else set()
    except ValueError as exc:  # CapacityError: unreadable or invalid map
        raise UsageError(f"--file: {exc}") from exc
    if args.dependency in declared | used:
        return
    known = ", ".join(sorted(declared | used)) or "none"
    where = (
        f"in the dependency map {path}"
        if path
        else "with a breaker, and no dependency map is set (--file, or [retry_provider] dependencies_file)"
    )
    raise UsageError(
        f"dependency: unknown dependency {args.dependency!r} {where}; known dependencies: {known}"
    )


def _list(args: argparse.Namespace) -> int:
    from airflow_retry_provider.breaker.store import state_words

    store = _store(args)
    statuses = store.statuses()
    if not statuses:
        from airflow_retry_provider.commands import empty

        return empty(args, "no breaker has been used yet")
    for status in statuses:
        b = status.breaker
        since = f", open since {b.opened_at:%Y-%m-%d %H:%M:%S %Z}" if b.opened_at else ""
        print(
            f"{status.dependency}: {state_words(b)}{since}; {status.held} held; "
            f"{status.failures_10m} failures in {status.calls_10m} calls (10 min)"
        )
    if args.history:
        for event in store.events(args.history):
            print(
                f"  {event.at:%Y-%m-%d %H:%M:%S} {event.from_status} -> {event.to_status} by {event.actor}: {event.reason}"
            )
    return 0

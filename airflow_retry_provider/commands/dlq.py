"""``airflow-retry dlq list|show|preview|replay|job|cancel|drive|park|dismiss|purge``: the dead-letter queue from the shell.

Exit codes: 0 done, 1 nothing matched (or nothing could be replayed), 2 bad input (one line on
stderr naming the flag and its value) or no database connection configured, 3 the database or
Airflow's API unavailable, 4 an unexpected error (``--debug`` shows its traceback). ``--actor`` is recorded as unverified, next to the
operating-system user who ran the command. The database comes from ``--dsn`` or the Airflow
connection ``--conn-id`` (default ``retry_provider_default``); Airflow's REST API (preview and
replay) from ``--api-url/--api-user/--api-password`` or ``AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow_retry_provider.commands import (
    EXIT_EMPTY,
    Unavailable,
    UsageError,
    add_api_flags,
    add_database_flags,
    api_client,
    database_from_args,
    empty,
)
from airflow_retry_provider.dlq import LETTER_FILTERS

if TYPE_CHECKING:
    from airflow_retry_provider.dlq import (
        Actor,
        DeadLetterStore,
        FilterField,
        Letter,
        LetterFilter,
        ReplayEngine,
        StoredImpact,
    )

__all__ = ["register"]

CLI_FILTERS = tuple(field for field in LETTER_FILTERS if field.flag)
"""The letter filters the CLI has a flag for (``dlq/filters.py``); each flag's value is ``args.<name>``."""
FILTER_FLAGS = tuple(field.name for field in CLI_FILTERS)


def register(subparsers: Any) -> None:
    """Add ``dlq`` and its actions to an ``add_subparsers()`` object."""
    dlq = subparsers.add_parser(
        "dlq",
        help="inspect, replay, park, dismiss and purge dead letters",
        description="The dead-letter queue in PostgreSQL.",
    )
    actions = dlq.add_subparsers(dest="dlq_command", metavar="ACTION", required=True)

    listing = actions.add_parser(
        "list",
        help="letters, newest first (keyset pages)",
        description=(
            "Letters, newest first. A DAG version a worker recorded by UUID alone is numbered through "
            "Airflow's REST API (one call per DAG, when the API connection is configured), as a sweep does; "
            "'v?' is a version Airflow does not have, or could not be asked about."
        ),
    )
    add_database_flags(listing)
    add_api_flags(listing)
    _filters(listing, default_limit="50")
    listing.add_argument(
        "--after", metavar="ID", help="continue after this letter id (the previous page's last)"
    )
    listing.add_argument("--no-header", action="store_true", help="print the rows without the header row")
    listing.set_defaults(func=run_list)

    show = actions.add_parser("show", help="one or more letters with their replays and history")
    add_database_flags(show)
    show.add_argument("--id", action="append", dest="id", metavar="ID", required=True, help="letter id")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=run_show)

    preview = actions.add_parser("preview", help="what a replay would touch (Airflow's clear dry-run)")
    add_database_flags(preview)
    add_api_flags(preview)
    _filters(preview, default_limit="1000")
    preview.add_argument("--rate", metavar="N", help="clears per minute to compute the pace")
    _task_only(preview)
    _on_latest(preview)
    preview.set_defaults(func=run_preview)

    replay = actions.add_parser(
        "replay", help="a replay job for the selected letters, driven here at the deployment's pace"
    )
    add_database_flags(replay)
    add_api_flags(replay)
    _filters(replay, default_limit="1000")
    replay.add_argument("--actor", help="who asks for the replay (required)")
    replay.add_argument("--reason", help="why it should run again (required)")
    replay.add_argument(
        "--fix-version",
        help="the code or data version that fixes the cause (required unless --run-on-latest-version)",
    )
    replay.add_argument("--processing-version", help="ask for a new work-unit identity (recorded)")
    replay.add_argument(
        "--rate",
        metavar="N",
        help="clears per minute, at most the deployment's ([retry_provider] replay_rate_per_minute, 10)",
    )
    _task_only(replay)
    _on_latest(replay)
    canary = replay.add_mutually_exclusive_group()
    canary.add_argument(
        "--canary",
        metavar="LETTER_ID",
        help="the letter cleared first, alone, whose outcome the rest wait for (default: the newest)",
    )
    canary.add_argument(
        "--no-canary", action="store_true", help="no canary: clear every letter at the pace from the start"
    )
    replay.set_defaults(func=run_replay)

    job = actions.add_parser("job", help="a replay job: status, counts, and each letter's outcome")
    add_database_flags(job)
    job.add_argument("--job", metavar="ID", required=True, help="replay job id")
    job.add_argument("--json", action="store_true", help="print JSON")
    job.set_defaults(func=run_job)

    cancel = actions.add_parser("cancel", help="cancel a replay job: letters not yet cleared stay in dlq")
    add_database_flags(cancel)
    cancel.add_argument("--job", metavar="ID", required=True, help="replay job id")
    cancel.add_argument("--actor", help="who cancels it (required)")
    cancel.add_argument("--json", action="store_true", help="print JSON")
    cancel.set_defaults(func=run_cancel)

    drive = actions.add_parser(
        "drive", help="drive queued replay jobs from this shell (any process may; one at a time per job)"
    )
    add_database_flags(drive)
    add_api_flags(drive)
    drive.add_argument(
        "--forever", action="store_true", help="keep looking for jobs (default: stop when none is left)"
    )
    drive.add_argument("--interval", metavar="S", help="seconds between looks with --forever")
    drive.set_defaults(func=run_drive)

    park = actions.add_parser("park", help="dlq -> parked: kept for inspection, replays refused")
    add_database_flags(park)
    _filters(park, default_limit="1000")
    park.add_argument("--actor", help="who parks them (required)")
    park.add_argument("--reason", default="", help="why")
    park.set_defaults(func=run_park)

    dismiss = actions.add_parser("dismiss", help="dlq or parked -> dismissed: closed without replay")
    add_database_flags(dismiss)
    _filters(dismiss, default_limit="1000")
    dismiss.add_argument("--actor", help="who closes them (required)")
    dismiss.add_argument("--reason", help="why they are closed without a replay (required)")
    dismiss.set_defaults(func=run_dismiss)

    purge = actions.add_parser("purge", help="delete resolved and dismissed letters (explicit retention)")
    add_database_flags(purge)
    purge.add_argument("--closed-before", metavar="TS", help="ISO 8601 with offset (required)")
    purge.add_argument("--json", action="store_true", help="print JSON")
    purge.set_defaults(func=run_purge)


def _on_latest(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-on-latest-version",
        action="store_true",
        help="run the cleared tasks on the DAG's latest version and bundle version (Airflow's "
        "run_on_latest_version; the replay records it as the fix version unless --fix-version names one)",
    )


def _task_only(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--task-only",
        action="store_true",
        help="clear only each letter's task instance (default: also those downstream of it that did not succeed)",
    )


def _filters(parser: argparse.ArgumentParser, default_limit: str) -> None:
    """A flag for each letter filter the CLI has (``dlq/filters.py``), ``--limit`` and ``--json``."""
    for field in CLI_FILTERS:
        flag = f"--{field.flag}"
        if field.kind == "flag":
            parser.add_argument(flag, dest=field.name, action="store_true", help=field.cli_help())
            continue
        metavar = {"date": "TS", "ids": "ID"}.get(field.kind, str(field.flag).upper())
        action = "append" if field.kind == "ids" else "store"
        parser.add_argument(flag, dest=field.name, action=action, metavar=metavar, help=field.cli_help())
    parser.add_argument("--limit", default=default_limit, metavar="N", help="at most N letters")
    parser.add_argument("--json", action="store_true", help="print JSON")


# -- parsing -------------------------------------------------------------------------------------


INT64_MAX = 2**63 - 1


def _positive(flag: str, text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"{flag}: {text!r} is not a positive integer")
    if int(text) > INT64_MAX:
        raise UsageError(f"{flag}: {text!r} is too large (at most {INT64_MAX})")
    return int(text)


def _timestamp(flag: str, text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag}: {text!r} is not an ISO 8601 timestamp") from None
    if value.tzinfo is None:
        raise UsageError(f"{flag}: {text!r} has no UTC offset (e.g. 2026-11-01T00:00:00-03:00)")
    return value


def _ids(values: list[str] | None, flag: str = "--id") -> list[int] | None:
    return [_positive(flag, v) for v in values] if values else None


def _filter(args: argparse.Namespace) -> LetterFilter:
    from airflow_retry_provider.dlq import LetterFilter

    values = {field.name: _filter_value(field, getattr(args, field.name)) for field in CLI_FILTERS}
    since, until = values.get("since"), values.get("until")
    if since and until and since >= until:
        raise UsageError(f"--until: {args.until!r} is not after --since {args.since!r}")
    return LetterFilter(**values)


def _filter_value(field: FilterField, value: Any) -> Any:
    """A filter flag's value as :class:`LetterFilter` takes it; a bad one is a UsageError naming the flag."""
    flag = f"--{field.flag}"
    if field.kind == "flag":
        return bool(value)
    if field.kind == "ids":
        return _ids(value, flag)
    if value is None:
        return None
    if field.kind == "date":
        return _timestamp(flag, value) if value else None
    if field.choices and value not in field.choices:
        raise UsageError(f"{flag}: {value!r} is not one of {', '.join(field.choices)}")
    if not value.strip():
        raise UsageError(f"{flag}: {value!r} is empty")
    return value


def _require_selection(args: argparse.Namespace, action: str) -> None:
    """Acting on the whole queue by accident is not allowed: ask for --id or a filter."""
    if not any(getattr(args, flag) for flag in FILTER_FLAGS):
        raise UsageError(f"--id: {action} needs --id or a filter (--dag, --task, --category, --status, ...)")


def _required(args: argparse.Namespace, *names: str) -> None:
    for name in names:
        value = getattr(args, name)
        if value is None or not str(value).strip():
            raise UsageError(f"--{name.replace('_', '-')}: missing (required for {args.dlq_command})")


def _engine(args: argparse.Namespace, rate: int | None = None) -> ReplayEngine:
    from airflow_retry_provider import settings
    from airflow_retry_provider.dlq import ReplayEngine

    try:
        pace = settings.replay_rate_per_minute()
        if rate is not None and rate > pace:
            raise UsageError(f"--rate: {rate} is above the deployment's pace of {pace} clears per minute")
        return ReplayEngine(_store(args), rate_per_minute=rate)
    except ValueError as exc:  # a bad [retry_provider] setting
        raise UsageError(str(exc)) from None


def _store(args: argparse.Namespace) -> DeadLetterStore:
    """The letters on the database of ``--dsn`` or ``--conn-id``."""
    from airflow_retry_provider.dlq import DeadLetterStore

    return DeadLetterStore(database_from_args(args))


def _cli_actor(name: str | None) -> Actor:
    """``--actor`` as typed (nobody verified it) and the operating-system user who typed it."""
    import getpass

    from airflow_retry_provider.dlq import Actor

    try:
        os_user: str | None = getpass.getuser()
    except (KeyError, OSError):
        os_user = None
    return Actor(name, "cli", verified=False, os_user=os_user)


def _emit_json(document: Any) -> None:
    print(json.dumps(document, sort_keys=True, indent=2, default=str))


# the columns of `dlq list`, and which are aligned to the right
COLUMNS = (
    "id",
    "status",
    "replays",
    "filed",
    "dag/task",
    "run",
    "class/category",
    "fingerprint",
    "dag version",
)
RIGHT = frozenset({"id", "replays"})


def _cells(letter: Letter) -> tuple[str, ...]:
    label = letter.task_id if letter.map_index < 0 else f"{letter.task_id}[{letter.map_index}]"
    version = f"v{letter.dag_version_number}" if letter.dag_version_number is not None else "v?"
    return (
        str(letter.id),
        letter.status,
        str(letter.replay_count),
        f"{letter.created_at:%Y-%m-%d %H:%M:%S%z}",
        f"{letter.dag_id}/{label}",
        letter.run_id,
        f"{letter.failure_class}/{letter.category}",
        letter.fingerprint,
        version,
    )


def _table(rows: list[tuple[str, ...]], header: bool = True) -> list[str]:
    """``rows`` as lines whose columns line up with each other and with the header's."""
    shown = [COLUMNS, *rows] if header else rows
    widths = [max(len(row[i]) for row in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    return [
        "  ".join(
            cell.rjust(width) if name in RIGHT else cell.ljust(width)
            for name, cell, width in zip(COLUMNS, row, widths, strict=True)
        ).rstrip()
        for row in shown
    ]


def _row(letter: Letter) -> str:
    return _table([_cells(letter)], header=False)[0]


# -- actions -----------------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> int:
    where, limit = _filter(args), _positive("--limit", args.limit)
    store = _store(args)
    before = None
    if args.after:
        after = store.get(_positive("--after", args.after))
        if after is None:
            raise UsageError(f"--after: {args.after!r} is not a letter id")
        before = (after.created_at, after.id)
    letters = _numbered(args, store, store.list(where, limit=limit, before=before))
    if args.json:
        _emit_json({"letters": [letter.to_json() for letter in letters], "count": len(letters)})
    else:
        if letters:
            print("\n".join(_table([_cells(letter) for letter in letters], header=not args.no_header)))
    if not letters:
        filtered = any(getattr(args, flag) for flag in FILTER_FLAGS) or args.after
        return empty(args, "no letter matches these filters" if filtered else "no letter in the queue")
    return 0


def _numbered(args: argparse.Namespace, store: DeadLetterStore, letters: list[Letter]) -> list[Letter]:
    """``letters`` with the numbers of the DAG versions Airflow still has (``dlq.replay.number_letters``).

    Asks Airflow's REST API only when a letter names its version by UUID alone; without an API
    connection, or when Airflow does not answer, the list is printed as stored (``v?``) with one line
    on stderr saying why."""
    if not any(letter.dag_version_number is None and letter.dag_version_id for letter in letters):
        return letters
    from airflow_retry_provider.dlq import number_letters

    try:
        api = api_client(args, sign_in=True)
    except (UsageError, Unavailable) as exc:
        why = str(exc)
    except Exception as exc:  # Airflow's own look-up of the API connection failed (its database down, ...)
        why = f"the connection could not be read: {type(exc).__name__}"
    else:
        with api:
            return number_letters(store, api, letters)
    _say(f"DAG version numbers not looked up ({why}); 'v?' until the next sweep numbers them")
    return letters


def run_show(args: argparse.Namespace) -> int:
    ids = _ids(args.id) or []
    store = _store(args)
    found = []
    for letter_id in ids:
        letter = store.get(letter_id)
        events = store.events(letter_id)
        if letter is not None or events:  # a purged letter still has its history
            impact = store.impact(letter_id) if letter is not None else None
            found.append((letter_id, letter, store.replays(letter_id), events, impact))
    if args.json:
        _emit_json(
            {
                "letters": [
                    {
                        **(letter.to_json() if letter else {"id": letter_id, "status": "purged"}),
                        "replays": [r.to_json() for r in replays],
                        "history": [e.to_json() for e in events],
                        "impact": impact.to_json() if impact is not None else None,
                    }
                    for letter_id, letter, replays, events, impact in found
                ]
            }
        )
    else:
        for letter_id, letter, replays, events, impact in found:
            if letter is None:
                print(f"{'id':>20}: {letter_id} (purged; its history remains)")
            else:
                for key, value in letter.to_json().items():
                    print(f"{key:>20}: {value}")
                print(f"{'ran version':>20}: {letter.version_label()}")
                for line in _impact_lines(impact):
                    print(f"{'impact':>20}: {line}")
            for r in replays:
                print(
                    f"{'replay':>20}: #{r.id} {r.requested_at:%Y-%m-%d %H:%M:%S%z} by {r.actor} "
                    f"fix {r.fix_version} -> {r.outcome}: {r.reason}"
                )
            for event in events:
                print(f"{'history':>20}: {event.line()}")
            print()
    missing = [str(letter_id) for letter_id in ids if letter_id not in {shown[0] for shown in found}]
    if missing:
        print(f"no letter {', '.join(missing)}: never filed, or purged long ago", file=sys.stderr)
    return 0 if found else EXIT_EMPTY


def _impact_lines(impact: StoredImpact | None) -> list[str]:
    """What a letter blocks, as ``show`` prints it (issue 48)."""
    if impact is None:
        return ["not computed yet (at filing when the worker reaches Airflow's API, else by the next sweep)"]
    lines = impact.impact.summary() or ["nothing downstream, no delivery deadline"]
    return [*lines, f"as of {impact.computed_at:%Y-%m-%d %H:%M:%S%z}"]


def _selection(args: argparse.Namespace) -> tuple[ReplayEngine, LetterFilter, int, list[Letter]]:
    """The engine at ``--rate``, the filter, ``--limit`` and the letters they select now."""
    where, limit = _filter(args), _positive("--limit", args.limit)
    rate = getattr(args, "rate", None)  # park and dismiss have no --rate
    engine = _engine(args, rate=_positive("--rate", rate) if rate else None)
    return engine, where, limit, engine.select(where=where, limit=limit)


def run_preview(args: argparse.Namespace) -> int:
    engine, where, limit, letters = _selection(args)
    if not letters:
        _say("no letter matched")
        return 1
    engine.api = api_client(args, sign_in=True)
    with engine.api:
        preview = engine.preview(
            where=where,
            limit=limit,
            downstream=not args.task_only,
            run_on_latest_version=True if args.run_on_latest_version else None,
        )
    if args.json:
        _emit_json(preview.to_json())
    else:
        for item in preview.items:
            tis = ", ".join(f"{t.task_id}[{t.map_index}]={t.state}" for t in item.instances) or item.error
            print(f"{_row(item.letter)}\n          clears: {tis}\n         runs on: {item.runs_on}")
        for refusal in preview.refused:
            print(f"{refusal.letter_id:>8}  refused: {refusal.reason}")
        print(
            f"{preview.count} letter(s), {preview.instance_count} task instance(s); "
            f"{preview.seconds:.0f}s at {preview.rate_per_minute}/min"
        )
    return 0 if preview.count else 1


def run_replay(args: argparse.Namespace) -> int:
    from airflow_retry_provider.dlq import ReplayRequest, ReplayResult, replay_and_wait

    _required(args, "actor", "reason", *(() if args.run_on_latest_version else ("fix_version",)))
    _require_selection(args, "replay")
    engine, where, limit, selected = _selection(args)
    if not selected:
        _say("no letter matched")
        return 1
    engine.api = api_client(args, sign_in=True)
    fix_version = args.fix_version or (
        engine.latest_fix_version(engine.api, sorted({lt.dag_id for lt in selected})) or ""
    )
    try:
        request = ReplayRequest(
            args.actor,
            args.reason,
            fix_version,
            args.processing_version or None,
            downstream=not args.task_only,
            source="cli",
            actor_verified=False,
            os_user=_cli_actor(args.actor).os_user,
            run_on_latest_version=True if args.run_on_latest_version else None,
        )
    except ValueError as exc:
        engine.api.close()
        raise UsageError(f"--fix-version: Airflow reports no version of these DAGs ({exc})") from None

    def progress(result: ReplayResult, done: int, total: int) -> None:
        _say(f"[{done}/{total}] letter {result.letter_id}: {result.outcome} {result.detail}")

    canary: bool | int = not args.no_canary
    if args.canary is not None:
        canary = _positive("--canary", args.canary)
    from airflow_retry_provider.dlq import JobError

    with engine.api:
        try:
            report = replay_and_wait(
                engine, request, where=where, limit=limit, progress=progress, canary=canary
            )
        except JobError as exc:
            raise UsageError(f"--{exc}") from None
    if args.json:
        _emit_json(report.to_json())
    else:
        if report.job_id is not None:
            print(f"replay job {report.job_id}")
        for result in report.results:
            print(f"{result.letter_id:>8}  {result.outcome:<12} {result.detail}")
    return 0 if report.cleared else 1


def run_job(args: argparse.Namespace) -> int:
    from airflow_retry_provider.dlq import JobError, JobStore

    job_id = _positive("--job", args.job)
    try:
        view = JobStore(database_from_args(args)).require(job_id)
    except JobError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        _emit_json(view.to_json())
    else:
        job = view.job
        who = job.actor if job.actor_verified else f"{job.actor} (unverified, os user {job.os_user})"
        print(
            f"job {job.id}  {job.status}  {view.done}/{len(view.items)}  by {who} via {job.source}  "
            f"fix {job.fix_version}  {'downstream' if job.downstream else 'task only'}: {job.reason}"
        )
        print("  counts: " + ", ".join(f"{k} {v}" for k, v in sorted(view.counts.items())))
        for line in _job_lines(view):
            print(f"  {line}")
        for item in view.items:
            print(f"{item.letter_id:>8}  {item.outcome:<12} {item.detail or ''}")
        print("  verdict: " + "; ".join(view.verdict.lines()))
    return 0


def _job_lines(view: Any) -> list[str]:
    """The canary, the pace steps and the stop of a job, one line each."""
    shown = view.to_json()
    canary, lines = shown["canary"], []
    if canary is None:
        lines.append("canary: none")
    else:
        lines.append(f"canary: letter {canary['letter_id']} {canary['state']}")
        steps = ", ".join(
            f"{s['clears']} at {s['per_minute']}/min" if s["clears"] else "then the configured pace"
            for s in shown["pace_steps"]
        )
        lines.append(f"pace after the canary: {steps}")
    if view.job.stop_reason:
        lines.append(f"stopped: {view.job.stop_reason}")
    return lines


def run_cancel(args: argparse.Namespace) -> int:
    from airflow_retry_provider.dlq import JobError, JobStore

    _required(args, "actor")
    job_id = _positive("--job", args.job)
    try:
        left = JobStore(database_from_args(args)).cancel(job_id, _cli_actor(args.actor).label())
    except JobError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        _emit_json({"job": job_id, "status": "cancelled", "letters_left_in_dlq": left})
    else:
        print(f"job {job_id} cancelled; {left} letter(s) not yet cleared stay in dlq")
    return 0


def run_drive(args: argparse.Namespace) -> int:
    import threading

    from airflow_retry_provider.dlq import ReplayDriver

    interval = None
    if args.interval is not None:
        try:
            interval = float(args.interval)
        except ValueError:
            interval = -1.0
        if not 0.1 <= interval <= 3600:
            raise UsageError(f"--interval: {args.interval!r} is not a number of seconds between 0.1 and 3600")
    engine = _engine(args)
    api_client(args, sign_in=True).close()  # bad flags, no connection or no Airflow fail now, not in the loop
    driver = ReplayDriver(engine, lambda: api_client(args))
    if args.forever:
        _say(f"driving replay jobs as {driver.owner}; Ctrl-C stops (the job's lease hands it on)")
        try:
            driver.loop(threading.Event(), interval)
        except KeyboardInterrupt:
            return 0
    driven = driver.drain()
    _say(f"drove {len(driven)} job(s): {', '.join(map(str, driven)) or 'none open'}")
    return 0


def run_park(args: argparse.Namespace) -> int:
    _required(args, "actor")
    _require_selection(args, "park")
    return _change_status(
        args, lambda engine, ids: engine.store.park(ids, _cli_actor(args.actor), args.reason or "")
    )


def run_dismiss(args: argparse.Namespace) -> int:
    _required(args, "actor", "reason")
    _require_selection(args, "dismiss")
    return _change_status(
        args, lambda engine, ids: engine.store.dismiss(ids, _cli_actor(args.actor), args.reason)
    )


def _change_status(args: argparse.Namespace, change: Any) -> int:
    engine, _, _, letters = _selection(args)
    if not letters and not args.json:
        return empty(args, "no letter matches these filters")
    changed = change(engine, [letter.id for letter in letters]) if letters else []
    unchanged = sorted({letter.id for letter in letters} - set(changed))
    if args.json:
        _emit_json({"changed": changed, "unchanged": unchanged})
    else:
        for letter_id in changed:
            print(f"{letter_id:>8}  {'parked' if args.dlq_command == 'park' else 'dismissed'}")
        for letter_id in unchanged:
            print(f"{letter_id:>8}  unchanged (status does not allow it)")
    return 0 if changed else 1


def run_purge(args: argparse.Namespace) -> int:
    _required(args, "closed_before")
    before = _timestamp("--closed-before", args.closed_before)
    deleted = _store(args).purge_closed_before(before, _cli_actor(None))
    if args.json:
        _emit_json({"deleted": deleted, "count": len(deleted)})
    else:
        print(f"deleted {len(deleted)} closed letter(s) last changed before {before.isoformat()}")
    return 0 if deleted else 1


def _say(message: str) -> None:
    print(f"airflow-retry: {message}", file=sys.stderr, flush=True)

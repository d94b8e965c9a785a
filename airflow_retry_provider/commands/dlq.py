"""``airflow-retry dlq list|show|preview|replay|park|dismiss|purge``: the dead-letter queue from the shell.

Exit codes: 0 done, 1 nothing matched (or nothing could be replayed), 2 bad input (one line on
stderr naming the flag and its value). The database comes from ``--dsn`` or the Airflow
connection ``--conn-id`` (default ``retry_provider_default``); Airflow's REST API (preview and
replay) from ``--api-url/--api-user/--api-password`` or ``AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_retry_provider.dlq.airflow_api import AirflowApi
    from airflow_retry_provider.dlq.models import Letter
    from airflow_retry_provider.dlq.replay import ReplayEngine
    from airflow_retry_provider.dlq.store import LetterFilter

__all__ = ["register"]

STATUSES = ("dlq", "replaying", "resolved", "parked", "dismissed")
FILTER_FLAGS = ("dag", "task", "category", "status", "fingerprint", "workspace", "since", "until", "id")


def register(subparsers: Any) -> None:
    """Add ``dlq`` and its actions to an ``add_subparsers()`` object."""
    dlq = subparsers.add_parser(
        "dlq",
        help="inspect, replay, park, dismiss and purge dead letters",
        description="The dead-letter queue in PostgreSQL. Exit 0 ok, 1 nothing matched, 2 bad input.",
    )
    actions = dlq.add_subparsers(dest="dlq_command", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="letters, newest first (keyset pages)")
    _database(listing)
    _filters(listing, default_limit="50")
    listing.add_argument(
        "--after", metavar="ID", help="continue after this letter id (the previous page's last)"
    )
    listing.set_defaults(func=run_list)

    show = actions.add_parser("show", help="one or more letters with their replays")
    _database(show)
    show.add_argument("--id", action="append", dest="id", metavar="ID", required=True, help="letter id")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=run_show)

    preview = actions.add_parser("preview", help="what a replay would touch (Airflow's clear dry-run)")
    _database(preview)
    _api(preview)
    _filters(preview, default_limit="1000")
    preview.add_argument("--rate", metavar="N", help="clears per minute to compute the pace")
    preview.set_defaults(func=run_preview)

    replay = actions.add_parser("replay", help="claim, record and clear each selected letter, paced")
    _database(replay)
    _api(replay)
    _filters(replay, default_limit="1000")
    replay.add_argument("--actor", help="who asks for the replay (required)")
    replay.add_argument("--reason", help="why it should run again (required)")
    replay.add_argument("--fix-version", help="the code or data version that fixes the cause (required)")
    replay.add_argument("--processing-version", help="ask for a new work-unit identity (recorded)")
    replay.add_argument(
        "--rate",
        metavar="N",
        help="clears per minute (default AIRFLOW_RETRY_DLQ_REPLAY_RATE_PER_MINUTE or 10)",
    )
    replay.set_defaults(func=run_replay)

    park = actions.add_parser("park", help="dlq -> parked: kept for inspection, replays refused")
    _database(park)
    _filters(park, default_limit="1000")
    park.add_argument("--actor", help="who parks them (required)")
    park.add_argument("--reason", default="", help="why")
    park.set_defaults(func=run_park)

    dismiss = actions.add_parser("dismiss", help="dlq or parked -> dismissed: closed without replay")
    _database(dismiss)
    _filters(dismiss, default_limit="1000")
    dismiss.add_argument("--actor", help="who closes them (required)")
    dismiss.add_argument("--reason", help="why they are closed without a replay (required)")
    dismiss.set_defaults(func=run_dismiss)

    purge = actions.add_parser("purge", help="delete resolved and dismissed letters (explicit retention)")
    _database(purge)
    purge.add_argument("--closed-before", metavar="TS", help="ISO 8601 with offset (required)")
    purge.add_argument("--json", action="store_true", help="print JSON")
    purge.set_defaults(func=run_purge)


def _database(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dsn", help="a postgresql:// URI instead of the Airflow connection")
    parser.add_argument(
        "--conn-id", default="retry_provider_default", help="Airflow connection of the provider's database"
    )


def _api(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-url", help="Airflow's base URL (default from AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API)"
    )
    parser.add_argument("--api-user", help="Airflow user for the REST API")
    parser.add_argument("--api-password", help="its password (prefer the connection variable)")


def _filters(parser: argparse.ArgumentParser, default_limit: str) -> None:
    parser.add_argument("--dag", help="DAG id")
    parser.add_argument("--task", help="task id")
    parser.add_argument("--category", help="stable category, e.g. not-found")
    parser.add_argument("--status", help="|".join(STATUSES))
    parser.add_argument("--fingerprint", help="root-cause fingerprint")
    parser.add_argument("--workspace", help="workspace id")
    parser.add_argument("--since", metavar="TS", help="created at or after (ISO 8601 with offset)")
    parser.add_argument("--until", metavar="TS", help="created before (ISO 8601 with offset)")
    parser.add_argument("--id", action="append", metavar="ID", help="letter id (repeatable)")
    parser.add_argument("--limit", default=default_limit, metavar="N", help="at most N letters")
    parser.add_argument("--json", action="store_true", help="print JSON")


# -- parsing -------------------------------------------------------------------------------------


def _usage(message: str) -> Exception:
    from airflow_retry_provider.cli import UsageError

    return UsageError(message)


def _positive(flag: str, text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise _usage(f"{flag}: {text!r} is not a positive integer")
    return int(text)


def _timestamp(flag: str, text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _usage(f"{flag}: {text!r} is not an ISO 8601 timestamp") from None
    if value.tzinfo is None:
        raise _usage(f"{flag}: {text!r} has no UTC offset (e.g. 2026-11-01T00:00:00-03:00)")
    return value


def _ids(values: list[str] | None, flag: str = "--id") -> list[int] | None:
    return [_positive(flag, v) for v in values] if values else None


def _filter(args: argparse.Namespace) -> LetterFilter:
    from airflow_retry_provider.dlq.store import LetterFilter

    if args.status is not None and args.status not in STATUSES:
        raise _usage(f"--status: {args.status!r} is not one of {', '.join(STATUSES)}")
    since = _timestamp("--since", args.since) if args.since else None
    until = _timestamp("--until", args.until) if args.until else None
    if since and until and since >= until:
        raise _usage(f"--until: {args.until!r} is not after --since {args.since!r}")
    for flag in ("dag", "task", "category", "fingerprint", "workspace"):
        value = getattr(args, flag)
        if value is not None and not value.strip():
            raise _usage(f"--{flag}: {value!r} is empty")
    return LetterFilter(
        dag_id=args.dag,
        task_id=args.task,
        category=args.category,
        status=args.status,
        fingerprint=args.fingerprint,
        workspace_id=args.workspace,
        since=since,
        until=until,
        ids=_ids(args.id),
    )


def _require_selection(args: argparse.Namespace, action: str) -> None:
    """Acting on the whole queue by accident is not allowed: ask for --id or a filter."""
    if not any(getattr(args, flag) for flag in FILTER_FLAGS):
        raise _usage(f"--id: {action} needs --id or a filter (--dag, --task, --category, --status, ...)")


def _required(args: argparse.Namespace, *names: str) -> None:
    for name in names:
        value = getattr(args, name)
        if value is None or not str(value).strip():
            raise _usage(f"--{name.replace('_', '-')}: missing (required for {args.dlq_command})")


def _store(args: argparse.Namespace) -> Any:
    from airflow_retry_provider.dlq.store import DeadLetterStore

    if args.dsn:
        if not args.dsn.startswith(("postgresql://", "postgres://")):
            raise _usage(f"--dsn: {args.dsn.split('@')[-1]!r} is not a postgresql:// URI")
        return DeadLetterStore.from_dsn(args.dsn)
    return DeadLetterStore.from_conn_id(args.conn_id)


def _api_client(args: argparse.Namespace) -> AirflowApi:
    from airflow_retry_provider.dlq.airflow_api import AirflowApi, ApiCredentials

    try:
        return AirflowApi(ApiCredentials.resolve(args.api_url, args.api_user, args.api_password))
    except ValueError as exc:
        raise _usage(str(exc)) from None


def _engine(args: argparse.Namespace, api: AirflowApi | None = None, rate: int | None = None) -> ReplayEngine:
    from airflow_retry_provider.dlq.replay import ReplayEngine

    try:
        return ReplayEngine(_store(args), api, rate_per_minute=rate)
    except ValueError as exc:  # a bad AIRFLOW_RETRY_DLQ_* variable
        raise _usage(str(exc)) from None


def _emit_json(document: Any) -> None:
    print(json.dumps(document, sort_keys=True, indent=2, default=str))


def _row(letter: Letter) -> str:
    label = letter.task_id if letter.map_index < 0 else f"{letter.task_id}[{letter.map_index}]"
    return (
        f"{letter.id:>8}  {letter.status:<9} {letter.replay_count}  {letter.created_at:%Y-%m-%d %H:%M:%S%z}  "
        f"{letter.dag_id}/{label}  {letter.run_id}  {letter.failure_class}/{letter.category}  {letter.fingerprint}"
    )


# -- actions -----------------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> int:
    where, limit = _filter(args), _positive("--limit", args.limit)
    store = _store(args)
    before = None
    if args.after:
        after = store.get(_positive("--after", args.after))
        if after is None:
            raise _usage(f"--after: {args.after!r} is not a letter id")
        before = (after.created_at, after.id)
    letters = store.list(where, limit=limit, before=before)
    if args.json:
        _emit_json({"letters": [letter.to_json() for letter in letters], "count": len(letters)})
    else:
        for letter in letters:
            print(_row(letter))
    return 0 if letters else 1


def run_show(args: argparse.Namespace) -> int:
    ids = _ids(args.id) or []
    store = _store(args)
    found = []
    for letter_id in ids:
        letter = store.get(letter_id)
        if letter is not None:
            found.append((letter, store.replays(letter_id)))
    if args.json:
        _emit_json(
            {
                "letters": [
                    {**letter.to_json(), "replays": [r.to_json() for r in replays]}
                    for letter, replays in found
                ]
            }
        )
    else:
        for letter, replays in found:
            for key, value in letter.to_json().items():
                print(f"{key:>20}: {value}")
            for r in replays:
                print(
                    f"{'replay':>20}: #{r.id} {r.requested_at:%Y-%m-%d %H:%M:%S%z} by {r.actor} "
                    f"fix {r.fix_version} -> {r.outcome}: {r.reason}"
                )
            print()
    return 0 if found else 1


def run_preview(args: argparse.Namespace) -> int:
    where, limit = _filter(args), _positive("--limit", args.limit)
    rate = _positive("--rate", args.rate) if args.rate else None
    engine = _engine(args, rate=rate)
    letters = engine.select(where=where, limit=limit)
    if not letters:
        _say("no letter matched")
        return 1
    engine.api = _api_client(args)
    with engine.api:
        preview = engine.preview(where=where, limit=limit)
    if args.json:
        _emit_json(preview.to_json())
    else:
        for item in preview.items:
            tis = ", ".join(f"{t.task_id}[{t.map_index}]={t.state}" for t in item.instances) or item.error
            print(f"{_row(item.letter)}\n          clears: {tis}")
        for refusal in preview.refused:
            print(f"{refusal.letter_id:>8}  refused: {refusal.reason}")
        print(
            f"{preview.count} letter(s), {preview.instance_count} task instance(s); "
            f"{preview.seconds:.0f}s at {preview.rate_per_minute}/min"
        )
    return 0 if preview.count else 1


def run_replay(args: argparse.Namespace) -> int:
    from airflow_retry_provider.dlq.replay import ReplayRequest, ReplayResult

    _required(args, "actor", "reason", "fix_version")
    _require_selection(args, "replay")
    where, limit = _filter(args), _positive("--limit", args.limit)
    rate = _positive("--rate", args.rate) if args.rate else None
    request = ReplayRequest(args.actor, args.reason, args.fix_version, args.processing_version or None)
    engine = _engine(args, rate=rate)
    if not engine.select(where=where, limit=limit):
        _say("no letter matched")
        return 1
    engine.api = _api_client(args)

    def progress(result: ReplayResult, done: int, total: int) -> None:
        _say(f"[{done}/{total}] letter {result.letter_id}: {result.outcome} {result.detail}")

    with engine.api:
        report = engine.replay(request, where=where, limit=limit, progress=progress)
    if args.json:
        _emit_json(report.to_json())
    else:
        for result in report.results:
            print(f"{result.letter_id:>8}  {result.outcome:<12} {result.detail}")
    return 0 if report.cleared else 1


def run_park(args: argparse.Namespace) -> int:
    _required(args, "actor")
    _require_selection(args, "park")
    return _change_status(args, lambda engine, ids: engine.park(ids, args.actor, args.reason or ""))


def run_dismiss(args: argparse.Namespace) -> int:
    _required(args, "actor", "reason")
    _require_selection(args, "dismiss")
    return _change_status(args, lambda engine, ids: engine.dismiss(ids, args.actor, args.reason))


def _change_status(args: argparse.Namespace, change: Any) -> int:
    where, limit = _filter(args), _positive("--limit", args.limit)
    engine = _engine(args)
    letters = engine.select(where=where, limit=limit)
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
    deleted = _engine(args).purge_closed_before(before)
    if args.json:
        _emit_json({"deleted": deleted, "count": len(deleted)})
    else:
        print(f"deleted {len(deleted)} closed letter(s) last changed before {before.isoformat()}")
    return 0 if deleted else 1


def _say(message: str) -> None:
    print(f"airflow-retry: {message}", file=sys.stderr, flush=True)

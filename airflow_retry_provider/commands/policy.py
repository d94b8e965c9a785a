"""``airflow-retry policy classify|schedule|decide``: the policy core from the shell.

The top-level ``classify``, ``schedule`` and ``decide`` of 0.1.0 remain as aliases that warn.

- ``classify [--type EXC_TYPE] [--status N] [--sqlstate CODE] [--rules FILE] MESSAGE [--json]``: how
  a failure would be classified (with the rule file's rules, default ``[retry_provider] rules_file``);
- ``schedule [--profile P] [--base S --multiplier M --cap S --jitter J --max-attempts N] (--seed SEED |
  --dag-id D --task-id T --run-id R [--map-index N] [--data-interval-start ISO --data-interval-end ISO])
  [--json]``: the exact delays of a backoff, for a seed or for a task instance (its work-unit key);
- ``decide < case.json``: the retry-window planner (see ``airflow_retry_provider.policy.window``).
"""

from __future__ import annotations

import argparse
import builtins
import json
import math
import sys
from datetime import datetime, timedelta
from typing import Any

from airflow_retry_provider.commands import UsageError, deprecated_alias
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import (
    PROFILES,
    Backoff,
    PlanInputError,
    UnknownProfileError,
    classify,
    format_duration,
    get_profile,
    plan,
)
from airflow_retry_provider.rules_file import RulesFileError, load_rules_file

MAX_INPUT_BYTES = 1_000_000
"""``decide`` refuses input larger than this (1 MB)."""

MAX_SCHEDULE_ATTEMPTS = 100
MAX_SCHEDULE_SECONDS = 10**9
DEFAULT_MAX_ATTEMPTS = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``policy`` group (``classify``, ``schedule``, ``decide``) and the old top-level aliases."""
    policy = subparsers.add_parser(
        "policy", help="the policy core from the shell: classify a failure, a backoff's delays, plan retries"
    )
    actions = policy.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    for add in (_add_classify, _add_schedule, _add_decide):
        name = add.__name__.removeprefix("_add_")
        add(actions, name, _HELP[name])
        deprecated_alias(subparsers, name, f"policy {name}", add)


_HELP = {
    "classify": "classify a failure: poison, retryable or unknown outcome",
    "schedule": "print the exact retry delays of a backoff",
    "decide": "plan retries for a case read as JSON on stdin (the retry-window planner)",
}


def _parser(subparsers: Any, name: str, help_text: str | None) -> argparse.ArgumentParser:
    """A subcommand's parser; without ``help_text`` it is left out of the group's ``--help``."""
    return subparsers.add_parser(name, help=help_text) if help_text else subparsers.add_parser(name)


def _add_classify(subparsers: Any, name: str, help_text: str | None) -> argparse.ArgumentParser:
    parser = _parser(subparsers, name, help_text)
    parser.add_argument("message", metavar="MESSAGE", help="the exception's message")
    parser.add_argument(
        "--type",
        dest="exc_type",
        default="Exception",
        metavar="EXC_TYPE",
        help="a builtin exception (TimeoutError) or a dotted name (psycopg.errors.UndefinedTable), "
        "imported when it can be, so it classifies as in a task (a note on stderr says when it cannot be); "
        "default: %(default)s",
    )
    parser.add_argument("--status", type=int, metavar="N", help="an HTTP status carried by the exception")
    parser.add_argument("--sqlstate", metavar="CODE", help="a PostgreSQL SQLSTATE carried by the exception")
    parser.add_argument(
        "--rules",
        metavar="FILE",
        help="a rule file (YAML) tried before the defaults; default [retry_provider] rules_file",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(func=run_classify)
    return parser


def _add_schedule(subparsers: Any, name: str, help_text: str | None) -> argparse.ArgumentParser:
    parser = _parser(subparsers, name, help_text)
    parser.add_argument(
        "--profile", metavar="P", help=f"start from a profile ({', '.join(sorted(PROFILES))})"
    )
    parser.add_argument("--base", type=float, metavar="S", help="first nominal delay, seconds")
    parser.add_argument("--multiplier", type=float, metavar="M", help="growth per failed attempt")
    parser.add_argument("--cap", type=float, metavar="S", help="largest nominal delay, seconds")
    parser.add_argument("--jitter", type=float, metavar="J", help="largest fraction taken off (0..1)")
    parser.add_argument(
        "--max-attempts", type=int, metavar="N", help="executions at most, counting the first"
    )
    parser.add_argument(
        "--seed",
        help="the jitter seed as it is (a task's seed is its work-unit key: give the task instance instead)",
    )
    task = parser.add_argument_group(
        "the task instance (instead of --seed): its work-unit key is built as a task builds it, "
        "dag/task/map_index/<data interval, else run=RUN_ID>"
    )
    task.add_argument("--dag-id", metavar="D")
    task.add_argument("--task-id", metavar="T")
    task.add_argument("--run-id", metavar="R")
    task.add_argument("--map-index", type=int, default=-1, metavar="N", help="default -1 (not mapped)")
    task.add_argument("--data-interval-start", metavar="ISO", help="e.g. 2026-11-29T00:00:00+00:00")
    task.add_argument("--data-interval-end", metavar="ISO", help="e.g. 2026-11-30T00:00:00+00:00")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.set_defaults(func=run_schedule)
    return parser


# a case `decide --example` prints: a deadline at 10000 s, one task to retry, one still running
EXAMPLE_CASE: dict[str, Any] = {
    "asOf": 1000,
    "deadline": 10000,
    "maxObservationAge": 60,
    "policy": {"maxAttempts": 3, "initialDelay": 300, "maxDelay": 3600, "multiplier": 2},
    "tasks": [
        {"id": "load", "state": "retryable", "safeRepeat": True, "attempts": 1, "observedAt": 1000,
         "lastFinishedAt": 950, "duration": 600, "validation": 120},
        {"id": "extract", "state": "running", "safeRepeat": True, "attempts": 1, "observedAt": 990,
         "lastFinishedAt": None, "duration": 300, "validation": 0},
    ],
}  # fmt: skip


def _add_decide(subparsers: Any, name: str, help_text: str | None) -> argparse.ArgumentParser:
    text = {"help": help_text} if help_text else {}  # an alias stays out of --help
    parser = subparsers.add_parser(
        name,
        **text,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "A case (all times in seconds on one clock; states: running, unknown, succeeded, retryable,\n"
            "terminal):\n\n" + json.dumps(EXAMPLE_CASE) + "\n\n"
            "airflow-retry policy decide --example > case.json; airflow-retry policy decide < case.json"
        ),
    )
    parser.add_argument("--example", action="store_true", help="print an example case and exit")
    parser.set_defaults(func=run_decide)
    return parser


# classify


def _exception_class(name: str) -> tuple[type[BaseException], str | None]:
    """The class ``name`` names, and a note when it is not the real one.

    A builtin (``TimeoutError``), or the class a dotted name imports (``psycopg.errors.UndefinedTable``),
    so the CLI classifies as a task does; when the name cannot be imported, a synthetic Exception
    subclass carrying the dotted name, and a note saying so (only its name is matched then).
    """
    builtin = getattr(builtins, name, None) if "." not in name else None
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        return builtin, None
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        raise UsageError(
            f"--type must be an exception name like TimeoutError or pkg.module.Error, got {name!r}"
        )
    module = ".".join(parts[:-1]) or "__main__"
    why = f"{name!r} is not a builtin exception"
    if len(parts) > 1:
        import importlib

        try:
            found = getattr(importlib.import_module(module), parts[-1])
        except Exception as error:  # not installed here, or no such name: judged by its name alone
            why = f"cannot import {name!r} ({type(error).__name__}: {error})"
        else:
            if isinstance(found, type) and issubclass(found, BaseException):
                return found, None
            why = f"{name!r} is not an exception class"
    synthetic = type(parts[-1], (Exception,), {"__module__": module, "__qualname__": parts[-1]})
    return synthetic, f"{why}: classified by its name alone, as a task's exception of that name would be"


def _build_exception(
    type_name: str, message: str, status: int | None, sqlstate: str | None
) -> tuple[BaseException, str | None]:
    """The exception ``classify`` looks at, carrying ``status_code`` / ``sqlstate`` when given, and a note
    when the type was not importable (built by its name)."""
    cls, note = _exception_class(type_name)
    try:
        exc = cls(message)
    except Exception as error:
        raise UsageError(f"--type {type_name} cannot be built from a message: {error}") from None
    for attribute, value in (("status_code", status), ("sqlstate", sqlstate)):
        if value is not None:
            try:
                setattr(exc, attribute, value)
            except Exception:  # a real class whose attribute is read-only (psycopg's sqlstate)
                flag = "--status" if attribute == "status_code" else "--sqlstate"
                raise UsageError(
                    f"{flag}: --type {type_name} sets its own {attribute}; leave {flag} out"
                ) from None
    return exc, note


def run_classify(args: argparse.Namespace) -> int:
    """Print the classification of the described failure."""
    if args.sqlstate is not None and not (len(args.sqlstate) == 5 and args.sqlstate.isalnum()):
        raise UsageError(f"--sqlstate must be five letters or digits (e.g. 40P01), got {args.sqlstate!r}")
    if args.status is not None and not 100 <= args.status <= 599:
        raise UsageError(f"--status must be an HTTP status from 100 to 599 (e.g. 503), got {args.status}")
    try:
        path = args.rules if args.rules is not None else _configured_rules_file()
        rules = load_rules_file(path) if path is not None else ()
    except RulesFileError as error:
        raise UsageError(str(error)) from None
    exception, note = _build_exception(args.exc_type, args.message, args.status, args.sqlstate)
    if note is not None:
        print(f"airflow-retry: note: {note}", file=sys.stderr)
    result = classify(exception, rules)
    if args.json:
        output = {"failure_class": result.failure_class, "category": result.category, "rule": result.rule}
        print(json.dumps(output))
    else:
        print(f"{result.failure_class}/{result.category} (rule: {result.rule})")
    return 0


def _configured_rules_file() -> str | None:
    """``[retry_provider] rules_file`` read without importing Airflow where it can be, so ``classify``
    answers as fast as ``schedule``; None when unset."""
    from airflow_retry_provider import settings

    try:
        path = settings.rules_file.read_without_airflow()
    except ValueError as error:
        raise UsageError(str(error)) from None
    return str(path) if path else None


# schedule


def _seconds(flag: str, value: float) -> timedelta:
    if not math.isfinite(value) or not 0 <= value <= MAX_SCHEDULE_SECONDS:
        raise UsageError(
            f"{flag} must be a number of seconds from 0 to {MAX_SCHEDULE_SECONDS}, got {value!r}"
        )
    return timedelta(seconds=value)


def _milliseconds(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 1000 + value.microseconds // 1000


def schedule_rows(backoff: Backoff, max_attempts: int, seed: str) -> list[dict[str, Any]]:
    """The JSON rows: one per attempt followed by a retry, seconds with millisecond precision."""
    return [
        {
            "attempt": row.attempt,
            "nominal_seconds": _milliseconds(row.nominal) / 1000,
            "delay_seconds": _milliseconds(row.delay) / 1000,
            "cumulative_seconds": _milliseconds(row.cumulative) / 1000,
        }
        for row in backoff.schedule(max_attempts, seed)
    ]


def _aware(flag: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.utcoffset() is None:
        raise UsageError(
            f"{flag} must be an ISO 8601 time with its offset (2026-11-30T00:00:00+00:00), got {value!r}"
        )
    return moment


def schedule_seed(args: argparse.Namespace) -> str:
    """The seed of ``--seed``, or the work-unit key of the task instance named by the other flags."""
    task = (args.dag_id, args.task_id, args.run_id)
    if args.seed is not None:
        if any(part is not None for part in task):
            raise UsageError("give either --seed or --dag-id/--task-id/--run-id, not both")
        return str(args.seed)
    missing = [
        flag for flag, part in zip(("--dag-id", "--task-id", "--run-id"), task, strict=True) if not part
    ]
    if missing:
        raise UsageError(f"give --seed, or the task instance: {', '.join(missing)} missing")
    start = _aware("--data-interval-start", args.data_interval_start)
    end = _aware("--data-interval-end", args.data_interval_end)
    if (start is None) != (end is None):
        raise UsageError("give both --data-interval-start and --data-interval-end, or neither")
    return make_work_unit_key(args.dag_id, args.task_id, args.map_index, start, end, args.run_id)


def run_schedule(args: argparse.Namespace) -> int:
    """Print the delays after each attempt that is followed by a retry."""
    seed = schedule_seed(args)
    backoff = Backoff()
    max_attempts = DEFAULT_MAX_ATTEMPTS
    if args.profile is not None:
        try:
            profile = get_profile(args.profile)
        except UnknownProfileError as error:
            raise UsageError(str(error)) from None
        backoff, max_attempts = profile.backoff, profile.max_attempts
    base = backoff.base if args.base is None else _seconds("--base", args.base)
    cap = backoff.cap if args.cap is None else _seconds("--cap", args.cap)
    multiplier = backoff.multiplier if args.multiplier is None else args.multiplier
    jitter = backoff.jitter if args.jitter is None else args.jitter
    if args.max_attempts is not None:
        max_attempts = args.max_attempts
    if not 1 <= max_attempts <= MAX_SCHEDULE_ATTEMPTS:
        raise UsageError(f"--max-attempts must be from 1 to {MAX_SCHEDULE_ATTEMPTS}, got {max_attempts}")
    try:
        backoff = Backoff(base=base, multiplier=multiplier, cap=cap, jitter=jitter)
    except ValueError as error:
        raise UsageError(str(error)) from None

    rows = schedule_rows(backoff, max_attempts, seed)
    if args.json:
        print(json.dumps(rows))
        return 0
    print(
        f"backoff: base {format_duration(backoff.base)}, multiplier {backoff.multiplier:g}, "
        f"cap {format_duration(backoff.cap)}, jitter {backoff.jitter:g}; "
        f"max_attempts {max_attempts} (Airflow retries={max_attempts - 1}); seed {seed!r}"
    )
    if not rows:
        print("no retries: the first attempt is the last")
        return 0
    print(f"{'after attempt':>13}  {'nominal':>12}  {'delay':>12}  {'cumulative':>12}")
    for row in rows:
        print(
            f"{row['attempt']:>13}  {row['nominal_seconds']:>11.3f}s  {row['delay_seconds']:>11.3f}s"
            f"  {row['cumulative_seconds']:>11.3f}s"
        )
    return 0


# decide


def _read_stdin() -> bytes:
    """Read at most MAX_INPUT_BYTES + 1 bytes of stdin."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is not None:
        data: bytes = stream.read(MAX_INPUT_BYTES + 1)
        return data
    return sys.stdin.read(MAX_INPUT_BYTES + 1).encode("utf-8")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {json.dumps(key)}")
        result[key] = value
    return result


def load_case(data: bytes) -> object:
    """Parse the planner's input; a UsageError names the problem on one line."""
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"input: larger than {MAX_INPUT_BYTES} bytes, refused")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"input: not valid UTF-8 at byte {error.start}") from None
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicates)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"input: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except ValueError as error:
        raise UsageError(f"input: {error}") from None
    except RecursionError:
        raise UsageError("input: nested too deeply") from None


def run_decide(args: argparse.Namespace) -> int:
    """Read a case on stdin, write the plan (keys sorted) on stdout; ``--example`` prints a case instead."""
    if getattr(args, "example", False):
        print(json.dumps(EXAMPLE_CASE, indent=2))
        return 0
    case = load_case(_read_stdin())
    try:
        result = plan(case)
    except PlanInputError as error:
        hint = (
            "; `airflow-retry policy decide --example` prints a whole case"
            if "missing" in error.problem
            else ""
        )
        raise UsageError(f"{error}{hint}") from None
    print(json.dumps(result, sort_keys=True, indent=2))
    return 0

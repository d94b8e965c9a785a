"""The provider's settings: each declared once here as a typed :class:`Setting`, read through Airflow's ``conf``.

Each setting is an option of the ``[retry_provider]`` section and a module attribute of the same
name: ``settings.replay_max_attempts()`` reads ``[retry_provider] replay_max_attempts`` from
airflow.cfg or ``AIRFLOW__RETRY_PROVIDER__REPLAY_MAX_ATTEMPTS`` and parses it (an ``int``; a
misspelt name fails ``mypy``). ``get_provider_info()`` declares them all (so ``airflow config list``
shows them with their defaults). The names used before (``AIRFLOW_RETRY_*``) still work, with a
``DeprecationWarning`` naming the new key; a value set the new way wins over them.

To add a setting: one ``name = Setting("name", parser, default, example, description)`` below,
added to ``SETTINGS``, then regenerate the table of docs/CONFIGURATION.md (CONTRIBUTING.md says how).
The pure ``policy/`` package never reads settings: its callers pass the values in.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SECTION = "retry_provider"
T = TypeVar("T")


class _Invalid(ValueError):
    """A parser's complaint: what the value must be (the setting adds where it came from)."""


@dataclass(frozen=True)
class Parser(Generic[T]):
    """Text to a value of type ``T``; ``type`` is Airflow's name for it, ``bounds`` an integer's range."""

    type: str
    parse: Callable[[str], T]
    bounds: tuple[int, int] | None = None


def _integer(minimum: int, maximum: int) -> Parser[int]:
    """An integer from ``minimum`` to ``maximum``: past it a duration overflows or a bigint does."""

    def parse(raw: str) -> int:
        if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not minimum <= int(raw) <= maximum:
            raise _Invalid(f"an integer from {minimum} to {maximum}")
        return int(raw)

    return Parser("integer", parse, (minimum, maximum))


def _optional_integer(minimum: int, maximum: int) -> Parser[int | None]:
    whole = _integer(minimum, maximum).parse
    return Parser("integer", lambda raw: whole(raw) if raw.strip() else None)


def _seconds(*, whole: bool) -> Parser[timedelta]:
    def parse(raw: str) -> timedelta:
        try:
            seconds = int(raw) if whole else float(raw)
        except ValueError:
            seconds = -1
        if not 0 <= seconds < 10**9:  # negative, unparsable, NaN or infinite
            raise _Invalid("a whole number of seconds >= 0" if whole else "a number of seconds >= 0")
        return timedelta(seconds=seconds)

    return Parser("integer" if whole else "float", parse)


def _zone(raw: str) -> ZoneInfo:
    try:
        return ZoneInfo(raw)
    except (ZoneInfoNotFoundError, ValueError):
        raise _Invalid("an IANA time zone such as America/Sao_Paulo") from None


def _module_prefixes(raw: str) -> tuple[str, ...]:
    prefixes = tuple(p.strip() for p in raw.split(",") if p.strip())
    if any(not all(part.isidentifier() for part in p.rstrip(".").split(".")) for p in prefixes):
        raise _Invalid("comma-separated module names such as my_company.alerts")
    return prefixes


def _boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("true", "false", "1", "0", ""):
        raise _Invalid("true or false")
    return lowered in ("true", "1")


TEXT: Parser[str] = Parser("string", str)
OPTIONAL_PATH: Parser[Path | None] = Parser("string", lambda raw: Path(raw) if raw else None)
ZONE: Parser[ZoneInfo] = Parser("string", _zone)
MODULE_PREFIXES: Parser[tuple[str, ...]] = Parser("string", _module_prefixes)
BOOLEAN: Parser[bool] = Parser("boolean", _boolean)
WHOLE_SECONDS = _seconds(whole=True)
SECONDS = _seconds(whole=False)


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One option of ``[retry_provider]``; calling it reads and parses its value.

    :param key: the option's name, e.g. ``replay_max_attempts``.
    :param parser: turns the text into the value callers get (and names Airflow's type of it).
    :param default: the default, as text (``""``: none).
    :param example: an example value, as text.
    :param description: what it does and who reads it.
    :param legacy_env: the deprecated environment variable read before, if any.
    :param check: a check of the parsed value against other settings (raises ``ValueError``).
    """

    key: str
    parser: Parser[T]
    default: str
    example: str
    description: str
    legacy_env: str | None = None
    check: Callable[[T], None] | None = None

    @property
    def type(self) -> str:
        """Airflow's type name: ``string``, ``integer``, ``float`` or ``boolean``."""
        return self.parser.type

    @property
    def bounds(self) -> tuple[int, int] | None:
        """The smallest and largest value an integer setting takes, else None."""
        return self.parser.bounds

    @property
    def documented(self) -> str:
        """The description, with the bounds of an integer setting."""
        if self.bounds is None:
            return self.description
        return f"{self.description} From {self.bounds[0]:,} to {self.bounds[1]:,}."

    @property
    def env(self) -> str:
        """The ``AIRFLOW__RETRY_PROVIDER__<KEY>`` variable Airflow reads for it."""
        return f"AIRFLOW__{SECTION.upper()}__{self.key.upper()}"

    def __call__(self) -> T:
        """The parsed value, checked against the settings it depends on; a bad value is a ``ValueError``."""
        value = self.read()
        if self.check is not None:
            self.check(value)
        return value

    def read_without_airflow(self) -> T:
        """The parsed value, read without importing Airflow (which takes seconds) where that is certain:
        ``AIRFLOW__RETRY_PROVIDER__<KEY>``, else the option in airflow.cfg (``AIRFLOW_CONFIG``, else
        ``$AIRFLOW_HOME/airflow.cfg``), else the default. Anything this does not read itself (a ``_cmd``
        or ``_secret`` variant, the deprecated variable, a file that does not parse) is read by :meth:`read`.
        For a command line tool that answers at once (``policy classify``); a task reads :meth:`__call__`.
        """
        import configparser

        if self.legacy_env and os.environ.get(self.legacy_env, "").strip():
            return self.read()
        if any(f"{self.env}{suffix}" in os.environ for suffix in ("_CMD", "_SECRET")):
            return self.read()
        raw = os.environ.get(self.env)
        if raw is None:
            home = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
            path = os.environ.get("AIRFLOW_CONFIG") or os.path.join(home, "airflow.cfg")
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                parser.read(path, encoding="utf-8")
            except (configparser.Error, OSError, UnicodeDecodeError):
                return self.read()
            options = parser[SECTION] if parser.has_section(SECTION) else {}
            if any(f"{self.key}{suffix}" in options for suffix in ("_cmd", "_secret")):
                return self.read()
            raw = options.get(self.key, self.default)
        raw = raw.strip() or self.default
        source = f"[{SECTION}] {self.key} ({self.env})"
        try:
            return self.parser.parse(raw)
        except ValueError as exc:
            raise ValueError(f"{source} must be {exc}, got {raw!r}") from None

    def read(self) -> T:
        """The parsed value; a bad one is a ``ValueError`` naming where it came from and what it was.

        Airflow's configuration (airflow.cfg, ``AIRFLOW__RETRY_PROVIDER__*``) is read first; when it
        holds only the default, a deprecated ``AIRFLOW_RETRY_*`` variable still applies, with a warning.
        """
        from airflow.sdk import conf

        raw = conf.get(SECTION, self.key, fallback=self.default).strip()
        source = f"[{SECTION}] {self.key} ({self.env})"
        legacy = os.environ.get(self.legacy_env, "").strip() if self.legacy_env else ""
        if legacy:
            warnings.warn(
                f"{self.legacy_env} is deprecated: set [{SECTION}] {self.key} in airflow.cfg or {self.env}",
                DeprecationWarning,
                stacklevel=3,
            )
            if raw == self.default:
                raw, source = legacy, f"{self.legacy_env} (deprecated; use [{SECTION}] {self.key})"
        if not raw and self.default:
            raw = self.default
        try:
            return self.parser.parse(raw)
        except ValueError as exc:
            raise ValueError(f"{source} must be {exc}, got {raw!r}") from None


def _at_least_three_api_timeouts(lease: int) -> None:
    """A clear with a token refresh takes up to three API timeouts; a shorter lease would let another
    process take a claim whose clear is still in flight for abandoned."""
    timeout = api_timeout_seconds()
    if timeout is not None and lease < 3 * timeout:
        raise ValueError(
            f"[{SECTION}] replay_lease_seconds must be at least 3 x [{SECTION}] api_timeout_seconds "
            f"(a clear with a token refresh takes up to three API timeouts), got replay_lease_seconds={lease} "
            f"and api_timeout_seconds={timeout}"
        )


# -- the settings, in the order of docs/CONFIGURATION.md's table ---------------------------------
# fmt: off
replay_max_attempts = Setting(
    "replay_max_attempts", _integer(1, 1000), default="3", example="5", legacy_env="AIRFLOW_RETRY_DLQ_REPLAY_MAX_ATTEMPTS",
    description="Replays allowed per dead letter before it is parked (DLQ callback, sweeper, replay engine).",
)
replay_rate_per_minute = Setting(
    "replay_rate_per_minute", _integer(1, 60000), default="10", example="60", legacy_env="AIRFLOW_RETRY_DLQ_REPLAY_RATE_PER_MINUTE",
    description="At most this many clears in any 60 seconds, spaced evenly, for the whole deployment (every replay driver; `airflow-retry dlq replay --rate` can only lower it).",
)
replay_lease_seconds = Setting(
    "replay_lease_seconds", _integer(10, 86400), default="120", example="60", check=_at_least_three_api_timeouts,
    description="How long a replay driver holds a job, and a claimed letter counts as mid-clear, without renewing; a dead driver's job and claims are taken back after it (replay drivers, sweeper). At least three times `api_timeout_seconds` (one clear with a token refresh), checked when settings load.",
)
replay_timeout_seconds = Setting(
    "replay_timeout_seconds", _integer(60, 2592000), default="86400", example="21600",
    description="How long a replay may wait for its cleared task instance to end (queued, scheduled, running...) before the sweep counts it failed: its letter goes back to dlq (parked at the cap), and is resolved by the next sweep if the task instance succeeds later (sweeper, replay drivers).",
)
replay_canary_timeout_seconds = Setting(
    "replay_canary_timeout_seconds", _integer(10, 86400), default="1800", example="600",
    description="How long a replay job of more than one letter waits for its canary (the one letter it clears first) to resolve or fail before it stops as canary undecided, its other letters left in dlq untouched (replay drivers).",
)
api_timeout_seconds = Setting(
    "api_timeout_seconds", _optional_integer(1, 3600), default="", example="20",
    description="Seconds each call to Airflow's REST API may take (replay drivers, sweeper, pages, CLI); empty: a third of `replay_lease_seconds`, at most 30. `replay_lease_seconds` must be at least three times it.",
)
replay_driver_interval_seconds = Setting(
    "replay_driver_interval_seconds", SECONDS, default="5", example="2",
    description="How often an idle replay driver (one per api-server worker, `airflow-retry dlq drive --forever`) looks for queued jobs and undecided claims.",
)
sweep_grace_seconds = Setting(
    "sweep_grace_seconds", WHOLE_SECONDS, default="120", example="300", legacy_env="AIRFLOW_RETRY_DLQ_SWEEP_GRACE_SECONDS",
    description="The sweeper DAG leaves failures newer than this to their callback.",
)
sweep_max_pages = Setting(
    "sweep_max_pages", _integer(2, 1000000), default="150", example="500",
    description="Pages of Airflow's bulk task-instance list one dead-letter sweep reads at most (100 rows each); the next sweep continues where it stopped.",
)
sweep_watermark_overlap_seconds = Setting(
    "sweep_watermark_overlap_seconds", WHOLE_SECONDS, default="3600", example="600",
    description="How far back of its watermark the sweeper reads ended task instances again (clock skew between Airflow's hosts; read twice, decided once).",
)
ui_timezone = Setting(
    "ui_timezone", ZONE, default="America/Sao_Paulo", example="Europe/Lisbon", legacy_env="AIRFLOW_RETRY_UI_TIMEZONE",
    description="Time zone of the times the Dead letters and Reconciliation pages show (an IANA name); the UTC instant shows on hover.",
)
ledger_dedup_seconds = Setting(
    "ledger_dedup_seconds", SECONDS, default="3600", example="600", legacy_env="AIRFLOW_RETRY_LEDGER_DEDUP_SECONDS",
    description="How long a succeeded work unit is not run again (ledger, `@idempotent`, `IdempotentMixin`, medallion operators; `dedup_window=` overrides).",
)
dependencies_file = Setting(
    "dependencies_file", OPTIONAL_PATH, default="", example="/opt/airflow/dependencies.yaml", legacy_env="AIRFLOW_RETRY_DEPENDENCIES_FILE",
    description="The dependency map (YAML) used when none is passed or registered (`capacity.uses`, `apply_capacity`, `airflow-retry pools sync`; `--file` overrides).",
)
rules_file = Setting(
    "rules_file", OPTIONAL_PATH, default="", example="/opt/airflow/retry_rules.yaml", legacy_env="AIRFLOW_RETRY_RULES_FILE",
    description="A YAML file of classification rules tried before the defaults, read when a `ClassifiedRetryPolicy` is built (DAG parse); `airflow-retry policy classify --rules` overrides.",
)
reconciliation_dir = Setting(
    "reconciliation_dir", OPTIONAL_PATH, default="", example="/opt/airflow/reconciliation", legacy_env="AIRFLOW_RETRY_RECONCILIATION_DIR",
    description="Where the reconciliation DAG writes its report artifacts (empty: `$AIRFLOW_HOME/reconciliation`).",
)
notifier_modules = Setting(
    "notifier_modules", MODULE_PREFIXES, default="", example="my_company.alerts,ops.notify",
    description="Module prefixes the reconciliation notifier (Variable `retry_provider_reconciliation_notifier`) may be imported from, comma-separated; empty refuses every notifier (whoever may edit Variables could otherwise make the DAG import any function).",
)
alert_notifiers = Setting(
    "alert_notifiers", TEXT, default="", example='[{"name": "oncall-mail", "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier", "kwargs": {"to": "oncall@example.com", "smtp_conn_id": "smtp_alerts"}}]',
    description="The notifiers alerts go through: a JSON list of `{name, class, kwargs}`, each class an `airflow.sdk.BaseNotifier` subclass by dotted path (empty: no alerts). Read by the DLQ callback, the sweepers and the reconciliation DAG.",
)
alert_repeat_minutes = Setting(
    "alert_repeat_minutes", _integer(1, 525600), default="60", example="30",
    description="At most one message per root cause (fingerprint) per this many minutes, carrying the count since the last one.",
)
alert_base_url = Setting(
    "alert_base_url", TEXT, default="", example="https://airflow.example.com",
    description="The Airflow UI address in the links of alert messages (empty: `[api] base_url`).",
)
infra_allowance_enabled = Setting(
    "infra_allowance_enabled", BOOLEAN, default="true", example="false",
    description="Kill switch of the infrastructure allowance: off, every profile's `infra_allowance` is 0 (a killed, evicted or lost try spends an attempt, and `retries` is `max_attempts - 1`, as before); DAG files must be parsed again for the sizing.",
)
preload_failure_path = Setting(
    "preload_failure_path", BOOLEAN, default="true", example="false",
    description="Before a process forks its first task process, import what a failed try needs (airflow_retry_provider/preload.py): each failed try then pays none of it (about 110 ms of CPU); off, each failed try imports it itself.",
)
work_sweeper_enabled = Setting(
    "work_sweeper_enabled", BOOLEAN, default="false", example="true",
    description="Turns the work-unit sweeper (DAG `retry_provider_work_sweeper`) on; off, its task is skipped.",
)
work_sweeper_interval_seconds = Setting(
    "work_sweeper_interval_seconds", _integer(1, 86400), default="30", example="60",
    description="Seconds between two sweeps of the work-unit sweeper while it is on.",
)
work_sweeper_max_attempts = Setting(
    "work_sweeper_max_attempts", _integer(1, 1000), default="10", example="5",
    description="Failed sweeps of a work unit (1 min, x2, up to 1 h apart) before it is parked and an alert goes out.",
)
work_sweeper_lookup = Setting(
    "work_sweeper_lookup", TEXT, default="", example="my_company.jobs.lookup_remote_job",
    description="Dotted path of `lookup(remote_job_id, unit) -> RemoteJob or None` that asks the remote side about a job (empty: units with a remote job id are parked after the failed sweeps).",
)
export_max_letters = Setting(
    "export_max_letters", _integer(1, 10000000), default="100000", example="20000",
    description="At most this many letters in one CSV or JSON export of the Dead letters API; a longer export is cut there and says so (a last CSV comment row, the JSON `cut` field, the `X-Export-Cut` header).",
)
export_concurrency_per_user = Setting(
    "export_concurrency_per_user", _integer(1, 100), default="2", example="1",
    description="Exports one user may run at once across every api-server worker (held as PostgreSQL advisory locks for the export's duration); one more answers 429.",
)
retention_letters_days = Setting(
    "retention_letters_days", _integer(1, 36500), default="90", example="180",
    description="Retention deletes `resolved` and `dismissed` letters (and their replays) older than this.",
)
retention_reports_days = Setting(
    "retention_reports_days", _integer(1, 36500), default="30", example="60",
    description="Retention deletes reconciliation reports, findings and artifact files older than this (each workspace's latest is kept).",
)
retention_events_days = Setting(
    "retention_events_days", _integer(1, 36500), default="30", example="14",
    description="Retention deletes extraction events older than this.",
)
retention_ledger_days = Setting(
    "retention_ledger_days", _integer(1, 36500), default="30", example="60",
    description="Retention deletes finished work units older than this, never inside their dedup window.",
)
retention_alerts_days = Setting(
    "retention_alerts_days", _integer(1, 36500), default="30", example="7",
    description="Retention deletes sent alerts, idle root-cause windows and told deliveries (their deadline) older than this.",
)
retention_tries_days = Setting(
    "retention_tries_days", _integer(1, 36500), default="30", example="14",
    description="Retention deletes the recorded failed tries (their class, for the attempts count and the Retries tab) older than this.",
)
retention_batch_size = Setting(
    "retention_batch_size", _integer(1, 1000000), default="5000", example="1000",
    description="Rows retention deletes per statement and transaction.",
)
# fmt: on

SETTINGS: tuple[Setting[Any], ...] = tuple(v for v in list(globals().values()) if isinstance(v, Setting))
"""Every setting, in the order declared above (the order of docs/CONFIGURATION.md's table)."""


def api_timeout() -> int:
    """Seconds per call to Airflow's REST API: ``api_timeout_seconds``, or a third of ``replay_lease_seconds`` (at most 30)."""
    lease = replay_lease_seconds()  # checks the pair
    value = api_timeout_seconds()
    return value if value is not None else min(30, lease // 3)


def check_all() -> None:
    """Read every setting once (a process's start-up): a bad value is a ``ValueError`` naming each bad setting and value."""
    problems = []
    for setting in SETTINGS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                setting.read()
        except ValueError as exc:
            problems.append(str(exc))
    if not problems:
        try:
            replay_lease_seconds()
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))


def provider_config() -> dict[str, Any]:
    """The ``config`` section of ``get_provider_info()``, as in Airflow providers' ``provider.yaml``."""
    return {
        SECTION: {
            "description": "Settings of the Airflow Retry Provider (classified retries, dead letters, "
            "reconciliation).",
            "options": {
                setting.key: {
                    "description": setting.documented
                    + (f" Replaces the deprecated {setting.legacy_env}." if setting.legacy_env else ""),
                    "version_added": "0.1.0",
                    "type": setting.type,
                    "example": setting.example,
                    "default": setting.default,
                }
                for setting in SETTINGS
            },
        }
    }


def markdown_table() -> str:
    """The settings table of docs/CONFIGURATION.md, generated from ``SETTINGS``."""
    lines = [
        "| `[retry_provider]` key / environment variable | Type | Default | Meaning |",
        "| --- | --- | --- | --- |",
    ]
    for setting in SETTINGS:
        name = f"`{setting.key}` / `{setting.env}`"
        if setting.legacy_env:
            name += f" (formerly `{setting.legacy_env}`)"
        default = f"`{setting.default}`" if setting.default else "(none)"
        lines.append(f"| {name} | {setting.type} | {default} | {setting.documented} |")
    return "\n".join(lines) + "\n"

"""The provider's settings: declared once here, read through Airflow's configuration.

Each :class:`Setting` is an option of the ``[retry_provider]`` section. ``get_provider_info()``
declares them all (so ``airflow config list`` shows them with their defaults), and :func:`get`
reads one with Airflow's ``conf``: ``[retry_provider]`` in airflow.cfg or
``AIRFLOW__RETRY_PROVIDER__<KEY>``. The names used before (``AIRFLOW_RETRY_*``) still work, with a
``DeprecationWarning`` naming the new key; a value set the new way wins over them.

To add a setting, add one :class:`Setting` to ``SETTINGS`` and regenerate the table of docs/CONFIGURATION.md (see
``tests/unit/test_settings.py``). The pure ``policy/`` package never reads settings: its callers
pass the values in.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "SECTION",
    "SETTINGS",
    "Key",
    "Setting",
    "check_all",
    "get",
    "markdown_table",
    "provider_config",
    "ui_timezone",
    "alert_base_url",
    "alert_notifiers",
    "alert_repeat_minutes",
    "dependencies_file",
    "export_concurrency_per_user",
    "export_max_letters",
    "ledger_dedup_seconds",
    "notifier_modules",
    "reconciliation_dir",
    "api_timeout",
    "api_timeout_seconds",
    "replay_driver_interval_seconds",
    "replay_lease_seconds",
    "replay_max_attempts",
    "replay_rate_per_minute",
    "replay_timeout_seconds",
    "replay_canary_timeout_seconds",
    "retention_alerts_days",
    "retention_batch_size",
    "retention_events_days",
    "retention_ledger_days",
    "retention_letters_days",
    "retention_reports_days",
    "rules_file",
    "sweep_grace_seconds",
    "sweep_max_pages",
    "sweep_watermark_overlap_seconds",
    "work_sweeper_enabled",
    "work_sweeper_interval_seconds",
    "work_sweeper_lookup",
    "work_sweeper_max_attempts",
]

SECTION = "retry_provider"


class _Invalid(ValueError):
    """A parser's complaint: what the value must be (``get`` adds where it came from)."""


def _integer(minimum: int, maximum: int) -> Callable[[str], int]:
    """An integer from ``minimum`` to ``maximum``: past it a duration overflows or a bigint does."""

    def parse(raw: str) -> int:
        if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not minimum <= int(raw) <= maximum:
            raise _Invalid(f"an integer from {minimum} to {maximum}")
        return int(raw)

    parse.bounds = (minimum, maximum)  # type: ignore[attr-defined]
    return parse


def _seconds(*, whole: bool) -> Callable[[str], timedelta]:
    def parse(raw: str) -> timedelta:
        try:
            seconds = int(raw) if whole else float(raw)
        except ValueError:
            seconds = -1
        if not 0 <= seconds < 10**9:  # negative, unparsable, NaN or infinite
            raise _Invalid("a whole number of seconds >= 0" if whole else "a number of seconds >= 0")
        return timedelta(seconds=seconds)

    return parse


def _zone(raw: str) -> ZoneInfo:
    try:
        return ZoneInfo(raw)
    except (ZoneInfoNotFoundError, ValueError):
        raise _Invalid("an IANA time zone such as America/Sao_Paulo") from None


def _optional_integer(minimum: int, maximum: int) -> Callable[[str], int | None]:
    whole = _integer(minimum, maximum)

    def parse(raw: str) -> int | None:
        return whole(raw) if raw.strip() else None

    return parse


def _optional_path(raw: str) -> Path | None:
    return Path(raw) if raw else None


def _module_prefixes(raw: str) -> tuple[str, ...]:
    prefixes = tuple(p.strip() for p in raw.split(",") if p.strip())
    if any(not all(part.isidentifier() for part in p.rstrip(".").split(".")) for p in prefixes):
        raise _Invalid("comma-separated module names such as my_company.alerts")
    return prefixes


def _text(raw: str) -> str:
    return raw


def _boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("true", "false", "1", "0", ""):
        raise _Invalid("true or false")
    return lowered in ("true", "1")


@dataclass(frozen=True)
class Setting:
    """One option of ``[retry_provider]``.

    :param key: the option's name, e.g. ``replay_max_attempts``.
    :param type: Airflow's type name: ``string``, ``integer``, ``float`` or ``boolean``.
    :param default: the default, as text (``""``: none).
    :param example: an example value, as text.
    :param description: what it does and who reads it.
    :param parse: turns the text into the value callers get; raises ``ValueError`` saying what is expected.
    :param legacy_env: the deprecated environment variable read before, if any.
    """

    key: str
    type: str
    default: str
    example: str
    description: str
    parse: Callable[[str], Any]
    legacy_env: str | None = None

    @property
    def bounds(self) -> tuple[int, int] | None:
        """The smallest and largest value an integer setting takes, else None."""
        found: tuple[int, int] | None = getattr(self.parse, "bounds", None)
        return found

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


SETTINGS: tuple[Setting, ...] = (
    Setting(
        key="replay_max_attempts",
        type="integer",
        default="3",
        example="5",
        description="Replays allowed per dead letter before it is parked (DLQ callback, sweeper, replay engine).",
        parse=_integer(1, 1000),
        legacy_env="AIRFLOW_RETRY_DLQ_REPLAY_MAX_ATTEMPTS",
    ),
    Setting(
        key="replay_rate_per_minute",
        type="integer",
        default="10",
        example="60",
        description="At most this many clears in any 60 seconds, spaced evenly, for the whole deployment "
        "(every replay driver; `airflow-retry dlq replay --rate` can only lower it).",
        parse=_integer(1, 60000),
        legacy_env="AIRFLOW_RETRY_DLQ_REPLAY_RATE_PER_MINUTE",
    ),
    Setting(
        key="replay_lease_seconds",
        type="integer",
        default="120",
        example="60",
        description="How long a replay driver holds a job, and a claimed letter counts as mid-clear, "
        "without renewing; a dead driver's job and claims are taken back after it (replay drivers, sweeper). "
        "At least three times `api_timeout_seconds` (one clear with a token refresh), checked when settings load.",
        parse=_integer(10, 86400),
    ),
    Setting(
        key="replay_timeout_seconds",
        type="integer",
        default="86400",
        example="21600",
        description="How long a replay may wait for its cleared task instance to end (queued, scheduled, "
        "running...) before the sweep counts it failed: its letter goes back to dlq (parked at the cap), and is "
        "resolved by the next sweep if the task instance succeeds later (sweeper, replay drivers).",
        parse=_integer(60, 30 * 86400),
    ),
    Setting(
        key="replay_canary_timeout_seconds",
        type="integer",
        default="1800",
        example="600",
        description="How long a replay job of more than one letter waits for its canary (the one letter it "
        "clears first) to resolve or fail before it stops as canary undecided, its other letters left in dlq "
        "untouched (replay drivers).",
        parse=_integer(10, 86400),
    ),
    Setting(
        key="api_timeout_seconds",
        type="integer",
        default="",
        example="20",
        description="Seconds each call to Airflow's REST API may take (replay drivers, sweeper, pages, CLI); "
        "empty: a third of `replay_lease_seconds`, at most 30. `replay_lease_seconds` must be at least three "
        "times it.",
        parse=_optional_integer(1, 3600),
    ),
    Setting(
        key="replay_driver_interval_seconds",
        type="float",
        default="5",
        example="2",
        description="How often an idle replay driver (one per api-server worker, `airflow-retry dlq drive "
        "--forever`) looks for queued jobs and undecided claims.",
        parse=_seconds(whole=False),
    ),
    Setting(
        key="sweep_grace_seconds",
        type="integer",
        default="120",
        example="300",
        description="The sweeper DAG leaves failures newer than this to their callback.",
        parse=_seconds(whole=True),
        legacy_env="AIRFLOW_RETRY_DLQ_SWEEP_GRACE_SECONDS",
    ),
    Setting(
        key="sweep_max_pages",
        type="integer",
        default="150",
        example="500",
        description="Pages of Airflow's bulk task-instance list one dead-letter sweep reads at most "
        "(100 rows each); the next sweep continues where it stopped.",
        parse=_integer(2, 1000000),
    ),
    Setting(
        key="sweep_watermark_overlap_seconds",
        type="integer",
        default="3600",
        example="600",
        description="How far back of its watermark the sweeper reads ended task instances again "
        "(clock skew between Airflow's hosts; read twice, decided once).",
        parse=_seconds(whole=True),
    ),
    Setting(
        key="ui_timezone",
        type="string",
        default="America/Sao_Paulo",
        example="Europe/Lisbon",
        description="Time zone of the times the Dead letters and Reconciliation pages show (an IANA name); "
        "the UTC instant shows on hover.",
        parse=_zone,
        legacy_env="AIRFLOW_RETRY_UI_TIMEZONE",
    ),
    Setting(
        key="ledger_dedup_seconds",
        type="float",
        default="3600",
        example="600",
        description="How long a succeeded work unit is not run again (ledger, `@idempotent`, "
        "`IdempotentMixin`, medallion operators; `dedup_window=` overrides).",
        parse=_seconds(whole=False),
        legacy_env="AIRFLOW_RETRY_LEDGER_DEDUP_SECONDS",
    ),
    Setting(
        key="dependencies_file",
        type="string",
        default="",
        example="/opt/airflow/dependencies.yaml",
        description="The dependency map (YAML) used when none is passed or registered "
        "(`capacity.uses`, `apply_capacity`, `airflow-retry pools sync`; `--file` overrides).",
        parse=_optional_path,
        legacy_env="AIRFLOW_RETRY_DEPENDENCIES_FILE",
    ),
    Setting(
        key="rules_file",
        type="string",
        default="",
        example="/opt/airflow/retry_rules.yaml",
        description="A YAML file of classification rules tried before the defaults, read when a "
        "`ClassifiedRetryPolicy` is built (DAG parse); `airflow-retry policy classify --rules` overrides.",
        parse=_optional_path,
        legacy_env="AIRFLOW_RETRY_RULES_FILE",
    ),
    Setting(
        key="reconciliation_dir",
        type="string",
        default="",
        example="/opt/airflow/reconciliation",
        description="Where the reconciliation DAG writes its report artifacts "
        "(empty: `$AIRFLOW_HOME/reconciliation`).",
        parse=_optional_path,
        legacy_env="AIRFLOW_RETRY_RECONCILIATION_DIR",
    ),
    Setting(
        key="notifier_modules",
        type="string",
        default="",
        example="my_company.alerts,ops.notify",
        description="Module prefixes the reconciliation notifier (Variable "
        "`retry_provider_reconciliation_notifier`) may be imported from, comma-separated; empty refuses "
        "every notifier (whoever may edit Variables could otherwise make the DAG import any function).",
        parse=_module_prefixes,
    ),
    Setting(
        key="alert_notifiers",
        type="string",
        default="",
        example='[{"name": "oncall-mail", "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier", '
        '"kwargs": {"to": "oncall@example.com", "smtp_conn_id": "smtp_alerts"}}]',
        description="The notifiers alerts go through: a JSON list of `{name, class, kwargs}`, each class an "
        "`airflow.sdk.BaseNotifier` subclass by dotted path (empty: no alerts). Read by the DLQ callback, "
        "the sweepers and the reconciliation DAG.",
        parse=_text,
    ),
    Setting(
        key="alert_repeat_minutes",
        type="integer",
        default="60",
        example="30",
        description="At most one message per root cause (fingerprint) per this many minutes, carrying the "
        "count since the last one.",
        parse=_integer(1, 525600),
    ),
    Setting(
        key="alert_base_url",
        type="string",
        default="",
        example="https://airflow.example.com",
        description="The Airflow UI address in the links of alert messages (empty: `[api] base_url`).",
        parse=_text,
    ),
    Setting(
        key="work_sweeper_enabled",
        type="boolean",
        default="false",
        example="true",
        description="Turns the work-unit sweeper (DAG `retry_provider_work_sweeper`) on; off, its task is skipped.",
        parse=_boolean,
    ),
    Setting(
        key="work_sweeper_interval_seconds",
        type="integer",
        default="30",
        example="60",
        description="Seconds between two sweeps of the work-unit sweeper while it is on.",
        parse=_integer(1, 86400),
    ),
    Setting(
        key="work_sweeper_max_attempts",
        type="integer",
        default="10",
        example="5",
        description="Failed sweeps of a work unit (1 min, x2, up to 1 h apart) before it is parked and an "
        "alert goes out.",
        parse=_integer(1, 1000),
    ),
    Setting(
        key="work_sweeper_lookup",
        type="string",
        default="",
        example="my_company.jobs.lookup_remote_job",
        description="Dotted path of `lookup(remote_job_id, unit) -> RemoteJob or None` that asks the remote "
        "side about a job (empty: units with a remote job id are parked after the failed sweeps).",
        parse=_text,
    ),
    Setting(
        key="export_max_letters",
        type="integer",
        default="100000",
        example="20000",
        description="At most this many letters in one CSV or JSON export of the Dead letters API; a longer "
        "export is cut there and says so (a last CSV comment row, the JSON `cut` field, the "
        "`X-Export-Cut` header).",
        parse=_integer(1, 10_000_000),
    ),
    Setting(
        key="export_concurrency_per_user",
        type="integer",
        default="2",
        example="1",
        description="Exports one user may run at once across every api-server worker (held as PostgreSQL "
        "advisory locks for the export's duration); one more answers 429.",
        parse=_integer(1, 100),
    ),
    Setting(
        key="retention_letters_days",
        type="integer",
        default="90",
        example="180",
        description="Retention deletes `resolved` and `dismissed` letters (and their replays) older than this.",
        parse=_integer(1, 36500),
    ),
    Setting(
        key="retention_reports_days",
        type="integer",
        default="30",
        example="60",
        description="Retention deletes reconciliation reports, findings and artifact files older than this "
        "(each workspace's latest is kept).",
        parse=_integer(1, 36500),
    ),
    Setting(
        key="retention_events_days",
        type="integer",
        default="30",
        example="14",
        description="Retention deletes extraction events older than this.",
        parse=_integer(1, 36500),
    ),
    Setting(
        key="retention_ledger_days",
        type="integer",
        default="30",
        example="60",
        description="Retention deletes finished work units older than this, never inside their dedup window.",
        parse=_integer(1, 36500),
    ),
    Setting(
        key="retention_alerts_days",
        type="integer",
        default="30",
        example="7",
        description="Retention deletes sent alerts, idle root-cause windows and told deliveries (their deadline) older than this.",
        parse=_integer(1, 36500),
    ),
    Setting(
        key="retention_batch_size",
        type="integer",
        default="5000",
        example="1000",
        description="Rows retention deletes per statement and transaction.",
        parse=_integer(1, 1000000),
    ),
)

Key = Literal[
    "replay_max_attempts",
    "replay_rate_per_minute",
    "replay_lease_seconds",
    "api_timeout_seconds",
    "replay_timeout_seconds",
    "replay_canary_timeout_seconds",
    "replay_driver_interval_seconds",
    "sweep_grace_seconds",
    "sweep_max_pages",
    "sweep_watermark_overlap_seconds",
    "ui_timezone",
    "ledger_dedup_seconds",
    "dependencies_file",
    "rules_file",
    "reconciliation_dir",
    "notifier_modules",
    "alert_notifiers",
    "alert_repeat_minutes",
    "alert_base_url",
    "work_sweeper_enabled",
    "work_sweeper_interval_seconds",
    "work_sweeper_max_attempts",
    "work_sweeper_lookup",
    "export_max_letters",
    "export_concurrency_per_user",
    "retention_letters_days",
    "retention_reports_days",
    "retention_events_days",
    "retention_ledger_days",
    "retention_alerts_days",
    "retention_batch_size",
]
"""The name of every setting: ``get`` with any other string fails ``mypy``."""

_BY_KEY = {setting.key: setting for setting in SETTINGS}


def get(key: Key) -> Any:
    """The parsed value of ``[retry_provider] key``; a bad value is a ``ValueError`` naming where it came from.

    Airflow's configuration (airflow.cfg, ``AIRFLOW__RETRY_PROVIDER__*``) is read first; when it
    holds only the default, a deprecated ``AIRFLOW_RETRY_*`` variable still applies, with a warning.
    """
    from airflow.sdk import conf

    setting = _BY_KEY[key]
    raw = conf.get(SECTION, key, fallback=setting.default).strip()
    source = f"[{SECTION}] {key} ({setting.env})"
    legacy = os.environ.get(setting.legacy_env, "").strip() if setting.legacy_env else ""
    if legacy:
        warnings.warn(
            f"{setting.legacy_env} is deprecated: set [{SECTION}] {key} in airflow.cfg or {setting.env}",
            DeprecationWarning,
            stacklevel=2,
        )
        if raw == setting.default:
            raw, source = legacy, f"{setting.legacy_env} (deprecated; use [{SECTION}] {key})"
    if not raw and setting.default:
        raw = setting.default
    try:
        return setting.parse(raw)
    except ValueError as exc:
        raise ValueError(f"{source} must be {exc}, got {raw!r}") from None


def check_all() -> None:
    """Read every setting once (a process's start-up): a bad value is a ``ValueError`` naming each bad setting and value."""
    problems = []
    for setting in SETTINGS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                get(cast(Key, setting.key))
        except ValueError as exc:
            problems.append(str(exc))
    if not problems:
        try:
            replay_lease_seconds()
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))


def ui_timezone() -> ZoneInfo:
    """``[retry_provider] ui_timezone`` as a zone."""
    zone: ZoneInfo = get("ui_timezone")
    return zone


# -- typed accessors: one per setting, so a misspelt name fails mypy, not a run --------------


def replay_max_attempts() -> int:
    """``[retry_provider] replay_max_attempts``."""
    value: int = get("replay_max_attempts")
    return value


def replay_rate_per_minute() -> int:
    """``[retry_provider] replay_rate_per_minute``."""
    value: int = get("replay_rate_per_minute")
    return value


def replay_lease_seconds() -> int:
    """``[retry_provider] replay_lease_seconds``: at least three ``api_timeout_seconds``, or a ``ValueError`` naming both.

    A clear with a token refresh takes up to three API timeouts; a shorter lease would let another
    process take a claim whose clear is still in flight for abandoned.
    """
    value: int = get("replay_lease_seconds")
    timeout: int | None = get("api_timeout_seconds")
    if timeout is not None and value < 3 * timeout:
        raise ValueError(
            f"[{SECTION}] replay_lease_seconds must be at least 3 x [{SECTION}] api_timeout_seconds "
            f"(a clear with a token refresh takes up to three API timeouts), got replay_lease_seconds={value} "
            f"and api_timeout_seconds={timeout}"
        )
    return value


def replay_canary_timeout_seconds() -> int:
    """``[retry_provider] replay_canary_timeout_seconds``."""
    value: int = get("replay_canary_timeout_seconds")
    return value


def replay_timeout_seconds() -> int:
    """``[retry_provider] replay_timeout_seconds``."""
    value: int = get("replay_timeout_seconds")
    return value


def api_timeout_seconds() -> int | None:
    """``[retry_provider] api_timeout_seconds`` (None: unset; see :func:`api_timeout`)."""
    value: int | None = get("api_timeout_seconds")
    return value


def api_timeout() -> int:
    """Seconds per call to Airflow's REST API: ``api_timeout_seconds``, or a third of ``replay_lease_seconds`` (at most 30)."""
    lease = replay_lease_seconds()  # checks the pair
    value = api_timeout_seconds()
    return value if value is not None else min(30, lease // 3)


def replay_driver_interval_seconds() -> timedelta:
    """``[retry_provider] replay_driver_interval_seconds``."""
    value: timedelta = get("replay_driver_interval_seconds")
    return value


def sweep_grace_seconds() -> timedelta:
    """``[retry_provider] sweep_grace_seconds``."""
    value: timedelta = get("sweep_grace_seconds")
    return value


def sweep_max_pages() -> int:
    """``[retry_provider] sweep_max_pages``."""
    value: int = get("sweep_max_pages")
    return value


def sweep_watermark_overlap_seconds() -> timedelta:
    """``[retry_provider] sweep_watermark_overlap_seconds``."""
    value: timedelta = get("sweep_watermark_overlap_seconds")
    return value


def ledger_dedup_seconds() -> timedelta:
    """``[retry_provider] ledger_dedup_seconds``."""
    value: timedelta = get("ledger_dedup_seconds")
    return value


def dependencies_file() -> Path | None:
    """``[retry_provider] dependencies_file``."""
    value: Path | None = get("dependencies_file")
    return value


def rules_file() -> Path | None:
    """``[retry_provider] rules_file``."""
    value: Path | None = get("rules_file")
    return value


def reconciliation_dir() -> Path | None:
    """``[retry_provider] reconciliation_dir``."""
    value: Path | None = get("reconciliation_dir")
    return value


def notifier_modules() -> tuple[str, ...]:
    """``[retry_provider] notifier_modules``."""
    value: tuple[str, ...] = get("notifier_modules")
    return value


def alert_notifiers() -> str:
    """``[retry_provider] alert_notifiers``."""
    value: str = get("alert_notifiers")
    return value


def alert_repeat_minutes() -> int:
    """``[retry_provider] alert_repeat_minutes``."""
    value: int = get("alert_repeat_minutes")
    return value


def alert_base_url() -> str:
    """``[retry_provider] alert_base_url``."""
    value: str = get("alert_base_url")
    return value


def work_sweeper_enabled() -> bool:
    """``[retry_provider] work_sweeper_enabled``."""
    value: bool = get("work_sweeper_enabled")
    return value


def work_sweeper_interval_seconds() -> int:
    """``[retry_provider] work_sweeper_interval_seconds``."""
    value: int = get("work_sweeper_interval_seconds")
    return value


def work_sweeper_max_attempts() -> int:
    """``[retry_provider] work_sweeper_max_attempts``."""
    value: int = get("work_sweeper_max_attempts")
    return value


def work_sweeper_lookup() -> str:
    """``[retry_provider] work_sweeper_lookup``."""
    value: str = get("work_sweeper_lookup")
    return value


def export_max_letters() -> int:
    """``[retry_provider] export_max_letters``."""
    value: int = get("export_max_letters")
    return value


def export_concurrency_per_user() -> int:
    """``[retry_provider] export_concurrency_per_user``."""
    value: int = get("export_concurrency_per_user")
    return value


def retention_letters_days() -> int:
    """``[retry_provider] retention_letters_days``."""
    value: int = get("retention_letters_days")
    return value


def retention_reports_days() -> int:
    """``[retry_provider] retention_reports_days``."""
    value: int = get("retention_reports_days")
    return value


def retention_events_days() -> int:
    """``[retry_provider] retention_events_days``."""
    value: int = get("retention_events_days")
    return value


def retention_ledger_days() -> int:
    """``[retry_provider] retention_ledger_days``."""
    value: int = get("retention_ledger_days")
    return value


def retention_alerts_days() -> int:
    """``[retry_provider] retention_alerts_days``."""
    value: int = get("retention_alerts_days")
    return value


def retention_batch_size() -> int:
    """``[retry_provider] retention_batch_size``."""
    value: int = get("retention_batch_size")
    return value


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

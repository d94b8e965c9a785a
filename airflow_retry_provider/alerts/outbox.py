"""The alert outbox in PostgreSQL: messages are queued in a transaction, then sent, and retried.

Queuing decides what deserves a message (the first letter of a root cause in a window; at most
one summary per root cause per window; a parked letter), and writes one row per configured
notifier. Sending claims due rows (``FOR UPDATE SKIP LOCKED``, so two senders never send the
same row), calls the notifier and marks the row; a notifier that raises is logged and counted,
and the row waits 1, 2, 4 ... up to 60 minutes before the sweeper tries it again. Delivery is at
least once: a process killed between sending and committing sends that message again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow_retry_provider import metrics
from airflow_retry_provider.alerts import messages
from airflow_retry_provider.alerts.messages import Alert, Impact
from airflow_retry_provider.alerts.notifiers import AlertSettings, send
from airflow_retry_provider.alerts.sql import query
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import DeadLetterStore, FileResult, NewLetter
from airflow_retry_provider.policy import Backoff, redact
from airflow_retry_provider.states import LetterStatus

log = logging.getLogger(__name__)

BATCH = 100
#: 1 minute after the first failure, doubling up to 1 hour (the work-unit sweeper waits the same way).
RETRY_BACKOFF = Backoff(base=timedelta(minutes=1), multiplier=2, cap=timedelta(hours=1), jitter=0)


def retry_delay(attempts: int) -> int:
    """Seconds before the next try of a message that failed ``attempts`` times: 60 x2, at most 3600."""
    return int(RETRY_BACKOFF.nominal(attempts).total_seconds())


@dataclass(frozen=True)
class Delivery:
    """What one delivery pass did, by outbox row id."""

    sent: tuple[int, ...] = ()
    failed: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"sent": list(self.sent), "failed": list(self.failed), "dropped": list(self.dropped)}


class AlertOutbox:
    """Queues and sends alerts for one deployment.

    :param db: the provider's database (the outbox's rows are written in its transactions).
    :param settings: the notifiers, the repeat window and the UI's address.
    """

    def __init__(self, db: ProviderDatabase, settings: AlertSettings) -> None:
        self.db = db
        self.settings = settings

    # -- queuing ---------------------------------------------------------------------------

    def queue(self, cur: Any, alert: Alert) -> list[int]:
        """Write ``alert`` once per configured notifier in the caller's transaction; the row ids."""
        ids = []
        for spec in self.settings.notifiers:
            cur.execute(
                query("insert_alert"),
                {
                    "kind": alert.kind,
                    "subject_key": alert.subject_key,
                    "channel": spec.name,
                    "title": alert.title,
                    "body": json.dumps(alert.body()),
                },
            )
            ids.append(int(cur.fetchone()[0]))
        metrics.incr("alert", "queued", alert.kind)
        return ids

    def letter_filed(self, letter: NewLetter, result: FileResult, impact: Impact | None = None) -> list[int]:
        """Queue what filing ``letter`` deserves (maybe nothing); the outbox row ids."""
        if not self.settings.enabled or not result.changed:
            return []
        base = self.settings.base_url
        with self.db.transaction() as cur:
            if result.status == LetterStatus.PARKED:
                alert = messages.letter_parked(letter, result.letter_id, result.replay_count, base, impact)
                return self.queue(cur, alert)
            if result.status != LetterStatus.DLQ:
                return []
            count = self._count_in_window(cur, letter.fingerprint, result.letter_id)
            if count == 0:
                return []
            return self.queue(cur, messages.root_cause(letter, result.letter_id, count, base, impact))

    def _count_in_window(self, cur: Any, key: str, letter_id: int) -> int:
        """How many letters the message for this one must tell about; 0 when the window is still open."""
        params = {"key": key, "letter_id": letter_id, "repeat_minutes": self.settings.repeat_minutes}
        cur.execute(query("open_window"), params)
        if cur.fetchone() is not None:
            return 1
        cur.execute(query("lock_window"), params)
        row = cur.fetchone()
        if row is None:  # deleted by retention since: this letter opens a new window
            cur.execute(query("open_window"), params)
            return 1
        pending, due = int(row[0]), bool(row[1])
        if due:
            cur.execute(query("restart_window"), params)
            return pending + 1
        cur.execute(query("count_in_window"), params)
        return 0

    def flush_windows(self) -> list[int]:
        """Queue one summary for every root cause whose window ended with letters not yet told."""
        if not self.settings.enabled:
            return []
        ids: list[int] = []
        with self.db.transaction() as cur:
            cur.execute(
                query("claim_due_windows"), {"repeat_minutes": self.settings.repeat_minutes, "limit": BATCH}
            )
            due = cur.fetchall()
            for _key, count, letter_id in due:
                letter = DeadLetterStore.letter_in(cur, letter_id)
                if letter is None:  # the latest letter was purged; nothing left to describe
                    continue
                ids += self.queue(
                    cur, messages.root_cause(letter, letter.id, int(count), self.settings.base_url)
                )
        return ids

    # -- sending ---------------------------------------------------------------------------

    def deliver(self, ids: Sequence[int] | None = None) -> Delivery:
        """Send the due messages (all, or only ``ids``); never raises for a notifier's error."""
        sent: list[int] = []
        failed: list[int] = []
        dropped: list[int] = []
        if ids is not None and not ids:
            return Delivery()
        with self.db.transaction() as cur:
            cur.execute(
                query("claim_due_alerts"), {"ids": list(ids) if ids is not None else None, "limit": BATCH}
            )
            for alert_id, kind, _key, channel, title, body, attempts in cur.fetchall():
                spec = self.settings.channel(channel)
                if spec is None:
                    cur.execute(
                        query("mark_alert_dropped"),
                        {"id": alert_id, "error": f"notifier {channel!r} is no longer configured"},
                    )
                    dropped.append(alert_id)
                    continue
                body = body if isinstance(body, dict) else json.loads(body)
                try:
                    send(spec, {"kind": kind, "title": title, **body})
                except Exception as exc:  # any notifier error: log, count, retry later
                    error = safe_error(exc)
                    delay = retry_delay(attempts + 1)
                    cur.execute(
                        query("mark_alert_failed"), {"id": alert_id, "error": error, "delay_seconds": delay}
                    )
                    metrics.incr("alert", "failed", kind)
                    log.warning(
                        "airflow-retry-provider: alert %s (%s) through %s failed, next try in %s s: %s",
                        alert_id,
                        kind,
                        channel,
                        delay,
                        error,
                    )
                    failed.append(alert_id)
                else:
                    cur.execute(query("mark_alert_sent"), {"id": alert_id})
                    metrics.incr("alert", "sent", kind)
                    sent.append(alert_id)
        return Delivery(tuple(sent), tuple(failed), tuple(dropped))


def safe_error(exc: BaseException) -> str:
    """An exception as one redacted line of at most 500 characters, safe for a log or a row."""
    from airflow_retry_provider.masking import mask

    return mask(redact(f"{type(exc).__name__}: {exc}"))[:500]

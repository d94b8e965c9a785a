"""Alerts through Airflow's notifiers: someone is told when a letter is filed, parked, ...

Nothing calls this module by name to alert: the dead-letter queue, the breakers and the work-unit
sweeper announce (a letter filed or parked, a replay job failed, a fix deployed, a dependency down
or recovered, a work unit parked) through the provider's one registry, ``announce.py``, and
:func:`listen` hears them (registered like any other listener, by its entry point) and makes the
messages :data:`MESSAGES` maps each kind of event to (``messages.py`` builds them). What deserves a
message is queued in the PostgreSQL outbox and sent at once; it never raises, so alerting cannot
fail the task. ``run_alerts`` (the sweeper DAG) sends the
summaries of ended windows and retries every message a notifier failed to send. Every function
takes the provider's database (:class:`~airflow_retry_provider.database.ProviderDatabase`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from airflow_retry_provider import announce, dlq, metrics
from airflow_retry_provider.airflow_compat import policy_with
from airflow_retry_provider.alerts import messages
from airflow_retry_provider.alerts.messages import Alert, Impact
from airflow_retry_provider.alerts.notifiers import AlertSettings, load_settings
from airflow_retry_provider.alerts.outbox import AlertOutbox, Delivery, safe_error
from airflow_retry_provider.announce import AfterCommit
from airflow_retry_provider.breaker.announce import DependencyDown, DependencyRecovered
from airflow_retry_provider.database import ProviderDatabase

__all__ = [
    "Alert",
    "AlertOutbox",
    "AlertSettings",
    "Delivery",
    "Impact",
    "after_filing",
    "deliveries_at_risk",
    "deliveries_held",
    "impact_of",
    "listen",
    "reconciliation_alerts",
    "run_alerts",
    "send_alert",
    "load_settings",
]

log = logging.getLogger(__name__)


def impact_of(context: Mapping[str, Any] | None) -> Impact:
    """What the failed task instance in ``context`` blocks: its downstream tasks and its deadline."""
    if not context:
        return Impact()
    task = context.get("task")
    downstream: tuple[str, ...] | None = None
    deadline = None
    try:
        if task is not None and hasattr(task, "get_flat_relative_ids"):
            downstream = tuple(sorted(task.get_flat_relative_ids(upstream=False)))
        policy: Any = policy_with(task, "deadline_for")  # the task's, or one in its chain (3.4)
        if policy is not None:
            deadline = policy.deadline_for(context)
    except Exception:  # the impact is a courtesy: an alert without it still goes out
        log.debug("could not work out the impact", exc_info=True)
    return Impact(downstream, deadline)


def after_filing(
    db: ProviderDatabase, letter: Any, result: Any, context: Mapping[str, Any] | None = None
) -> Delivery:
    """Queue and send what filing ``letter`` deserves. Never raises: errors are logged and counted."""
    impact = impact_of(context)
    try:
        from airflow_retry_provider.dlq import DeadLetterStore

        stored = DeadLetterStore(db).impact(result.letter_id)
        if stored is not None:
            impact = Impact(impact.downstream, impact.deadline, stored.impact)
    except Exception:  # the impact is a courtesy: the alert goes out without it
        log.debug("could not read the stored impact", exc_info=True)
    return _never_raising(db, lambda outbox: outbox.letter_filed(letter, result, impact))


def deliveries_at_risk(db: ProviderDatabase, letter_id: int, letter: Any, blocked: Any) -> Delivery:
    """Tell each delivery ``letter`` puts at risk (or lost), once per root cause, delivery, deadline
    and status (``retry_delivery_alerts``). Never raises."""

    def queue(outbox: AlertOutbox) -> list[int]:
        ids: list[int] = []
        with db.transaction() as cur:
            for delivery in blocked.deliveries:
                if _first_telling(cur, letter.fingerprint, delivery, delivery.status, letter_id):
                    alert = messages.delivery_at_risk(
                        letter, letter_id, delivery, blocked, outbox.settings.base_url
                    )
                    ids += outbox.queue(cur, alert)
        return ids

    if not blocked.deliveries:
        return Delivery()
    return _never_raising(db, queue)


def deliveries_held(db: ProviderDatabase, dependency: str, opened_at: Any, held: Any) -> Delivery:
    """Tell the deliveries an open breaker's held tasks put at risk: once per outage, delivery and
    deadline (``retry_delivery_alerts``, its root cause ``dependency:<name>:<opened_at>``, letter 0),
    one message with the new ones. Never raises."""
    root_cause = f"dependency:{dependency}:{opened_at.isoformat()}"

    def queue(outbox: AlertOutbox) -> list[int]:
        with db.transaction() as cur:
            new = [item for item in held if _first_telling(cur, root_cause, item.delivery, "held", 0)]
            if not new:
                return []
            return outbox.queue(
                cur, messages.deliveries_held(dependency, opened_at, new, outbox.settings.base_url)
            )

    if not held:
        return Delivery()
    return _never_raising(db, queue)


def _first_telling(cur: Any, fingerprint: str, delivery: Any, status: str, letter_id: int) -> bool:
    """Record that ``delivery`` is told ``status`` for the root cause ``fingerprint``; False when it
    was told already (``retry_delivery_alerts``: once per root cause, delivery, deadline and status)."""
    from airflow_retry_provider.alerts.sql import query

    params = {
        "fingerprint": fingerprint,
        "delivery": delivery.name,
        "deadline": delivery.deadline,
        "status": status,
        "letter_id": letter_id,
    }
    cur.execute(query("tell_delivery"), params)
    return cur.fetchone() is not None


def send_alert(db: ProviderDatabase, build: Callable[[str], Alert]) -> Delivery:
    """Queue and send the alert ``build(base_url)`` makes. Never raises: errors are logged and counted."""

    def queue(outbox: AlertOutbox) -> list[int]:
        with db.transaction() as cur:
            return outbox.queue(cur, build(outbox.settings.base_url))

    return _never_raising(db, queue)


def _never_raising(db: ProviderDatabase, queue: Callable[[AlertOutbox], list[int]]) -> Delivery:
    try:
        settings = load_settings()
        if not settings.enabled:
            return Delivery()
        outbox = AlertOutbox(db, settings)
        return outbox.deliver(queue(outbox))
    except Exception as exc:  # alerting must never fail the caller; the sweeper sends what is queued
        metrics.incr("alert", "error")
        log.error("airflow-retry-provider: could not queue or send the alert: %s", safe_error(exc))
        return Delivery()


ALERTED_STATUSES = ("stopped", "failing")


def reconciliation_alerts(db: ProviderDatabase, summary: Mapping[str, Any]) -> Delivery:
    """Tell about a reconciliation run: its new findings, and each connector that turned stopped or
    failing or recovered since the last message (remembered in PostgreSQL). Never raises."""
    from airflow_retry_provider.alerts.sql import query

    def queue(outbox: AlertOutbox) -> list[int]:
        base = outbox.settings.base_url
        ids: list[int] = []
        with db.transaction() as cur:
            if summary.get("new_findings"):
                ids += outbox.queue(
                    cur, messages.new_findings(summary["new_findings"], summary["as_of"], base)
                )
            for report in summary.get("reports", []):
                workspace = str(report["workspace_id"])
                now = {
                    c: s for c, s in report.get("unhealthy_connectors", {}).items() if s in ALERTED_STATUSES
                }
                cur.execute(query("told_connector_statuses"), {"workspace_id": workspace})
                told = dict(cur.fetchall())
                for connector, status in sorted(now.items()):
                    if told.get(connector) != status:
                        params = {"workspace_id": workspace, "connector_id": connector, "status": status}
                        cur.execute(query("tell_connector_status"), params)
                        alert = messages.connector_status(
                            workspace, connector, told.get(connector), status, base
                        )
                        ids += outbox.queue(cur, alert)
                for connector, status in sorted(told.items()):
                    if connector not in now:
                        cur.execute(
                            query("forget_connector_status"),
                            {"workspace_id": workspace, "connector_id": connector},
                        )
                        ids += outbox.queue(
                            cur, messages.connector_status(workspace, connector, status, None, base)
                        )
        return ids

    return _never_raising(db, queue)


def run_alerts(db: ProviderDatabase | None = None) -> dict[str, Any]:
    """The sweeper's alert step: queue the summaries of ended windows, then send everything due."""
    settings = load_settings()
    outbox = AlertOutbox(db or ProviderDatabase.from_conn_id(), settings)
    summaries = outbox.flush_windows()
    delivery = outbox.deliver()
    report = {"enabled": settings.enabled, "summaries": summaries, **delivery.to_json()}
    log.info("airflow-retry-provider: alerts %s", report)
    return report


Handler = Callable[[Any], AfterCommit | None]
"""What the alerts do with one kind of event: queue its message(s), maybe send after a commit."""


def _each(queue: Callable[[Any], Delivery]) -> Handler:
    """The messages ``queue(event)`` queues (deciding which: once per window, delivery, ...), sent at once."""

    def handle(event: Any) -> None:
        queue(event)

    return handle


def _at_once(build: Callable[[Any, str], Alert]) -> Handler:
    """The message ``build(event, base_url)``, queued and sent at once."""
    return _each(lambda event: send_alert(event.db, lambda base: build(event, base)))


def _after_commit(build: Callable[[Any, str], Alert]) -> Handler:
    """The message ``build(event, base_url)``, queued with the cursor of the transaction the event was
    told in (a fix deployed, a dependency down or recovered) and sent after its commit."""

    def handle(event: Any) -> AfterCommit | None:
        settings = load_settings()
        if not settings.enabled:
            return None
        outbox = AlertOutbox(event.db, settings)
        ids = outbox.queue(event.cur, build(event, settings.base_url))
        return lambda: outbox.deliver(ids)

    return handle


MESSAGES: dict[type[announce.Event], Handler] = {
    dlq.LetterFiled: _each(lambda e: after_filing(e.db, e.letter, e.result, e.context)),
    dlq.ImpactAssessed: _each(lambda e: deliveries_at_risk(e.db, e.letter_id, e.letter, e.impact)),
    dlq.DeliveriesHeld: _each(lambda e: deliveries_held(e.db, e.dependency, e.opened_at, e.held)),
    dlq.LetterParked: _at_once(
        lambda e, base: messages.letter_parked(
            e.letter, e.letter.id, e.letter.replay_count, base, reason=e.reason
        )
    ),
    dlq.JobFailed: _at_once(
        lambda e, base: messages.replay_job_failed(
            e.job.id, e.job.actor, e.job.reason, e.job.dag_ids, dict(e.counts), base, e.job.stop_reason
        )
    ),
    dlq.WorkUnitParked: _at_once(
        lambda e, base: messages.work_unit_parked(e.key, e.owner_ti, e.detail, e.letter_id, base)
    ),
    dlq.FixDeployed: _after_commit(lambda e, base: messages.fix_deployed(e.notice, base)),
    DependencyDown: _after_commit(lambda e, base: messages.dependency_down(e.outage, base)),
    DependencyRecovered: _after_commit(lambda e, base: messages.dependency_recovered(e.outage, base)),
}
"""Each kind of event that deserves a message, and how the alerts make it (``alerts/messages.py``
builds the text). A new kind: its event in an ``announce.py``, its builder in ``messages.py``, one
entry here."""


def listen(event: announce.Event) -> AfterCommit | None:
    """The alerts' listener: the message(s) :data:`MESSAGES` says the event deserves, if any.

    Registered like any other listener, by its entry point (``airflow_retry_provider.listeners`` in
    ``pyproject.toml``). Events told in a transaction are queued with its cursor (a fix deployed
    with the notice, a dependency down or recovered with the breaker's transition) and sent after the
    commit (the action returned); the others are queued and sent at once.
    """
    handler = MESSAGES.get(type(event))
    return handler(event) if handler is not None else None

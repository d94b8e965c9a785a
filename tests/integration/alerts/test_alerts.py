"""Alerts on a real PostgreSQL: the outbox, root-cause windows, retries, and the real SmtpNotifier."""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg
import pytest

from airflow_retry_provider.alerts import after_filing, run_alerts
from airflow_retry_provider.dlq.store import DeadLetterStore
from devstack.smtp import SmtpSink
from tests.alert_notifiers import SECRET, RecordingNotifier
from tests.factories import new_letter

SMTP = "airflow.providers.smtp.notifications.smtp.SmtpNotifier"
RECORDING = "tests.alert_notifiers.RecordingNotifier"
FAILING = "tests.alert_notifiers.FailingNotifier"


def _configure(monkeypatch, *entries: dict[str, Any]) -> None:
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps(list(entries)))
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_BASE_URL", "http://airflow.example.test")


def _alerts(dsn: str) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute("SELECT * FROM retry_alerts ORDER BY id")
        names = [c.name for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _age(dsn: str, sql: str) -> None:
    """Move a stored time back, as if the window or the retry delay had passed."""
    with psycopg.connect(dsn) as conn:
        conn.execute(sql)


def _file(store: DeadLetterStore, **fields: Any):
    letter = new_letter(**fields)
    return letter, store.file(letter, replay_cap=3)


@pytest.fixture
def smtp(monkeypatch):
    """A local SMTP server and an Airflow connection ``smtp_alerts`` to it."""
    sink = SmtpSink().start()
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_ALERTS", sink.connection_json())
    yield sink
    sink.stop()


@pytest.fixture(autouse=True)
def _clear_recorded():
    RecordingNotifier.sent.clear()


def test_one_poison_letter_sends_one_email_saying_what_where_why_and_next(pg_dsn, smtp, monkeypatch):
    """The real SmtpNotifier mails the first letter of a root cause with its place, cause and links."""
    _configure(
        monkeypatch,
        {
            "name": "mail",
            "class": SMTP,
            "kwargs": {"to": "oncall@example.test", "smtp_conn_id": "smtp_alerts"},
        },
    )
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter, result = _file(
        store,
        dag_id="billing",
        run_id="scheduled__2026-11-02",
        task_id="load_invoices",
        message='relation "invoices_v3" does not exist <b>{{ 7 * 7 }}</b>',
    )
    delivery = after_filing(store.db, letter, result)
    assert len(delivery.sent) == 1
    assert smtp.wait_for(1) == ["New root cause: poison/not-found in billing.load_invoices"]
    body = smtp.body(0)
    for expected in (
        "DAG billing",
        "run scheduled__2026-11-02",
        "task load_invoices, try 1",
        "poison / not-found",
        "http://airflow.example.test/dags/billing/runs/scheduled__2026-11-02/tasks/load_invoices",
        f"http://airflow.example.test/retry-provider/letters/{result.letter_id}",
        f"http://airflow.example.test/retry-provider/preview?ids={result.letter_id}",
    ):
        assert expected in body
    assert "&lt;b&gt;{{ 7 * 7 }}&lt;/b&gt;" in body  # escaped, and never rendered as a template
    assert [row["status"] for row in _alerts(pg_dsn)] == ["sent"]


def test_thirty_letters_of_one_root_cause_send_one_message_then_one_summary(pg_dsn, monkeypatch):
    """Inside the window letters are only counted; when it ends the sweeper sends one summary with the count."""
    _configure(monkeypatch, {"class": RECORDING})
    store = DeadLetterStore.from_dsn(pg_dsn)
    for index in range(30):
        after_filing(store.db, *_file(store, task_id=f"load_{index}"))
    assert [m["title"] for m in RecordingNotifier.sent] == ["New root cause: poison/not-found in etl.load_0"]
    assert run_alerts(store.db)["summaries"] == []  # the window is still open
    _age(pg_dsn, "UPDATE retry_alert_windows SET last_alert_at = last_alert_at - interval '61 minutes'")
    report = run_alerts(store.db)
    assert len(report["summaries"]) == 1 and len(report["sent"]) == 1
    assert (
        RecordingNotifier.sent[1]["title"] == "29 letters, 1 root cause: poison/not-found (0123456789abcdef)"
    )
    assert "latest: letter" in RecordingNotifier.sent[1]["text"]
    assert run_alerts(store.db)["summaries"] == []  # told once


def test_a_letter_after_the_window_ended_sends_the_summary_with_itself(pg_dsn, monkeypatch):
    """A letter arriving after the window ended carries the count since the last message, itself included."""
    _configure(monkeypatch, {"class": RECORDING})
    store = DeadLetterStore.from_dsn(pg_dsn)
    for index in range(3):
        after_filing(store.db, *_file(store, task_id=f"t{index}"))
    _age(pg_dsn, "UPDATE retry_alert_windows SET last_alert_at = last_alert_at - interval '2 hours'")
    after_filing(store.db, *_file(store, task_id="t3"))
    assert [m["title"].split(":")[0] for m in RecordingNotifier.sent] == [
        "New root cause",
        "3 letters, 1 root cause",
    ]


def test_different_root_causes_each_get_their_first_message(pg_dsn, monkeypatch):
    """Windows are per fingerprint: a second root cause is told at once."""
    _configure(monkeypatch, {"class": RECORDING})
    store = DeadLetterStore.from_dsn(pg_dsn)
    after_filing(store.db, *_file(store, task_id="a", fingerprint="a" * 16))
    after_filing(store.db, *_file(store, task_id="b", fingerprint="b" * 16))
    assert len(RecordingNotifier.sent) == 2


def test_a_raising_notifier_is_logged_counted_and_retried_by_the_sweeper(pg_dsn, monkeypatch, caplog):
    """Sending never raises; the failed row waits a minute, keeps a redacted error, and the sweeper sends it later."""
    _configure(monkeypatch, {"name": "oncall", "class": FAILING})
    store = DeadLetterStore.from_dsn(pg_dsn)
    with caplog.at_level(logging.WARNING):
        delivery = after_filing(store.db, *_file(store))
    assert delivery.failed and not delivery.sent
    [row] = _alerts(pg_dsn)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert "ConnectionError" in row["last_error"] and SECRET not in row["last_error"]
    assert "through oncall failed" in caplog.text and SECRET not in caplog.text
    assert run_alerts(store.db)["failed"] == []  # not due yet: nothing is tried again before its delay
    _configure(monkeypatch, {"name": "oncall", "class": RECORDING})  # the mail server is back
    _age(pg_dsn, "UPDATE retry_alerts SET next_attempt_at = now() - interval '1 second'")
    assert run_alerts(store.db)["sent"] == [row["id"]]
    assert [r["status"] for r in _alerts(pg_dsn)] == ["sent"]


def test_the_retry_delay_doubles_from_one_minute_up_to_an_hour():
    """A failed message waits 60 s, then 120 s, ... never more than 3600 s."""
    from airflow_retry_provider.alerts.outbox import retry_delay

    assert [retry_delay(n) for n in (1, 2, 3, 6, 7, 50)] == [60, 120, 240, 1920, 3600, 3600]


def test_a_letter_parked_at_the_replay_cap_is_told(pg_dsn, monkeypatch):
    """A replayed letter failing at the cap is parked and someone is told, with the replay count."""
    _configure(monkeypatch, {"class": RECORDING})
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter, result = _file(store)
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("UPDATE retry_dead_letters SET status = 'replaying', replay_count = 2")
    refiled = store.file(new_letter(try_number=2), replay_cap=3)
    assert refiled.status == "parked"
    after_filing(store.db, new_letter(try_number=2), refiled)
    assert RecordingNotifier.sent[-1]["title"].startswith(
        f"Dead letter {result.letter_id} parked after 3 failed replays"
    )


def test_no_notifier_configured_queues_nothing(pg_dsn, monkeypatch):
    """Alerts are off until a notifier is configured: no rows, no windows."""
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", raising=False)
    store = DeadLetterStore.from_dsn(pg_dsn)
    after_filing(store.db, *_file(store))
    assert _alerts(pg_dsn) == []


def test_a_broken_configuration_does_not_fail_the_caller(pg_dsn, monkeypatch, caplog):
    """A notifier class that cannot be imported is logged with the setting's name; filing goes on."""
    monkeypatch.setenv(
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps([{"class": "nowhere.Notifier"}])
    )
    store = DeadLetterStore.from_dsn(pg_dsn)
    with caplog.at_level(logging.ERROR):
        after_filing(store.db, *_file(store))
    assert "[retry_provider] alert_notifiers[0].class: cannot import 'nowhere.Notifier'" in caplog.text


def _summary(unhealthy: dict[str, str], new: int = 0) -> dict[str, Any]:
    finding = {
        "workspace_id": "w1",
        "layer": "bronze",
        "kind": "missing",
        "subject": "src1/orders",
        "action": "rerun src1",
    }
    return {
        "as_of": "2026-11-30T15:00:00Z",
        "new_findings": [finding] * new,
        "reports": [{"workspace_id": "w1", "unhealthy_connectors": unhealthy}],
    }


def test_connector_changes_and_new_findings_are_told_once(pg_dsn, monkeypatch):
    """A connector turning stopped/failing is told once per change, its recovery once; degraded is not told."""
    from airflow_retry_provider.alerts import reconciliation_alerts

    _configure(monkeypatch, {"class": RECORDING})
    store = DeadLetterStore.from_dsn(pg_dsn)
    runs = [
        _summary({"c1": "stopped", "c2": "degraded"}, new=2),
        _summary({"c1": "stopped", "c2": "degraded"}),  # nothing changed: nothing told
        _summary({"c1": "failing"}),
        _summary({}),
    ]
    told, told_links = [], []
    for summary in runs:
        reconciliation_alerts(store.db, summary)
        told.append([m["title"] for m in RecordingNotifier.sent])
        told_links.extend(m["text"] for m in RecordingNotifier.sent)
        RecordingNotifier.sent.clear()
    assert "http://airflow.example.test/retry-provider/connector-health?workspace_id=w1" in str(told_links)
    assert told == [
        ["2 new reconciliation finding(s) in 1 workspace(s)", "Connector c1 is stopped in workspace w1"],
        [],
        ["Connector c1 is failing in workspace w1"],
        ["Connector c1 recovered in workspace w1"],
    ]


def test_every_link_of_an_alert_is_a_route_of_the_plugin():
    """The letter, preview, root-cause and reconciliation links point at pages the plugin serves."""
    from urllib.parse import urlsplit

    from airflow_retry_provider.alerts import messages
    from airflow_retry_provider.plugin.app import URL_PREFIX, create_app

    base = "http://airflow.example.test"
    links = {
        **messages.letter_links(base, new_letter(), 7),
        **messages.connector_status("w1", "c1", None, "stopped", base).links,
    }
    routes = [route.path_regex for route in create_app().routes if hasattr(route, "path_regex")]
    plugin_paths = [urlsplit(url).path for url in links.values() if urlsplit(url).path.startswith(URL_PREFIX)]
    assert len(plugin_paths) == 5
    for path in plugin_paths:
        assert any(regex.match(path[len(URL_PREFIX) :] or "/") for regex in routes), path


def test_a_replay_job_that_ended_with_failures_is_told(pg_dsn, monkeypatch):
    """A job whose clears Airflow refused ends with an alert naming the job and its counts; a clean job is silent."""
    from airflow_retry_provider.dlq.driver import ReplayDriver
    from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
    from airflow_retry_provider.dlq.store import JobStore
    from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
    from devstack.postgres import free_port

    _configure(monkeypatch, {"class": RECORDING})
    store = DeadLetterStore.from_dsn(pg_dsn)
    letters = [store.get(_file(store, task_id=f"j{n}")[1].letter_id) for n in range(2)]

    def closed_api() -> AirflowApi:  # nothing listens: every clear fails
        return AirflowApi(ApiCredentials(f"http://127.0.0.1:{free_port()}", "admin", "admin"), timeout=2)

    job_id = JobStore(store.db).create(ReplayRequest("ana", "fixed the table", "v2"), letters)  # type: ignore[arg-type]
    RecordingNotifier.sent.clear()
    ReplayDriver(ReplayEngine(store, replay_cap=3, rate_per_minute=600), closed_api).drain()
    (sent,) = [m for m in RecordingNotifier.sent if m["title"].startswith("Replay job")]
    assert sent["title"] == f"Replay job {job_id} ended with 2 of 2 letters not cleared"
    assert f"/retry-provider/jobs/{job_id}" in str(sent)

"""One dependency-down and one dependency-recovered alert per outage, through the real SmtpNotifier."""

from __future__ import annotations

import json
import multiprocessing

import psycopg
import pytest

from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.policy.breaker import CLOSED, BreakerSettings
from devstack.smtp import SmtpSink
from tests.integration.breaker.test_store import open_breaker

SMTP = "airflow.providers.smtp.notifications.smtp.SmtpNotifier"
DEP = "positions_db"
LONG = BreakerSettings(enabled=True, cooldown_seconds=600, max_cooldown_seconds=1200, probe_seconds=30)
"""A cool-down no loaded machine outlasts: the tests move it on themselves."""


@pytest.fixture
def smtp(monkeypatch):
    """A local SMTP server, an Airflow connection to it, and the notifier configured to mail on-call."""
    sink = SmtpSink().start()
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_ALERTS", sink.connection_json())
    entry = {
        "name": "mail",
        "class": SMTP,
        "kwargs": {"to": "oncall@example.test", "smtp_conn_id": "smtp_alerts"},
    }
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps([entry]))
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_BASE_URL", "http://airflow.example.test")
    yield sink
    sink.stop()


def _kinds(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT kind, status FROM retry_alerts ORDER BY id").fetchall()


def _cooldown_passes(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE retry_breakers SET probe_at = clock_timestamp() - interval '1 second'")


def test_an_outage_is_told_down_at_its_first_probe_and_recovered_when_it_closes(pg_dsn, smtp):
    """Down names the held work and the failures that opened it; recovered its length, holds and attempts saved."""
    store = BreakerStore.from_dsn(pg_dsn)
    open_breaker(store, settings=LONG)
    for key in ("billing/r1/load/-1", "billing/r1/load/0", "report/r1/build/-1"):
        assert store.admit(DEP, key, LONG).admission.kind == "hold"
    assert store.admit(DEP, "report/r1/build/-1", LONG).admission.kind == "hold"  # asked again: 2 holds
    assert _kinds(pg_dsn) == []  # opening alone tells nothing yet: no work is held at that moment
    _cooldown_passes(pg_dsn)
    assert store.admit(DEP, "billing/r1/load/-1", LONG).admission.kind == "probe"
    assert smtp.wait_for(1) == [f"Dependency {DEP} is down: 2 task(s) in 2 DAG(s) held"]
    down = smtp.body(0)
    for expected in (
        "5 unwell failures in 5 calls",
        "retryable/connection-failed",
        "http://airflow.example.test/retry-provider/dependencies?dependency=positions_db",
    ):
        assert expected in down
    assert store.admit(DEP, "report/r1/build/-1", LONG).admission.kind == "hold"  # the probe runs
    assert store.record_success(DEP, "billing/r1/load/-1").status == CLOSED
    [_, recovered] = smtp.wait_for(2)
    assert recovered.startswith(f"Dependency {DEP} recovered after 0m ") and recovered.endswith(
        "3 task(s) held, 5 attempt(s) saved"
    )
    body = smtp.body(1)
    assert "3 task instance(s) of 2 DAG(s) were held" in body
    assert "1 ran again during the outage (probes included), 2 are released now" in body
    assert store.admit(DEP, "report/r1/build/-1", LONG).admission.kind == "run"
    assert store.admit(DEP, "billing/r1/load/0", LONG).admission.kind == "run"
    [outage] = store.outages(DEP)
    assert (outage.tasks_held, outage.released, outage.holds, outage.probes) == (3, 3, 5, 1)
    assert _kinds(pg_dsn) == [("dependency-down", "sent"), ("dependency-recovered", "sent")]


def _race(dsn: str, key: str, start, results) -> None:
    store = BreakerStore.from_dsn(dsn)
    start.wait()
    results.put(store.admit(DEP, key, LONG).admission.kind)


def test_racing_processes_on_one_outage_send_exactly_one_down_alert(pg_dsn, smtp):
    """Six processes reach the half-open breaker at once: one probe, one dependency-down mail."""
    store = BreakerStore.from_dsn(pg_dsn)
    open_breaker(store, settings=LONG)
    _cooldown_passes(pg_dsn)
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(pg_dsn, f"w{n}/r/t/-1", start, results)) for n in range(6)]
    for proc in procs:
        proc.start()
    kinds = sorted(results.get(timeout=90) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    assert kinds == ["hold"] * 5 + ["probe"]
    assert smtp.wait_for(1) == [f"Dependency {DEP} is down: 0 task(s) in 0 DAG(s) held"]
    assert [kind for kind, _ in _kinds(pg_dsn)] == ["dependency-down"]


def test_a_person_forcing_it_open_then_back_is_one_outage_told_once_each_way(pg_dsn, smtp):
    """Forced open tells down at once with who and why; handing it back ends the outage: one recovered."""
    store = BreakerStore.from_dsn(pg_dsn)
    store.force(DEP, "open", "user:ana", "failover of the positions database")
    assert smtp.wait_for(1) == [f"Dependency {DEP} is down: 0 task(s) in 0 DAG(s) held"]
    assert "opened by user:ana: failover of the positions database" in smtp.body(0)
    assert store.admit(DEP, "etl/r/t/-1", LONG).admission.kind == "hold"
    store.force(DEP, "open", "user:bob", "still failing over")  # the same outage: not told again
    store.force(DEP, None, "user:ana", "failover done")
    assert smtp.wait_for(2)[1].endswith("1 task(s) held, 1 attempt(s) saved")
    assert [kind for kind, _ in _kinds(pg_dsn)] == ["dependency-down", "dependency-recovered"]


def test_an_outage_that_ends_before_its_first_probe_is_still_told_down_then_recovered(pg_dsn, smtp):
    """Forced closed during the cool-down: the down alert goes out first, so on-call never gets a lone recovery."""
    store = BreakerStore.from_dsn(pg_dsn)
    open_breaker(store, settings=LONG)
    store.force(DEP, "closed", "user:ana", "it was a network blip")
    assert [s.split(":")[0] for s in smtp.wait_for(2)] == [
        f"Dependency {DEP} is down",
        f"Dependency {DEP} recovered after 0m 00s",
    ]


def test_without_notifiers_the_breaker_works_and_queues_nothing(pg_dsn, monkeypatch):
    """No notifier configured: the outage is recorded, no alert row is written."""
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", raising=False)
    store = BreakerStore.from_dsn(pg_dsn)
    open_breaker(store, settings=LONG)
    _cooldown_passes(pg_dsn)
    assert store.admit(DEP, "a/r/t/-1", LONG).admission.kind == "probe"
    assert store.record_success(DEP, "a/r/t/-1").status == CLOSED
    assert _kinds(pg_dsn) == []
    [outage] = store.outages(DEP)
    assert outage.closed_at is not None and outage.failures_at_open == 5


def test_a_broken_notifier_setting_never_stops_the_transition(pg_dsn, monkeypatch, caplog):
    """A notifier class that cannot be imported is logged; the breaker still opens to half-open and closes."""
    monkeypatch.setenv(
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps([{"class": "no.such.Notifier"}])
    )
    store = BreakerStore.from_dsn(pg_dsn)
    open_breaker(store, settings=LONG)
    _cooldown_passes(pg_dsn)
    assert store.admit(DEP, "a/r/t/-1", LONG).admission.kind == "probe"
    assert store.record_success(DEP, "a/r/t/-1").status == CLOSED
    assert "a listener of 'down' failed" in caplog.text
    assert _kinds(pg_dsn) == []

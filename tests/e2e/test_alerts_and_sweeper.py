"""Alerts and the sweeper in a real Airflow: the real SmtpNotifier sends to an SMTP server the tests start."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from devstack.smtp import SmtpSink
from tests.conftest import running_airflow
from tests.e2e.conftest import StatsdListener, sample_until

pytestmark = pytest.mark.e2e

NOTIFIERS = [
    {
        "name": "oncall-mail",
        "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier",
        "kwargs": {"to": "oncall@example.test", "smtp_conn_id": "smtp_alerts"},
    }
]


@pytest.fixture(scope="module")
def statsd() -> Iterator[StatsdListener]:
    listener = StatsdListener()
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def airflow(pg_server, tmp_path_factory, smtp, statsd):
    """One Airflow whose failures are alerted by e-mail to the module's SMTP server, with StatsD on."""
    extra_env = {
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps(NOTIFIERS),
        "AIRFLOW_CONN_SMTP_ALERTS": smtp.connection_json(),
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port),
        "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
    }
    with running_airflow(
        pg_server, tmp_path_factory.mktemp("alerts-home"), "alerts", extra_env=extra_env
    ) as running:
        yield running


def _trigger(airflow, dag_id: str) -> dict:
    stack = airflow.stack
    stack.wait_for_dag(dag_id)
    stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
    return dict(
        stack.api(
            "POST",
            f"/api/v2/dags/{dag_id}/dagRuns",
            json={"logical_date": datetime.now(timezone.utc).isoformat()},
        )
    )


def _mails_about(smtp: SmtpSink, text: str) -> list[int]:
    return [i for i, subject in enumerate(smtp.subjects()) if text in subject]


def test_one_poison_failure_sends_one_email(airflow, smtp):
    """A poison failure is mailed once, naming the DAG, the run, the blocked downstream task and the preview link."""
    run = _trigger(airflow, "alerts_one_poison")
    assert airflow.stack.wait_for_run("alerts_one_poison", run["dag_run_id"])["state"] == "failed"
    sample_until(lambda: _mails_about(smtp, "alerts_one_poison"), timeout=60)
    [index] = _mails_about(smtp, "alerts_one_poison")
    assert smtp.subjects()[index] == "New root cause: poison/not-found in alerts_one_poison.load_once"
    body = smtp.body(index)
    assert f"run {run['dag_run_id']}" in body
    assert "1 downstream task(s) of run" in body and "publish" in body
    assert f"{airflow.stack.base_url}/retry-provider/preview?ids=" in body


def test_thirty_failures_of_one_root_cause_send_one_email_then_one_summary(airflow, smtp):
    """Thirty poison failures with one root cause: one e-mail at once; the sweeper sends one summary when the window ends."""
    run = _trigger(airflow, "alerts_poison_storm")
    assert (
        airflow.stack.wait_for_run("alerts_poison_storm", run["dag_run_id"], timeout=900)["state"] == "failed"
    )
    with psycopg.connect(airflow.provider_dsn) as conn:
        letters = conn.execute(
            "SELECT count(*) FROM retry_dead_letters WHERE dag_id = 'alerts_poison_storm'"
        ).fetchone()
        assert letters == (30,)
    assert len(_mails_about(smtp, "alerts_poison_storm")) == 1
    with psycopg.connect(airflow.provider_dsn) as conn:  # the window (60 minutes) ends
        conn.execute("UPDATE retry_alert_windows SET last_alert_at = last_alert_at - interval '61 minutes'")
    sweep = _trigger(airflow, "dead_letter_sweeper")
    airflow.stack.wait_for_run("dead_letter_sweeper", sweep["dag_run_id"])
    sample_until(lambda: _mails_about(smtp, "29 letters, 1 root cause"), timeout=60)
    assert len(_mails_about(smtp, "29 letters, 1 root cause")) == 1
    assert (
        len(_mails_about(smtp, "alerts_poison_storm")) == 1
    )  # the summary names the cause, not a new DAG mail
    with psycopg.connect(airflow.provider_dsn) as conn:
        assert conn.execute("SELECT DISTINCT status FROM retry_alerts").fetchall() == [("sent",)]


def test_a_replaying_letter_whose_run_was_deleted_is_parked_once(airflow, smtp, monkeypatch):
    """The sweeper parks a replaying letter whose DAG run is gone (404) once, with the reason, tells someone, and leaves it alone."""
    from airflow_retry_provider.dlq.store import DeadLetterStore
    from airflow_retry_provider.dlq.sweeper import run_sweeper
    from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
    from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER

    run = _trigger(airflow, "alerts_one_poison")
    airflow.stack.wait_for_run("alerts_one_poison", run["dag_run_id"])
    with psycopg.connect(airflow.provider_dsn) as conn:
        sample_until(
            lambda: conn.execute(
                "SELECT 1 FROM retry_dead_letters WHERE run_id = %s", (run["dag_run_id"],)
            ).fetchone(),
            timeout=60,
        )
        conn.execute(
            "UPDATE retry_dead_letters SET status = 'replaying' WHERE run_id = %s", (run["dag_run_id"],)
        )
        conn.commit()
    airflow.stack.api("DELETE", f"/api/v2/dags/alerts_one_poison/dagRuns/{run['dag_run_id']}")

    monkeypatch.setenv(
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps(NOTIFIERS)
    )  # the sweep runs here, as the DAG would
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_ALERTS", smtp.connection_json())

    def sweep() -> dict:
        api = AirflowApi(ApiCredentials(airflow.stack.base_url, ADMIN_USER, ADMIN_PASSWORD))
        return run_sweeper(store=DeadLetterStore.from_dsn(airflow.provider_dsn), api=api)

    first, second = sweep(), sweep()
    assert first["sync"]["errors"] == [] and second["sync"]["errors"] == []
    with psycopg.connect(airflow.provider_dsn) as conn:
        status, reason = conn.execute(
            "SELECT status, status_reason FROM retry_dead_letters WHERE run_id = %s", (run["dag_run_id"],)
        ).fetchone()
    assert status == "parked"
    assert "no longer exists in Airflow (404)" in reason
    assert len(_mails_about(smtp, "parked: alerts_one_poison.load_once")) == 1  # told once, not every sweep


def test_the_sweeper_dag_sends_queue_gauges_and_alert_counters_over_statsd(airflow, statsd):
    """The sweeper DAG's gauges arrive over UDP with the letter count; the alert counters were sent too."""
    run = _trigger(airflow, "alerts_one_poison")
    airflow.stack.wait_for_run("alerts_one_poison", run["dag_run_id"])
    sweep = _trigger(airflow, "dead_letter_sweeper")
    airflow.stack.wait_for_run("dead_letter_sweeper", sweep["dag_run_id"])

    def gauges() -> dict[str, float]:
        values = {}
        for line in list(statsd.lines):
            name, _, rest = line.partition(":")
            if name.startswith("airflow.retry_provider.") and rest.endswith("|g"):
                values[name] = float(rest.split("|")[0])
        return values

    sample_until(lambda: "airflow.retry_provider.letters.dlq" in gauges(), timeout=60)
    with psycopg.connect(airflow.provider_dsn) as conn:
        [(dlq,)] = conn.execute("SELECT count(*) FROM retry_dead_letters WHERE status = 'dlq'").fetchall()
    values = gauges()
    assert values["airflow.retry_provider.letters.dlq"] == dlq >= 1
    assert values["airflow.retry_provider.letters.oldest_dlq_age_seconds"] > 0
    for name in (
        "letters.parked",
        "replays.pending",
        "work_units.lease_expired",
        "alerts.pending",
        "connectors.stopped",
    ):
        assert f"airflow.retry_provider.{name}" in values
    assert (
        statsd.counters("airflow.retry_provider.alert.sent.")[
            "airflow.retry_provider.alert.sent.new_root_cause"
        ]
        >= 1
    )


def _sweep(airflow, smtp: SmtpSink, monkeypatch) -> dict:
    """One sweep run here, as the sweeper DAG runs it, its alerts mailed to the module's SMTP server."""
    from airflow_retry_provider.dlq.store import DeadLetterStore
    from airflow_retry_provider.dlq.sweeper import run_sweeper
    from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
    from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER

    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps(NOTIFIERS))
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_ALERTS", smtp.connection_json())
    api = AirflowApi(ApiCredentials(airflow.stack.base_url, ADMIN_USER, ADMIN_PASSWORD))
    return run_sweeper(store=DeadLetterStore.from_dsn(airflow.provider_dsn), api=api)


def _set_variable(airflow, key: str, value: str) -> None:
    try:
        airflow.stack.api("PATCH", f"/api/v2/variables/{key}", json={"key": key, "value": value})
    except RuntimeError:  # not there yet
        airflow.stack.api("POST", "/api/v2/variables", json={"key": key, "value": value})


def _letter_of(airflow, run_id: str) -> tuple[int, str]:
    """The id and status of the letter of ``impact_chain.extract`` in ``run_id`` (waits until it is filed)."""
    found: list[tuple[int, str]] = []

    def filed() -> bool:
        with psycopg.connect(airflow.provider_dsn) as conn:
            found[:] = conn.execute(
                "SELECT id, status FROM retry_dead_letters WHERE dag_id = 'impact_chain' AND run_id = %s",
                (run_id,),
            ).fetchall()
        return bool(found)

    sample_until(filed, timeout=60)
    [letter] = found
    return letter


def _failed_at(airflow, run_id: str) -> float:
    """When the failing try of ``impact_chain.extract`` in ``run_id`` started (it raises at once), epoch
    seconds; not its end date, which Airflow stamps after the failure callback that sends the mail."""
    ti = airflow.stack.api("GET", f"/api/v2/dags/impact_chain/dagRuns/{run_id}/taskInstances/extract")
    return datetime.fromisoformat(ti["start_date"]).timestamp()


def _at_risk_subject(latest: datetime, deadline: datetime, name: str) -> str:
    return (
        f"Delivery at risk: replay by {latest:%Y-%m-%d %H:%M} UTC to meet the "
        f"{deadline:%Y-%m-%d %H:%M} UTC delivery of {name}"
    )


MAIL_WITHIN = 30.0
"""Seconds from the failure to the at-risk mail: "a few seconds" (bench/impact.py measures it) with
room for a shared CI machine's load."""


def test_a_poison_failure_mails_the_delivery_it_puts_at_risk_then_saved_or_lost(airflow, smtp, monkeypatch):
    """Issue 48's proof: within seconds of the failure one mail names the blocked tasks, the asset, the DAG
    scheduled on it, the workspace and the latest replay time; a replay after the fix before that time
    ends the delivery on track (saved); a run no one replays is told lost when that time passes, before
    its deadline, with the latest replay time computed from seeded durations."""
    run = _trigger(airflow, "impact_chain")
    airflow.stack.wait_for_dag("impact_gold_report")
    assert airflow.stack.wait_for_run("impact_chain", run["dag_run_id"])["state"] == "failed"
    sample_until(lambda: _mails_about(smtp, "delivery of impact_chain.publish"), timeout=60)
    [index] = _mails_about(smtp, "delivery of impact_chain.publish")
    assert smtp.received_at(index) - _failed_at(airflow, run["dag_run_id"]) < MAIL_WITHIN
    # a manual run's data interval ends at its logical date: the delivery is 09:00 UTC the next day,
    # less transform's 20 min, publish's 10 min and its 5 min of validation (extract has no duration)
    end = datetime.fromisoformat(run["data_interval_end"]).astimezone(timezone.utc)
    deadline = (end + timedelta(days=1)).replace(hour=9, minute=0, second=0, microsecond=0)
    latest = deadline - timedelta(minutes=35)
    assert smtp.subjects()[index] == _at_risk_subject(latest, deadline, "impact_chain.publish")
    body = smtp.body(index)
    for expected in (
        "blocks 4 task(s): impact_chain.publish, impact_chain.transform, impact_gold_report.build, impact_gold_report.report",
        "assets not produced: impact_silver_orders",
        "DAGs scheduled on them: impact_gold_report",
        "workspaces: acme",
        "no duration is known for impact_chain.extract",
    ):
        assert expected in body, expected
    assert len(_mails_about(smtp, "Delivery at risk")) == 2  # and the consumer DAG's own delivery

    # the fix, then a replay long before the latest replay time: the sweep notes both deliveries saved
    letter_id, _ = _letter_of(airflow, run["dag_run_id"])
    _set_variable(airflow, "impact_chain_fixed", "yes")
    job = airflow.stack.api(
        "POST",
        "/retry-provider/api/replays",
        json={"ids": [letter_id], "reason": "impact_orders created", "fix_version": "v2"},
    )
    sample_until(lambda: _letter_of(airflow, run["dag_run_id"])[1] == "resolved", timeout=240)
    assert airflow.stack.api("GET", f"/retry-provider/api/jobs/{job['id']}")["error"] is None
    assert airflow.stack.wait_for_run("impact_chain", run["dag_run_id"])["state"] == "success"  # delivered
    _sweep(airflow, smtp, monkeypatch)
    sample_until(lambda: len(_mails_about(smtp, "Delivery saved")) == 2, timeout=60)
    assert _mails_about(smtp, "Delivery saved")[0] > index
    assert (
        f"the {deadline:%Y-%m-%d %H:%M} UTC delivery of impact_chain.publish is on track again: replayed in time"
        in " ".join(smtp.subjects())
    )

    # seeded durations: extract's and transform's successful tries (the replayed run's) took hours,
    # so a second run's latest replay time falls two to three minutes from now
    now = datetime.now(timezone.utc)
    # a run of tomorrow's data (its interval ends in a day; the scheduler refuses a logical date in the
    # future): a delivery of its own, 09:00 UTC the day after that interval ends
    interval_end = now + timedelta(days=1)
    deadline_2 = (interval_end + timedelta(days=1)).replace(hour=9, minute=0, second=0, microsecond=0)
    latest_2 = (now + timedelta(minutes=3)).replace(second=0, microsecond=0)
    transform = timedelta(minutes=30)  # longer than its declared 20 min: the history wins
    extract = deadline_2 - latest_2 - transform - timedelta(minutes=15)  # publish: 10 min + 5 min validation
    with psycopg.connect(airflow.metadata_dsn) as conn:
        for task_id, took in (("extract", extract), ("transform", transform)):
            conn.execute(
                "UPDATE task_instance SET duration = %(seconds)s, "
                "start_date = end_date - make_interval(secs => %(seconds)s) "
                "WHERE dag_id = 'impact_chain' AND task_id = %(task_id)s AND state = 'success'",
                {"seconds": took.total_seconds(), "task_id": task_id},
            )
    _set_variable(airflow, "impact_chain_fixed", "no")
    airflow.stack.api("PATCH", "/api/v2/dags/impact_chain", json={"is_paused": False})
    interval = {
        "logical_date": now.isoformat(),
        "data_interval_start": now.isoformat(),
        "data_interval_end": interval_end.isoformat(),
    }
    second = dict(airflow.stack.api("POST", "/api/v2/dags/impact_chain/dagRuns", json=interval))
    assert airflow.stack.wait_for_run("impact_chain", second["dag_run_id"])["state"] == "failed"
    at_risk = _at_risk_subject(latest_2, deadline_2, "impact_chain.publish")
    sample_until(lambda: _mails_about(smtp, at_risk), timeout=60)
    [told] = _mails_about(smtp, at_risk)
    assert smtp.received_at(told) - _failed_at(airflow, second["dag_run_id"]) < MAIL_WITHIN
    minutes = int((deadline_2 - latest_2).total_seconds()) // 60  # the seeded path: hours, not 35 min
    assert f"the replay path takes {minutes // 60} h {minutes % 60:02d} min" in smtp.body(told)
    letter_2, _ = _letter_of(airflow, second["dag_run_id"])

    # no one replays: the first sweep after the latest replay time tells it lost, long before 09:00
    time.sleep(max(0.0, (latest_2 - datetime.now(timezone.utc)).total_seconds()) + 1)
    _sweep(airflow, smtp, monkeypatch)
    lost = f"Delivery lost: the {deadline_2:%Y-%m-%d %H:%M} UTC delivery of impact_chain.publish can no longer be met"
    sample_until(lambda: _mails_about(smtp, lost), timeout=60)
    [told_lost] = _mails_about(smtp, lost)
    assert smtp.received_at(told_lost) < deadline_2.timestamp()
    assert f"letter {letter_2} " in smtp.body(told_lost)
    assert _letter_of(airflow, second["dag_run_id"])[1] == "dlq"  # still waiting: the replay is up to on-call

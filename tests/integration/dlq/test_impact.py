"""A letter's impact read from Airflow's REST API, stored, refreshed, and told as delivery-at-risk alerts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest

from airflow_retry_provider.dlq.impact import (
    ImpactReader,
    ReadCache,
    compute_pending,
    record_impact,
    refresh_impacts,
)
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.policy.impact import DELIVERY_PARAM
from airflow_retry_provider.states import DeliveryStatus
from devstack.provider import impact_queue_counts
from devstack.smtp import SmtpSink
from tests.alert_notifiers import RecordingNotifier
from tests.factories import new_letter
from tests.local_airflow import AnsweringAirflow, answering_airflow

DATA_END = datetime(2026, 12, 3, 0, 0, tzinfo=timezone.utc)
DEADLINE = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)  # 09:00 UTC, the day after the interval
NOW = datetime(2026, 12, 4, 3, 0, tzinfo=timezone.utc)
ASSET = "silver_orders"


def _task(task_id: str, downstream: tuple[str, ...] = (), **params: Any) -> dict[str, Any]:
    """A task as ``GET /api/v2/dags/{dag_id}/tasks`` answers it (params dumped with their source)."""
    source = params.pop("_source", "task")
    return {
        "task_id": task_id,
        "downstream_task_ids": list(downstream),
        "trigger_rule": "all_success",
        "params": {
            name: {"value": value, "schema": {}, "description": None, "source": source}
            for name, value in params.items()
        },
    }


def _success(task_id: str, minutes: float) -> dict[str, Any]:
    return {"task_id": task_id, "state": "success", "duration": minutes * 60}


@contextmanager
def _seeded() -> Iterator[AnsweringAirflow]:
    """A fake Airflow with a chain extract -> transform -> publish (publish delivers at 09:00 and produces
    an asset), and gold_risk_report scheduled on that asset (a DAG-level deadline: its last task delivers)."""
    with answering_airflow() as fake:
        delivery = {"at": "09:00", "timezone": "UTC", "days_after": 1, "validation_seconds": 600}
        fake.tasks["etl"] = [
            _task("extract", ("transform",)),
            _task("transform", ("publish",)),
            _task("publish", (), **{DELIVERY_PARAM: delivery}),
        ]
        fake.successes["etl"] = [
            _success("extract", 20),
            _success("extract", 25),  # the longest recent run counts
            _success("transform", 30),
            _success("publish", 10),
        ]
        dag_delivery = {"at": "10:00", "timezone": "UTC", "days_after": 1}
        fake.tasks["gold_risk_report"] = [
            _task("build", ("report",), workspace_id="acme", _source="dag", **{DELIVERY_PARAM: dag_delivery}),
            _task("report", (), workspace_id="acme", _source="dag", **{DELIVERY_PARAM: dag_delivery}),
        ]
        fake.successes["gold_risk_report"] = [_success("build", 15), _success("report", 5)]
        fake.assets = [
            {
                "id": 1,
                "name": ASSET,
                "uri": "s3://lake/silver/orders",
                "producing_tasks": [{"dag_id": "etl", "task_id": "publish"}],
                "scheduled_dags": [{"dag_id": "gold_risk_report"}],
            }
        ]
        yield fake


def _refresh(store: DeadLetterStore, awaiting: bool = False) -> tuple[list[int], list[str]]:
    """``refresh_impacts`` at ``NOW`` against the seeded fake Airflow; unless ``awaiting``, the letters
    no longer await their first impact (the impact queue's part is tested apart)."""
    if not awaiting:
        with store.db.transaction() as cur:
            cur.execute("DELETE FROM retry_impact_queue")
    with _seeded() as fake, fake.api() as api:
        return refresh_impacts(store, api, NOW)


def _letter(**fields: Any):
    return new_letter(
        **{
            "dag_id": "etl",
            "task_id": "extract",
            "data_interval_end": DATA_END,
            "workspace_id": "w1",
            **fields,
        }
    )


def test_the_reader_turns_airflows_answers_into_the_impact():
    """Blocked tasks, the asset, the consumer DAG, the workspaces and both deliveries' latest replay times."""
    with _seeded() as fake:
        fake.assets.append(  # an asset etl is scheduled on: its other consumers are not etl's to block
            {
                "id": 2,
                "name": "raw_feed",
                "uri": "s3://lake/raw",
                "producing_tasks": [{"dag_id": "ingest", "task_id": "land"}],
                "scheduled_dags": [{"dag_id": "etl"}, {"dag_id": "audit"}],
            }
        )
        with fake.api() as api:
            impact = ImpactReader(api).assess(_letter(), NOW)
        assert fake.calls["tasks"] == 2  # etl and gold_risk_report, never audit
    assert impact.blocked_tasks.first == (
        "etl.publish",
        "etl.transform",
        "gold_risk_report.build",
        "gold_risk_report.report",
    )
    assert impact.assets.first == (ASSET,)
    assert impact.consumer_dags.first == ("gold_risk_report",)
    assert impact.workspaces.first == ("acme", "w1")
    by_name = {delivery.name: delivery for delivery in impact.deliveries}
    assert set(by_name) == {
        "etl.publish",
        "gold_risk_report.report",
    }  # the DAG-level deadline: its last task only
    # 25 + 30 + 10 min of runs, plus publish's 10 min of validation, never dropped
    assert by_name["etl.publish"].latest_replay == DEADLINE - timedelta(minutes=75)
    # ... then build 15 and report 5 for the 10:00 delivery of the consumer
    assert by_name["gold_risk_report.report"].latest_replay == DEADLINE + timedelta(hours=1) - timedelta(
        minutes=95
    )
    assert {delivery.status for delivery in impact.deliveries} == {DeliveryStatus.AT_RISK}


def test_a_bad_declaration_is_noted_and_the_task_counts_without_it():
    """A deadline param with a bad time names the field; the impact is still computed."""
    with _seeded() as fake:
        fake.tasks["etl"][2] = _task("publish", (), **{DELIVERY_PARAM: {"at": "25:00"}})
        with fake.api() as api:
            reader = ImpactReader(api)
            impact = reader.assess(_letter(), NOW)
    assert [delivery.name for delivery in impact.deliveries] == ["gold_risk_report.report"]
    assert reader.notes == ["etl.publish.params.retry_provider_delivery.at: must be 'HH:MM', got '25:00'"]


def _configure(monkeypatch, *entries: dict[str, Any]) -> None:
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps(list(entries)))
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_BASE_URL", "http://airflow.example.test")


@pytest.fixture(autouse=True)
def _clear_recorded():
    RecordingNotifier.sent.clear()


def test_stored_and_told_once_per_delivery_and_root_cause(pg_dsn, monkeypatch):
    """Filing computes and stores the impact; each delivery is told once per root cause, and again once lost."""
    _configure(monkeypatch, {"name": "rec", "class": "tests.alert_notifiers.RecordingNotifier"})
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter = _letter()
    first = store.file(letter, replay_cap=3)
    second_letter = _letter(run_id="r2")  # same root cause, another run
    second = store.file(second_letter, replay_cap=3)
    with _seeded() as fake:
        with fake.api() as api:
            record_impact(store, api, first.letter_id, letter, NOW)
            titles = [sent["title"] for sent in RecordingNotifier.sent]
            assert sorted(titles) == [
                "Delivery at risk: replay by 2026-12-04 07:45 UTC to meet the 2026-12-04 09:00 UTC delivery of etl.publish",
                "Delivery at risk: replay by 2026-12-04 08:25 UTC to meet the 2026-12-04 10:00 UTC delivery of gold_risk_report.report",
            ]
            record_impact(store, api, first.letter_id, letter, NOW)  # a refresh
            record_impact(store, api, second.letter_id, second_letter, NOW)  # same root cause
            assert len(RecordingNotifier.sent) == 2
            late = DEADLINE - timedelta(minutes=60)  # past publish's latest replay, before the consumer's
            record_impact(store, api, first.letter_id, letter, late)
    assert len(RecordingNotifier.sent) == 3
    lost = RecordingNotifier.sent[2]
    assert (
        lost["title"]
        == "Delivery lost: the 2026-12-04 09:00 UTC delivery of etl.publish can no longer be met"
    )
    assert "tell its consumers (DAGs: gold_risk_report; workspaces: acme, w1)" in lost["text"]
    stored = store.impact(first.letter_id)
    assert stored is not None
    assert [(d.name, d.status) for d in stored.impact.deliveries] == [
        ("etl.publish", DeliveryStatus.LOST),
        ("gold_risk_report.report", DeliveryStatus.AT_RISK),
    ]


def test_one_mail_names_the_blocked_tasks_asset_dag_workspace_and_replay_time(pg_dsn, monkeypatch):
    """The real SmtpNotifier mails the delivery at risk with what it blocks and the latest replay time."""
    sink = SmtpSink().start()
    try:
        monkeypatch.setenv("AIRFLOW_CONN_SMTP_ALERTS", sink.connection_json())
        _configure(
            monkeypatch,
            {
                "name": "mail",
                "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier",
                "kwargs": {"to": "oncall@example.test", "smtp_conn_id": "smtp_alerts"},
            },
        )
        store = DeadLetterStore.from_dsn(pg_dsn)
        letter = _letter()
        result = store.file(letter, replay_cap=3)
        with _seeded() as fake:
            fake.tasks["gold_risk_report"] = []  # only the chain's own delivery
            with fake.api() as api:
                record_impact(store, api, result.letter_id, letter, NOW)
        assert sink.wait_for(1) == [
            "Delivery at risk: replay by 2026-12-04 07:45 UTC to meet the 2026-12-04 09:00 UTC delivery of etl.publish"
        ]
        body = sink.body(0)
        for expected in (
            "blocks 2 task(s): etl.publish, etl.transform",
            f"assets not produced: {ASSET}",
            "DAGs scheduled on them: gold_risk_report",
            "workspaces: w1",
            "fix the cause and replay by 2026-12-04T07:45:00+00:00",
            f"http://airflow.example.test/retry-provider/letters/{result.letter_id}",
        ):
            assert expected in body
    finally:
        sink.stop()


def test_the_sweep_refreshes_open_letters_and_stamps_a_vanished_dag(pg_dsn):
    """Open letters without an impact get one; a letter whose DAG is gone (404) gets an empty one."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter = _letter()
    filed = store.file(letter, replay_cap=3)
    gone = store.file(new_letter(dag_id="deleted_dag", task_id="x"), replay_cap=3)
    closed = store.file(_letter(run_id="r9"), replay_cap=3)
    store.dismiss([closed.letter_id], "tester", "not needed")
    refreshed, errors = _refresh(store)
    assert refreshed == [filed.letter_id]
    assert len(errors) == 1 and "deleted_dag" in errors[0]
    assert _refresh(store) == ([], [])  # both fresh now
    assert store.impact(filed.letter_id).impact.blocked_tasks.count == 4  # type: ignore[union-attr]
    assert store.impact(gone.letter_id).impact.blocked_tasks.count == 0  # type: ignore[union-attr]
    assert store.impact(closed.letter_id) is None
    with psycopg.connect(pg_dsn) as conn:  # the impact goes with its letter
        conn.execute("DELETE FROM retry_dead_letters WHERE id = %s", (filed.letter_id,))
        assert conn.execute("SELECT count(*) FROM retry_letter_impacts").fetchone()[0] == 1


def test_the_impact_round_stores_the_impact_and_the_root_cause_alert_shows_it(pg_dsn, monkeypatch):
    """Filing queues the letter; the impact thread's round stores its impact; the new-root-cause alert then tells it."""
    from airflow_retry_provider.alerts import after_filing

    _configure(monkeypatch, {"name": "rec", "class": "tests.alert_notifiers.RecordingNotifier"})
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter = _letter(data_interval_end=datetime.now(timezone.utc) - timedelta(days=1))
    result = store.file(letter, replay_cap=3)
    assert impact_queue_counts(pg_dsn) == (1, 0)
    with _seeded() as fake, fake.api() as api:
        done = compute_pending(store, api, datetime.now(timezone.utc), ReadCache())
    assert (done.claimed, done.computed, done.runs) == (1, 1, 1)
    assert store.impact(result.letter_id) is not None
    assert impact_queue_counts(pg_dsn) == (0, 0)
    after_filing(store.db, letter, result)
    root_cause = [sent for sent in RecordingNotifier.sent if sent["title"].startswith("New root cause")]
    assert len(root_cause) == 1
    assert (
        "blocks 4 task(s): etl.publish, etl.transform, gold_risk_report.build, gold_risk_report.report"
        in root_cause[0]["text"]
    )


def test_a_storm_of_one_run_reads_airflow_once_and_tells_each_delivery_once(pg_dsn, monkeypatch):
    """200 mapped letters of one task in one run, claimed over several rounds: one set of REST reads, one
    impact stored for each letter, one at-risk alert per delivery."""
    _configure(monkeypatch, {"name": "rec", "class": "tests.alert_notifiers.RecordingNotifier"})
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = [store.file(_letter(map_index=i), replay_cap=3).letter_id for i in range(200)]
    cache = ReadCache()
    with _seeded() as fake, fake.api() as api:
        rounds = [compute_pending(store, api, NOW, cache, limit=60) for _ in range(5)]
        calls = dict(fake.calls)
    assert [r.claimed for r in rounds] == [60, 60, 60, 20, 0]
    assert sum(r.computed for r in rounds) == 200 and impact_queue_counts(pg_dsn) == (0, 0)
    # etl's and its consumer's tasks and history, etl's assets: once for the 200 letters
    assert calls == {"tasks": 2, "task_instances": 2, "assets": 1}
    assert sum(r.reads for r in rounds) == 5
    assert all(store.impact(i).impact.blocked_tasks.count == 4 for i in ids)  # type: ignore[union-attr]
    titles = sorted(sent["title"] for sent in RecordingNotifier.sent)
    assert [t.split(" delivery of ")[-1] for t in titles] == ["etl.publish", "gold_risk_report.report"]
    store.file(_letter(run_id="r2"), replay_cap=3)  # another run of the DAG reads its own history afresh
    with _seeded() as fake, fake.api() as api:
        assert compute_pending(store, api, NOW, cache).reads == 5


def test_an_impact_airflow_cannot_answer_is_tried_again_then_given_up_with_its_reason(pg_dsn):
    """Each failed claim waits longer; after the last attempt the letter is marked given up with the
    reason, leaves the queue's claims, and the sweeper's refresh computes it."""
    from airflow_retry_provider.dlq.impact import MAX_ATTEMPTS
    from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
    from devstack.postgres import free_port

    store = DeadLetterStore.from_dsn(pg_dsn)
    filed = store.file(_letter(), replay_cap=3)
    down = ApiCredentials(f"http://127.0.0.1:{free_port()}", "admin", "admin")  # nothing listens there
    with AirflowApi(down, timeout=2) as api:
        for _ in range(MAX_ATTEMPTS):
            done = compute_pending(store, api, NOW, ReadCache())
            assert (done.claimed, done.computed, len(done.errors)) == (1, 0, 1)
            with psycopg.connect(pg_dsn) as conn:  # the retry's wait is over: due again now
                conn.execute("UPDATE retry_impact_queue SET lease_until = NULL")
        assert impact_queue_counts(pg_dsn) == (0, 1)
        assert compute_pending(store, api, NOW, ReadCache()).claimed == 0  # given up: no more claims
    with psycopg.connect(pg_dsn) as conn:
        attempts, reason = conn.execute("SELECT attempts, last_error FROM retry_impact_queue").fetchone()
    assert attempts == MAX_ATTEMPTS and "AirflowApiError" in reason
    refreshed, _ = _refresh(store, awaiting=True)  # the sweeper's refresh has it now
    assert refreshed == [filed.letter_id] and impact_queue_counts(pg_dsn) == (0, 0)


def test_a_letter_whose_task_left_its_dag_gets_an_empty_impact(pg_dsn):
    """The task is gone from the DAG's newest version: the sweep says so and stamps it, and goes on."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    gone = store.file(_letter(task_id="renamed_away"), replay_cap=3)
    kept = store.file(_letter(run_id="r2"), replay_cap=3)
    refreshed, errors = _refresh(store)
    assert refreshed == [kept.letter_id]
    assert len(errors) == 1 and "failed: is not among the tasks" in errors[0]
    assert store.impact(gone.letter_id).impact.blocked_tasks.count == 0  # type: ignore[union-attr]


def test_a_filed_letter_wakes_the_impact_thread_which_computes_it_at_once(pg_dsn, monkeypatch):
    """The filing's NOTIFY wakes the api-server's impact thread (its poll set to a minute): the impact is
    stored and the at-risk alert sent within seconds; a second thread does not lead while the first does."""
    import threading
    import time

    from airflow_retry_provider.dlq.impact import ImpactWorker

    _configure(monkeypatch, {"name": "rec", "class": "tests.alert_notifiers.RecordingNotifier"})
    store = DeadLetterStore.from_dsn(pg_dsn)
    stop = threading.Event()
    with _seeded() as fake:
        worker = ImpactWorker(store, fake.api, poll=60.0)
        thread = threading.Thread(target=worker.loop, args=(stop,), daemon=True)
        thread.start()
        try:
            time.sleep(1.0)  # listening and leading
            with store.listening() as other:
                assert not other.try_lead()  # one computer per deployment
            filed = store.file(_letter(data_interval_end=datetime.now(timezone.utc)), replay_cap=3)
            deadline = time.monotonic() + 10

            def told() -> bool:  # the alert is sent after the impact's transaction commits
                return any(sent["title"].startswith("Delivery at risk") for sent in RecordingNotifier.sent)

            while not (store.impact(filed.letter_id) and told()) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert store.impact(filed.letter_id) is not None
            assert told()
        finally:
            stop.set()
            thread.join(timeout=10)
            assert not thread.is_alive()
    assert impact_queue_counts(pg_dsn) == (0, 0)

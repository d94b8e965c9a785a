"""Today's deliveries from the stored impacts on a real PostgreSQL, and the sweeper's watch: a delivery
held past its latest replay time is told lost before its deadline, one replayed in time is told saved once."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from airflow_retry_provider import announce, sql
from airflow_retry_provider.cli import main
from airflow_retry_provider.dlq.announce import ImpactAssessed
from airflow_retry_provider.dlq.deliveries import group_impacts, todays_deliveries, watch_deliveries
from airflow_retry_provider.dlq.store import DeadLetterStore, DeliveryStore
from airflow_retry_provider.policy.impact import Delivery, Impact, Names
from airflow_retry_provider.states import DeliveryStatus
from tests.alert_notifiers import RecordingNotifier
from tests.factories import new_letter

NOW = datetime(2026, 12, 4, 3, 0, tzinfo=timezone.utc)
DEADLINE = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)


def _delivery(task_id: str, deadline: datetime, path: timedelta, now: datetime = NOW) -> Delivery:
    latest = deadline - path
    return Delivery(
        dag_id="gold_risk_report",
        task_id=task_id,
        deadline=deadline,
        path_time=path,
        latest_replay=latest,
        status=DeliveryStatus.LOST if latest < now else DeliveryStatus.AT_RISK,
    )


def _file(
    store: DeadLetterStore, run_id: str, *deliveries: Delivery, fingerprint: str = "0123456789abcdef"
) -> int:
    """A letter of etl.extract whose stored impact names ``deliveries``."""
    letter = new_letter(task_id="extract", run_id=run_id, fingerprint=fingerprint)
    letter_id = store.file(letter, replay_cap=3).letter_id
    impact = Impact(
        blocked_tasks=Names.of(["gold_risk_report.report"]),
        consumer_dags=Names.of(["gold_risk_report"]),
        workspaces=Names.of(["acme"]),
        deliveries=deliveries,
        delivery_count=len(deliveries),
    )
    store.set_impact(letter_id, impact)
    return letter_id


def _set_status(dsn: str, letter_id: int, status: str, cleared_at: datetime | None = None) -> None:
    """Move a letter as the replay loop would: its status, and a replay cleared at ``cleared_at``."""
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE retry_dead_letters SET status = %s WHERE id = %s", (status, letter_id))
        if cleared_at is not None:
            conn.execute(
                "INSERT INTO retry_replays (letter_id, actor, reason, fix_version, try_number_before,"
                " requested_at, cleared_at, outcome) VALUES (%s, 'user:ana', 'fixed', 'v2', 1, %s, %s, 'succeeded')",
                (letter_id, cleared_at, cleared_at),
            )


def test_each_delivery_of_today_is_on_track_at_risk_or_lost_with_its_letters(pg_dsn):
    """Three deliveries today (lost, at risk, on track, listed in that order) and one tomorrow (not listed)."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    risky = _file(store, "r1", _delivery("report", DEADLINE, timedelta(hours=1)))  # latest 08:00
    lost = _file(store, "r2", _delivery("summary", NOW + timedelta(minutes=30), timedelta(hours=1)))  # 02:30
    saved = _file(store, "r3", _delivery("archive", DEADLINE, timedelta(hours=2)))  # latest 07:00
    _set_status(pg_dsn, saved, "resolved", cleared_at=NOW - timedelta(minutes=5))
    _file(store, "r4", _delivery("weekly", DEADLINE + timedelta(days=1), timedelta(hours=1)))
    found = todays_deliveries(store.db, NOW)
    assert [(d.name, d.standing.status) for d in found] == [
        ("gold_risk_report.summary", DeliveryStatus.LOST),
        ("gold_risk_report.report", DeliveryStatus.AT_RISK),
        ("gold_risk_report.archive", DeliveryStatus.ON_TRACK),
    ]
    assert [letter.letter_id for letter in found[0].letters] == [lost]
    assert found[1].standing.latest_replay == DEADLINE - timedelta(hours=1)
    assert [(letter.letter_id, letter.run_id, letter.status) for letter in found[1].letters] == [
        (risky, "r1", "dlq")
    ]
    assert found[2].standing.reason == "every blocking letter was replayed in time"


def test_two_letters_blocking_one_delivery_are_listed_together(pg_dsn):
    """Two root causes on one delivery: one row, both letters, at risk while either is open."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    first = _file(store, "r1", _delivery("report", DEADLINE, timedelta(hours=1)))
    second = _file(
        store, "r2", _delivery("report", DEADLINE, timedelta(hours=3)), fingerprint="fedcba9876543210"
    )
    _set_status(pg_dsn, first, "resolved", cleared_at=NOW)
    [delivery] = todays_deliveries(store.db, NOW)
    assert [letter.letter_id for letter in delivery.letters] == [first, second]
    assert (delivery.standing.status, delivery.standing.latest_replay) == (
        DeliveryStatus.AT_RISK,
        DEADLINE - timedelta(hours=3),
    )


def test_a_root_cause_reads_each_distinct_impact_once_and_counts_every_letter(pg_dsn):
    """Three letters of one root cause, two with the same impact: two impacts read, three letters summed."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    report = _delivery("report", DEADLINE, timedelta(hours=1))
    for run_id in ("r1", "r2"):  # a storm's letters of one DAG: the same impact
        _file(store, run_id, report)
    _file(store, "r3", _delivery("summary", DEADLINE, timedelta(hours=2)))
    rows = DeliveryStore(store.db).group_impacts(["0123456789abcdef"], ["etl"], per_group=200)
    assert sorted(int(row["letters"]) for row in rows) == [1, 2]
    group = group_impacts(store.db, ["0123456789abcdef"], ["etl"])["0123456789abcdef"]
    assert group.letters == 3
    assert [d.task_id for d in group.impact.deliveries] == [
        "summary",
        "report",
    ]  # earliest latest replay first


def test_todays_deliveries_expand_only_the_impacts_due_around_now(pg_dsn):
    """With 20,000 impacts of past deliveries stored, the view's query reads them through the last-deadline
    index (migration 0015) and still finds today's delivery."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    today = _file(store, "today", _delivery("report", DEADLINE, timedelta(hours=1)))
    past = Impact(
        deliveries=(_delivery("report", DEADLINE - timedelta(days=30), timedelta(hours=1)),), delivery_count=1
    )
    with psycopg.connect(pg_dsn) as conn:
        conn.execute(
            "INSERT INTO retry_dead_letters (dag_id, run_id, task_id, try_number, attempts_used, work_unit_key,"
            " failure_class, category, rule, exception_type, message, fingerprint, status)"
            " SELECT 'etl', 'old_' || g, 'extract', 1, 1, 'etl/old_' || g, 'poison', 'not-found', 'r', 'E', 'm',"
            " '0123456789abcdef', 'resolved' FROM generate_series(1, 20000) AS g"
        )
        conn.execute(
            "INSERT INTO retry_letter_impacts (letter_id, impact) SELECT id, %s::jsonb FROM retry_dead_letters"
            " WHERE run_id LIKE 'old\\_%%'",
            (json.dumps(past.to_json()),),
        )
        conn.execute("ANALYZE retry_dead_letters, retry_letter_impacts")
        statement = sql.named("airflow_retry_provider.dlq.sql", "deliveries.sql")["delivery_blockers"]
        parameters = {"start": NOW - timedelta(days=1), "end": NOW + timedelta(days=2), "limit": 2000}
        [(plan,)] = conn.execute("EXPLAIN (FORMAT JSON) " + statement, parameters).fetchall()
    assert "retry_letter_impacts_last_deadline" in json.dumps(plan)
    [delivery] = todays_deliveries(store.db, NOW)
    assert [letter.letter_id for letter in delivery.letters] == [today]


def _configure(monkeypatch) -> None:
    entry = {"name": "rec", "class": "tests.alert_notifiers.RecordingNotifier"}
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps([entry]))
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_BASE_URL", "http://airflow.example.test")


def _told_at_risk(pg_dsn: str, monkeypatch) -> tuple[DeadLetterStore, Delivery, int]:
    """A letter in r1 blocking the report's delivery (DEADLINE, one hour of path), told at risk."""
    _configure(monkeypatch)
    store = DeadLetterStore.from_dsn(pg_dsn)
    delivery = _delivery("report", DEADLINE, timedelta(hours=1))
    letter_id = _file(store, "r1", delivery)
    letter = store.get(letter_id)
    assert letter is not None
    announce.tell(ImpactAssessed(store.db, letter_id, letter, store.impact(letter_id).impact))
    return store, delivery, letter_id


@pytest.fixture(autouse=True)
def _clear_recorded():
    RecordingNotifier.sent.clear()


def test_the_watch_tells_lost_once_before_the_deadline_without_asking_airflow(pg_dsn, monkeypatch):
    """Past the latest replay time with the letter still open: stored lost and told once, before the deadline."""
    store, delivery, letter_id = _told_at_risk(pg_dsn, monkeypatch)
    assert [sent["title"].split(":")[0] for sent in RecordingNotifier.sent] == ["Delivery at risk"]
    assert watch_deliveries(store, delivery.latest_replay - timedelta(minutes=1)).lost == ()  # not yet
    past = delivery.latest_replay + timedelta(minutes=10)  # one sweep late: still 50 min before the deadline
    watched = watch_deliveries(store, past)
    assert watched.lost == (letter_id,) and watched.errors == ()
    assert watch_deliveries(store, past + timedelta(minutes=10)).lost == ()  # stored lost: not again
    assert [sent["title"] for sent in RecordingNotifier.sent[1:]] == [
        "Delivery lost: the 2026-12-04 09:00 UTC delivery of gold_risk_report.report can no longer be met"
    ]
    [stored] = store.impact(letter_id).impact.deliveries
    assert stored.status == DeliveryStatus.LOST


def test_a_replay_in_time_is_noted_once_as_saved(pg_dsn, monkeypatch):
    """Told at risk, then replayed before the latest replay time and resolved: one "Delivery saved" note."""
    store, delivery, letter_id = _told_at_risk(pg_dsn, monkeypatch)
    _set_status(pg_dsn, letter_id, "replaying", cleared_at=NOW + timedelta(minutes=5))
    assert watch_deliveries(store, NOW + timedelta(minutes=10)).saved == ()  # replaying: not yet made it
    _set_status(pg_dsn, letter_id, "resolved")
    assert watch_deliveries(store, NOW + timedelta(minutes=20)).saved == ("gold_risk_report.report",)
    assert watch_deliveries(store, NOW + timedelta(minutes=30)).saved == ()  # once
    titles = [sent["title"] for sent in RecordingNotifier.sent]
    assert titles[1:] == [
        "Delivery saved: the 2026-12-04 09:00 UTC delivery of gold_risk_report.report is on track again: replayed in time"
    ]
    assert "Delivery lost" not in " ".join(titles)


def test_a_replay_too_late_is_never_noted_saved(pg_dsn, monkeypatch):
    """Replayed after the latest replay time: no saved note (it was told lost instead)."""
    store, delivery, letter_id = _told_at_risk(pg_dsn, monkeypatch)
    _set_status(pg_dsn, letter_id, "resolved", cleared_at=delivery.latest_replay + timedelta(minutes=1))
    assert watch_deliveries(store, delivery.latest_replay + timedelta(minutes=20)).saved == ()
    assert len(RecordingNotifier.sent) == 1


def _today_at_risk(now: datetime) -> tuple[datetime, timedelta]:
    """A UTC deadline later today whose latest replay time is still ahead of ``now``."""
    deadline = datetime.combine(now.date(), datetime.max.time(), timezone.utc).replace(microsecond=0)
    return deadline, (deadline - now) / 2


def test_the_cli_prints_todays_deliveries_and_their_letters(pg_dsn, capsys):
    """``airflow-retry deliveries`` lists each delivery, its status and latest replay time, then its letters; --json too."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    deadline, path = _today_at_risk(datetime.now(timezone.utc))
    letter_id = _file(store, "r1", _delivery("report", deadline, path, datetime.now(timezone.utc)))
    assert main(["deliveries", "--dsn", pg_dsn]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(
        f"gold_risk_report.report: at-risk; due {deadline:%Y-%m-%d} 23:59 UTC; latest replay "
    )
    assert lines[0].endswith(f"letter(s) {letter_id} wait for a replay")
    assert lines[1].startswith(f"  letter {letter_id} (dlq) etl.extract run r1: replay by ")
    assert main(["deliveries", "--json", "--dsn", pg_dsn]) == 0
    [shown] = json.loads(capsys.readouterr().out)["deliveries"]
    assert (shown["delivery"], shown["status"], shown["letters"][0]["letter_id"]) == (
        "gold_risk_report.report",
        DeliveryStatus.AT_RISK,
        letter_id,
    )


def test_the_cli_says_when_nothing_is_due(pg_dsn, capsys):
    """No letter blocks a delivery today: one line saying so, exit 1 (an empty answer, as every command's)."""
    assert main(["deliveries", "--dsn", pg_dsn]) == 1
    assert capsys.readouterr().out == "no delivery due today is blocked by a dead letter\n"


def test_an_open_breaker_tells_the_deliveries_its_held_tasks_put_at_risk_once(pg_dsn, monkeypatch):
    """The sweeper's outage watch: one dependency-down message with the delivery and its latest start, once per outage."""
    from airflow_retry_provider.breaker.store import BreakerStore
    from airflow_retry_provider.dlq.deliveries import watch_outages
    from tests.integration.breaker.test_alerts import LONG
    from tests.integration.breaker.test_store import open_breaker
    from tests.local_airflow import answering_airflow

    _configure(monkeypatch)
    store = DeadLetterStore.from_dsn(pg_dsn)
    breakers = BreakerStore.from_dsn(pg_dsn)
    open_breaker(breakers, settings=LONG)
    breakers.admit("positions_db", "etl/r1/extract/-1", LONG)
    RecordingNotifier.sent.clear()  # whatever the opening told
    delivery = {"at": "09:00", "timezone": "UTC", "days_after": 1, "validation_seconds": 600}
    with answering_airflow() as fake:
        fake.extract_then_publish("etl", delivery, extract_seconds=1500, publish_seconds=600)
        fake.runs[("etl", "r1")] = {"data_interval_end": (DEADLINE - timedelta(days=1, hours=9)).isoformat()}
        with fake.api() as api:
            assert watch_outages(store, api, NOW) == ["positions_db"]
            assert watch_outages(store, api, NOW + timedelta(minutes=10)) == [
                "positions_db"
            ]  # deduplicated below
    [sent] = RecordingNotifier.sent
    latest = DEADLINE - timedelta(minutes=25 + 10 + 10)  # extract 25, publish 10, its validation 10
    assert sent["title"] == (
        f"Dependency positions_db is down: its held tasks put 1 delivery(ies) at risk; the first must start by {latest.isoformat()}"
    )
    assert (
        f"etl.publish, due {DEADLINE.isoformat()}: start by {latest.isoformat()} (held: etl.extract (r1))"
        in sent["text"]
    )


def test_a_closed_breaker_is_not_watched(pg_dsn):
    """No open breaker: nothing asked of Airflow, nothing told."""
    from airflow_retry_provider.dlq.deliveries import watch_outages
    from tests.local_airflow import answering_airflow

    with answering_airflow() as fake, fake.api() as api:
        assert watch_outages(DeadLetterStore.from_dsn(pg_dsn), api, NOW) == []
        assert fake.calls["tasks"] == 0

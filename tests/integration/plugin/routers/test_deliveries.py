"""The Deliveries page and its JSON, a root cause's summed impact, and the deliveries an open breaker's
held tasks put at risk on the Dependencies page, through TestClient with Airflow's auth (SimpleAuthManager, multi-team).

Letters are filed by the real store with a stored impact naming a delivery due later today; the
rule under test: each delivery shows its status, latest replay time and links to the letters that
block it, and a user sees only deliveries and letters of DAGs they may read.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.policy.impact import Delivery, Impact, Names
from airflow_retry_provider.states import DeliveryStatus
from tests.integration.breaker.test_alerts import LONG
from tests.integration.breaker.test_store import open_breaker
from tests.integration.plugin.test_app import (  # noqa: F401 (fixtures)
    DAG_A,
    DAG_B,
    Ui,
    airflow_auth,
    answered,
    text_of,
    ui,
)
from tests.local_airflow import AnsweringAirflow


def _block(ui: Ui, dag_id: str) -> tuple[int, Delivery]:  # noqa: F811 (ui: the imported fixture's name)
    """A letter of ``dag_id`` holding its DAG's ``report`` delivery, due at the end of today (UTC)."""
    now = datetime.now(timezone.utc)
    deadline = datetime.combine(now.date(), datetime.max.time(), timezone.utc).replace(microsecond=0)
    path = (deadline - now) / 2  # the latest replay time is still ahead
    delivery = Delivery(dag_id, "report", deadline, path, deadline - path, DeliveryStatus.AT_RISK)
    (letter_id,) = ui.file(dag_id=dag_id)
    ui.store.set_impact(letter_id, Impact(deliveries=(delivery,), delivery_count=1))
    return letter_id, delivery


def test_the_page_and_json_list_todays_deliveries_with_their_letters(ui: Ui):  # noqa: F811
    """A delivery at risk: its status, deadline, latest replay time and a link to its letter, in JSON and HTML."""
    letter_id, delivery = _block(ui, DAG_A)
    [shown] = ui.get("/api/deliveries", user="admin").json()["deliveries"]
    assert (shown["delivery"], shown["status"], shown["latest_replay"]) == (
        f"{DAG_A}.report",
        DeliveryStatus.AT_RISK,
        delivery.latest_replay.isoformat(),
    )
    assert [letter["letter_id"] for letter in shown["letters"]] == [letter_id]
    html = ui.get("/deliveries", user="admin", html=True)
    assert html.status_code == 200
    assert f'href="/letters/{letter_id}" data-letter="{letter_id}"' in html.text
    text = text_of(html.text)
    for expected in ("0 lost", "1 at-risk", "0 on-track", f"{DAG_A} .report", f"#{letter_id} {DAG_A}.load"):
        assert expected in text


def test_a_user_sees_only_deliveries_and_letters_of_dags_they_may_read(ui: Ui):  # noqa: F811
    """viewer_a reads team_a's delivery; team_b's appears nowhere, not in the counts either; no token is a 401."""
    _block(ui, DAG_A)
    hidden, _ = _block(ui, DAG_B)
    names = [d["delivery"] for d in ui.get("/api/deliveries", user="viewer_a").json()["deliveries"]]
    assert names == [f"{DAG_A}.report"]
    page = ui.get("/deliveries", user="viewer_a", html=True).text
    assert DAG_B not in page and f"/letters/{hidden}" not in page and "1 at-risk" in text_of(page)
    assert len(ui.get("/api/deliveries", user="admin").json()["deliveries"]) == 2
    assert ui.get("/api/deliveries", user=None).status_code == 401


def test_nothing_due_says_so(ui: Ui):  # noqa: F811
    """No letter blocks a delivery today (one tomorrow only): the page says so, the JSON is empty."""
    (letter_id,) = ui.file()
    tomorrow = datetime.now(timezone.utc) + timedelta(days=2)
    ui.store.set_impact(
        letter_id,
        Impact(
            deliveries=(
                Delivery("etl", "report", tomorrow, timedelta(hours=1), tomorrow, DeliveryStatus.AT_RISK),
            )
        ),
    )
    assert ui.get("/api/deliveries").json()["deliveries"] == []
    assert "No delivery due today is blocked by a dead letter." in ui.get("/deliveries", html=True).text


def test_a_root_cause_group_shows_its_letters_impact_summed_and_deduplicated(ui: Ui):  # noqa: F811
    """Two letters of one root cause blocking one delivery: /api/groups and the groups view show it once."""
    first, delivery = _block(ui, DAG_A)
    (second,) = ui.file(dag_id=DAG_A, run_id="other")
    stricter = Delivery(
        DAG_A,
        "report",
        delivery.deadline,
        delivery.path_time * 1.5,
        delivery.deadline - delivery.path_time * 1.5,
        DeliveryStatus.AT_RISK,
    )
    ui.store.set_impact(
        second, Impact(workspaces=Names.of(["acme"]), deliveries=(stricter,), delivery_count=1)
    )
    [group] = ui.get("/api/groups", user="admin").json()["groups"]
    impact = group["impact"]
    assert (impact["letters"], impact["exact"], impact["delivery_count"]) == (2, True, 1)
    assert impact["deliveries"][0]["latest_replay"] == stricter.latest_replay.isoformat()
    assert impact["workspaces"] == {"count": 1, "first": ["acme"]}
    text = text_of(ui.get("/", user="admin", html=True, view="groups").text)
    assert "workspaces: acme" in text and f"delivery of {DAG_A}.report" in text
    ui.sql("UPDATE retry_dead_letters SET status = 'resolved'")
    assert ui.get("/api/groups", user="admin").json()["groups"][0]["impact"] is None  # nothing in the way


def _held_dag(fake: AnsweringAirflow, dag_id: str, deadline: datetime) -> None:
    """``dag_id``: extract -> publish, publish delivering at ``deadline`` (23:59 UTC the day after the
    run's data interval); extract ran 20 min, publish 10 min plus 5 of validation."""
    day_before = datetime.combine(deadline.date() - timedelta(days=1), datetime.min.time(), timezone.utc)
    delivery = {"at": "23:59", "timezone": "UTC", "days_after": 1, "validation_seconds": 300}
    fake.extract_then_publish(dag_id, delivery, extract_seconds=1200, publish_seconds=600)
    fake.runs[(dag_id, "r1")] = {"data_interval_end": day_before.isoformat()}


def test_an_open_breaker_lists_the_deliveries_its_held_tasks_put_at_risk(answered):  # noqa: F811 (the imported fixture)
    """A held extract blocks publish's delivery: the Dependencies JSON and page give its latest start time,
    and viewer_a does not see team_b's held task's delivery."""
    app, fake = answered
    now = datetime.now(timezone.utc)
    deadline = datetime.combine(now.date(), datetime.min.time(), timezone.utc).replace(hour=23, minute=59)
    for dag_id in (DAG_A, DAG_B):
        _held_dag(fake, dag_id, deadline)
    store = BreakerStore.from_dsn(app.dsn)
    open_breaker(store, settings=LONG)
    store.admit("positions_db", f"{DAG_A}/r1/extract/-1", LONG)
    store.admit("positions_db", f"{DAG_B}/r1/extract/-1", LONG)
    [dep] = app.get("/api/dependencies", user="admin").json()["dependencies"]
    held = {h["delivery"]: h for h in dep["held_deliveries"]}
    assert set(held) == {f"{DAG_A}.publish", f"{DAG_B}.publish"}
    latest = deadline - timedelta(minutes=35)  # 20 + 10 min of runs and 5 of validation
    assert held[f"{DAG_A}.publish"]["latest_start"] == latest.isoformat()
    assert held[f"{DAG_A}.publish"]["held"] == [f"{DAG_A}.extract (r1)"]
    [mine] = app.get("/api/dependencies", user="viewer_a").json()["dependencies"]
    assert [h["delivery"] for h in mine["held_deliveries"]] == [f"{DAG_A}.publish"]
    text = text_of(app.get("/dependencies", user="viewer_a", html=True).text)
    assert "Deliveries its held tasks put at risk" in text and f"{DAG_A}.publish" in text
    assert DAG_B not in text


def test_a_closed_breaker_asks_airflow_nothing(answered):  # noqa: F811 (the imported fixture)
    """No held task, no REST call: the page stays as cheap as before."""
    app, fake = answered
    open_breaker(BreakerStore.from_dsn(app.dsn), settings=LONG)
    [dep] = app.get("/api/dependencies", user="admin").json()["dependencies"]
    assert dep["held_deliveries"] == [] and fake.calls["tasks"] == 0

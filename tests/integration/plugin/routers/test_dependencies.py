"""The Dependencies page and its JSON API, through TestClient with Airflow's auth (SimpleAuthManager).

Breakers are opened by the real ``BreakerStore`` in a fresh provider database. The rule under test:
reading needs read access to pools (every user here), forcing edit access to the dependency's
pool (the OP role and above: ``admin``; ``ops_a`` has the USER role and is refused), audited.
"""

from __future__ import annotations

import json

import pytest

from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.plugin.routers.dependencies import FORCE_EVENT
from tests.integration.breaker.test_alerts import LONG
from tests.integration.breaker.test_store import open_breaker
from tests.integration.plugin.test_app import Ui, airflow_auth, audit_entries, text_of, ui  # noqa: F401 (fixtures)

EVIL = "<script>alert(1)</script>"


@pytest.fixture
def app(ui: Ui) -> Ui:  # noqa: F811 (the imported fixture)
    """The app on a fresh provider database, as the module's users see it."""
    return ui


def test_the_page_and_json_show_state_failure_rate_held_tasks_and_history(app: Ui):
    """An open breaker with one held task: the JSON and the page give its state, rate, held count and history."""
    store = BreakerStore.from_dsn(app.dsn)
    open_breaker(store, settings=LONG)
    store.admit("positions_db", "billing/r/load/-1", LONG)
    [dep] = app.get("/api/dependencies", user="viewer").json()["dependencies"]
    assert (dep["dependency"], dep["state"], dep["held"], dep["failures_10m"], dep["failure_rate_10m"]) == (
        "positions_db",
        "open",
        1,
        5,
        1.0,
    )
    assert dep["cooldown_seconds"] == 600 and dep["next_probe_at"] is not None
    assert [(e["from"], e["to"]) for e in dep["history"]] == [("closed", "open")]
    assert dep["outages"][0]["failures_at_open"] == 5 and dep["outages"][0]["closed_at"] is None
    html = app.get("/dependencies", user="viewer", html=True)
    assert html.status_code == 200
    text = text_of(html.text)
    for expected in ("positions_db open", "100.0% (5 of 5 calls)", "Held tasks 1", "Force open", "Automatic"):
        assert expected in text


def test_forcing_needs_edit_access_to_the_pool_and_is_audited_either_way(app: Ui):
    """admin forces open then auto (history shows user:admin and the reason); ops_a is refused 403, audited as refused."""
    store = BreakerStore.from_dsn(app.dsn)
    open_breaker(store, settings=LONG)
    refused = app.post(
        "/api/dependencies/positions_db/force", {"state": "closed", "reason": "try"}, user="ops_a"
    )
    assert refused.status_code == 403
    forced = app.post("/api/dependencies/positions_db/force", {"state": "open", "reason": EVIL}, user="admin")
    assert forced.status_code == 200, forced.text
    assert (forced.json()["state"], forced.json()["forced"]) == ("open", "open")
    back = app.post("/api/dependencies/positions_db/force", {"state": "auto", "reason": "failover done"})
    assert (back.json()["state"], back.json()["forced"]) == ("open", None)
    newest = back.json()["history"][:2]
    assert [(e["actor"], e["reason"]) for e in newest] == [
        ("user:admin", "failover done"),
        ("user:admin", EVIL),
    ]
    page = app.get("/dependencies", html=True).text
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    rows = [(owner, json.loads(extra)) for owner, _, extra in audit_entries(FORCE_EVENT)]
    assert [(owner, extra["state"], extra["outcome"]) for owner, extra in rows][-3:] == [
        ("ops_a", "closed", "refused"),
        ("admin", "open", "forced"),
        ("admin", "auto", "forced"),
    ]


def test_bad_input_names_the_field_and_value(app: Ui):
    """An unknown dependency is a 404 naming it; a state that is not open/closed/auto or no reason is a 422."""
    open_breaker(BreakerStore.from_dsn(app.dsn), settings=LONG)
    missing = app.post("/api/dependencies/no_such_db/force", {"state": "open", "reason": "x"})
    assert missing.status_code == 404 and "no breaker named 'no_such_db'" in missing.json()["detail"]
    shut = app.post("/api/dependencies/positions_db/force", {"state": "shut", "reason": "x"})
    assert shut.status_code == 422 and shut.json()["detail"][0]["loc"] == ["body", "state"]
    silent = app.post("/api/dependencies/positions_db/force", {"state": "open", "reason": ""})
    assert silent.status_code == 422 and silent.json()["detail"][0]["loc"] == ["body", "reason"]
    assert app.get("/api/dependencies", user=None).status_code == 401

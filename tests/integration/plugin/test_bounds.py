"""Bad input is a 4xx naming the field, and exports are bounded: through TestClient on the real app and PostgreSQL."""

from __future__ import annotations

import csv
import io
import threading
from typing import Any

import psycopg
import pytest

from airflow_retry_provider import settings
from airflow_retry_provider.plugin import queries
from tests.integration.plugin import test_app
from tests.integration.plugin.test_app import Ui

airflow_auth, ui = test_app.airflow_auth, test_app.ui  # the plugin tests' fixtures: users, the app

BIG = str(2**63)  # one past bigint


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/letters", {"dag_id": "a\x00b"}, "dag_id"),  # NUL in a filter value
        ("/api/groups", {"fingerprint": "\x00"}, "fingerprint"),  # NUL in the groups' filter
        ("/api/export.csv", {"workspace_id": "w\x00"}, "workspace_id"),  # NUL in an export's filter
        ("/api/letters", {"since": "2026-01-01\x00"}, "since"),  # NUL in a date
        (
            "/api/letters",
            {"before_created": "2026-01-01T00:00:00Z", "before_id": BIG},
            "before_id",
        ),  # > bigint
        (
            "/api/letters",
            {"before_created": "2026-01-01T00:00:00Z", "before_id": "0"},
            "before_id",
        ),  # not positive
        ("/api/groups", {"after_letters": BIG}, "after_letters"),  # > bigint
        ("/api/groups", {"after_letters": "-1"}, "after_letters"),  # negative count
        (
            "/api/groups",
            {"after_letters": "1", "after_fingerprint": "f\x00"},
            "after_fingerprint",
        ),  # NUL cursor
        (f"/api/letters/{BIG}", {}, "letter_id"),  # a path id past bigint
        ("/api/letters/0", {}, "letter_id"),  # a path id that is no id
        (f"/api/jobs/{BIG}", {}, "job_id"),  # a job id past bigint
        ("/api/task-instance", {"dag_id": "d\x00", "run_id": "r", "task_id": "t"}, "dag_id"),  # NUL in an id
        (
            "/api/task-instance",
            {"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": "2147483648"},
            "map_index",
        ),  # > int
        (
            "/api/tries",
            {"dag_id": "d", "run_id": "r\x00", "task_id": "t"},
            "run_id",
        ),  # the Retries tab's JSON
        ("/", {"before_created": "2026-01-01T00:00:00Z", "before_id": BIG}, "before_id"),  # the list page
        ("/preview", {"ids": BIG}, "ids"),  # the preview page's ids
    ],
)
def test_bad_query_or_path_values_answer_422_naming_the_field(
    ui: Ui, path: str, params: dict[str, str], field: str
):
    """NUL in any text, and ids, cursors and indexes outside their column's range, are a 422 naming the field."""
    ui.file()
    answer = ui.get(path, **params)
    assert answer.status_code == 422, answer.text
    assert field in answer.text, answer.text


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/api/replays",
            {"ids": [1], "reason": "fix\x00ed", "fix_version": "v2"},
            "reason",
        ),  # NUL in a reason
        (
            "/api/replays",
            {"ids": [1], "reason": "r", "fix_version": "v\x00"},
            "fix_version",
        ),  # NUL in a version
        (
            "/api/replays",
            {"ids": [1], "reason": "r", "fix_version": "v", "processing_version": "\x00"},
            "processing_version",
        ),  # NUL in the new identity asked for
        ("/api/park", {"ids": [1], "reason": "why\x00"}, "reason"),  # park
        ("/api/dismiss", {"ids": [1], "reason": "\x00"}, "reason"),  # dismiss
        ("/api/park", {"all_matching": True, "filter": {"task_id": "t\x00"}}, "task_id"),  # a body's filter
    ],
)
def test_nul_in_an_actions_text_answers_422_and_changes_nothing(
    ui: Ui, path: str, body: dict[str, Any], field: str
):
    """A NUL (or unpaired surrogate) in a reason, version or filter is a 422 naming it; the letter is untouched."""
    (letter_id,) = ui.file()
    answer = ui.post(path, body)
    assert answer.status_code == 422, answer.text
    assert any(field in map(str, error["loc"]) for error in answer.json()["detail"]), answer.text
    assert ui.store.get(letter_id).status == "dlq" and len(ui.store.events(letter_id)) == 1


def test_an_unpaired_surrogate_escaped_in_json_answers_422(ui: Ui):
    """A JSON body may escape an unpaired surrogate (\\ud800): the reason is refused like a NUL."""
    (letter_id,) = ui.file()
    answer = ui.client.post(
        "/api/dismiss",
        headers={**ui.headers("admin"), "Content-Type": "application/json"},
        content=b'{"ids": [%d], "reason": "lone \\ud800"}' % letter_id,
    )
    assert answer.status_code == 422 and "reason" in answer.text, answer.text
    assert ui.store.get(letter_id).status == "dlq"


def test_the_task_instance_tab_refuses_a_map_index_outside_integer(ui: Ui):
    """The tab's free-form map index is bounded too: 422 naming it, not a 500 from PostgreSQL."""
    answer = ui.get("/ti", dag_id="ui_dag_team_a", run_id="r", task_id="t", map_index="99999999999")
    assert answer.status_code == 422 and "map_index" in answer.text


# -- exports ------------------------------------------------------------------------------------


def test_an_export_past_its_maximum_is_cut_and_says_so(ui: Ui, monkeypatch: pytest.MonkeyPatch):
    """With export_max_letters = 3 and 5 letters: 3 rows, a last # cut row, the JSON cut field and the header."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__EXPORT_MAX_LETTERS", "3")
    ui.file(5)
    answer = ui.get("/api/export.csv")
    assert answer.status_code == 200, answer.text
    assert (answer.headers["x-export-cut"], answer.headers["x-export-max-letters"]) == ("true", "3")
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert len(rows) == 1 + 3 + 1
    assert rows[-1][0].startswith("# cut: more letters match; this export stops at the first 3")
    document = ui.get("/api/export.json").json()
    assert (len(document["letters"]), document["count"], document["cut"], document["max_letters"]) == (
        3,
        3,
        True,
        3,
    )
    whole = ui.get("/api/export.json", task_id="none-such")
    assert whole.headers["x-export-cut"] == "false" and whole.json()["cut"] is False


def test_an_export_at_exactly_its_maximum_is_not_cut(ui: Ui, monkeypatch: pytest.MonkeyPatch):
    """As many letters as the maximum: every one exported and no cut marker (the count looks one past it)."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__EXPORT_MAX_LETTERS", "3")
    ui.file(3)
    answer = ui.get("/api/export.csv")
    assert answer.headers["x-export-cut"] == "false"
    assert not any(row and row[0].startswith("# cut") for row in csv.reader(io.StringIO(answer.text)))


def test_exports_return_letters_as_stored_without_redacting_them_again(
    ui: Ui, monkeypatch: pytest.MonkeyPatch
):
    """A row whose text redact() would change (written by another writer) is exported as stored: no redaction on read."""
    (letter_id,) = ui.file()
    stored = "token=plain-in-the-row"
    ui.sql(
        "UPDATE retry_dead_letters SET message = %(m)s, reason = %(m)s WHERE id = %(id)s",
        {"m": stored, "id": letter_id},
    )
    calls: list[str] = []
    import airflow_retry_provider.dlq.models as models

    monkeypatch.setattr(models, "redact", lambda text, *a: calls.append(text) or text)
    (row,) = csv.DictReader(io.StringIO(ui.get("/api/export.csv").text))
    assert (row["message"], row["reason"]) == (stored, stored)
    assert ui.get("/api/export.json").json()["letters"][0]["message"] == stored
    assert calls == []


def test_letters_are_redacted_when_filed_whoever_built_them(ui: Ui):
    """The store redacts every free-text field at write time, so reads may return it as stored."""
    (letter_id,) = ui.file(message="login failed: password=Hunter2x", payload_ref="s3://k?token=abcdef123456")
    with psycopg.connect(ui.dsn) as conn:
        message, payload_ref = conn.execute(
            "SELECT message, payload_ref FROM retry_dead_letters WHERE id = %s", (letter_id,)
        ).fetchone()
    assert "Hunter2x" not in message and "abcdef123456" not in payload_ref


def test_a_third_concurrent_export_of_one_user_is_429_naming_the_limit(ui: Ui):
    """Two exports held open by one user: a third answers 429 naming export_concurrency_per_user; another user may export."""
    from airflow_retry_provider.dlq.store import LetterFilter

    ui.file(2)
    held = [
        queries.LetterExport(ui.store.db, LetterFilter(), ["ui_dag_team_a"], "admin", 10, 2).open()
        for _ in range(2)
    ]
    try:
        answer = ui.get("/api/export.csv")
        assert answer.status_code == 429, answer.text
        assert (
            "export_concurrency_per_user" in answer.json()["detail"] and "2 export" in answer.json()["detail"]
        )
        assert ui.get("/api/export.json", user="viewer_a").status_code == 200
    finally:
        for export in held:
            export.close()
    assert ui.get("/api/export.csv").status_code == 200  # the slots are free again


def test_concurrent_exports_share_slots_across_connections(ui: Ui):
    """Slots are PostgreSQL advisory locks: exports opened from different threads and connections count together."""
    from airflow_retry_provider.dlq.store import LetterFilter

    def open_one() -> Any:
        try:
            return queries.LetterExport(ui.store.db, LetterFilter(), [], "ana", 10, 2).open()
        except queries.ExportsBusy:
            return None

    results: list[Any] = [None] * 4
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, open_one())) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    opened = [r for r in results if r is not None]
    try:
        assert len(opened) == 2
    finally:
        for export in opened:
            export.close()


def test_a_bad_numeric_setting_is_refused_at_start_up_naming_it(monkeypatch: pytest.MonkeyPatch):
    """retention_letters_days = 1000000 (an OverflowError before) is a ValueError naming the setting and value."""
    from airflow_retry_provider.plugin.app import create_app

    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__RETENTION_LETTERS_DAYS", "1000000")
    with pytest.raises(
        ValueError, match=r"retention_letters_days .* must be an integer from 1 to 36500, got '1000000'"
    ):
        create_app(driver=False)
    with pytest.raises(ValueError, match="retention_letters_days"):
        settings.retention_letters_days()

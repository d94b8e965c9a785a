"""No secret of the leak corpus, the unseen corpus or the second held-out set reaches any surface: the stored row, the page,
the JSON API, both exports, the alert and the log line of a letter that could not be filed (real
app, real PostgreSQL)."""

from __future__ import annotations

import csv
import html
import io
import json
import logging
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
import yaml

from airflow_retry_provider.alerts.messages import root_cause
from airflow_retry_provider.dlq.callback import UNFILED_EVENT, build_letter, file_letter
from airflow_retry_provider.dlq.store import DeadLetterStore
from devstack.postgres import free_port
from tests.integration.plugin import test_app
from tests.integration.plugin.test_app import Ui

airflow_auth, ui = test_app.airflow_auth, test_app.ui  # the plugin tests' fixtures: users, the app

DATA = Path(__file__).parents[2] / "data"
# the corpus the rules were written from, the messages of tools no rule was written for, and the
# second held-out set (fitted in round three)
CORPUS = [
    entry
    for name in ("leaks.yaml", "unseen.yaml", "holdout2.yaml")
    for entry in yaml.safe_load((DATA / name).read_text(encoding="utf-8"))
]


def _strings(value: Any) -> str:
    """Every string inside a JSON-like value, one per line (so an escaped secret is seen unescaped)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(_strings(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_strings(v) for v in value)
    return str(value)


def _leaks(entry: dict[str, Any], surfaces: dict[str, str]) -> list[str]:
    return [
        f"{name}: {secret!r}"
        for name, text in surfaces.items()
        for secret in entry["secrets"]
        if secret in text
    ]


def _context(message: str, index: int) -> dict[str, Any]:
    ti = SimpleNamespace(
        dag_id="corpus", run_id=f"manual__{index}", task_id="load", map_index=-1, try_number=1, max_tries=0
    )
    return {"ti": ti, "task": SimpleNamespace(retries=0), "exception": RuntimeError(message), "params": {}}


def test_no_corpus_secret_reaches_the_row_page_api_or_exports(ui: Ui):
    """Each corpus message filed as a letter: its secrets are in no stored row, page, JSON answer or export."""
    ids = {}
    for index, entry in enumerate(CORPUS):
        (letter_id,) = ui.file(
            message=entry["message"], reason=f"dead letter: {entry['message']}", run_id=f"c{index}"
        )
        ids[letter_id] = entry
    # each letter's own row of each export (another letter may hold a secret's word innocently)
    csv_rows = {
        int(row["id"]): "\n".join(row.values())
        for row in csv.DictReader(io.StringIO(ui.get("/api/export.csv").text))
        if row.get("id", "").isdigit()
    }
    json_rows = {letter["id"]: _strings(letter) for letter in ui.get("/api/export.json").json()["letters"]}
    assert set(ids) <= set(csv_rows) and set(ids) <= set(json_rows)
    leaks = []
    with psycopg.connect(ui.dsn) as conn:
        for letter_id, entry in ids.items():
            row = conn.execute(
                "SELECT message, reason FROM retry_dead_letters WHERE id = %s", (letter_id,)
            ).fetchone()
            page = ui.get(f"/letters/{letter_id}", html=True)
            api = ui.get(f"/api/letters/{letter_id}")
            assert page.status_code == 200 and api.status_code == 200
            surfaces = {
                "row": "\n".join(row),
                "page": html.unescape(page.text),
                "api": _strings(api.json()),
                "export.csv": csv_rows[letter_id],
                "export.json": json_rows[letter_id],
            }
            leaks += [f"letter {letter_id} ({entry['tool']}) {leak}" for leak in _leaks(entry, surfaces)]
    assert leaks == []


def test_no_corpus_secret_reaches_an_alert_or_the_unfiled_log_line(caplog: pytest.LogCaptureFixture):
    """A letter built from each corpus message by the failure callback: its alert and, when PostgreSQL is
    down, the one log line that carries the whole record hold none of the message's secrets."""
    down = DeadLetterStore.from_dsn(f"postgresql://nobody@127.0.0.1:{free_port()}/nothing?connect_timeout=2")
    leaks = []
    for index, entry in enumerate(CORPUS):
        letter = build_letter(_context(entry["message"], index))
        alert = root_cause(letter, index + 1, 1, "http://airflow.example")
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            assert file_letter(letter, down, replay_cap=3, attempts=1, sleep=lambda _: None) is None
        logged = "\n".join(r.getMessage() for r in caplog.records if UNFILED_EVENT in r.getMessage())
        assert logged, "the unfiled letter is logged"
        surfaces = {
            "letter": json.dumps(asdict(letter), default=str, ensure_ascii=False),
            "alert": _strings(asdict(alert)),
            "log": logged,
        }
        leaks += [f"{entry['tool']} {leak}" for leak in _leaks(entry, surfaces)]
    assert leaks == []


DISGUISES = "run \u202egpj.exe\u202c done \x1b[2J\x1b[31mOK\x1b[0m \u200bzero \u2066iso\u2069"


@pytest.mark.parametrize(
    "path",
    [
        "/letters/{id}",  # the letter's page: its message, reason and status note
        "/",  # the list: the message in a cell and in its title
        "/?view=groups",  # grouped by fingerprint: the group's message
    ],
)
def test_pages_show_control_and_bidi_characters_as_escapes(ui: Ui, path: str):
    """A letter's text with a bidi override, ESC sequences and zero-width characters reaches the page as visible escapes, never raw."""
    (letter_id,) = ui.file(message=DISGUISES, reason=f"dead letter: {DISGUISES}", run_id="disguised")
    page = ui.get(path.format(id=letter_id), html=True)
    assert page.status_code == 200
    text = html.unescape(page.text)
    body = text[text.index("<body") :]  # the head's script may hold the characters' class, not raw text
    for raw in ("\u202e", "\u202c", "\x1b", "\u200b", "\u2066", "\u2069"):
        assert raw not in body.split("<script")[0], repr(raw)
    assert "\\u202egpj.exe\\u202c" in text
    assert "\\u001b[2J" in text


def test_corpus_keeps_what_on_call_reads_on_the_page(ui: Ui):
    """Each corpus message's must-keep strings are still on its letter's page (over-redaction is measured on the page too)."""
    hidden = []
    for index, entry in enumerate(CORPUS):
        (letter_id,) = ui.file(message=entry["message"], run_id=f"k{index}")
        page = html.unescape(ui.get(f"/letters/{letter_id}", html=True).text)
        hidden += [f"{entry['tool']}: {keep!r}" for keep in entry["keep"] if keep not in page]
    assert hidden == []

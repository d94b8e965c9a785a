"""Airflow's masker over the provider's text: what it knows is masked, when it learns it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from airflow.sdk._shared import secrets_masker
from airflow.sdk._shared.secrets_masker import _secrets_masker, redact
from airflow.sdk.log import mask_secret

from airflow_retry_provider.masking import mask

SECRET = "Pr1vate-pa55-for-masking-test"


@pytest.fixture
def empty_masker() -> Iterator[None]:
    """Airflow's masker with nothing registered; what other tests registered is put back after."""
    masker = _secrets_masker()
    patterns, replacer = masker.patterns, masker.replacer
    masker.reset_masker()
    try:
        yield
    finally:
        masker.patterns, masker.replacer = patterns, replacer


@pytest.mark.parametrize(
    "text",
    [
        f"could not connect as etl with {SECRET}",  # the registered value inside a sentence
        f"{SECRET}",  # the value alone
        "nothing secret here",  # no registered value: unchanged
        "",  # empty text
    ],
)
@pytest.mark.parametrize("registered", [False, True])
def test_mask_gives_what_airflows_redact_gives(empty_masker, text: str, registered: bool) -> None:
    """With or without a registered value, mask() returns exactly Airflow's redact() of the text."""
    if registered:
        mask_secret(SECRET)
    assert mask(text) == redact(text)
    assert (SECRET in mask(text)) is (SECRET in text and not registered)


def test_a_value_registered_later_is_masked(empty_masker) -> None:
    """The masker is asked on every call: a value mask_secret registers after a first call is masked."""
    text = f"token {SECRET} refused"
    assert mask(text) == text
    mask_secret(SECRET)
    assert mask(text) == "token *** refused"


def test_a_broken_masker_leaves_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A masker that raises is best effort: the text comes back as it was."""

    def broken(value: object) -> object:
        raise RuntimeError("no masker")

    monkeypatch.setattr(secrets_masker, "redact", broken)
    assert mask(f"with {SECRET}") == f"with {SECRET}"


@pytest.mark.parametrize(
    "text",
    [
        "login failed: pw=hunter2 (retrying)",  # after a key word: redaction hides it too
        "could not log in to db as etl with hunter2",  # an unremarkable word: only the masker knows it
    ],
)
def test_a_connection_password_from_the_environment_is_hidden_on_every_surface(
    empty_masker, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """A connection's short, unremarkable password set in the task's environment (AIRFLOW_CONN_...) is hidden in the retry reason, the letter's message and reason, and an alert's error, once the task has read the connection."""
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from airflow.sdk import BaseHook

    from airflow_retry_provider import ClassifiedRetryPolicy
    from airflow_retry_provider.alerts.outbox import safe_error
    from airflow_retry_provider.dlq.callback import build_letter
    from airflow_retry_provider.policy import redact as redact_only

    assert ("hunter2" in redact_only(text)) is ("pw=" not in text)  # where redaction alone keeps it
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", "postgresql://etl:hunter2@db:5432/sales")
    assert BaseHook.get_connection("warehouse").password == "hunter2"  # as a task reads it: now registered
    failure = RuntimeError(text)
    now = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    ti = SimpleNamespace(
        dag_id="sales", run_id="manual__1", task_id="load", map_index=-1, try_number=1, max_tries=0
    )
    context = {"ti": ti, "task": SimpleNamespace(retries=0), "exception": failure, "params": {},
               "data_interval_start": now, "data_interval_end": now}  # fmt: skip
    letter = build_letter(context)
    surfaces = {
        "retry reason": ClassifiedRetryPolicy("report", clock=lambda: now)
        .evaluate(failure, 1, 2, context)
        .reason,
        "letter message": letter.message,
        "letter reason": letter.reason,
        "alert error": safe_error(failure),
    }
    assert {name: "hunter2" in value for name, value in surfaces.items()} == dict.fromkeys(surfaces, False)
    assert all("***" in value for value in surfaces.values())

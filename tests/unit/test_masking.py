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

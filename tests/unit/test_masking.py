"""Airflow's masker over the provider's text: what it knows is masked; text holding none of it costs no call."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from airflow.sdk._shared.secrets_masker import _secrets_masker, redact
from airflow.sdk.log import mask_secret
from hypothesis import given
from hypothesis import strategies as st

from airflow_retry_provider import masking
from airflow_retry_provider.masking import _may_change, literals, mask

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


@pytest.mark.parametrize("registered", [False, True])  # an empty masker, and one knowing other values
def test_text_without_a_known_value_is_not_sent_to_the_masker(
    empty_masker, monkeypatch: pytest.MonkeyPatch, registered: bool
) -> None:
    """Text holding no registered value comes back without a call to Airflow's redact (the hot path)."""
    if registered:
        mask_secret(SECRET)

    def refuse(value: object) -> object:
        raise AssertionError("redact called")

    getter, masker_class, _ = masking._airflow_masker()
    monkeypatch.setattr(masking, "_airflow_masker", lambda: (getter, masker_class, refuse))
    assert mask("nothing secret here") == "nothing secret here"


SECRETS = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5)


@given(SECRETS)
def test_literals_of_escaped_alternatives(secrets: list[str]) -> None:
    """The alternation add_mask builds (re.escape of each value, joined by |) reads back as its values."""
    assert literals("|".join(map(re.escape, secrets))) == tuple(secrets)


@pytest.mark.parametrize(
    "source",
    [
        r"a.b",  # any character
        r"\d+",  # a class, repeated
        r"(?i)secret",  # an inline flag
        r"[ab]c",  # a character class
        "trailing\\",  # a lone backslash at the end
        r"x\bword",  # a word boundary
    ],
)
def test_a_pattern_that_is_not_literal_is_none(source: str) -> None:
    """Any regex syntax outside escaped literals: no literals, the regex itself is searched."""
    assert literals(source) is None


@given(SECRETS, st.text(max_size=40), st.sampled_from([0, re.IGNORECASE]))
def test_may_change_is_the_regex_search(secrets: list[str], text: str, flags: int) -> None:
    """Whether the masker could change a text is exactly whether its replacer matches it (any flags)."""
    replacer = re.compile("|".join(map(re.escape, secrets)), flags)
    for candidate in (text, text + secrets[0], secrets[-1].upper() + text):
        assert _may_change(replacer, candidate) is (replacer.search(candidate) is not None)


def test_a_broken_masker_leaves_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A masker that raises is best effort: the text comes back as it was."""

    def broken() -> object:
        raise RuntimeError("no masker")

    monkeypatch.setattr(masking, "_airflow_masker", lambda: (broken, object, redact))
    assert mask(f"with {SECRET}") == f"with {SECRET}"

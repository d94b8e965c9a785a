"""A regex guarded by its literals matches exactly what it matches unguarded; timestamps read as isoformat."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_retry_provider.policy import DEFAULT_RULES, MessagePattern
from airflow_retry_provider.policy.decide import (
    format_timestamp,
)
from airflow_retry_provider.policy.engine import Pattern, PatternError, pattern

COST_LIMIT = next(rule for rule in DEFAULT_RULES if rule.category == "cost-limit-exceeded")
assert isinstance(COST_LIMIT, MessagePattern)
(COST_REGEX,) = COST_LIMIT.regexes
FRAGMENTS = [
    "exceed",
    "exceeded",
    "bytes billed",
    "bytes_billed",
    "cost limit",
    "cost ceiling",
    " ",
    "query ",
    "x",
]


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join))
def test_the_cost_limit_regex_matches_only_text_holding_its_literal(text: str) -> None:
    """Its literal is sound: the same regex without it never matches a text that lacks "exceed"."""
    assert COST_REGEX.literals == ("exceed",)
    unfiltered = Pattern(COST_REGEX.source)
    if unfiltered.search(text):
        assert "exceed" in text
    assert bool(COST_REGEX.search(text)) == bool(unfiltered.search(text))


def test_a_message_without_the_literal_is_not_searched() -> None:
    declared = pattern(r"quota \d+ exceeded", literals=("quota",))
    assert declared.search("connection reset by peer") is None
    assert declared._compiled is None  # never compiled: RE2 was not asked
    assert declared.search("quota 5 exceeded").group(0) == "quota 5 exceeded"
    assert list(declared.finditer("nothing")) == []
    assert declared.sub("***", "no\ud800thing") == "no\ufffdthing"  # storable, as RE2's sub gives it


@pytest.mark.parametrize("literals", [("",), ("a\ufffd",), ("\x00",), (b"x",)])
def test_a_literal_that_could_hide_a_match_is_refused(literals) -> None:
    with pytest.raises(PatternError, match="literals"):
        pattern("a", literals=literals)


def test_literals_need_a_case_sensitive_pattern() -> None:
    with pytest.raises(PatternError, match="case-sensitive"):
        pattern("quota", ignore_case=True, literals=("quota",))


@given(st.datetimes(timezones=st.just(timezone.utc)) | st.datetimes(timezones=st.timezones()))
def test_a_timestamp_reads_as_isoformat_gives_it(moment: datetime) -> None:
    """format_timestamp is isoformat's whole seconds in UTC, with Z (any year)."""
    try:
        utc = moment.astimezone(timezone.utc)
    except OverflowError:  # a zone's offset moves it out of datetime's years
        return
    assert format_timestamp(moment) == utc.isoformat(timespec="seconds")[:19] + "Z"

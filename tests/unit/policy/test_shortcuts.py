"""What a decision skips is what could not change it (#31): each shortcut gives what the long way gives."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_retry_provider.policy import DEFAULT_RULES, MessagePattern
from airflow_retry_provider.policy.classify import Classification
from airflow_retry_provider.policy.decide import (
    MAX_REASON_CHARS,
    Retry,
    format_timestamp,
    one_line,
    retry_unless_late,
)
from airflow_retry_provider.policy.engine import Pattern, PatternError, pattern
from airflow_retry_provider.policy.evidence import (
    _READ,
    Evidence,
    _attribute,
    _error_code,
    _http_status,
    _plain_type,
    _sqlstate,
)
from airflow_retry_provider.policy.tries import _leading_tags_end, reason_tags, tag_reason

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


class _Property(Exception):
    @property
    def status_code(self) -> int:
        return 503


class _Dynamic(Exception):
    def __getattr__(self, name: str) -> object:
        return "40P01" if name == "sqlstate" else None


class _Slotted(Exception):
    __slots__ = ("pgcode",)

    def __init__(self) -> None:
        super().__init__("slotted")
        self.pgcode = "23505"


class _Raising(Exception):
    @property
    def response(self) -> object:
        raise RuntimeError("no response")


def _with(exc: BaseException, **attributes: object) -> BaseException:
    for name, value in attributes.items():
        setattr(exc, name, value)
    return exc


EXCEPTIONS = [
    ConnectionResetError(104, "Connection reset by peer"),
    KeyError("customer_id"),
    TimeoutError("read timed out"),
    SystemExit(3),  # defines `code`
    _Property("x"),
    _Dynamic("y"),
    _Slotted(),
    _Raising("z"),
    _with(RuntimeError("429"), status=429),
    _with(RuntimeError("noted"), note="an attribute Evidence does not read"),
    _with(RuntimeError("db"), orig=_with(Exception("deadlock"), sqlstate="40p01")),
    _with(
        RuntimeError("s3"),
        response={"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}},
    ),
    _with(RuntimeError("http"), response=SimpleNamespace(status_code=429, headers={"Retry-After": "5"})),
    _with(RuntimeError("no response"), response=None),
    _with(RuntimeError("odd response"), response=SimpleNamespace(status_code="503 ")),
    _with(RuntimeError("both"), response=SimpleNamespace(status_code=503), status=429),
    _with(RuntimeError("response and orig"), response={"Error": {}}, orig=_with(Exception(), pgcode="40001")),
    _with(_Property("property beats response"), response=SimpleNamespace(status_code=429)),
]


def _bare(exc: BaseException) -> bool:
    """Evidence's shortcut: a plain class, and no attribute it reads in the instance's __dict__."""
    return _plain_type(type(exc)) and _READ.isdisjoint(exc.__dict__)


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda exc: type(exc).__name__)
def test_evidence_without_reading_attributes_is_the_evidence_read(exc: BaseException) -> None:
    """The shortcuts (a bare exception; one whose only attribute read is ``response``) give what
    reading every attribute gives."""
    response = _attribute(exc, "response")
    read = (
        _http_status(exc, response),
        _sqlstate(exc) or _sqlstate(_attribute(exc, "orig")),
        _error_code(response),
    )
    assert Evidence.of(exc)[3:] == read
    if _bare(exc):
        assert read == (None, None, None)


def test_only_plain_exceptions_are_bare() -> None:
    """Bare: a plain class, and no attribute Evidence reads in the instance's __dict__."""
    assert _bare(ConnectionResetError(104, "reset"))
    assert not _bare(SystemExit(3))
    assert not _bare(_Property("x"))
    assert not _bare(_Dynamic("y"))
    assert _bare(_with(KeyError("k"), note="nothing Evidence reads"))
    assert not _bare(_with(KeyError("k"), status=429))


def _tagged_the_long_way(reason: str, rule: str, profile: str | None, deadline: datetime | None) -> str:
    """tag_reason as it was written first: a list of parts joined by one space."""
    tags = [f"[rule {rule}]"]
    if profile:
        tags.append(f"[profile {profile}]")
    if deadline is not None:
        tags.append(f"[deadline {format_timestamp(deadline)}]")
    cut = _leading_tags_end(reason)
    parts = (reason[:cut].rstrip(), *tags, reason[cut:].lstrip())
    tagged = " ".join([part for part in parts if part])
    return tagged if len(tagged) <= MAX_REASON_CHARS else tagged[: MAX_REASON_CHARS - 1] + "…"


REASON_PIECES = [
    "[attempt 2/3]",
    "[after 2026-11-30T10:05:00Z]",
    "[attempt 1",
    " ",
    "  ",
    "\t",
    "x",
    "]",
    "m" * 300,
]


@given(
    st.lists(st.sampled_from(REASON_PIECES), max_size=6).map("".join),
    st.sampled_from(["r", "http-429"]),
    st.sampled_from([None, "", "report"]),
    st.sampled_from([None, datetime(2026, 12, 1, 12, tzinfo=timezone.utc)]),
)
def test_tag_reason_gives_what_the_list_and_join_gave(
    reason: str, rule: str, profile: str | None, deadline: datetime | None
) -> None:
    """Tags built in place give the text the list-and-join version gave, cap included."""
    assert tag_reason(reason, rule, profile, deadline) == _tagged_the_long_way(
        reason, rule, profile, deadline
    )


MESSAGE_PIECES = ["reset", " ", "  ", "\n", "\t", "[after x]", "[attempt 1/2]", "é", "w" * 120, "…"]


@given(
    st.lists(st.sampled_from(MESSAGE_PIECES), max_size=8).map("".join),
    st.sampled_from(["", "unknown outcome, safe to repeat", "Retry-After 120 s"]),
    st.sampled_from(["r", "http-429"]),
    st.sampled_from([None, "report"]),
    st.sampled_from([None, datetime(2026, 12, 1, 12, tzinfo=timezone.utc)]),
    st.sampled_from(["retryable", "unknown"]),
)
def test_a_retry_tagged_as_it_is_written_reads_as_tag_reason_made_it(
    message: str, note: str, rule: str, profile: str | None, deadline: datetime | None, failure_class: str
) -> None:
    """A retry's reason is written with the policy's tags (one text, not one text then another):
    it is the text tag_reason made of the untagged reason, and is capped the same way."""
    classification = Classification(failure_class, "connection-failed", rule, "OSError", message)  # type: ignore[arg-type]
    now = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    arguments = (classification, 1, 3, now, timedelta(seconds=90), None, timedelta(0), note)
    untagged = retry_unless_late(*arguments)
    tagged = retry_unless_late(*arguments, reason_tags(rule, profile, deadline))
    assert isinstance(tagged, Retry) and isinstance(untagged, Retry)
    assert tagged._replace(reason="") == untagged._replace(reason="")
    by_tag_reason = tag_reason(untagged.reason, rule, profile, deadline)
    if len(by_tag_reason) < MAX_REASON_CHARS:  # nothing was cut
        assert tagged.reason == by_tag_reason
    else:  # both at most Airflow's 500 characters; tag_reason cuts a word in two, the writer does not
        assert len(tagged.reason) <= MAX_REASON_CHARS
        assert tagged.reason.startswith(by_tag_reason[: by_tag_reason.index(" [rule ")] + " [rule ")


def test_only_the_ascii_space_is_printable_whitespace() -> None:
    """Every character str.split() splits on but the ASCII space is unprintable: one_line's shortcut holds."""
    printable = [c for c in range(sys.maxunicode + 1) if chr(c).isspace() and chr(c).isprintable()]
    assert printable == [ord(" ")]


LINE_PIECES = ["a", "é", " ", "  ", "\t", "\n", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "\x00", "retry"]
LINE_PIECES += [
    "\r",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x07",
    "\x7f",
]  # every ASCII whitespace, two controls


@given(st.lists(st.sampled_from(LINE_PIECES), max_size=12).map("".join))
def test_one_line_gives_what_split_and_join_give(text: str) -> None:
    """one_line(text) is " ".join(text.split()), whether or not its shortcut applies."""
    assert one_line(text) == " ".join(text.split())


@given(st.datetimes(timezones=st.just(timezone.utc)) | st.datetimes(timezones=st.timezones()))
def test_a_timestamp_reads_as_isoformat_gives_it(moment: datetime) -> None:
    """format_timestamp is isoformat's whole seconds in UTC, with Z (two digits looked up, any year)."""
    try:
        utc = moment.astimezone(timezone.utc)
    except OverflowError:  # a zone's offset moves it out of datetime's years
        return
    assert format_timestamp(moment) == utc.isoformat(timespec="seconds")[:19] + "Z"

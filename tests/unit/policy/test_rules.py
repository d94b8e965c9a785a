"""RuleBook finds the same first match as trying every rule in order (the definition of classify)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_retry_provider.policy import (
    DEFAULT_RULES,
    AllOf,
    Evidence,
    ExceptionType,
    HttpStatus,
    MessagePattern,
    Rule,
    RuleBook,
    SqlState,
    classify,
    exception_chain,
    rule_book,
)
from airflow_retry_provider.policy.engine import pattern


class QuotaExceeded(RuntimeError):
    pass


class WarehouseTimeout(TimeoutError):
    pass


@dataclass(frozen=True)
class LongMessage(Rule):
    """A user's own rule: any message longer than 30 characters."""

    def matches(self, evidence: Evidence) -> bool:
        return len(evidence.message) > 30


class StatusAbove(HttpStatus):
    """A subclass overriding matches(): must be tried in order, not looked up."""

    def matches(self, evidence: Evidence) -> bool:
        return evidence.http_status is not None and evidence.http_status >= 500


WORDS = [
    "quota",
    "not found",
    "timed out",
    "reset",
    "denied",
    "billing",
    "ok",
    "x",
    "quota 12",
    "exceeded cost limit",
]
CLASSES = [RuntimeError, ValueError, QuotaExceeded, WarehouseTimeout, ConnectionResetError, PermissionError]
STATUSES = [None, 200, 404, 429, 500, 503]
STATES = [None, "40001", "42P01", "08006", "22012", "XX000"]

rules = st.one_of(
    st.builds(lambda c: HttpStatus(c, "retryable", "http"), st.sampled_from([404, 429, 500, 503])),
    st.builds(lambda c: StatusAbove(500, "retryable", "http-5xx"), st.just(0)),
    st.builds(lambda c: SqlState(c, "poison", "sql"), st.sampled_from(["40001", "42", "08", "22012"])),
    st.builds(
        lambda n: ExceptionType(n, "unknown", "by-name"), st.sampled_from(["TimeoutError", "QuotaExceeded"])
    ),
    st.builds(lambda c: ExceptionType(c, "poison", "by-class"), st.sampled_from(CLASSES)),
    st.builds(lambda w: MessagePattern(w, "poison", "by-message"), st.sampled_from(WORDS)),
    st.builds(
        lambda w: MessagePattern(re.compile(w), "poison", "by-regex"), st.sampled_from(["quo+ta", "de.ied"])
    ),
    st.builds(  # a regex with literals: asked only when one is in the message
        lambda w: MessagePattern(
            [w, pattern(r"quo+ta \d+", literals=("quo",))], "poison", "by-guarded-regex"
        ),
        st.sampled_from(WORDS),
    ),
    st.builds(lambda w: LongMessage("retryable", "long", "long-message"), st.just(0)),
    st.builds(
        lambda c, w: AllOf(
            [ExceptionType(c, "poison", "t"), MessagePattern(w, "poison", "m")], "poison", "both"
        ),
        st.sampled_from(CLASSES),
        st.sampled_from(WORDS),
    ),
)


@st.composite
def failures(draw) -> BaseException:
    exc = draw(st.sampled_from(CLASSES))(" ".join(draw(st.lists(st.sampled_from(WORDS), max_size=6))))
    status, state = draw(st.sampled_from(STATUSES)), draw(st.sampled_from(STATES))
    if status is not None:
        exc.status_code = status  # type: ignore[attr-defined]
    if state is not None:
        exc.sqlstate = state  # type: ignore[attr-defined]
    return exc


def first_in_order(rules: tuple[Rule, ...], evidence: Evidence) -> Rule | None:
    return next((rule for rule in rules if rule.matches(evidence)), None)


@settings(max_examples=400, deadline=None)
@given(st.lists(rules, max_size=12), failures())
def test_the_book_finds_the_first_rule_in_order(user_rules, exc):
    ordered = (*user_rules, *DEFAULT_RULES)
    book = RuleBook(ordered)
    evidence = Evidence.of(exc)
    assert book.first_match(evidence) is first_in_order(ordered, evidence)
    assert book.first_match(evidence) is first_in_order(ordered, evidence)  # remembered per class


@settings(max_examples=200, deadline=None)
@given(st.lists(rules, max_size=8), failures(), failures())
def test_classify_with_a_book_equals_classify_with_the_rule_list(user_rules, outer, cause):
    outer.__cause__ = cause
    by_list = classify(outer, user_rules)
    assert classify(outer, rule_book(user_rules)) == by_list
    for link in exception_chain(outer):  # the definition: first link with a match, first rule in order
        rule = first_in_order((*user_rules, *DEFAULT_RULES), Evidence.of(link))
        if rule is not None:
            assert (by_list.rule, by_list.category) == (rule.name, rule.category)
            break
    else:
        assert by_list.rule == "default"


def test_a_book_is_used_as_it_is_and_none_means_the_defaults():
    book = rule_book([MessagePattern("quota", "poison", "quota")])
    assert rule_book(book) is book
    assert rule_book(None).rules == DEFAULT_RULES
    assert classify(RuntimeError("quota"), book).category == "quota"
    assert classify(RuntimeError("quota"), RuleBook([])).rule == "default"  # no defaults added to a book


def test_an_indexed_rule_matches_in_the_rules_order():
    """A rule indexed under the failure's own type is found where trying each rule in order finds it."""
    book = RuleBook(DEFAULT_RULES)
    evidence = Evidence.of(ConnectionResetError(104, "Connection reset by peer"))
    found = book.first_match(evidence)
    assert isinstance(found, ExceptionType) and found.name == "type-connection-failed"
    assert found is first_in_order(DEFAULT_RULES, evidence)


def test_message_rules_match_short_and_long_messages():
    """A substring rule matches a message holding it whatever the message's length."""
    book = RuleBook(DEFAULT_RULES)
    assert book.first_match(Evidence.of(RuntimeError("load failed"))) is None
    assert book.first_match(Evidence.of(RuntimeError("Broken pipe"))).name == "message-connection-failed"
    assert book.first_match(Evidence.of(RuntimeError("a broken pipe"))).name == "message-connection-failed"
    long_one, short_one = "x" * 5000, "quota"
    book = RuleBook([MessagePattern([long_one, short_one], "poison", "quota")])
    assert book.first_match(Evidence.of(RuntimeError("y" + long_one))).name == "message-quota"
    assert book.first_match(Evidence.of(RuntimeError("x" * 70))) is None
    assert book.first_match(Evidence.of(RuntimeError("a quota"))).name == "message-quota"

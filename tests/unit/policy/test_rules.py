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
from airflow_retry_provider.policy.classify import ByLength
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


def test_an_indexed_rule_under_the_failures_own_value_ends_the_candidates():
    """The first indexed rule naming one of the failure's values matches it: it is not asked, and
    no rule after it is a candidate (#31: a decision does only what it needs)."""
    book = RuleBook(DEFAULT_RULES)
    evidence = Evidence.of(ConnectionResetError(104, "Connection reset by peer"))
    candidates = book._candidates(evidence)
    last, check = candidates[-1]
    assert check is True and isinstance(last, ExceptionType) and last.name == "type-connection-failed"
    assert all(check is not True for _, check in candidates[:-1])
    assert book.first_match(evidence) is last is first_in_order(DEFAULT_RULES, evidence)
    nothing_indexed = book._candidates(Evidence.of(RuntimeError("something nobody has seen")))
    assert all(check is not True for _, check in nothing_indexed)


def test_a_short_message_is_searched_only_for_the_substrings_that_fit_in_it():
    """A run keeps its entries by message length: a substring longer than the message cannot be
    in it, so it is not looked for (#31); the order of what is looked for is the rules' order."""
    book = RuleBook(DEFAULT_RULES)
    evidence = Evidence.of(RuntimeError("load failed"))
    assert book.first_match(evidence) is None
    runs = [run for _, run in book._candidates(evidence) if isinstance(run, ByLength)]
    every = [entry for run in runs for entry in run.entries]
    assert all(set(run) == {len("load failed")} for run in runs)  # picked for the lengths seen only
    fitting = [entry for run in runs for entry in run[len("load failed")]]
    assert len(every) > 40 and 0 < len(fitting) < 10
    assert fitting == [entry for entry in every if len(entry[0]) <= len("load failed")]
    assert book.first_match(Evidence.of(RuntimeError("Broken pipe"))).name == "message-connection-failed"
    assert book.first_match(Evidence.of(RuntimeError("a broken pipe"))).name == "message-connection-failed"


def test_a_message_of_64_characters_or_more_is_searched_for_every_substring():
    long_one, short_one = "x" * 5000, "quota"
    book = RuleBook([MessagePattern([long_one, short_one], "poison", "quota")])
    ((_, run),) = book._candidates(Evidence.of(RuntimeError("")))
    assert [entry[0] for entry in run[64]] == [long_one, short_one] == [entry[0] for entry in run.entries]
    assert [entry[0] for entry in run[63]] == [short_one] and run[4] == ()
    assert book.first_match(Evidence.of(RuntimeError("y" + long_one))).name == "message-quota"
    assert book.first_match(Evidence.of(RuntimeError("x" * 70))) is None
    assert book.first_match(Evidence.of(RuntimeError("a quota"))).name == "message-quota"

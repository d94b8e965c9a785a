"""Classify a failure as poison, retryable or of unknown outcome.

:func:`classify` reads the :class:`~airflow_retry_provider.policy.evidence.Evidence` of the outer
exception first, then of its ``__cause__`` (or its ``__context__`` when there is no cause and
the context is not suppressed); for each exception the user's rules come before
:data:`~airflow_retry_provider.policy.default_rules.DEFAULT_RULES`, and the first match wins.
Nothing matched anywhere: ``retryable`` / ``unclassified`` (the attempt ceiling protects).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Literal, NamedTuple

from airflow_retry_provider.policy.default_rules import DEFAULT_RULES
from airflow_retry_provider.policy.engine import bounded
from airflow_retry_provider.policy.evidence import (
    RETRY_AFTER_STATUSES,
    Evidence,
    new_record,
    retry_after,
    safe_str,
)
from airflow_retry_provider.policy.redact import redact
from airflow_retry_provider.policy.rules import (
    ErrorCode,
    ExceptionType,
    FailureClass,
    HttpStatus,
    MessagePattern,
    Rule,
    SqlState,
)
from airflow_retry_provider.policy.text import storable

MAX_MESSAGE_CHARS = 2000
"""Classification.message is redacted and cut to this many characters."""

MAX_CHAIN_DEPTH = 8
"""How many exceptions of a ``__cause__`` / ``__context__`` chain are looked at."""

_MAX_ORDERS = 512  # candidate orders a RuleBook remembers (one per distinct kind of failure)
_GATED_LENGTHS = 64  # a run keeps its entries by message length below this many characters

# a rule to ask (None), an indexed rule that matches (True), or the first of a run of message
# rules and the run's (substring, rule, exact) entries: a message holding an exact entry's substring
# matches its rule; one holding a guard (a regex's literal) matches it if the rule says so. A run
# is kept by message length (see ByLength)
Entries = tuple[tuple[str, Rule, bool], ...]


class ByLength(dict[int, Entries]):
    """A run's entries by message length: ``run[n]`` holds those whose substring fits in ``n``
    characters, in order, for ``n`` below _GATED_LENGTHS; ``run[_GATED_LENGTHS]`` holds every entry.

    A short message is not searched for what cannot be in it: "load failed" for 6 of the default
    rules' 51 substrings. Each length's entries are picked the first time a message of that length
    is classified (a worker's process classifies one failure: it does not pick them all).
    """

    __slots__ = ("entries",)

    def __init__(self, entries: Entries) -> None:
        super().__init__()
        self.entries = entries

    def __missing__(self, size: int) -> Entries:
        entries = self.entries
        if size < _GATED_LENGTHS:
            entries = tuple(entry for entry in entries if len(entry[0]) <= size)
        self[size] = entries
        return entries


Candidate = tuple[Rule, ByLength | Literal[True] | None]


class Classification(NamedTuple):
    """What a failure is, and why we think so (an immutable record).

    :param failure_class: ``"poison"`` (retrying cannot help), ``"retryable"`` (transient)
        or ``"unknown"`` (the remote side may or may not have applied the work).
    :param category: stable kebab-case name, documented in docs/CLASSIFICATION.md.
    :param rule: name of the rule that matched, or ``"default"`` when none did.
    :param exception_type: ``__qualname__`` of the class of the exception that matched
        (of the outer exception when nothing matched), e.g. ``"HTTPError"``.
    :param message: that exception's message, redacted and capped at MAX_MESSAGE_CHARS.
    :param retry_after: how long the server asked us to wait (``Retry-After`` of an HTTP 429
        or 503 that is retryable), else None; given only when ``classify`` was given ``now``.
    """

    failure_class: FailureClass
    category: str
    rule: str
    exception_type: str
    message: str
    retry_after: timedelta | None = None


class RuleBook:
    """Rules compiled for lookup: the same first match as trying each rule in order, found faster.

    Exact values index the rules that can match them: an HTTP status, a SQLSTATE (code and
    class), a service error code and an exception type name each lead to the positions of the
    ``HttpStatus``, ``SqlState``, ``ErrorCode`` and ``ExceptionType`` rules naming them. Every
    other rule (message patterns, ``AllOf``, rules of your own, subclasses, rules matching
    classes) is a candidate for every exception. The candidates are tried in order, each with
    its own ``matches()`` (a plain ``MessagePattern``'s substrings are looked for in place, only
    those that fit in the message); the first that matches wins. An indexed rule found under one
    of the exception's own values matches it without being asked, so the candidates end there.
    """

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._by_value: dict[tuple[str, object], list[int]] = {}
        always: list[int] = []
        for index, rule in enumerate(self.rules):
            if not isinstance(rule, Rule):
                raise ValueError(f"rules must be Rule instances, got {rule!r}")
            keys = _index_keys(rule)
            if keys is None:
                always.append(index)
            for key in keys or ():
                self._by_value.setdefault(key, []).append(index)
        self._always = tuple(always)
        self._orders: dict[tuple[object, ...], tuple[Candidate, ...]] = {}
        self._asked: dict[int, tuple[Candidate, ...]] = {}  # the rules asked before position n

    def first_match(self, evidence: Evidence) -> Rule | None:
        """The first rule, in order, that matches ``evidence``; None when none does."""
        message = evidence.message
        size = len(message)  # a substring longer than the message cannot be in it
        for rule, run in self._candidates(evidence):
            if run is None:
                if rule.matches(evidence):
                    return rule
            elif run is True:  # indexed under this evidence's own values: it matches
                return rule
            else:  # a run of message rules, without a call per rule: most candidates are
                for substring, owner, exact in run[size if size < _GATED_LENGTHS else _GATED_LENGTHS]:
                    if substring in message and (exact or owner.matches(evidence)):
                        return owner
        return None

    def _candidates(self, evidence: Evidence) -> tuple[Candidate, ...]:
        """The rules that may match ``evidence``, in order; remembered per set of exact values.

        Consecutive ``MessagePattern`` rules (not a subclass) become one run (see :func:`_runs`);
        any other rule comes alone, with None. The first indexed rule found (an
        exact ``HttpStatus``, ``SqlState``, ``ErrorCode`` or names-only ``ExceptionType`` naming one
        of the evidence's values, which its ``matches()`` checks and nothing else) comes with True
        and ends the candidates: the rules after it are never reached. The exact values are an
        exception's type names and structured codes, so a process sees few distinct sets (one per
        kind of failure); the memory is capped all the same.
        """
        values = (evidence.type_names, evidence.http_status, evidence.sqlstate, evidence.error_code)
        found = self._orders.get(values)
        if found is None:
            indexed = [index for key in _evidence_keys(evidence) for index in self._by_value.get(key, ())]
            end = min(indexed, default=len(self.rules))
            asked = self._asked.get(end)
            if asked is None:  # one per first indexed rule: orders that end alike share their runs
                asked = self._asked[end] = _runs(self.rules[index] for index in self._always if index < end)
            found = (*asked, (self.rules[end], True)) if indexed else asked
            if len(self._orders) < _MAX_ORDERS:
                self._orders[values] = found
        return found


def _runs(rules: Iterable[Rule]) -> tuple[Candidate, ...]:
    """``rules`` in order, each ``MessagePattern`` in a run with the ones next to it.

    A ``MessagePattern`` matches exactly when one of its substrings is in the message, or one of
    its regexes matches it; a regex declared with literals (``pattern(..., literals=...)``) can
    match only a message holding one of them. So such a rule's entries are its substrings (exact)
    and its regexes' literals (guards: the rule is asked only when one is there); a rule with a
    regex without literals, or a subclass, comes alone.
    """
    candidates: list[tuple[Rule, Entries | None]] = []
    for rule in rules:
        if type(rule) is not MessagePattern or not all(regex.literals for regex in rule.regexes):
            candidates.append((rule, None))
            continue
        pairs = tuple((substring, rule, True) for substring in rule.substrings) + tuple(
            (literal, rule, False) for regex in rule.regexes for literal in regex.literals
        )
        previous = candidates[-1][1] if candidates else None
        if previous is None:
            candidates.append((rule, pairs))
        else:  # the run goes on
            candidates[-1] = (candidates[-1][0], previous + pairs)
    return tuple((rule, None if run is None else ByLength(run)) for rule, run in candidates)


def _index_keys(rule: Rule) -> list[tuple[str, object]] | None:
    """The exact values under which ``rule`` is indexed; None for a rule that is always tried."""
    # exact types only: a subclass may override matches(), so it is always tried
    if type(rule) is HttpStatus:
        return [("status", code) for code in rule.codes]
    if type(rule) is SqlState:
        return [("sqlstate", code) for code in rule.codes]
    if type(rule) is ErrorCode:
        return [("error", code) for code in rule.codes]
    if type(rule) is ExceptionType and not rule.types:
        return [("type", name) for name in rule.names]
    return None


def _evidence_keys(evidence: Evidence) -> list[tuple[str, object]]:
    keys: list[tuple[str, object]] = [("type", name) for name in evidence.type_names]
    if evidence.http_status is not None:
        keys.append(("status", evidence.http_status))
    if evidence.sqlstate is not None:
        keys += [("sqlstate", evidence.sqlstate), ("sqlstate", evidence.sqlstate[:2])]
    if evidence.error_code is not None:
        keys.append(("error", evidence.error_code))
    return keys


DEFAULT_RULE_BOOK = RuleBook(DEFAULT_RULES)
"""DEFAULT_RULES, compiled."""


def rule_book(rules: Sequence[Rule] | RuleBook | None = None) -> RuleBook:
    """``rules`` before DEFAULT_RULES, compiled (a RuleBook is returned as it is)."""
    if isinstance(rules, RuleBook):
        return rules
    return RuleBook((*rules, *DEFAULT_RULES)) if rules else DEFAULT_RULE_BOOK


def classify(
    exc: BaseException, rules: Sequence[Rule] | RuleBook | None = None, *, now: datetime | None = None
) -> Classification:
    """Classify ``exc``: ``rules`` first, then DEFAULT_RULES; outer exception before its cause.

    ``rules`` may be a :class:`RuleBook` from :func:`rule_book` (a policy compiles its rules once);
    a RuleBook is used as it is, without DEFAULT_RULES added again. With ``now`` (aware), a
    retryable HTTP 429 or 503 carries the server's ``Retry-After`` (an HTTP date is read from ``now``).
    """
    book = rule_book(rules)
    outer_text = None
    for link in exception_chain(exc):
        text = storable(bounded(safe_str(link)))  # untrusted: rules and redaction see at most 16 KiB
        if outer_text is None:
            outer_text = text
        evidence = Evidence.of(link, text)
        rule = book.first_match(evidence)
        if rule is not None:
            wait = None
            if now is not None and rule.failure_class == "retryable":
                if evidence.http_status in RETRY_AFTER_STATUSES:
                    wait = retry_after(link, now)
            return _result(link, text, rule.failure_class, rule.category, rule.name, wait)
    # nothing matched: the outer exception, whose text was the chain's first (str() is not run twice)
    return _result(exc, outer_text or "", "retryable", "unclassified", "default", None)


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` then its causes (``__cause__``, else an unsuppressed ``__context__``), cycle-safe."""
    if exc.__cause__ is None and (exc.__suppress_context__ or exc.__context__ is None):
        return [exc]  # most failures: one exception
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(chain) < MAX_CHAIN_DEPTH:
        chain.append(current)
        seen.add(id(current))
        if current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None
    return chain


def _result(
    exc: BaseException,
    text: str,
    failure_class: FailureClass,
    category: str,
    rule: str,
    wait: timedelta | None,
) -> Classification:
    message = redact(text, MAX_MESSAGE_CHARS)
    return new_record(Classification, (failure_class, category, rule, type(exc).__qualname__, message, wait))

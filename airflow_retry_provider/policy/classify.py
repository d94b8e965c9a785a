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
from typing import NamedTuple

from airflow_retry_provider.policy.default_rules import DEFAULT_RULES
from airflow_retry_provider.policy.engine import bounded
from airflow_retry_provider.policy.evidence import (
    RETRY_AFTER_STATUSES,
    Evidence,
    retry_after,
    safe_str,
)
from airflow_retry_provider.policy.redact import redact
from airflow_retry_provider.policy.rules import (
    ErrorCode,
    ExceptionType,
    FailureClass,
    HttpStatus,
    Rule,
    SqlState,
)
from airflow_retry_provider.policy.text import storable

MAX_MESSAGE_CHARS = 2000
"""Classification.message is redacted and cut to this many characters."""

MAX_CHAIN_DEPTH = 8
"""How many exceptions of a ``__cause__`` / ``__context__`` chain are looked at."""


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
    """Rules compiled for lookup: the same first match as trying each rule in order.

    A rule that matches only exact values is indexed under them: an ``HttpStatus`` under its
    statuses, a ``SqlState`` under its codes and classes, an ``ErrorCode`` under its codes and a
    names-only ``ExceptionType`` under its names (exact classes only: a subclass may override
    ``matches()``). For one failure, the candidates are the rules indexed under its own values and
    every rule that is not indexed (message patterns, ``AllOf``, rules of your own); they are
    asked in the rules' order, and the first that matches wins.
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
        self._always = frozenset(always)

    def first_match(self, evidence: Evidence) -> Rule | None:
        """The first rule, in order, that matches ``evidence``; None when none does."""
        indexed = {index for key in _evidence_keys(evidence) for index in self._by_value.get(key, ())}
        for index in sorted(self._always | indexed):
            rule = self.rules[index]
            if rule.matches(evidence):
                return rule
        return None


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
            message = redact(text, MAX_MESSAGE_CHARS)
            return Classification(
                rule.failure_class, rule.category, rule.name, type(link).__qualname__, message, wait
            )
    # nothing matched: the outer exception, whose text was the chain's first
    message = redact(outer_text or "", MAX_MESSAGE_CHARS)
    return Classification("retryable", "unclassified", "default", type(exc).__qualname__, message)


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` then its causes (``__cause__``, else an unsuppressed ``__context__``), cycle-safe."""
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

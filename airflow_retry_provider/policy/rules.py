"""The rule types: each looks at an exception's :class:`Evidence` and matches or not.

A rule carries the failure class and category it gives. Rules compose (:class:`AllOf`), and a
rule of your own subclasses :class:`Rule` and overrides :meth:`Rule.matches`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from airflow_retry_provider.policy.engine import Pattern
from airflow_retry_provider.policy.evidence import Evidence

FailureClass = Literal["poison", "retryable", "unknown", "infra"]
FAILURE_CLASSES: tuple[str, ...] = ("poison", "retryable", "unknown", "infra")
"""Every class a failure (and its letter) can have; ``infra``: the task's process was killed, evicted,
lost or never started (policy/infra.py), no exception from its code."""

# checks of names from DAG code (not failure text); ``re`` compiles them on first use
_CATEGORY_PATTERN = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_SQLSTATE_PATTERN = r"[0-9A-Z]{2}(?:[0-9A-Z]{3})?"


def check_failure_class(value: object) -> FailureClass:
    """``value`` if it is a failure class, else a ValueError naming the value."""
    if value not in FAILURE_CLASSES:
        raise ValueError(f"failure_class must be one of {FAILURE_CLASSES}, got {value!r}")
    return value  # type: ignore[return-value]


def check_category(value: object) -> str:
    """``value`` if it is a kebab-case category, else a ValueError naming the value."""
    if not isinstance(value, str) or not re.fullmatch(_CATEGORY_PATTERN, value):
        raise ValueError(f"category must be kebab-case (e.g. 'rate-limited'), got {value!r}")
    return value


@dataclass(frozen=True)
class Rule:
    """Base of all rules: a failure class and category, given when ``matches`` is true.

    Subclass it and override :meth:`matches` for a rule of your own.

    :param failure_class: ``"poison"``, ``"retryable"`` or ``"unknown"``.
    :param category: stable kebab-case name reported in the classification.
    :param name: the rule's name, reported as ``Classification.rule``.
    """

    failure_class: FailureClass
    category: str
    name: str

    def __post_init__(self) -> None:
        check_failure_class(self.failure_class)
        check_category(self.category)
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")

    def matches(self, evidence: Evidence) -> bool:
        """Whether this rule applies to the exception described by ``evidence``."""
        raise NotImplementedError


@dataclass(frozen=True, init=False)
class ExceptionType(Rule):
    """Matches an exception whose class, or any base class, is one of ``types``.

    A string matches by name over the MRO: ``"TimeoutError"`` matches a class named so in any
    module, ``"airflow.sdk.exceptions.AirflowTaskTimeout"`` only that qualified class.
    A class matches with ``isinstance``.
    """

    names: frozenset[str] = field(default=frozenset())
    types: tuple[type[BaseException], ...] = field(default=())

    def __init__(
        self,
        types: str | type[BaseException] | Iterable[str | type[BaseException]],
        failure_class: FailureClass,
        category: str,
        *,
        name: str | None = None,
    ) -> None:
        items = [types] if isinstance(types, (str, type)) else list(types)
        names = frozenset(item for item in items if isinstance(item, str))
        classes = tuple(item for item in items if isinstance(item, type))
        if not items or len(names) + len(classes) != len(items):
            raise ValueError(f"types must be exception classes or names, got {types!r}")
        for cls in classes:
            if not issubclass(cls, BaseException):
                raise ValueError(f"types must be exception classes or names, got {cls!r}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "types", classes)
        super().__init__(failure_class, category, name or f"type-{category}")

    def matches(self, evidence: Evidence) -> bool:
        if self.types and isinstance(evidence.exception, self.types):
            return True
        return not self.names.isdisjoint(evidence.type_names)


@dataclass(frozen=True, init=False)
class MessagePattern(Rule):
    """Matches when the message contains one of ``patterns``.

    A string is a case-insensitive substring. A regex is searched in the lower-cased message
    with RE2 (:mod:`~airflow_retry_provider.policy.engine`: linear time, whatever the message):
    an engine ``Pattern`` (``pattern(r"quota \\d+ exceeded")``, compiled on first use) or a
    compiled ``re.Pattern``, whose source is compiled with RE2 at once (with its
    ``re.IGNORECASE``), so that a construct RE2 cannot run (look-around, back-references) is a
    ``ValueError`` where the rule is declared.
    """

    substrings: tuple[str, ...] = field(default=())
    regexes: tuple[Pattern, ...] = field(default=())

    def __init__(
        self,
        patterns: str | Pattern | re.Pattern[str] | Iterable[str | Pattern | re.Pattern[str]],
        failure_class: FailureClass,
        category: str,
        *,
        name: str | None = None,
    ) -> None:
        items = [patterns] if isinstance(patterns, (str, Pattern, re.Pattern)) else list(patterns)
        substrings = tuple(item.lower() for item in items if isinstance(item, str) and item)
        regexes = tuple(_linear(item) for item in items if isinstance(item, (Pattern, re.Pattern)))
        if not items or len(substrings) + len(regexes) != len(items):
            raise ValueError(f"patterns must be non-empty strings or compiled regexes, got {patterns!r}")
        object.__setattr__(self, "substrings", substrings)
        object.__setattr__(self, "regexes", regexes)
        super().__init__(failure_class, category, name or f"message-{category}")

    def matches(self, evidence: Evidence) -> bool:
        message = evidence.message
        for substring in self.substrings:
            if substring in message:
                return True
        for regex in self.regexes:
            if regex.search(message):
                return True
        return False


def _linear(regex: Pattern | re.Pattern[str]) -> Pattern:
    """``regex`` as an RE2 :class:`Pattern`; a ``re.Pattern`` is compiled now (ValueError if RE2 cannot run it)."""
    if isinstance(regex, Pattern):
        return regex
    return Pattern(regex.pattern, ignore_case=bool(regex.flags & re.IGNORECASE)).check()


def _checked_codes(codes: Any, single: type, valid: Callable[[Any], bool], expected: str) -> list[Any]:
    """``codes`` (one, or an iterable) as a list; a bad code or none at all is a ``ValueError`` naming it."""
    items = [codes] if isinstance(codes, single) else list(codes)
    for code in items:
        if not valid(code):
            raise ValueError(f"codes must be {expected}, got {code!r}")
    if not items:
        raise ValueError("codes must not be empty")
    return items


@dataclass(frozen=True, init=False)
class HttpStatus(Rule):
    """Matches an exception carrying one of the HTTP status ``codes`` (see Evidence.http_status)."""

    codes: frozenset[int] = field(default=frozenset())

    def __init__(
        self,
        codes: int | Iterable[int],
        failure_class: FailureClass,
        category: str,
        *,
        name: str | None = None,
    ) -> None:
        items = _checked_codes(
            codes, int, lambda code: type(code) is int and 100 <= code <= 599, "HTTP status codes (100..599)"
        )
        object.__setattr__(self, "codes", frozenset(items))
        super().__init__(failure_class, category, name or f"http-{category}")

    def matches(self, evidence: Evidence) -> bool:
        return evidence.http_status in self.codes


@dataclass(frozen=True, init=False)
class SqlState(Rule):
    """Matches a PostgreSQL SQLSTATE: a five-character code (``"40P01"``) or a class (``"08"``)."""

    codes: tuple[str, ...] = field(default=())

    def __init__(
        self,
        codes: str | Iterable[str],
        failure_class: FailureClass,
        category: str,
        *,
        name: str | None = None,
    ) -> None:
        items = _checked_codes(
            codes,
            str,
            lambda code: isinstance(code, str) and bool(re.fullmatch(_SQLSTATE_PATTERN, code)),
            "SQLSTATE codes (e.g. '40P01') or classes (e.g. '08')",
        )
        object.__setattr__(self, "codes", tuple(items))
        super().__init__(failure_class, category, name or f"sqlstate-{category}")

    def matches(self, evidence: Evidence) -> bool:
        state = evidence.sqlstate
        return state is not None and state.startswith(self.codes)


@dataclass(frozen=True, init=False)
class ErrorCode(Rule):
    """Matches a service's error code (botocore's ``response["Error"]["Code"]``), exactly."""

    codes: frozenset[str] = field(default=frozenset())

    def __init__(
        self,
        codes: str | Iterable[str],
        failure_class: FailureClass,
        category: str,
        *,
        name: str | None = None,
    ) -> None:
        items = _checked_codes(
            codes,
            str,
            lambda code: isinstance(code, str) and bool(code),
            "non-empty strings (e.g. 'SlowDown')",
        )
        object.__setattr__(self, "codes", frozenset(items))
        super().__init__(failure_class, category, name or f"code-{category}")

    def matches(self, evidence: Evidence) -> bool:
        return evidence.error_code in self.codes


@dataclass(frozen=True, init=False)
class AllOf(Rule):
    """Matches when every one of ``rules`` matches (their own classes and categories are ignored).

    E.g. ``AllOf([ExceptionType("OperationalError", ...), MessagePattern("ssl", ...)], ...)``.
    """

    rules: tuple[Rule, ...] = field(default=())

    def __init__(
        self,
        rules: Iterable[Rule],
        failure_class: FailureClass,
        category: str,
        *,
        name: str | None = None,
    ) -> None:
        items = tuple(rules)
        if not items or not all(isinstance(rule, Rule) for rule in items):
            raise ValueError(f"rules must be a non-empty sequence of Rule, got {rules!r}")
        object.__setattr__(self, "rules", items)
        super().__init__(failure_class, category, name or f"all-{category}")

    def matches(self, evidence: Evidence) -> bool:
        return all(rule.matches(evidence) for rule in self.rules)

"""Classify a failure as poison, retryable or of unknown outcome.

A rule looks at the :class:`Evidence` gathered once from an exception (type names over
the MRO, lower-cased message, HTTP status, SQLSTATE) and either matches or not.
:func:`classify` checks the outer exception first, then its ``__cause__`` (or its
``__context__`` when there is no cause and the context is not suppressed); for each
exception the user's rules come before :data:`DEFAULT_RULES`, and the first match wins.
Nothing matched anywhere: ``retryable`` / ``unclassified`` (the attempt ceiling protects).

Exception types are matched by name as well as by class, because this module cannot
import Airflow (``AirflowTaskTimeout`` lives in ``airflow.sdk.exceptions`` in 3.3).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from airflow_retry_provider.policy.redact import redact

FailureClass = Literal["poison", "retryable", "unknown"]
FAILURE_CLASSES: tuple[str, ...] = ("poison", "retryable", "unknown")

MAX_MESSAGE_CHARS = 2000
"""Classification.message is redacted and cut to this many characters."""

MAX_CHAIN_DEPTH = 8
"""How many exceptions of a ``__cause__`` / ``__context__`` chain are looked at."""

_CATEGORY_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SQLSTATE_PATTERN = re.compile(r"^[0-9A-Z]{2}(?:[0-9A-Z]{3})?$")
_HTTP_STATUS_ATTRIBUTES = ("status_code", "status", "code")
_SQLSTATE_ATTRIBUTES = ("sqlstate", "pgcode")


class Classification(NamedTuple):
    """What a failure is, and why we think so (an immutable record).

    :param failure_class: ``"poison"`` (retrying cannot help), ``"retryable"`` (transient)
        or ``"unknown"`` (the remote side may or may not have applied the work).
    :param category: stable kebab-case name, documented in docs/CLASSIFICATION.md.
    :param rule: name of the rule that matched, or ``"default"`` when none did.
    :param exception_type: ``__qualname__`` of the class of the exception that matched
        (of the outer exception when nothing matched), e.g. ``"HTTPError"``.
    :param message: that exception's message, redacted and capped at MAX_MESSAGE_CHARS.
    """

    failure_class: FailureClass
    category: str
    rule: str
    exception_type: str
    message: str


class Evidence(NamedTuple):
    """Everything a rule may look at, read once from one exception (an immutable record).

    :param exception: the exception itself (custom rules may inspect it further).
    :param type_names: for every class of the MRO, its ``__name__``, ``__qualname__`` and
        ``module.qualname``.
    :param message: ``str(exception)`` lower-cased (not redacted: rules see the real text).
    :param http_status: from ``status_code``, ``status``, ``code`` or ``response.status_code``
        (an int or a numeric string in 100..599), else None.
    :param sqlstate: from ``sqlstate``, ``pgcode`` or ``diag.sqlstate`` (five characters,
        upper-cased), else None.
    """

    exception: BaseException
    type_names: frozenset[str]
    message: str
    http_status: int | None
    sqlstate: str | None

    @classmethod
    def of(cls, exc: BaseException, text: str | None = None) -> Evidence:
        """Gather the evidence from ``exc`` (``text``: its ``str()``, when already known); never raises."""
        return cls(
            exc,
            _type_names(type(exc)),
            (_safe_str(exc) if text is None else text).lower(),
            _http_status(exc),
            _sqlstate(exc),
        )


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
        if self.failure_class not in FAILURE_CLASSES:
            raise ValueError(f"failure_class must be one of {FAILURE_CLASSES}, got {self.failure_class!r}")
        if not isinstance(self.category, str) or not _CATEGORY_PATTERN.match(self.category):
            raise ValueError(f"category must be kebab-case (e.g. 'rate-limited'), got {self.category!r}")
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

    A string is a case-insensitive substring; a compiled ``re.Pattern`` is searched in the
    lower-cased message (compile it with ``re.IGNORECASE`` if it has capitals).
    """

    substrings: tuple[str, ...] = field(default=())
    regexes: tuple[re.Pattern[str], ...] = field(default=())

    def __init__(
        self,
        patterns: str | re.Pattern[str] | Iterable[str | re.Pattern[str]],
        failure_class: FailureClass,
        category: str,
        *,
        name: str | None = None,
    ) -> None:
        items = [patterns] if isinstance(patterns, (str, re.Pattern)) else list(patterns)
        substrings = tuple(item.lower() for item in items if isinstance(item, str) and item)
        regexes = tuple(item for item in items if isinstance(item, re.Pattern))
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
        items = [codes] if isinstance(codes, int) else list(codes)
        for code in items:
            if type(code) is not int or not 100 <= code <= 599:
                raise ValueError(f"codes must be HTTP status codes (100..599), got {code!r}")
        if not items:
            raise ValueError("codes must not be empty")
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
        items = [codes] if isinstance(codes, str) else list(codes)
        for code in items:
            if not isinstance(code, str) or not _SQLSTATE_PATTERN.match(code):
                raise ValueError(
                    f"codes must be SQLSTATE codes (e.g. '40P01') or classes (e.g. '08'), got {code!r}"
                )
        if not items:
            raise ValueError("codes must not be empty")
        object.__setattr__(self, "codes", tuple(items))
        super().__init__(failure_class, category, name or f"sqlstate-{category}")

    def matches(self, evidence: Evidence) -> bool:
        state = evidence.sqlstate
        return state is not None and state.startswith(self.codes)


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


# Order matters: the first match wins. Structured facts (HTTP status, SQLSTATE) come first;
# then the specific type and message rules before the broad ones, so that a connect timeout
# (the request never left) is retryable while any other timeout is of unknown outcome, a DNS
# "host not found" is not taken for a poison "not found", and a poison message such as
# "permission denied" inside a connection error is not swallowed by the connection rules.
DEFAULT_RULES: tuple[Rule, ...] = (
    # HTTP status
    HttpStatus((400, 422), "poison", "invalid-request"),
    HttpStatus(401, "poison", "auth-failed"),
    HttpStatus(403, "poison", "permission-denied"),
    HttpStatus(404, "poison", "not-found"),
    HttpStatus(408, "retryable", "request-timeout"),
    HttpStatus(425, "retryable", "too-early"),
    HttpStatus(429, "retryable", "rate-limited"),
    HttpStatus((500, 502, 503, 504), "retryable", "server-error"),
    # PostgreSQL SQLSTATE: exact codes before classes
    SqlState("40001", "retryable", "serialization-failure"),
    SqlState("40P01", "retryable", "deadlock"),
    SqlState(("57P01", "57P02", "57P03"), "retryable", "database-unavailable"),
    SqlState("08", "retryable", "connection-failed"),
    SqlState("53", "retryable", "insufficient-resources"),
    SqlState("42501", "poison", "permission-denied"),
    SqlState("42P01", "poison", "not-found"),
    SqlState("42", "poison", "invalid-query"),
    SqlState("28", "poison", "auth-failed"),
    SqlState("22", "poison", "invalid-data"),
    # a connect timeout: the request never left, so it is safe to send again
    ExceptionType(("ConnectTimeout", "ConnectTimeoutError", "PoolTimeout"), "retryable", "connect-timeout"),
    MessagePattern(
        (
            "connect timeout",
            "connect timed out",
            "connection timeout expired",
            "timed out while connecting",
            "timeout while connecting",
        ),
        "retryable",
        "connect-timeout",
    ),
    # any other timeout: the request may have reached the remote side
    ExceptionType("AirflowTaskTimeout", "unknown", "task-timeout"),
    MessagePattern("confirmation lost", "unknown", "confirmation-lost"),
    ExceptionType(
        ("TimeoutError", "ReadTimeout", "ReadTimeoutError", "WriteTimeout", "Timeout", "TimeoutException"),
        "unknown",
        "timeout",
    ),
    # DNS failures, before the broad poison "not found"
    ExceptionType(("gaierror", "NameResolutionError"), "retryable", "dns-failure"),
    MessagePattern(
        (
            "name or service not known",
            "temporary failure in name resolution",
            "nodename nor servname provided",
            "could not translate host name",
            "failed to resolve",
            "getaddrinfo failed",
            "no such host",
            "host not found",
            "no address associated with hostname",
        ),
        "retryable",
        "dns-failure",
    ),
    # poison by type and by message
    ExceptionType("PermissionError", "poison", "permission-denied"),
    ExceptionType("FileNotFoundError", "poison", "not-found"),
    MessagePattern(
        re.compile(
            r"exceed\w*.{0,60}(bytes[ _-]?billed|cost (limit|ceiling))"
            r"|(bytes[ _-]?billed|cost (limit|ceiling)).{0,60}exceed"
        ),
        "poison",
        "cost-limit-exceeded",
    ),
    MessagePattern(("insufficient credits", "no credit balance"), "poison", "out-of-credits"),
    MessagePattern("no queries configured", "poison", "not-configured"),
    MessagePattern(
        ("invalid_grant", "unauthorized", "unauthorised", "authentication failed"), "poison", "auth-failed"
    ),
    MessagePattern(("permission denied", "access denied", "forbidden"), "poison", "permission-denied"),
    MessagePattern(("syntax error", "unrecognized name"), "poison", "invalid-query"),
    MessagePattern(("not found", "does not exist"), "poison", "not-found"),
    # connection resets and refusals
    ExceptionType(
        (
            "ConnectionResetError",
            "ConnectionRefusedError",
            "ConnectionAbortedError",
            "BrokenPipeError",
            "ConnectionError",
            "NewConnectionError",
        ),
        "retryable",
        "connection-failed",
    ),
    MessagePattern(
        (
            "connection reset",
            "connection refused",
            "connection aborted",
            "broken pipe",
            "could not connect",
            "server closed the connection unexpectedly",
            "network is unreachable",
            "econnreset",
            "econnrefused",
        ),
        "retryable",
        "connection-failed",
    ),
    # broadest last: a timeout we only know from its message
    MessagePattern(("timed out", "deadline exceeded"), "unknown", "timeout"),
)
"""The built-in rules, in the order they are checked (documented in docs/CLASSIFICATION.md)."""


class RuleBook:
    """Rules compiled for lookup: the same first match as trying each rule in order, found faster.

    HTTP status, SQLSTATE and exception-type rules become dictionaries from a value to the
    position of the first rule matching it, so their best match costs a few lookups. The other
    rules (message patterns, ``AllOf``, your own ``Rule`` subclasses) are tried in order, and
    only those placed before that best match; a plain ``MessagePattern`` is checked inline.
    """

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._status: dict[int | None, int] = {}
        self._sqlstate: dict[str, int] = {}
        self._type_names: dict[str, int] = {}
        self._type_classes: list[tuple[int, tuple[type[BaseException], ...]]] = []
        # (position, rule, its substrings and regexes when it is a plain MessagePattern, else None)
        self._in_order: list[tuple[int, Rule, tuple[str, ...] | None, tuple[re.Pattern[str], ...]]] = []
        self._class_index: dict[type, int] = {}
        for index, rule in enumerate(self.rules):
            if not isinstance(rule, Rule):
                raise ValueError(f"rules must be Rule instances, got {rule!r}")
            # exact types only: a subclass may override matches(), so it is tried in order
            if type(rule) is HttpStatus:
                for code in rule.codes:
                    self._status.setdefault(code, index)
            elif type(rule) is SqlState:
                for state in rule.codes:
                    self._sqlstate.setdefault(state, index)
            elif type(rule) is ExceptionType:
                for name in rule.names:
                    self._type_names.setdefault(name, index)
                if rule.types:
                    self._type_classes.append((index, rule.types))
            elif type(rule) is MessagePattern:
                self._in_order.append((index, rule, rule.substrings, rule.regexes))
            else:
                self._in_order.append((index, rule, None, ()))

    def first_match(self, evidence: Evidence) -> Rule | None:
        """The first rule, in order, that matches ``evidence``; None when none does."""
        best = self._status.get(evidence.http_status, _NO_MATCH)
        state = evidence.sqlstate
        if state is not None:
            best = min(best, self._sqlstate.get(state, _NO_MATCH), self._sqlstate.get(state[:2], _NO_MATCH))
        cls = type(evidence.exception)
        by_type = self._class_index.get(cls)
        if by_type is None:
            by_type = self._type_index(cls, evidence.type_names)
        if by_type < best:
            best = by_type
        message = evidence.message
        for index, rule, substrings, regexes in self._in_order:
            if index >= best:
                break
            if substrings is None:
                if rule.matches(evidence):
                    return rule
                continue
            for substring in substrings:
                if substring in message:
                    return rule
            for regex in regexes:
                if regex.search(message):
                    return rule
        return self.rules[best] if best != _NO_MATCH else None

    def _type_index(self, cls: type, names: frozenset[str]) -> int:
        """The first type rule matching ``cls``; remembered for the first 1024 classes seen."""
        index = min((self._type_names.get(name, _NO_MATCH) for name in names), default=_NO_MATCH)
        for position, classes in self._type_classes:
            if position < index and issubclass(cls, classes):
                index = position
        if len(self._class_index) < _TYPE_NAMES_CACHE_SIZE:
            self._class_index[cls] = index
        return index


_NO_MATCH = sys.maxsize
DEFAULT_RULE_BOOK = RuleBook(DEFAULT_RULES)
"""DEFAULT_RULES, compiled."""


def rule_book(rules: Sequence[Rule] | RuleBook | None = None) -> RuleBook:
    """``rules`` before DEFAULT_RULES, compiled (a RuleBook is returned as it is)."""
    if isinstance(rules, RuleBook):
        return rules
    return RuleBook((*rules, *DEFAULT_RULES)) if rules else DEFAULT_RULE_BOOK


def classify(exc: BaseException, rules: Sequence[Rule] | RuleBook | None = None) -> Classification:
    """Classify ``exc``: ``rules`` first, then DEFAULT_RULES; outer exception before its cause.

    ``rules`` may be a :class:`RuleBook` from :func:`rule_book` (a policy compiles its rules once);
    a RuleBook is used as it is, without DEFAULT_RULES added again.
    """
    book = rule_book(rules)
    for link in exception_chain(exc):
        text = _safe_str(link)
        rule = book.first_match(Evidence.of(link, text))
        if rule is not None:
            return _result(link, text, rule.failure_class, rule.category, rule.name)
    return _result(exc, _safe_str(exc), "retryable", "unclassified", "default")


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` then its causes (``__cause__``, else an unsuppressed ``__context__``), cycle-safe."""
    if exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__):
        return [exc]  # the common case: no chain
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
    exc: BaseException, text: str, failure_class: FailureClass, category: str, rule: str
) -> Classification:
    message = redact(text)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return Classification(failure_class, category, rule, type(exc).__qualname__, message)


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<unprintable {type(exc).__qualname__}>"


_TYPE_NAMES_CACHE: dict[type, frozenset[str]] = {}
_TYPE_NAMES_CACHE_SIZE = 1024


def _type_names(cls: type) -> frozenset[str]:
    """Every name of every class of the MRO; remembered for the first 1024 classes seen."""
    names = _TYPE_NAMES_CACHE.get(cls)
    if names is None:
        found: set[str] = set()
        for klass in cls.__mro__:
            found.update((klass.__name__, klass.__qualname__, f"{klass.__module__}.{klass.__qualname__}"))
        names = frozenset(found)
        if len(_TYPE_NAMES_CACHE) < _TYPE_NAMES_CACHE_SIZE:
            _TYPE_NAMES_CACHE[cls] = names
    return names


def _attribute(obj: object, name: str) -> object:
    """``getattr(obj, name, None)`` that survives properties raising anything."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _as_status(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and 100 <= value <= 599:
        return int(value)
    return None


def _http_status(exc: BaseException) -> int | None:
    for name in _HTTP_STATUS_ATTRIBUTES:
        try:
            value = getattr(exc, name, None)
        except Exception:  # a property may raise anything
            continue
        if value is not None and (status := _as_status(value)) is not None:
            return status
    response = _attribute(exc, "response")
    return None if response is None else _as_status(_attribute(response, "status_code"))


def _as_sqlstate(value: object) -> str | None:
    if isinstance(value, str) and len(value) == 5 and value.isalnum():
        return value.upper()
    return None


def _sqlstate(exc: BaseException) -> str | None:
    for name in _SQLSTATE_ATTRIBUTES:
        try:
            value = getattr(exc, name, None)
        except Exception:  # a property may raise anything
            continue
        if value is not None and (state := _as_sqlstate(value)) is not None:
            return state
    diag = _attribute(exc, "diag")
    return None if diag is None else _as_sqlstate(_attribute(diag, "sqlstate"))

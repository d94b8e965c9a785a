"""The pure policy core: classification, backoff, profiles, decisions and the retry-window planner.

Standard library only: no Airflow import, no I/O, no clock read, no ``random``. The Airflow
edge (``airflow_retry_provider.retry_policy``) wraps it.
"""

from __future__ import annotations

from airflow_retry_provider.policy.backoff import (
    Backoff,
    ScheduledDelay,
    fnv1a_32,
    jitter_fraction,
    jitter_hash,
)
from airflow_retry_provider.policy.classify import (
    MAX_MESSAGE_CHARS,
    Classification,
    RuleBook,
    classify,
    exception_chain,
    rule_book,
)
from airflow_retry_provider.policy.decide import (
    DEAD_LETTER_DEADLINE_INFEASIBLE,
    DEAD_LETTER_EXHAUSTED,
    DEAD_LETTER_UNKNOWN_OUTCOME,
    MAX_REASON_CHARS,
    DeadLetter,
    Retry,
    decide,
    describe,
    format_duration,
    format_timestamp,
)
from airflow_retry_provider.policy.default_rules import DEFAULT_RULES
from airflow_retry_provider.policy.evidence import Evidence, retry_after
from airflow_retry_provider.policy.fingerprint import fingerprint, normalise_message
from airflow_retry_provider.policy.profiles import (
    BUILTIN_PROFILES,
    DEFAULT_INFRA_ALLOWANCE,
    PROFILES,
    Profile,
    UnknownProfileError,
    get_profile,
    max_attempts_for,
    register_profile,
    retries_for,
    sized_retries,
)
from airflow_retry_provider.policy.redact import Redacted, redact, redaction
from airflow_retry_provider.policy.rules import (
    FAILURE_CLASSES,
    AllOf,
    ErrorCode,
    ExceptionType,
    FailureClass,
    HttpStatus,
    MessagePattern,
    Rule,
    SqlState,
)
from airflow_retry_provider.policy.text import storable
from airflow_retry_provider.policy.window import PlanInputError, plan


def warm() -> int:
    """Read the redactor's tables (the command-line flags, the vendor rules) and compile every pattern
    and literal set; return how many were compiled. A process that forks task processes does it once
    for all of them (``preload.py``), so a failed try reads and compiles nothing."""
    from airflow_retry_provider.policy import argv, engine, vendor

    argv.patterns()
    argv.tool_names()
    vendor.rule_set()
    return engine.compile_declared()


__all__ = [
    "BUILTIN_PROFILES",
    "DEAD_LETTER_DEADLINE_INFEASIBLE",
    "DEAD_LETTER_EXHAUSTED",
    "DEAD_LETTER_UNKNOWN_OUTCOME",
    "DEFAULT_RULES",
    "FAILURE_CLASSES",
    "MAX_MESSAGE_CHARS",
    "MAX_REASON_CHARS",
    "PROFILES",
    "AllOf",
    "Backoff",
    "Classification",
    "DeadLetter",
    "ErrorCode",
    "Evidence",
    "ExceptionType",
    "FailureClass",
    "HttpStatus",
    "MessagePattern",
    "PlanInputError",
    "Redacted",
    "Profile",
    "Retry",
    "Rule",
    "RuleBook",
    "ScheduledDelay",
    "SqlState",
    "UnknownProfileError",
    "classify",
    "decide",
    "describe",
    "exception_chain",
    "fingerprint",
    "fnv1a_32",
    "format_duration",
    "format_timestamp",
    "get_profile",
    "jitter_fraction",
    "jitter_hash",
    "max_attempts_for",
    "normalise_message",
    "plan",
    "redact",
    "redaction",
    "register_profile",
    "retries_for",
    "sized_retries",
    "DEFAULT_INFRA_ALLOWANCE",
    "retry_after",
    "rule_book",
    "storable",
    "warm",
]

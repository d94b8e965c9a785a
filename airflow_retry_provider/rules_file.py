"""Classification rules from a YAML file, so a platform team adds rules without changing DAG code.

The file named by ``[retry_provider] rules_file`` is read when a ``ClassifiedRetryPolicy`` is built,
that is when the DAG file is parsed: a bad file is an import error of the DAG that names the
file, the rule and the field (``rules.yaml: rules[3].status: ...``). Its rules come after the
policy's own ``rules=`` and before the defaults. The format::

    rules:
      - name: lake-not-yet-visible      # optional; reported as the classification's rule
        class: retryable                # poison, retryable or unknown
        category: eventually-consistent # kebab-case
        type: NoSuchKey                 # exception type names (a name or a list)
        message: "not yet visible"      # case-insensitive substrings (a string or a list)
        regex: 'quota \\d+ exceeded'    # RE2 regexes searched in the lower-cased message
        status: [404]                   # HTTP statuses
        sqlstate: ["23505", "40"]       # SQLSTATE codes or classes

A rule needs at least one of ``type``, ``message``, ``regex``, ``status``, ``sqlstate``; when it
gives several, all must match (``message`` and ``regex`` together: either may match).
YAML is parsed here, at the edge: the policy core receives plain rules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
)

from airflow_retry_provider.policy import (
    AllOf,
    ExceptionType,
    HttpStatus,
    MessagePattern,
    Rule,
    SqlState,
)
from airflow_retry_provider.policy.engine import Pattern
from airflow_retry_provider.policy.fields import FieldError, show
from airflow_retry_provider.policy.rules import FailureClass, check_category, check_failure_class

#: Airflow's variable for ``[retry_provider] rules_file`` (``AIRFLOW_RETRY_RULES_FILE`` is its deprecated name).
RULES_FILE_ENV = "AIRFLOW__RETRY_PROVIDER__RULES_FILE"
MAX_RULES_FILE_BYTES = 1_000_000
_RULE_KEYS = frozenset({"name", "class", "category", "type", "message", "regex", "status", "sqlstate"})
_MATCH_KEYS = ("type", "message", "regex", "status", "sqlstate")

_cache: dict[tuple[str, int, int], tuple[Rule, ...]] = {}


class RulesFileError(FieldError):
    """The rule file is unreadable or invalid; the message names the file, the rule and the field."""


def rules_file_path() -> str | None:
    """The rule file's path from ``[retry_provider] rules_file``, or None when unset or empty."""
    from airflow_retry_provider import settings

    path = settings.rules_file()
    return str(path) if path else None


def load_rules_file(path: str | os.PathLike[str] | None = None) -> tuple[Rule, ...]:
    """The rules of ``path`` (default: ``[retry_provider] rules_file``; none when unset), in file order.

    Read once per file version (path, size and modification time) in this process.
    """
    path = path if path is not None else rules_file_path()
    if path is None:
        return ()
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise RulesFileError(
            f"{path}: cannot read the rule file ([retry_provider] rules_file): {exc.strerror}"
        ) from None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _cache:
        if stat.st_size > MAX_RULES_FILE_BYTES:
            raise RulesFileError(f"{path}: the rule file is larger than {MAX_RULES_FILE_BYTES} bytes")
        _cache.clear()
        _cache[key] = parse_rules(Path(path).read_text("utf-8"), str(path))
    return _cache[key]


def parse_rules(text: str, source: str = "<rules>") -> tuple[Rule, ...]:
    """The rules of YAML ``text``; RulesFileError names ``source``, the rule and the field."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RulesFileError(f"not valid YAML: {' '.join(str(exc).split())}", path=source) from None
    if data is None:
        return ()
    if not isinstance(data, dict) or set(data) != {"rules"}:
        raise RulesFileError(f"expected a mapping with the single key 'rules', got {show(data)}", path=source)
    entries = data["rules"]
    if not isinstance(entries, list):
        raise RulesFileError(f"must be a list, got {show(entries)}", path=f"{source}: rules")
    return tuple(_rule(source, f"rules[{index}]", entry) for index, entry in enumerate(entries))


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _strings(values: list[Any]) -> list[str]:
    if not values or not all(isinstance(value, str) and value for value in values):
        raise ValueError(f"must be a non-empty string or a list of them, got {show(values)}")
    return values


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"must be a non-empty string, got {show(value)}")
    return value


def _compile(values: list[str]) -> list[Pattern]:
    """Each regex compiled with RE2 now: a pattern that could backtrack (or is no regex) fails the load."""
    return [Pattern(value, ignore_case=True).check() for value in values]


# a value or a list of them; an explicit null is a list of one null (refused like any bad value)
_Values = Annotated[list[Any] | None, BeforeValidator(_as_list)]
_Strings = Annotated[list[Any] | None, BeforeValidator(_as_list), AfterValidator(_strings)]


class _Entry(BaseModel):
    """One rule as the file writes it; pydantic checks its fields in this order, each naming the field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    failure_class: Annotated[FailureClass, PlainValidator(check_failure_class)] = Field(alias="class")
    category: Annotated[str, PlainValidator(check_category)]
    name: Annotated[str | None, PlainValidator(_name)] = None
    type: _Strings = None
    message: _Strings = None
    regex: Annotated[_Strings, AfterValidator(_compile)] = None
    status: _Values = None
    sqlstate: _Values = None


def _rule(source: str, path: str, entry: Any) -> Rule:
    def fail(field: str, problem: str) -> RulesFileError:
        return RulesFileError(problem, path=f"{source}: {path}{field}")

    if not isinstance(entry, dict):
        raise fail("", f"must be a mapping, got {show(entry)}")
    unknown = sorted(str(key) for key in set(entry) - _RULE_KEYS)
    if unknown:
        raise fail(f".{unknown[0]}", f"unknown key; a rule has {', '.join(sorted(_RULE_KEYS))}")
    for required in ("class", "category"):
        if required not in entry:
            raise fail(f".{required}", "missing")
    if not any(key in entry for key in _MATCH_KEYS):
        raise fail("", f"needs at least one of {', '.join(_MATCH_KEYS)}")
    try:
        rule = _Entry.model_validate(entry)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise fail(f".{error['loc'][0]}", str(error["ctx"]["error"])) from None
    name = rule.name or f"file-{path.replace('[', '-').rstrip(']')}"  # a name given is non-empty
    made = (rule.failure_class, rule.category)
    parts: list[Rule] = [] if rule.type is None else [ExceptionType(rule.type, *made, name=name)]
    try:
        if rule.status is not None:
            parts.append(HttpStatus(rule.status, *made, name=name))
    except ValueError as exc:
        raise fail(".status", str(exc)) from None
    try:
        if rule.sqlstate is not None:
            parts.append(SqlState([str(v).upper() for v in rule.sqlstate], *made, name=name))
    except ValueError as exc:
        raise fail(".sqlstate", str(exc)) from None
    if rule.message is not None or rule.regex is not None:
        parts.append(MessagePattern([*(rule.message or ()), *(rule.regex or ())], *made, name=name))
    return parts[0] if len(parts) == 1 else AllOf(parts, *made, name=name)

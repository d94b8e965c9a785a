"""What a rule may know of an exception, read once and without importing the exception's library.

The classifier never imports ``requests``, ``httpx``, ``botocore``, ``google.api_core``, ``psycopg``
or SQLAlchemy: it reads what their exceptions carry, by attribute and by type name.

- **type names**: for every class of the MRO, its ``__name__``, ``__qualname__`` and
  ``module.qualname``;
- **message**: ``str(exc)``, lower-cased;
- **HTTP status**: ``status_code``, ``status``, ``code`` (google-api-core), ``response.status_code``
  (requests, httpx) or ``response["ResponseMetadata"]["HTTPStatusCode"]`` (botocore);
- **error code**: ``response["Error"]["Code"]`` (botocore's ``ClientError``: ``ThrottlingException``);
- **SQLSTATE**: ``sqlstate`` (psycopg 3), ``pgcode`` (psycopg2), ``diag.sqlstate``, also on
  ``orig`` (the driver's error inside a SQLAlchemy ``DBAPIError``).

``Retry-After`` is read only for the exception that was classified (see :func:`retry_after`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping  # isinstance against it is a Python call: a dict is checked by type first
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple, TypeGuard

_HTTP_STATUS_ATTRIBUTES = ("status_code", "status", "code")
_SQLSTATE_ATTRIBUTES = ("sqlstate", "pgcode")
_ERROR_CODE_PATTERN = r"[A-Za-z][A-Za-z0-9_.-]{0,127}"  # matched whole, bounded; compiled on first use
RETRY_AFTER_STATUSES = frozenset({429, 503})
"""The statuses whose ``Retry-After`` header is honoured."""
MAX_RETRY_AFTER_SECONDS = 7 * 86_400
"""A longer ``Retry-After`` is read as this (the profile's cap applies anyway)."""


new_record = tuple.__new__
"""``new_record(Record, (field, ...))``: a NamedTuple built from all its fields, in order, without
its generated ``__new__`` (a Python call): the records made on every decision cost half as much."""


class Evidence(NamedTuple):
    """Everything a rule may look at, read once from one exception (an immutable record).

    :param exception: the exception itself (custom rules may inspect it further).
    :param type_names: for every class of the MRO, its ``__name__``, ``__qualname__`` and
        ``module.qualname``.
    :param message: ``str(exception)`` lower-cased (not redacted: rules see the real text).
    :param http_status: an int in 100..599 (see the module docstring), else None.
    :param sqlstate: five characters, upper-cased, else None.
    :param error_code: a service's error code such as ``"ThrottlingException"``, else None.
    """

    exception: BaseException
    type_names: frozenset[str]
    message: str
    http_status: int | None
    sqlstate: str | None
    error_code: str | None = None

    @classmethod
    def of(cls, exc: BaseException, text: str | None = None) -> Evidence:
        """Gather the evidence from ``exc`` (``text``: its ``str()``, when already known); never raises."""
        message = (safe_str(exc) if text is None else text).lower()
        kind = type(exc)
        if _plain_type(kind):  # what Evidence reads can only be in the instance's __dict__
            attributes = exc.__dict__
            if not attributes or _READ.isdisjoint(attributes):  # most failures: nothing to read
                return new_record(cls, (exc, type_names(kind), message, None, None, None))
            if _READ.intersection(attributes) == _RESPONSE_ONLY:  # an HTTP client's or botocore's error
                return cls._of_response(exc, kind, message, attributes["response"])
        response = _attribute(exc, "response")
        # one Mapping check for both readers (against the ABC it is a Python call)
        parsed = response is not None and _is_mapping(response)
        return cls(
            exc,
            type_names(type(exc)),
            message,
            _http_status(exc, response, parsed),
            _sqlstate(exc) or _sqlstate(_attribute(exc, "orig")),
            _error_code(response) if parsed else None,  # only a mapping has Error.Code
        )

    @classmethod
    def _of_response(cls, exc: BaseException, kind: type, message: str, response: object) -> Evidence:
        """The evidence of an exception of a plain class whose only attribute Evidence reads is
        ``response``: the status and the error code are the response's, and there is no SQLSTATE."""
        if response is None:
            return new_record(cls, (exc, type_names(kind), message, None, None, None))
        parsed = _is_mapping(response)
        status = _response_status(response, parsed)
        code = _error_code(response) if parsed else None  # only a mapping has Error.Code
        return new_record(cls, (exc, type_names(kind), message, status, None, code))


def safe_str(exc: BaseException) -> str:
    """``str(exc)``, or ``<unprintable Type>`` when that raises."""
    try:
        return str(exc)
    except Exception:
        return f"<unprintable {type(exc).__qualname__}>"


_TYPE_NAMES_CACHE: dict[type, frozenset[str]] = {}
_TYPE_NAMES_CACHE_SIZE = 1024


def type_names(cls: type) -> frozenset[str]:
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


_READ = frozenset(("response", *_HTTP_STATUS_ATTRIBUTES, *_SQLSTATE_ATTRIBUTES, "diag", "orig"))
_RESPONSE_ONLY = frozenset({"response"})
_PLAIN_TYPES: dict[type, bool] = {}


def _plain_type(cls: type) -> bool:
    """Whether an instance of ``cls`` can hold the attributes Evidence reads only in its ``__dict__``:
    no class of the MRO defines one of them, nor ``__getattr__`` or ``__getattribute__`` (but
    ``object``'s and ``BaseException``'s, the generic lookup); remembered for the first 1024
    classes seen."""
    plain = _PLAIN_TYPES.get(cls)
    if plain is None:
        plain = not any(
            "__getattr__" in vars(klass)
            or (klass not in (object, BaseException) and "__getattribute__" in vars(klass))
            or not _READ.isdisjoint(vars(klass))
            for klass in cls.__mro__
        )
        if len(_PLAIN_TYPES) < _TYPE_NAMES_CACHE_SIZE:
            _PLAIN_TYPES[cls] = plain
    return plain


def retry_after(exc: BaseException, now: datetime) -> timedelta | None:
    """The ``Retry-After`` of ``exc.response.headers`` (seconds or an HTTP date, from ``now``), else None.

    Whole seconds (a date rounds up); a date in the past is zero; a malformed value is None; a
    huge one is MAX_RETRY_AFTER_SECONDS.
    """
    headers = _attribute(_attribute(exc, "response"), "headers")
    value = _header(headers, "retry-after", "Retry-After")
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return timedelta(0, min(int(value), MAX_RETRY_AFTER_SECONDS))  # positional: keywords cost more
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        when = when.replace(tzinfo=timezone.utc)
    seconds = math.ceil((when - now).total_seconds())
    return timedelta(seconds=min(max(0, seconds), MAX_RETRY_AFTER_SECONDS))


def _header(headers: object, name: str, canonical: str) -> object:
    """Header ``name`` (lower-case; ``canonical``: as servers spell it) from any mapping-like
    headers (case-insensitive ones, or a plain dict)."""
    if headers is None:
        return None
    try:
        value = headers.get(name)  # type: ignore[attr-defined]
        if value is None:  # a plain dict keeps the sender's case: most often the canonical one
            value = headers.get(canonical)  # type: ignore[attr-defined]
        if value is None and _is_mapping(headers):
            for key, found in headers.items():  # a plain dict keeps the sender's case
                if str(key).lower() == name:
                    return found
    except Exception:  # exotic headers objects: treat as absent
        return None
    return value


def _is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)``, a plain dict answered by its type (against the ABC the check
    is a Python call)."""
    return type(value) is dict or isinstance(value, Mapping)


def _attribute(obj: object, name: str) -> object:
    """``getattr(obj, name, None)`` that survives properties raising anything."""
    if obj is None:
        return None
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _item(obj: object, *keys: str) -> object:
    """``obj[k1][k2]...`` through plain mappings, else None."""
    for key in keys:
        if not _is_mapping(obj):
            return None
        obj = obj.get(key)
    return obj


def _as_status(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and 100 <= value <= 599:
        return int(value)
    return None


def _http_status(exc: BaseException, response: object, parsed: bool | None = None) -> int | None:
    """The HTTP status ``exc`` or its ``response`` carries; ``parsed``: whether ``response`` is a
    mapping (botocore's parsed response), when the caller knows it already."""
    for name in _HTTP_STATUS_ATTRIBUTES:
        try:  # _attribute, inline: it runs for every exception of a chain
            value = getattr(exc, name, None)
        except Exception:
            continue
        if value is not None and (status := _as_status(value)) is not None:
            return status
    if response is None:
        return None
    if parsed is None:
        parsed = _is_mapping(response)
    return _response_status(response, parsed)


def _response_status(response: object, parsed: bool) -> int | None:
    """The HTTP status of a ``response`` (not None); ``parsed``: whether it is a mapping."""
    if parsed:  # botocore: the parsed response
        return _as_status(_item(response, "ResponseMetadata", "HTTPStatusCode"))
    return _as_status(_attribute(response, "status_code"))  # requests, httpx


@functools.cache
def _error_code_pattern() -> re.Pattern[str]:
    """_ERROR_CODE_PATTERN compiled on first use (``re.fullmatch`` would look it up in re's cache each time)."""
    return re.compile(_ERROR_CODE_PATTERN)


def _error_code(response: object) -> str | None:
    if response is None:  # most exceptions: no isinstance(None, Mapping), which is slow
        return None
    code = _item(response, "Error", "Code")
    return code if isinstance(code, str) and _error_code_pattern().fullmatch(code) else None


def _as_sqlstate(value: object) -> str | None:
    if isinstance(value, str) and len(value) == 5 and value.isalnum():
        return value.upper()
    return None


def _sqlstate(exc: object) -> str | None:
    if exc is None:
        return None
    for name in _SQLSTATE_ATTRIBUTES:
        try:  # _attribute, inline
            value = getattr(exc, name, None)
        except Exception:
            continue
        if value is not None and (state := _as_sqlstate(value)) is not None:
            return state
    diag = _attribute(exc, "diag")
    return None if diag is None else _as_sqlstate(_attribute(diag, "sqlstate"))  # most: no diag

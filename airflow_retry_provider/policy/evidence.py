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

import math
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import NamedTuple

_HTTP_STATUS_ATTRIBUTES = ("status_code", "status", "code")
_SQLSTATE_ATTRIBUTES = ("sqlstate", "pgcode")
_ERROR_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,127}")  # matched whole, bounded
RETRY_AFTER_STATUSES = frozenset({429, 503})
"""The statuses whose ``Retry-After`` header is honoured."""
MAX_RETRY_AFTER_SECONDS = 7 * 86_400
"""A longer ``Retry-After`` is read as this (the profile's cap applies anyway)."""


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
        message = safe_str(exc) if text is None else text
        response = _attribute(exc, "response")
        return cls(
            exception=exc,
            type_names=type_names(type(exc)),
            message=message.lower(),
            http_status=_http_status(exc, response),
            sqlstate=_sqlstate(exc) or _sqlstate(_attribute(exc, "orig")),
            error_code=_error_code(response),
        )


def safe_str(exc: BaseException) -> str:
    """``str(exc)``, or ``<unprintable Type>`` when that raises."""
    try:
        return str(exc)
    except Exception:
        return f"<unprintable {type(exc).__qualname__}>"


def type_names(cls: type) -> frozenset[str]:
    """Every name of every class of the MRO."""
    names: set[str] = set()
    for klass in cls.__mro__:
        names.update((klass.__name__, klass.__qualname__, f"{klass.__module__}.{klass.__qualname__}"))
    return frozenset(names)


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
        return timedelta(seconds=min(int(value), MAX_RETRY_AFTER_SECONDS))
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
        if value is None and isinstance(headers, Mapping):
            for key, found in headers.items():  # a plain dict keeps the sender's case
                if str(key).lower() == name:
                    return found
    except Exception:  # exotic headers objects: treat as absent
        return None
    return value


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
        if not isinstance(obj, Mapping):
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


def _http_status(exc: BaseException, response: object) -> int | None:
    """The HTTP status ``exc`` or its ``response`` carries."""
    for name in _HTTP_STATUS_ATTRIBUTES:
        status = _as_status(_attribute(exc, name))
        if status is not None:
            return status
    if isinstance(response, Mapping):  # botocore: the parsed response
        return _as_status(_item(response, "ResponseMetadata", "HTTPStatusCode"))
    return _as_status(_attribute(response, "status_code"))  # requests, httpx


def _error_code(response: object) -> str | None:
    """A service's error code: ``response["Error"]["Code"]`` (botocore), matched whole."""
    code = _item(response, "Error", "Code")
    return code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else None


def _as_sqlstate(value: object) -> str | None:
    if isinstance(value, str) and len(value) == 5 and value.isalnum():
        return value.upper()
    return None


def _sqlstate(exc: object) -> str | None:
    for name in _SQLSTATE_ATTRIBUTES:
        state = _as_sqlstate(_attribute(exc, name))
        if state is not None:
            return state
    return _as_sqlstate(_attribute(_attribute(exc, "diag"), "sqlstate"))

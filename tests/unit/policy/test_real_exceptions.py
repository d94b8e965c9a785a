"""The classifier on real exception objects of the libraries DAG authors use (none imported by the policy)."""

from __future__ import annotations

import ast
import datetime as dt
import decimal
import email.utils
import json
import socket
import sqlite3
import uuid
from collections.abc import Callable
from datetime import timedelta, timezone

import botocore.exceptions as boto
import google.api_core.exceptions as google
import httpx
import jsonschema
import psycopg.errors as pg3
import psycopg2
import psycopg2.errors as pg2
import pydantic
import pytest
import requests
import sqlalchemy.exc as sa

from airflow_retry_provider.policy import classify
from tests.conftest import REPO

POLICY = REPO / "airflow_retry_provider" / "policy"
NOW = dt.datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
REQUEST = httpx.Request("GET", "https://api.example.com/v1/orders")


def raised(call: Callable[[], object]) -> BaseException:
    """The exception ``call`` raises (so the object is exactly what the library builds)."""
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - any exception is the point
        return exc
    raise AssertionError("expected an exception")


def requests_error(status: int, headers: dict[str, str] | None = None) -> BaseException:
    """What ``Response.raise_for_status()`` raises for ``status``."""
    response = requests.Response()
    response.status_code = status
    response.url = "https://api.example.com/v1/orders"
    response.reason = "Reason"
    response.headers.update(headers or {})
    return raised(response.raise_for_status)


def response_with(retry_after: str) -> requests.Response:
    """A bare requests Response carrying a Retry-After header."""
    response = requests.Response()
    response.headers["Retry-After"] = retry_after
    return response


def httpx_error(status: int, headers: dict[str, str] | None = None) -> BaseException:
    """What httpx's ``Response.raise_for_status()`` raises for ``status``."""
    return raised(httpx.Response(status, headers=headers, request=REQUEST).raise_for_status)


def client_error(code: str, status: int, operation: str = "GetObject") -> boto.ClientError:
    """botocore's ClientError as the service answered it."""
    response = {
        "Error": {"Code": code, "Message": f"{code} message"},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
    }
    return boto.ClientError(response, operation)  # type: ignore[arg-type]


class Order(pydantic.BaseModel):
    id: int
    placed: dt.date


def sqlite_not_null() -> BaseException:
    """sqlite3's IntegrityError for a NULL in a NOT NULL column."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t (x NOT NULL)")
        return raised(lambda: conn.execute("INSERT INTO t VALUES (NULL)"))
    finally:
        conn.close()


def chained(outer: BaseException, cause: BaseException) -> BaseException:
    """``outer`` raised from ``cause``, as ``raise outer from cause`` leaves it."""
    try:
        try:
            raise cause
        except BaseException as inner:
            raise outer from inner
    except BaseException as exc:  # noqa: BLE001
        return exc


CASES: list[tuple[BaseException, str, str]] = [
    # requests: status from response.status_code, types for the transport
    (requests_error(400), "poison", "invalid-request"),  # same request, same answer
    (requests_error(401), "poison", "auth-failed"),
    (requests_error(403), "poison", "permission-denied"),
    (requests_error(404), "poison", "not-found"),
    (requests_error(429), "retryable", "rate-limited"),
    (requests_error(500), "retryable", "server-error"),
    (requests_error(503), "retryable", "server-error"),
    (
        requests.exceptions.ConnectTimeout("Connection to api timed out. (connect timeout=10)"),
        "retryable",
        "connect-timeout",
    ),  # never sent
    (
        requests.exceptions.ReadTimeout("Read timed out. (read timeout=30)"),
        "unknown",
        "timeout",
    ),  # may have been applied
    (
        requests.exceptions.ConnectionError(
            "Failed to establish a new connection: [Errno 111] Connection refused"
        ),
        "retryable",
        "connection-failed",
    ),
    (
        requests.exceptions.ConnectionError(
            "Max retries exceeded (Caused by NameResolutionError(\"Failed to resolve 'api'\"))"
        ),
        "retryable",
        "dns-failure",
    ),  # DNS inside a connection error
    (raised(lambda: requests.get("api.example.com/v1")), "poison", "invalid-request"),  # MissingSchema
    (raised(lambda: requests.get("ftp://api.example.com/v1")), "poison", "invalid-request"),  # InvalidSchema
    (raised(lambda: requests.get("http://")), "poison", "invalid-request"),  # InvalidURL: no host
    (raised(lambda: requests.Response().json()), "poison", "invalid-input"),  # requests' JSONDecodeError
    # httpx: the same families, other type names
    (httpx_error(400), "poison", "invalid-request"),
    (httpx_error(404), "poison", "not-found"),
    (httpx_error(422), "poison", "invalid-request"),  # unprocessable entity
    (httpx_error(429), "retryable", "rate-limited"),
    (httpx_error(502), "retryable", "server-error"),
    (httpx.ConnectTimeout("timed out", request=REQUEST), "retryable", "connect-timeout"),
    (httpx.PoolTimeout("timed out", request=REQUEST), "retryable", "connect-timeout"),  # never left the pool
    (httpx.ReadTimeout("The read operation timed out", request=REQUEST), "unknown", "timeout"),
    (httpx.WriteTimeout("timed out", request=REQUEST), "unknown", "timeout"),
    (httpx.ConnectError("[Errno 111] Connection refused", request=REQUEST), "retryable", "connection-failed"),
    (raised(lambda: httpx.get("api.example.com")), "poison", "invalid-request"),  # UnsupportedProtocol
    (raised(lambda: httpx.Client().get("http://[::1")), "poison", "invalid-request"),  # InvalidURL
    (
        httpx.RemoteProtocolError("Server disconnected", request=REQUEST),
        "retryable",
        "unclassified",
    ),  # unknown: retried
    # botocore: the service's error code beats the HTTP status (throttling is a 400 on AWS)
    (client_error("ThrottlingException", 400, "Query"), "retryable", "rate-limited"),
    (client_error("SlowDown", 503, "PutObject"), "retryable", "rate-limited"),
    (client_error("RequestLimitExceeded", 503, "RunInstances"), "retryable", "rate-limited"),
    (client_error("ProvisionedThroughputExceededException", 400, "PutItem"), "retryable", "rate-limited"),
    (client_error("InternalError", 500), "retryable", "server-error"),
    (client_error("AccessDenied", 403), "poison", "permission-denied"),
    (client_error("NoSuchKey", 404), "poison", "not-found"),
    (client_error("NoSuchBucket", 404), "poison", "not-found"),
    (client_error("ValidationException", 400, "Query"), "poison", "invalid-request"),
    (client_error("ExpiredToken", 400), "poison", "auth-failed"),
    (client_error("SomethingNew", 500), "retryable", "server-error"),  # an unknown code: its HTTP status
    (boto.ConnectTimeoutError(endpoint_url="https://s3.amazonaws.com"), "retryable", "connect-timeout"),
    (boto.ReadTimeoutError(endpoint_url="https://s3.amazonaws.com"), "unknown", "timeout"),
    (boto.EndpointConnectionError(endpoint_url="https://s3.amazonaws.com"), "retryable", "connection-failed"),
    (boto.NoCredentialsError(), "poison", "auth-failed"),
    (
        boto.ParamValidationError(report='Missing required parameter in input: "Bucket"'),
        "poison",
        "invalid-request",
    ),
    # google-api-core: the HTTP status in the class's ``code``
    (google.BadRequest("Invalid field"), "poison", "invalid-request"),
    (google.Unauthenticated("Request had invalid credentials"), "poison", "auth-failed"),
    (google.PermissionDenied("Caller lacks bigquery.tables.get"), "poison", "permission-denied"),
    (google.NotFound("Table proj:ds.t not found"), "poison", "not-found"),
    (google.TooManyRequests("Quota exceeded"), "retryable", "rate-limited"),
    (
        google.ResourceExhausted("Quota exceeded"),
        "retryable",
        "rate-limited",
    ),  # gRPC RESOURCE_EXHAUSTED is 429
    (google.InternalServerError("Backend error"), "retryable", "server-error"),
    (google.ServiceUnavailable("The service is currently unavailable"), "retryable", "server-error"),
    (google.GatewayTimeout("Gateway timeout"), "retryable", "server-error"),
    # pydantic and jsonschema: the same payload fails the same way
    (raised(lambda: Order(id="seven", placed="2026-11-30")), "poison", "invalid-input"),
    (raised(lambda: Order.model_validate_json("{bad json")), "poison", "invalid-input"),
    (
        raised(lambda: jsonschema.validate({"id": "x"}, {"properties": {"id": {"type": "integer"}}})),
        "poison",
        "invalid-input",
    ),
    (raised(lambda: jsonschema.validate({}, {"type": 12})), "poison", "code-error"),  # the schema is wrong
    # psycopg 3: the SQLSTATE on the class
    (
        pg3.UniqueViolation('duplicate key value violates unique constraint "orders_pkey"'),
        "poison",
        "integrity",
    ),
    (pg3.NotNullViolation('null value in column "id" violates not-null constraint'), "poison", "integrity"),
    (pg3.ForeignKeyViolation("insert violates foreign key constraint"), "poison", "integrity"),
    (pg3.CheckViolation('new row violates check constraint "amount_positive"'), "poison", "integrity"),
    (pg3.DeadlockDetected("deadlock detected"), "retryable", "deadlock"),
    (pg3.SerializationFailure("could not serialize access"), "retryable", "serialization-failure"),
    (pg3.UndefinedTable('relation "orders" does not exist'), "poison", "not-found"),
    (pg3.InsufficientPrivilege("permission denied for table orders"), "poison", "permission-denied"),
    (
        pg3.AdminShutdown("terminating connection due to administrator command"),
        "retryable",
        "database-unavailable",
    ),
    (pg3.OperationalError("server closed the connection unexpectedly"), "retryable", "connection-failed"),
    # psycopg2: built here, outside the driver, they carry no pgcode: matched by type name and message
    (pg2.UniqueViolation("duplicate key value violates unique constraint"), "poison", "integrity"),
    (pg2.ForeignKeyViolation("violates foreign key constraint"), "poison", "integrity"),
    (
        psycopg2.OperationalError("could not connect to server: Connection refused"),
        "retryable",
        "connection-failed",
    ),
    (pg2.UndefinedTable('relation "orders" does not exist'), "poison", "not-found"),
    # SQLAlchemy: the driver's SQLSTATE read through ``orig``
    (
        sa.IntegrityError("INSERT INTO orders", {}, pg3.UniqueViolation("duplicate key")),
        "poison",
        "integrity",
    ),
    (
        sa.IntegrityError("INSERT INTO orders", {}, pg2.NotNullViolation("null value")),
        "poison",
        "integrity",
    ),  # by type
    (
        sa.OperationalError("UPDATE orders", {}, pg3.DeadlockDetected("deadlock detected")),
        "retryable",
        "deadlock",
    ),
    (
        sa.OperationalError(
            "SELECT 1", {}, psycopg2.OperationalError("server closed the connection unexpectedly")
        ),
        "retryable",
        "connection-failed",
    ),
    (
        sa.ProgrammingError("SELECT", {}, pg3.UndefinedTable('relation "x" does not exist')),
        "poison",
        "not-found",
    ),
    (sa.NoSuchTableError("orders"), "poison", "not-found"),
    (
        chained(RuntimeError("load failed"), pg3.UniqueViolation("duplicate key")),
        "poison",
        "integrity",
    ),  # wrapped
    (sqlite_not_null(), "poison", "integrity"),  # sqlite3.IntegrityError: no SQLSTATE at all
    # json and decoding
    (raised(lambda: json.loads("{bad")), "poison", "invalid-input"),
    (raised(lambda: b"\xff\xfe\xfa".decode("utf-8")), "poison", "invalid-input"),
    (raised(lambda: "é".encode("ascii")), "poison", "invalid-input"),
    # ValueError raised while parsing, and the product's own poison messages
    (raised(lambda: int("12a")), "poison", "invalid-input"),
    (raised(lambda: float("n/a")), "poison", "invalid-input"),
    (raised(lambda: dt.datetime.strptime("30/11/2026", "%Y-%m-%d")), "poison", "invalid-input"),
    (raised(lambda: dt.date.fromisoformat("2026-13-45x")), "poison", "invalid-input"),
    (raised(lambda: uuid.UUID("not-a-uuid")), "poison", "invalid-input"),
    (ValueError("unsupported schema version 99 (supported: 1, 2)"), "poison", "invalid-input"),
    (ValueError("invalid input: amount must be positive"), "poison", "invalid-input"),
    (
        ValueError("bad row 17"),
        "retryable",
        "unclassified",
    ),  # a bare ValueError is not known to be deterministic
    # programming errors
    (raised(lambda: None + 1), "poison", "code-error"),  # type: ignore[operator]  # TypeError
    (raised(lambda: {}["customer_id"]), "poison", "code-error"),  # KeyError: a missing field
    (raised(lambda: None.strip()), "poison", "code-error"),  # type: ignore[union-attr]  # AttributeError
    (raised(lambda: eval("undefined_name")), "poison", "code-error"),  # noqa: S307 - NameError
    (raised(lambda: 1 / 0), "poison", "code-error"),  # ZeroDivisionError
    (raised(lambda: __import__("no_such_module_xyz")), "poison", "code-error"),  # ModuleNotFoundError
    (NotImplementedError("export to parquet"), "poison", "code-error"),
    (raised(lambda: ast.literal_eval("1 +")), "retryable", "unclassified"),  # SyntaxError: not in the list
    # the standard library's network errors
    (socket.gaierror(-2, "Name or service not known"), "retryable", "dns-failure"),
    (ConnectionResetError(104, "Connection reset by peer"), "retryable", "connection-failed"),
    (TimeoutError("timed out"), "unknown", "timeout"),
    (
        raised(lambda: decimal.Decimal("1") / decimal.Decimal("0")),
        "poison",
        "code-error",
    ),  # decimal's DivisionByZero is a ZeroDivisionError too
    (ValueError("unknown url type: 'localhost/api'"), "poison", "invalid-request"),  # urllib
]


@pytest.mark.parametrize(
    ("exc", "failure_class", "category"),
    CASES,
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else v,
)
def test_real_exception_is_classified(exc: BaseException, failure_class: str, category: str) -> None:
    """A real exception of a common library gets its documented class and category."""
    result = classify(exc)
    assert (result.failure_class, result.category) == (failure_class, category), result


def test_there_are_at_least_sixty_real_exceptions() -> None:
    """The table holds at least 60 real exception objects from at least ten libraries."""
    modules = {type(exc).__module__.split(".")[0] for exc, _, _ in CASES}
    assert len(CASES) >= 60
    assert {
        "requests",
        "httpx",
        "botocore",
        "google",
        "pydantic_core",
        "jsonschema",
        "psycopg",
        "psycopg2",
        "sqlalchemy",
        "json",
    } <= modules


def test_the_policy_core_imports_no_client_library() -> None:
    """policy/ matches these libraries by type name and attributes: it imports none of them."""
    libraries = {
        "requests",
        "httpx",
        "botocore",
        "google",
        "pydantic",
        "jsonschema",
        "psycopg",
        "psycopg2",
        "sqlalchemy",
        "yaml",
        "airflow",
    }
    for path in POLICY.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not {name.split(".")[0] for name in names} & libraries, (path.name, names)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (requests_error(429, {"Retry-After": "120"}), timedelta(seconds=120)),  # requests, seconds
        (httpx_error(503, {"retry-after": "7"}), timedelta(seconds=7)),  # httpx, lower-case header
        (
            httpx_error(
                429, {"Retry-After": email.utils.format_datetime(NOW + timedelta(minutes=3), usegmt=True)}
            ),
            timedelta(minutes=3),
        ),  # an HTTP date, read from now
        (
            requests_error(
                429, {"Retry-After": email.utils.format_datetime(NOW - timedelta(minutes=3), usegmt=True)}
            ),
            timedelta(0),
        ),  # a date in the past: no wait
        (google.TooManyRequests("Quota exceeded", response=requests.Response()), None),  # no header
        (
            google.TooManyRequests("Quota exceeded", response=response_with(retry_after="30")),
            timedelta(seconds=30),
        ),  # any exception exposing response.headers: status from google's code
        (
            chained(RuntimeError("export failed"), requests_error(429, {"Retry-After": "120"})),
            timedelta(seconds=120),
        ),  # read from the exception that was classified, here the cause
        (requests_error(429, {"Retry-After": "soon"}), None),  # malformed: ignored
        (requests_error(500, {"Retry-After": "120"}), None),  # only 429 and 503 are honoured
        (requests_error(404, {"Retry-After": "120"}), None),  # and never for poison
    ],
)
def test_retry_after_from_real_responses(exc: BaseException, expected: timedelta | None) -> None:
    """Retry-After is read from any exception exposing response.headers, in seconds or as an HTTP date."""
    assert classify(exc, now=NOW).retry_after == expected


def test_retry_after_needs_now() -> None:
    """Without ``now`` the classification carries no Retry-After (the core reads no clock)."""
    assert classify(requests_error(429, {"Retry-After": "120"})).retry_after is None

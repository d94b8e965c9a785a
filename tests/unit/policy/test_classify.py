"""Classification of failures: every default rule, rule order, the cause chain, custom rules."""

from __future__ import annotations

import re
import socket
from types import SimpleNamespace

import pytest

from airflow_retry_provider.policy import (
    DEFAULT_RULES,
    MAX_MESSAGE_CHARS,
    AllOf,
    Classification,
    ExceptionType,
    HttpStatus,
    MessagePattern,
    SqlState,
    classify,
    exception_chain,
    fingerprint,
    normalise_message,
)
from tests.conftest import REPO

DOCS = REPO / "docs" / "CLASSIFICATION.md"


def named(qualified: str, base: type[BaseException] = Exception) -> type[BaseException]:
    """A class named like a third-party exception (``requests.exceptions.ConnectTimeout``)."""
    module, _, name = qualified.rpartition(".")
    return type(name, (base,), {"__module__": module, "__qualname__": name})


class HTTPError(Exception):
    """Carries its status the way urllib and most clients do."""

    def __init__(self, message: str, **attributes: object) -> None:
        super().__init__(message)
        self.__dict__.update(attributes)


def http(status: object, message: str = "request failed", attribute: str = "status_code") -> HTTPError:
    return HTTPError(message, **{attribute: status})


def aws(code: str, status: int) -> HTTPError:
    """Shaped like botocore's ClientError: the parsed response is a dict."""
    response = {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return HTTPError(f"An error occurred ({code})", response=response)


def pg(sqlstate: str, message: str = "database error") -> HTTPError:
    return HTTPError(message, sqlstate=sqlstate)


ConnectTimeout = named("requests.exceptions.ConnectTimeout", ConnectionError)
ReadTimeout = named("requests.exceptions.ReadTimeout", OSError)
AirflowTaskTimeout = named("airflow.sdk.exceptions.AirflowTaskTimeout", BaseException)
NameResolutionError = named("urllib3.exceptions.NameResolutionError")
NoSuchTable = named("warehouse.errors.NoSuchTable")

DEFAULT_TABLE = [
    # HTTP status, structured: beats any message
    (
        http(400),
        "poison",
        "invalid-request",
        "http-invalid-request",
    ),  # 400 bad request: same input, same answer
    (http(422), "poison", "invalid-request", "http-invalid-request"),  # 422 unprocessable entity
    (http(401), "poison", "auth-failed", "http-auth-failed"),  # 401: credentials do not heal by waiting
    (http(403), "poison", "permission-denied", "http-permission-denied"),  # 403 forbidden
    (http(404), "poison", "not-found", "http-not-found"),  # 404 not found
    (
        http(408),
        "retryable",
        "request-timeout",
        "http-request-timeout",
    ),  # 408: server gave up before processing
    (http(425), "retryable", "too-early", "http-too-early"),  # 425 too early: replay later
    (
        http(429, "429 Too Many Requests"),
        "retryable",
        "rate-limited",
        "http-rate-limited",
    ),  # 429 rate limited
    (http(500), "retryable", "server-error", "http-server-error"),  # 500 internal server error
    (http(502), "retryable", "server-error", "http-server-error"),  # 502 bad gateway
    (
        http(503, "service not found upstream"),
        "retryable",
        "server-error",
        "http-server-error",
    ),  # 503 beats "not found"
    (http(504), "retryable", "server-error", "http-server-error"),  # 504 gateway timeout
    (
        http("429", attribute="status"),
        "retryable",
        "rate-limited",
        "http-rate-limited",
    ),  # numeric string in `status`
    (
        http(404, attribute="code"),
        "poison",
        "not-found",
        "http-not-found",
    ),  # `code`, as google.api_core has it
    # PostgreSQL SQLSTATE, structured: exact codes before classes
    (
        pg("08006"),
        "retryable",
        "connection-failed",
        "sqlstate-connection-failed",
    ),  # class 08 connection exception
    (
        pg("08001", "permission denied"),
        "retryable",
        "connection-failed",
        "sqlstate-connection-failed",
    ),  # beats message
    (
        pg("40001"),
        "retryable",
        "serialization-failure",
        "sqlstate-serialization-failure",
    ),  # serialization failure
    (pg("40P01"), "retryable", "deadlock", "sqlstate-deadlock"),  # deadlock detected
    (
        pg("53300"),
        "retryable",
        "insufficient-resources",
        "sqlstate-insufficient-resources",
    ),  # too many connections
    (pg("53100"), "retryable", "insufficient-resources", "sqlstate-insufficient-resources"),  # disk full
    (pg("57P01"), "retryable", "database-unavailable", "sqlstate-database-unavailable"),  # admin shutdown
    (pg("57P02"), "retryable", "database-unavailable", "sqlstate-database-unavailable"),  # crash shutdown
    (pg("57P03"), "retryable", "database-unavailable", "sqlstate-database-unavailable"),  # cannot connect now
    (pg("42601"), "poison", "invalid-query", "sqlstate-invalid-query"),  # class 42: syntax error
    (pg("42501"), "poison", "permission-denied", "sqlstate-permission-denied"),  # insufficient privilege
    (pg("42P01"), "poison", "not-found", "sqlstate-not-found"),  # undefined table
    (pg("28P01"), "poison", "auth-failed", "sqlstate-auth-failed"),  # class 28: invalid password
    (pg("22012"), "poison", "invalid-data", "sqlstate-invalid-data"),  # class 22: division by zero
    # connect timeout: the request never left, safe to resend
    (
        ConnectTimeout("connect failed"),
        "retryable",
        "connect-timeout",
        "type-connect-timeout",
    ),  # requests/httpx type
    (
        Exception("Connection to db.example timed out. (connect timeout=10)"),
        "retryable",
        "connect-timeout",
        "message-connect-timeout",
    ),  # urllib3's message holds both "timed out" and "connect timeout": the specific one wins
    (
        TimeoutError("timed out while connecting"),
        "retryable",
        "connect-timeout",
        "message-connect-timeout",
    ),  # beats type
    (
        Exception("connection timeout expired"),
        "retryable",
        "connect-timeout",
        "message-connect-timeout",
    ),  # libpq
    # any other timeout: the remote side may have done the work
    (
        AirflowTaskTimeout("Timeout, PID: 42"),
        "unknown",
        "task-timeout",
        "type-task-timeout",
    ),  # execution_timeout
    (Exception("write confirmation lost"), "unknown", "confirmation-lost", "message-confirmation-lost"),
    (TimeoutError("timed out"), "unknown", "timeout", "type-timeout"),  # builtin TimeoutError
    (socket.timeout("timed out"), "unknown", "timeout", "type-timeout"),  # noqa: UP041 - the alias itself
    (
        ReadTimeout("Read timed out. (read timeout=30)"),
        "unknown",
        "timeout",
        "type-timeout",
    ),  # requests read timeout
    (Exception("operation timed out"), "unknown", "timeout", "message-timeout"),  # only the message says so
    (Exception("504 DEADLINE_EXCEEDED: Deadline Exceeded"), "unknown", "timeout", "message-timeout"),  # gRPC
    # DNS failures: retryable, and not taken for a poison "not found"
    (socket.gaierror(-2, "Name or service not known"), "retryable", "dns-failure", "type-dns-failure"),
    (
        NameResolutionError("Failed to resolve 'api'"),
        "retryable",
        "dns-failure",
        "type-dns-failure",
    ),  # urllib3
    (
        Exception("Host not found (authoritative)"),
        "retryable",
        "dns-failure",
        "message-dns-failure",
    ),  # not poison
    (
        Exception('could not translate host name "db" to address: Temporary failure in name resolution'),
        "retryable",
        "dns-failure",
        "message-dns-failure",
    ),  # libpq's DNS message
    # poison by type
    (PermissionError(13, "Permission denied"), "poison", "permission-denied", "type-permission-denied"),
    (FileNotFoundError(2, "No such file or directory"), "poison", "not-found", "type-not-found"),
    # poison by message
    (NoSuchTable("table x not found"), "poison", "not-found", "message-not-found"),  # "not found"
    (Exception('FATAL: database "sales" does not exist'), "poison", "not-found", "message-not-found"),
    (Exception("Syntax error: Unexpected keyword FROM"), "poison", "invalid-query", "message-invalid-query"),
    (
        Exception("Unrecognized name: amount at [1:8]"),
        "poison",
        "invalid-query",
        "message-invalid-query",
    ),  # BigQuery
    (
        Exception("invalid_grant: Token has been revoked"),
        "poison",
        "auth-failed",
        "message-auth-failed",
    ),  # OAuth
    (
        Exception("401 Unauthorized"),
        "poison",
        "auth-failed",
        "message-auth-failed",
    ),  # status only in the text
    (
        Exception("Access Denied: Table x: User lacks access"),
        "poison",
        "permission-denied",
        "message-permission-denied",
    ),
    (
        Exception('connection to server failed: FATAL: permission denied for database "x"'),
        "poison",
        "permission-denied",
        "message-permission-denied",
    ),  # a poison message inside a connection failure is not swallowed by the connection rules
    (Exception("403 Forbidden"), "poison", "permission-denied", "message-permission-denied"),
    (Exception("Error: insufficient credits"), "poison", "out-of-credits", "message-out-of-credits"),
    (Exception("No credit balance remaining"), "poison", "out-of-credits", "message-out-of-credits"),
    (Exception("No queries configured for this job"), "poison", "not-configured", "message-not-configured"),
    (
        Exception("Query exceeded limit for bytes billed: 1000000. 2000000 or higher required."),
        "poison",
        "cost-limit-exceeded",
        "message-cost-limit-exceeded",
    ),  # BigQuery maximum_bytes_billed: a retry cannot raise a cost ceiling
    (
        Exception("cost limit exceeded for project"),
        "poison",
        "cost-limit-exceeded",
        "message-cost-limit-exceeded",
    ),
    # connection resets and refusals
    (
        ConnectionResetError(104, "Connection reset by peer"),
        "retryable",
        "connection-failed",
        "type-connection-failed",
    ),
    (
        ConnectionRefusedError(111, "Connection refused"),
        "retryable",
        "connection-failed",
        "type-connection-failed",
    ),
    (BrokenPipeError(32, "Broken pipe"), "retryable", "connection-failed", "type-connection-failed"),
    (
        Exception("server closed the connection unexpectedly"),
        "retryable",
        "connection-failed",
        "message-connection-failed",
    ),  # psycopg without a SQLSTATE
    (
        Exception("ECONNRESET"),
        "retryable",
        "connection-failed",
        "message-connection-failed",
    ),  # Node-style code
    # service error codes (botocore's response["Error"]["Code"]) beat the HTTP status beside them
    (aws("SlowDown", 503), "retryable", "rate-limited", "code-rate-limited"),  # S3 asks us to slow down
    (aws("ThrottlingException", 400), "retryable", "rate-limited", "code-rate-limited"),  # throttled as 400
    (aws("InternalError", 500), "retryable", "server-error", "code-server-error"),
    (aws("ExpiredToken", 400), "poison", "auth-failed", "code-auth-failed"),
    (aws("AccessDenied", 403), "poison", "permission-denied", "code-permission-denied"),
    (aws("NoSuchKey", 404), "poison", "not-found", "code-not-found"),
    (aws("ValidationException", 400), "poison", "invalid-request", "code-invalid-request"),
    # integrity violations: SQLSTATE class 23, or a driver's IntegrityError
    (pg("23505", "duplicate key value"), "poison", "integrity", "sqlstate-integrity"),  # unique
    (HTTPError("x", orig=SimpleNamespace(pgcode="23503")), "poison", "integrity", "sqlstate-integrity"),
    (named("sqlite3.IntegrityError")("NOT NULL constraint failed"), "poison", "integrity", "type-integrity"),
    # deterministic bad input
    (
        named("json.JSONDecodeError", ValueError)("Expecting value"),
        "poison",
        "invalid-input",
        "type-invalid-input",
    ),
    (
        ValueError("unsupported schema version 99 for job 7"),
        "poison",
        "invalid-input",
        "message-invalid-input",
    ),  # the product's own poison example
    (
        ValueError("invalid literal for int() with base 10: 'x'"),
        "poison",
        "invalid-input",
        "message-invalid-input",
    ),
    # programming errors
    (KeyError("customer_id"), "poison", "code-error", "type-code-error"),
    (
        ModuleNotFoundError("No module named 'pandas'"),
        "poison",
        "code-error",
        "type-code-error",
    ),  # a subclass
    # invalid URLs
    (
        named("requests.exceptions.MissingSchema", ValueError)("No scheme supplied"),
        "poison",
        "invalid-request",
        "type-invalid-request",
    ),
    (
        ValueError("unknown url type: 'localhost/api'"),
        "poison",
        "invalid-request",
        "message-invalid-request",
    ),  # urllib
    (
        named("botocore.exceptions.NoCredentialsError")("Unable to locate credentials"),
        "poison",
        "auth-failed",
        "type-auth-failed",
    ),
    (
        named("airflow_retry_provider.breaker.guard.DependencyOutage")(
            "dependency 'positions_db' is down: held since 2026-12-01T03:00:00Z (task read_timed_out)"
        ),
        "poison",
        "dependency-outage",
        "type-dependency-outage",
    ),  # before the message rules: its text names tasks
    # nothing matched
    (ValueError("bad row 17"), "retryable", "unclassified", "default"),  # the attempt ceiling protects
]


@pytest.mark.parametrize(("exc", "failure_class", "category", "rule"), DEFAULT_TABLE)
def test_default_rules(exc: BaseException, failure_class: str, category: str, rule: str) -> None:
    """Each default rule gives its documented class, category and rule name."""
    result = classify(exc)
    assert (result.failure_class, result.category, result.rule) == (failure_class, category, rule)


def test_every_default_rule_is_in_the_table() -> None:
    """The table above exercises every rule of DEFAULT_RULES."""
    exercised = {rule for _, _, _, rule in DEFAULT_TABLE}
    assert {rule.name for rule in DEFAULT_RULES} <= exercised


def test_default_rule_names_are_unique() -> None:
    """No two default rules share a name, so Classification.rule identifies one rule."""
    names = [rule.name for rule in DEFAULT_RULES]
    assert len(names) == len(set(names))


def test_every_default_rule_is_documented() -> None:
    """docs/CLASSIFICATION.md's table lists every default rule, in order, with its class and category."""
    text = DOCS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| `([a-z0-9-]+)` \| .* \| (\w+) \| `([a-z0-9-]+)` \|$", text, re.MULTILINE)
    documented = [
        (int(number), name, failure_class, category) for number, name, failure_class, category in rows
    ]
    expected = [
        (number, rule.name, rule.failure_class, rule.category) for number, rule in enumerate(DEFAULT_RULES, 1)
    ]
    assert documented == expected
    assert "`unclassified`" in text


def test_real_airflow_task_timeout_is_unknown() -> None:
    """Airflow 3.3's own AirflowTaskTimeout (a BaseException) is matched by name: unknown outcome."""
    from airflow.sdk.exceptions import AirflowTaskTimeout as RealTimeout

    result = classify(RealTimeout("Timeout, PID: 7"))
    assert (result.failure_class, result.category) == ("unknown", "task-timeout")


def test_classification_fields() -> None:
    """The classification carries the exception type and the redacted message."""
    result = classify(http(429, "429 Too Many Requests for postgresql://bob:hunter2@db/x"))
    assert result == Classification(
        failure_class="retryable",
        category="rate-limited",
        rule="http-rate-limited",
        exception_type="HTTPError",
        message="429 Too Many Requests for postgresql://bob:***@db/x",
    )


def test_message_is_capped() -> None:
    """A huge message is cut to MAX_MESSAGE_CHARS."""
    result = classify(ValueError("x" * 10_000))
    assert len(result.message) == MAX_MESSAGE_CHARS
    assert result.message.endswith("…")


def test_unprintable_exception() -> None:
    """An exception whose __str__ raises is still classified."""

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("boom")

    result = classify(Unprintable())
    assert (result.category, result.message) == (
        "unclassified",
        "<unprintable test_unprintable_exception.<locals>.Unprintable>",
    )


def test_raising_status_property_is_ignored() -> None:
    """A status property that raises is treated as absent, not as a crash."""

    class Weird(Exception):
        @property
        def status_code(self) -> int:
            raise RuntimeError("no response")

    assert classify(Weird("plain")).category == "unclassified"


@pytest.mark.parametrize(
    "exc",
    [
        HTTPError("x", response=SimpleNamespace(status_code=429)),  # requests/httpx: response.status_code
        HTTPError("x", status_code=" 429 "),  # numeric string with spaces
        HTTPError("x", status=429),  # aiohttp: status
        HTTPError("x", status_code=True, code=429),  # a bool is not a status; the next attribute is read
    ],
)
def test_http_status_sources(exc: BaseException) -> None:
    """The HTTP status is read from every documented attribute."""
    assert classify(exc).category == "rate-limited"


@pytest.mark.parametrize(
    "exc",
    [
        HTTPError("x", status_code=42),  # out of the HTTP range
        HTTPError("x", status_code="429a"),  # not numeric
        HTTPError("x", code=lambda: 429),  # gRPC-style method, not a value
    ],
)
def test_not_an_http_status(exc: BaseException) -> None:
    """Values that are not HTTP statuses are ignored."""
    assert classify(exc).category == "unclassified"


@pytest.mark.parametrize(
    "exc",
    [
        HTTPError("x", pgcode="40P01"),  # psycopg2
        HTTPError("x", diag=SimpleNamespace(sqlstate="40P01")),  # psycopg 3 diagnostics
        HTTPError("x", sqlstate="40p01"),  # lower case
    ],
)
def test_sqlstate_sources(exc: BaseException) -> None:
    """The SQLSTATE is read from sqlstate, pgcode and diag.sqlstate."""
    assert classify(exc).category == "deadlock"


def test_user_rules_come_first() -> None:
    """A user rule beats the defaults, even a structured one."""
    rule = HttpStatus(404, "retryable", "eventually-consistent", name="lake-404")
    result = classify(http(404), rules=[rule])
    assert (result.failure_class, result.category, result.rule) == (
        "retryable",
        "eventually-consistent",
        "lake-404",
    )


def test_first_user_rule_wins() -> None:
    """Among user rules the first match wins."""
    rules = [MessagePattern("quota", "poison", "quota"), MessagePattern("quota", "retryable", "other")]
    assert classify(Exception("quota hit"), rules=rules).category == "quota"


def test_cause_is_looked_at() -> None:
    """A wrapper with an unhelpful message is classified by its __cause__."""
    try:
        try:
            raise http(404, "404 Client Error")
        except HTTPError as inner:
            raise RuntimeError("task failed") from inner
    except RuntimeError as outer:
        result = classify(outer)
    assert (result.category, result.exception_type) == ("not-found", "HTTPError")


def test_outer_exception_first() -> None:
    """The outer exception is classified before its cause."""
    outer = AirflowTaskTimeout("Timeout")
    outer.__cause__ = http(429)
    assert classify(outer).category == "task-timeout"


def test_context_when_no_cause() -> None:
    """Without a cause, the implicit __context__ is looked at."""
    try:
        try:
            raise ConnectionResetError("reset")
        except ConnectionResetError:
            raise RuntimeError("cleanup failed")  # noqa: B904 - the implicit context is the point
    except RuntimeError as outer:
        assert classify(outer).category == "connection-failed"


def test_suppressed_context_is_ignored() -> None:
    """``raise ... from None`` hides the context from classification too."""
    try:
        try:
            raise ConnectionResetError("reset")
        except ConnectionResetError:
            raise RuntimeError("cleanup failed") from None
    except RuntimeError as outer:
        assert classify(outer).category == "unclassified"


def test_cyclic_chain_terminates() -> None:
    """A cause cycle is walked once."""
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first
    assert exception_chain(first) == [first, second]
    assert classify(first).category == "unclassified"


def test_exception_type_by_class_and_qualified_name() -> None:
    """ExceptionType matches a class (subclasses included) or a module-qualified name."""
    by_class = ExceptionType(LookupError, "poison", "lookup")
    by_name = ExceptionType("warehouse.errors.NoSuchTable", "poison", "no-table")
    assert classify(KeyError("k"), rules=[by_class]).category == "lookup"
    assert classify(NoSuchTable("t"), rules=[by_name]).category == "no-table"
    assert classify(named("other.NoSuchTable")("t"), rules=[by_name]).category != "no-table"


def test_message_regex() -> None:
    """A compiled regex is searched in the lower-cased message."""
    rule = MessagePattern(re.compile(r"quota \d+ exceeded"), "retryable", "quota")
    assert classify(Exception("Quota 7 exceeded"), rules=[rule]).category == "quota"


def test_all_of_composes() -> None:
    """AllOf matches only when every part matches."""
    rule = AllOf(
        [ExceptionType("OperationalError", "retryable", "x"), MessagePattern("ssl", "retryable", "x")],
        "retryable",
        "ssl-handshake",
    )
    operational = named("psycopg.OperationalError")
    assert classify(operational("SSL SYSCALL error"), rules=[rule]).category == "ssl-handshake"
    assert classify(operational("other"), rules=[rule]).category == "unclassified"


@pytest.mark.parametrize(
    "build",
    [
        lambda: HttpStatus(404, "fatal", "x"),  # type: ignore[arg-type]  # unknown failure class
        lambda: HttpStatus(404, "poison", "Not Found"),  # category not kebab-case
        lambda: HttpStatus(99, "poison", "x"),  # not an HTTP status
        lambda: HttpStatus([], "poison", "x"),  # no codes
        lambda: SqlState("4000", "poison", "x"),  # neither a class nor a code
        lambda: MessagePattern("", "poison", "x"),  # empty substring matches everything
        lambda: ExceptionType(int, "poison", "x"),  # type: ignore[arg-type]  # not an exception class
        lambda: AllOf([], "poison", "x"),  # nothing to combine
    ],
)
def test_rule_validation(build: object) -> None:
    """Malformed rules are refused when built."""
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


def test_fingerprint_ignores_volatile_details() -> None:
    """Same root cause on different days, ids and counts: same fingerprint."""
    first = classify(NoSuchTable("table 'sales_20261129' not found at 2026-11-29T03:00:00Z (job 7f3a9b2c11)"))
    second = classify(
        NoSuchTable("table 'sales_20261130' not found at 2026-11-30T03:00:01Z (job 0c1d2e3f44)")
    )
    assert fingerprint(first) == fingerprint(second)
    assert len(fingerprint(first)) == 16
    assert fingerprint(first) != fingerprint(classify(NoSuchTable("view not found")))


def test_normalise_message() -> None:
    """Timestamps, UUIDs, quoted literals, hex ids and numbers become placeholders."""
    text = 'run 123e4567-e89b-12d3-a456-426614174000 at 2026-11-30 10:05:00+00:00 read "x" 0xdeadbeef 17 rows'
    assert normalise_message(text) == "run <uuid> at <ts> read <str> <hex> <n> rows"

"""The built-in classification rules, in the order they are checked (docs/CLASSIFICATION.md lists them).

Order matters: the first match wins. Structured facts (a service's error code, the HTTP status,
the SQLSTATE) come first; then the specific type and message rules before the broad ones, so
that a connect timeout (the request never left) is retryable while any other timeout is of
unknown outcome, a DNS "host not found" is not taken for a poison "not found", and a poison
message such as "permission denied" inside a connection error is not swallowed by the
connection rules. Exception types are named, never imported: the policy core imports no client
library (and ``AirflowTaskTimeout`` lives in ``airflow.sdk.exceptions`` in 3.3).
"""

from __future__ import annotations

from airflow_retry_provider.policy.engine import pattern
from airflow_retry_provider.policy.rules import (
    ErrorCode,
    ExceptionType,
    HttpStatus,
    MessagePattern,
    Rule,
    SqlState,
)

DEFAULT_RULES: tuple[Rule, ...] = (
    # the breaker's own exception (a task held past its dependency's max_hold_seconds): first, so
    # its text, which names DAGs and tasks, is never read by a message rule
    ExceptionType("DependencyOutage", "poison", "dependency-outage"),
    # service error codes (botocore's ClientError): more precise than the HTTP status beside them
    # (AWS answers a throttled call with 400)
    ErrorCode(
        (
            "ThrottlingException",
            "Throttling",
            "ThrottledException",
            "TooManyRequestsException",
            "RequestLimitExceeded",
            "RequestThrottled",
            "RequestThrottledException",
            "ProvisionedThroughputExceededException",
            "SlowDown",
            "BandwidthLimitExceeded",
        ),
        "retryable",
        "rate-limited",
    ),
    ErrorCode(
        ("InternalError", "InternalFailure", "InternalServerError", "ServiceUnavailable"),
        "retryable",
        "server-error",
    ),
    ErrorCode(
        (
            "InvalidClientTokenId",
            "UnrecognizedClientException",
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "ExpiredToken",
            "ExpiredTokenException",
        ),
        "poison",
        "auth-failed",
    ),
    ErrorCode(
        ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"),
        "poison",
        "permission-denied",
    ),
    ErrorCode(
        ("NoSuchKey", "NoSuchBucket", "NoSuchEntity", "ResourceNotFoundException"), "poison", "not-found"
    ),
    ErrorCode(
        (
            "ValidationException",
            "ValidationError",
            "InvalidParameterValue",
            "InvalidParameterException",
            "InvalidArgument",
            "MalformedXML",
        ),
        "poison",
        "invalid-request",
    ),
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
    SqlState("23", "poison", "integrity"),
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
    # integrity violations the driver raised without a SQLSTATE we could read
    # (sqlite3, SQLAlchemy, psycopg2 and psycopg all name them IntegrityError)
    ExceptionType("IntegrityError", "poison", "integrity"),
    # deterministic bad input: the same payload fails the same way
    ExceptionType(
        ("JSONDecodeError", "UnicodeDecodeError", "UnicodeEncodeError", "ValidationError"),
        "poison",
        "invalid-input",
    ),
    MessagePattern(
        (
            "unsupported schema",
            "invalid input",
            # what ValueError says while parsing: int(), float(), strptime, fromisoformat, UUID
            "invalid literal for",
            "could not convert string to",
            "does not match format",
            "unconverted data remains",
            "invalid isoformat string",
            "badly formed hexadecimal uuid string",
        ),
        "poison",
        "invalid-input",
    ),
    # programming errors: the same code on the same input fails again
    ExceptionType(
        (
            "TypeError",
            "KeyError",
            "AttributeError",
            "NameError",
            "ZeroDivisionError",
            "ImportError",
            "NotImplementedError",
            "AssertionError",
            "SchemaError",
        ),
        "poison",
        "code-error",
    ),
    # invalid URLs and request parameters (requests, httpx, urllib3, botocore)
    ExceptionType(
        (
            "MissingSchema",
            "InvalidSchema",
            "InvalidURL",
            "URLRequired",
            "UnsupportedProtocol",
            "LocationParseError",
            "ParamValidationError",
        ),
        "poison",
        "invalid-request",
    ),
    MessagePattern(("unknown url type", "no scheme supplied", "invalid url"), "poison", "invalid-request"),
    # poison by type and by message
    ExceptionType(("NoCredentialsError", "PartialCredentialsError"), "poison", "auth-failed"),
    ExceptionType("PermissionError", "poison", "permission-denied"),
    ExceptionType(("FileNotFoundError", "NoSuchTableError", "NoSuchColumnError"), "poison", "not-found"),
    MessagePattern(
        pattern(
            r"exceed\w*.{0,60}(bytes[ _-]?billed|cost (limit|ceiling))"
            r"|(bytes[ _-]?billed|cost (limit|ceiling)).{0,60}exceed",
            literals=("exceed",),  # in both branches: a message without it is not searched
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

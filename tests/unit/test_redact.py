"""Redaction of secrets in messages and reasons."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_retry_provider.policy import redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://user:SECRET@host:5432/db", "postgresql://user:***@host:5432/db"),  # password in a URI
        ("https://:tok3n@api.example/v1", "https://:***@api.example/v1"),  # URI with an empty user
        ("host=db password=hunter2 user=bob", "host=db password=*** user=bob"),  # libpq keyword DSN
        ("Server=x;Uid=bob;Pwd=hunter2;", "Server=x;Uid=bob;Pwd=***;"),  # ODBC connection string
        ("GET /v1?token=abc123&page=2", "GET /v1?token=***&page=2"),  # query-string token
        ("api_key=AbC-123", "api_key=***"),  # API key
        ('{"api_key": "abc def", "x": 1}', '{"api_key": "***", "x": 1}'),  # JSON, quoted value with a space
        ("client_secret='s3cr3t'", "client_secret='***'"),  # single-quoted value
        ("secret=abc", "secret=***"),  # bare secret
        ("X-Api-Key: 12345", "X-Api-Key: ***"),  # header form
        ("db_password: hunter2", "db_password: ***"),  # YAML-ish key with a prefix
        ("Authorization: Bearer eyJabc.def.ghi", "Authorization: Bearer ***"),  # bearer header
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),  # basic auth header
        ("sent bearer abcdefgh12345678 to api", "sent bearer *** to api"),  # bearer token in prose
        ("key AKIAIOSFODNN7EXAMPLE used", "key *** used"),  # AWS access key id
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
            "aws_secret_access_key = ***",
        ),  # AWS secret
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-nature ok", "jwt *** ok"),  # JSON Web Token
        ("ghp_" + "a" * 36 + " leaked", "*** leaked"),  # GitHub token
        (
            'password authentication failed for user "bob"',
            'password authentication failed for user "bob"',
        ),  # no value
        ("table x not found", "table x not found"),  # nothing secret
        ("https://example.com:443/a@b", "https://example.com:443/a@b"),  # a port is not a password
    ],
)
def test_redact(text: str, expected: str) -> None:
    """Secrets are replaced by *** and the rest of the text is kept."""
    assert redact(text) == expected


@given(st.text(alphabet="ab:/@=&; '\"passwordtokenBearer\n", max_size=60))
def test_redact_is_idempotent(text: str) -> None:
    """Redacting twice changes nothing more."""
    once = redact(text)
    assert redact(once) == once


@given(st.from_regex(r"[A-Za-z0-9]{8,20}", fullmatch=True))
def test_password_never_survives(secret: str) -> None:
    """Whatever the password, it is gone from a URI and from a keyword DSN."""
    secret = f"Z9{secret}"  # "Z9" appears nowhere else in the text
    assert secret not in redact(f"postgresql://bob:{secret}@db/x").split("@")[0]
    assert secret not in redact(f"host=db password={secret} dbname=x")

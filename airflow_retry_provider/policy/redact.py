"""Remove secrets from text before it is stored, logged or shown (retry reasons, dead letters).

Redaction errs on the side of hiding too much: a value after ``token=`` is hidden even when it
was harmless. Each secret is replaced by ``***``; the text around it is kept.
"""

from __future__ import annotations

import re

MASK = "***"

# scheme://user:password@host -> scheme://user:***@host
_URI_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s/]+)(?=@)")

# Authorization: Bearer abc / Authorization: Basic abc / authorization=abc
_AUTHORIZATION = re.compile(
    r"(?P<head>\bauthorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?)(?P<secret>[^\s\"',;]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<head>\bbearer\s+)(?P<secret>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)

# password=abc, "api_key": "abc", db_password: 'abc', X-Api-Key: abc
_KEY_VALUE = re.compile(
    r"(?P<head>\b[\w-]*(?:password|passwd|pwd|token|api[_-]?key|secret|access[_-]?key|private[_-]?key|credentials?)"
    r"[\w-]*[\"']?\s*[:=]\s*)"
    r"(?P<secret>\"[^\"]*\"|'[^']*'|[^\s&;,\"')\]}]+)",
    re.IGNORECASE,
)

# secrets recognisable on their own
_STANDALONE = re.compile(
    r"\b(?:"
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}"  # AWS access key id
    r"|eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"  # JSON Web Token
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub token
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack token
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|sk-[A-Za-z0-9_-]{20,}"  # API secret keys in the sk-... style
    r")"
)


def _mask_secret(match: re.Match[str]) -> str:
    secret = match.group("secret")
    if len(secret) >= 2 and secret[0] == secret[-1] and secret[0] in "\"'":
        return f"{match.group('head')}{secret[0]}{MASK}{secret[0]}"
    return f"{match.group('head')}{MASK}"


_KEY_WORDS = ("pass", "pwd", "token", "key", "secret", "credential")


def redact(text: str) -> str:
    """Return ``text`` with passwords, tokens, keys and credentials in URIs replaced by ``***``.

    Each pattern runs only when the text holds the literal it needs (``://``, ``authorization``,
    ``bearer``, a key word): a plain error message costs a few substring checks.
    """
    lowered = text.lower()
    if "://" in text:
        text = _URI_PASSWORD.sub(_mask_secret, text)
    if "authorization" in lowered:
        text = _AUTHORIZATION.sub(_mask_secret, text)
    if "bearer" in lowered:
        text = _BEARER.sub(_mask_secret, text)
    for word in _KEY_WORDS:
        if word in lowered:
            text = _KEY_VALUE.sub(_mask_secret, text)
            break
    return _STANDALONE.sub(MASK, text)

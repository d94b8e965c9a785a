"""A short, stable fingerprint of a failure: same root cause, same fingerprint.

The message is normalised first, so that two runs failing for the same reason on different
dates, with different ids or different row counts, group together.
"""

from __future__ import annotations

import hashlib
from typing import Any

from airflow_retry_provider.policy.classify import Classification
from airflow_retry_provider.policy.engine import Pattern, pattern

FINGERPRINT_CHARS = 16
"""Length of the hex digest returned by :func:`fingerprint` (64 bits)."""


def _hex(match: Any) -> str:
    """``<hex>`` for a hex id (``0x...``, or 8+ hex digits with a digit among them); a word is kept."""
    text: str = match.group(0)
    return "<hex>" if text[:2].lower() == "0x" or any(c.isdigit() for c in text) else text


# (RE2 pattern, placeholder), applied in this order: the most specific shapes first.
_NORMALISATIONS: tuple[tuple[Pattern, object], ...] = (
    (
        pattern(
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
            ignore_case=True,
        ),
        "<ts>",
    ),
    (
        pattern(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", ignore_case=True),
        "<uuid>",
    ),
    (pattern(r"\"[^\"]*\"|'[^']*'|`[^`]*`"), "<str>"),
    (pattern(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{8,}\b", ignore_case=True), _hex),
    (pattern(r"\d+"), "<n>"),
    (pattern(r"\s+"), " "),
)


def normalise_message(message: str) -> str:
    """Replace timestamps, UUIDs, quoted literals, hex ids and numbers by placeholders."""
    for regex, placeholder in _NORMALISATIONS:
        message = regex.sub(placeholder, message)  # type: ignore[arg-type]
    return message.strip()


def fingerprint(classification: Classification) -> str:
    """A 16-character hex digest of the class, category, exception type and normalised message."""
    parts = (
        classification.failure_class,
        classification.category,
        classification.exception_type,
        normalise_message(classification.message),
    )
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:FINGERPRINT_CHARS]

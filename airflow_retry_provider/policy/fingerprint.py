"""A short, stable fingerprint of a failure: same root cause, same fingerprint.

The message is normalised first, so that two runs failing for the same reason on different
dates, with different ids or different row counts, group together.
"""

from __future__ import annotations

import hashlib
import re

from airflow_retry_provider.policy.classify import Classification

FINGERPRINT_CHARS = 16
"""Length of the hex digest returned by :func:`fingerprint` (64 bits)."""

# (pattern, placeholder), applied in this order: the most specific shapes first.
_NORMALISATIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
            re.IGNORECASE,
        ),
        "<ts>",
    ),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE),
        "<uuid>",
    ),
    (re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`"), "<str>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b", re.IGNORECASE), "<hex>"),
    (re.compile(r"\d+"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def normalise_message(message: str) -> str:
    """Replace timestamps, UUIDs, quoted literals, hex ids and numbers by placeholders."""
    for pattern, placeholder in _NORMALISATIONS:
        message = pattern.sub(placeholder, message)
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

"""Airflow's secrets masker over text the provider has already redacted.

The provider's own :func:`~airflow_retry_provider.policy.redact` knows how secrets look; Airflow's
masker knows which values are secrets here (connection passwords, masked Variables, values a
task registered with ``mask_secret``). Every text that leaves a task (the retry reason stored on
the task instance, a dead letter, an alert, a log line) passes through both.
"""

from __future__ import annotations


def mask(text: str) -> str:
    """``text`` with every secret Airflow's masker knows replaced by ``***`` (best effort, never raises).

    The masker is asked on every call: ``mask_secret`` may register a value at any moment.
    """
    try:
        from airflow.sdk._shared.secrets_masker import redact

        masked = redact(text)
        return str(masked) if masked is not None else ""
    except Exception:  # the masker is best effort here; our own redaction already ran
        return text

"""What the lineage facets say of one try, as plain JSON-ready dicts (no OpenLineage, no I/O).

Each function takes what the task process already holds: the retry policy's
:class:`~airflow_retry_provider.retry_policy.Evaluation` of the try, the letter the failure callback
filed, the replay the try's outcome closed (``dlq.filed_letter``, ``dlq.closed_replay``), the
breaker's verdict. Every text goes through the provider's redaction and Airflow's masker
(:func:`safe`), as on every other surface.
"""

from __future__ import annotations

from typing import Any

from airflow_retry_provider.alerts.messages import PLUGIN_PREFIX
from airflow_retry_provider.masking import mask
from airflow_retry_provider.policy import Retry, redact
from airflow_retry_provider.policy.text import storable

MAX_TEXT_CHARS = 500
"""Every text of a facet is cut to this, like a retry reason."""

RETRY = "retry"
DEAD_LETTER = "dead letter"


def safe(text: Any) -> str:
    """``text`` redacted, masked, storable and cut to :data:`MAX_TEXT_CHARS`."""
    return storable(mask(redact(str(text))))[:MAX_TEXT_CHARS]


def letter_ref(letter_id: int, base_url: str) -> dict[str, Any]:
    """A letter: its id and its page in the plugin."""
    return {"id": int(letter_id), "url": f"{base_url}{PLUGIN_PREFIX}/letters/{int(letter_id)}"}


def failure_facts(
    evaluation: Any, policy: Any, letter_id: int | None, base_url: str
) -> dict[str, Any] | None:
    """A failed try: class, category, rule, the deciding policy, attempt N of M, the delay or the letter.

    ``evaluation`` is the policy's ``Evaluation`` of the try (None when it made none: then only a
    letter, when there is one, is said). A try with a letter is a dead letter whatever the
    decision said (a retry Airflow had no attempt left for becomes an ``exhausted`` letter).
    """
    if evaluation is None:
        return None
    classification, decision = evaluation.classification, evaluation.decision
    facts: dict[str, Any] = {
        "failureClass": classification.failure_class,
        "category": safe(classification.category),
        "rule": safe(classification.rule),
        "policy": safe(type(policy).__name__),
        "attempt": int(evaluation.attempt),
        "maxAttempts": int(evaluation.max_attempts),
    }
    profile = getattr(getattr(policy, "profile", None), "name", None)
    if profile:
        facts["profile"] = safe(profile)
    if isinstance(decision, Retry) and letter_id is None:
        facts["outcome"] = RETRY
        facts["delaySeconds"] = decision.delay.total_seconds()
        facts["retryAt"] = decision.not_before.isoformat()
    else:
        facts["outcome"] = DEAD_LETTER
    if letter_id is not None:
        facts["letter"] = letter_ref(letter_id, base_url)
    return facts


def letter_only_facts(letter_id: int, base_url: str) -> dict[str, Any]:
    """A try filed as a letter the policy did not decide (another policy, or Airflow's own retries ran out)."""
    return {"outcome": DEAD_LETTER, "letter": letter_ref(letter_id, base_url)}


def replay_facts(resolved: Any, run_id: str, base_url: str) -> dict[str, Any]:
    """A try that ran because of a replay (a ``dlq.ClosedReplay``): the letter, job, actor, fix and the try it replays."""
    facts: dict[str, Any] = {
        "letter": letter_ref(resolved.letter_id, base_url),
        "replaysRunId": safe(run_id),
        "replaysTryNumber": int(resolved.try_number),
    }
    if resolved.replay_id is not None:
        facts["replayId"] = int(resolved.replay_id)
    if resolved.job_id is not None:
        facts["jobId"] = int(resolved.job_id)
    if resolved.actor:
        facts["actor"] = safe(resolved.actor)
    if resolved.fix_version:
        facts["fixVersion"] = safe(resolved.fix_version)
    return facts


def hold_facts(dependency: str, verdict: Any) -> dict[str, Any] | None:
    """A try the breaker held (``breaker.store.Verdict`` of kind ``hold``): the dependency and the hold."""
    admission: Any = getattr(verdict, "admission", None)
    if getattr(admission, "kind", None) != "hold":
        return None
    facts: dict[str, Any] = {"dependency": safe(dependency), "expired": bool(verdict.expired)}
    if verdict.held_since is not None:
        facts["heldSince"] = verdict.held_since.isoformat()
    if admission.reason:
        facts["reason"] = safe(admission.reason)
    return facts


def retry_facts(
    try_number: int, max_tries: int | None, original_run_id: str | None, previous_run_id: str | None
) -> dict[str, Any]:
    """The try as OpenLineage's proposed retry facet (#4517) says it."""
    facts: dict[str, Any] = {"try_number": int(try_number)}
    if max_tries is not None:
        facts["max_tries"] = int(max_tries)
        facts["retries_left"] = max(0, int(max_tries) + 1 - int(try_number))
    if try_number > 1:
        facts["original_run_id"] = original_run_id
        facts["previous_run_id"] = previous_run_id
    return {k: v for k, v in facts.items() if v is not None}

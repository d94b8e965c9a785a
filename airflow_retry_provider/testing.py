"""A switch for your own tests: every decision and letter as in production, the waits scaled down.

``dag.test()`` honours the delay a retry policy chooses, so a DAG under the ``report`` profile waits
its real 5-minute backoff between tries. Inside :func:`testing_delays` each delay a
``ClassifiedRetryPolicy`` decides is multiplied by ``scale`` (and held under ``at_most``) on its way
to Airflow; what is decided (retry or dead letter, the class, the rule, the attempt, the deadline
check, the reason text with the real delay) does not change. Like stamina's ``set_testing``::

    from airflow_retry_provider import testing_delays

    with testing_delays():  # 5 min -> 0.3 s
        run = dag.test()

The process-wide switch is meant for tests: it is not thread-safe and does nothing in another process
(a real scheduler). docs/TESTING.md shows it with a pytest fixture and the log lines of each decision.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from airflow_retry_provider.policy.fields import show

__all__ = ["DEFAULT_AT_MOST", "DEFAULT_SCALE", "scaled_delay", "testing_delays"]

DEFAULT_SCALE = 0.001  # 5 min -> 0.3 s, 1 h -> 3.6 s
DEFAULT_AT_MOST = timedelta(seconds=1)

log = logging.getLogger(__name__)


def scaled_delay(delay: timedelta, scale: float, at_most: timedelta | None) -> timedelta:
    """``delay * scale``, no longer than ``at_most`` (when given), whole milliseconds, never negative."""
    scaled = timedelta(milliseconds=int(delay / timedelta(milliseconds=1) * scale))
    if at_most is not None:
        scaled = min(scaled, at_most)
    return max(scaled, timedelta(0))


def _check(scale: float, at_most: timedelta | None) -> None:
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 <= scale <= 1:
        raise ValueError(f"testing_delays: scale must be a number from 0 to 1, got {scale!r}")
    if at_most is not None and (not isinstance(at_most, timedelta) or at_most < timedelta(0)):
        raise ValueError(f"testing_delays: at_most must be a timedelta >= 0 or None, got {show(at_most)}")


@contextmanager
def testing_delays(
    scale: float = DEFAULT_SCALE, *, at_most: timedelta | None = DEFAULT_AT_MOST
) -> Iterator[None]:
    """Inside the block, every retry a ``ClassifiedRetryPolicy`` decides waits ``delay * scale``, at most ``at_most``.

    :param scale: from 0 (retry at once) to 1 (the real delay); default 0.001.
    :param at_most: an upper bound on the scaled wait (default 1 s; None for none).

    Each scaled retry logs ``airflow-retry-provider (testing): retry in 0.3 s instead of 5m`` beside
    Airflow's ``Retry policy decision`` line. Blocks nest; the outer scale comes back on exit.
    """
    _check(scale, at_most)
    from airflow.sdk.definitions.retry_policy import RetryAction, RetryDecision

    from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy

    decided = ClassifiedRetryPolicy.evaluate  # the real decision, or an outer block's scaling of it

    def evaluate(
        self: ClassifiedRetryPolicy,
        exception: BaseException,
        try_number: int,
        max_tries: int,
        context: Any = None,
    ) -> RetryDecision:
        decision = decided(self, exception, try_number, max_tries, context)
        if decision.action != RetryAction.RETRY or decision.retry_delay is None:
            return decision
        wait = scaled_delay(decision.retry_delay, scale, at_most)
        log.info(
            "airflow-retry-provider (testing): retry in %s s instead of %s",
            f"{wait.total_seconds():g}",
            decision.retry_delay,
        )
        return RetryDecision(decision.action, wait, decision.reason)

    ClassifiedRetryPolicy.evaluate = evaluate  # type: ignore[method-assign]
    try:
        yield
    finally:
        ClassifiedRetryPolicy.evaluate = decided  # type: ignore[method-assign]

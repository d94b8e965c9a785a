"""A retry driven by the server's Retry-After, in a real Airflow: the scheduler stores and honours our delay."""

from __future__ import annotations

from datetime import timedelta

import pytest

pytestmark = pytest.mark.e2e


def test_a_429_with_retry_after_waits_what_the_server_asked(e2e):
    """Try 1 gets a 429 with Retry-After: 2; Airflow stores a 2 s delay and a reason naming Retry-After."""
    run = e2e.wait(e2e.trigger("e2e_retry_after"))
    assert run["state"] == "success"
    failed, retried = e2e.tries(run, "rate_limited_export")
    assert (failed["try_number"], retried["try_number"], retried["state"]) == (1, 2, "success")
    assert timedelta(seconds=failed["retry_delay_override"]) == timedelta(
        seconds=2
    )  # max(backoff < 0.5 s, 2 s)
    assert failed["retry_reason"].startswith("[attempt 2/3] [after ")
    assert (
        "] Retry-After 2 s: retryable/rate-limited: HTTPError: 429 Client Error: Too Many Requests"
        in (failed["retry_reason"])
    )
    assert retried["start_date"] >= failed["end_date"] + timedelta(seconds=2)
    assert e2e.letters("e2e_retry_after") == {}

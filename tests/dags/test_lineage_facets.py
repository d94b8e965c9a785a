"""The lineage facet function in Airflow's task runner (``dag.test()``), asked as the OpenLineage listener asks it.

A listener registered with the task SDK's listener manager calls ``run_facets`` where the
OpenLineage provider's does: in ``finalize``, after the task's callbacks, with the runtime task
instance. No OpenLineage transport is needed to see what the facets would carry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from airflow.sdk._shared.listeners import hookimpl
from airflow.sdk.listener import get_listener_manager
from openlineage.client.serde import Serde

from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.lineage import RETRY_FACET, RETRY_PROVIDER_FACET, run_facets
from tests.dag_files import breaker_dags

pytestmark = pytest.mark.dags


class FacetRecorder:
    """Asks ``run_facets`` on each failed try, as the OpenLineage listener does, and keeps the answers by task."""

    def __init__(self) -> None:
        self.failed: dict[str, dict[str, Any]] = {}

    @hookimpl
    def on_task_instance_failed(self, previous_state: Any, task_instance: Any, error: Any) -> None:
        facets = run_facets(task_instance, "failed")
        self.failed[task_instance.task_id] = {key: Serde.to_dict(facet) for key, facet in facets.items()}


@pytest.fixture
def recorder() -> Iterator[FacetRecorder]:
    """A FacetRecorder registered with the task SDK's listener manager for one test."""
    recorder = FacetRecorder()
    manager = get_listener_manager()
    manager.add_listener(recorder)
    yield recorder
    manager.pm.unregister(recorder)


def test_a_try_held_past_max_hold_names_the_dependency_the_hold_and_its_letter(
    airflow_db, provider_conn, recorder
):
    """A dependency down longer than max_hold_seconds: the FAIL facet says the hold expired, names the dependency and the letter."""
    BreakerStore.from_dsn(provider_conn).force(
        "positions_db", "open", "user:ana", "positions database failover"
    )
    breaker_dags.outage_letters_dag.test()
    letters = {
        letter.task_id: letter.id
        for letter in DeadLetterStore.from_dsn(provider_conn).list(
            LetterFilter(dag_id="breaker_outage_letters")
        )
    }
    facet = recorder.failed["load_positions"][RETRY_PROVIDER_FACET]
    assert facet["hold"]["dependency"] == "positions_db" and facet["hold"]["expired"] is True
    assert facet["failure"]["outcome"] == "dead letter"
    assert facet["failure"]["letter"]["id"] == letters["load_positions"]
    assert recorder.failed["load_positions"][RETRY_FACET]["retries_left"] == 0

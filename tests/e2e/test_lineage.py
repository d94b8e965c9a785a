"""Retries, dead letters and replays in OpenLineage events, on a real Airflow with the OpenLineage provider.

One stack whose OpenLineage listener writes every event to a file (the file transport) and calls
``airflow_retry_provider.lineage.run_facets``; each facet of ours is checked against the schema the
package publishes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.lineage import RETRY_FACET, RETRY_PROVIDER_FACET, SCHEMAS
from devstack.airflow import AirflowStack
from tests.conftest import running_airflow

pytestmark = pytest.mark.e2e

DAG_ID = "lineage_retry_and_letter"
SCHEMA_FILES = {
    RETRY_PROVIDER_FACET: "RetryProviderRunFacet-1.0.0.json",
    RETRY_FACET: "RetryRunFacet-1.0.0.json",
}


class Lineage:
    """The stack, its provider database and the events its OpenLineage listener wrote."""

    def __init__(self, stack: AirflowStack, provider_dsn: str, events: Path) -> None:
        self.stack = stack
        self.store = DeadLetterStore.from_dsn(provider_dsn)
        self.events_file = events

    def events(self, task_id: str) -> list[dict[str, Any]]:
        """The task's run events so far, in the order written."""
        if not self.events_file.exists():
            return []
        lines = self.events_file.read_text().splitlines()
        found = [json.loads(line) for line in lines if line.strip()]
        return [e for e in found if e.get("job", {}).get("name") == f"{DAG_ID}.{task_id}"]

    def wait_event(
        self, task_id: str, event_type: str, try_number: int, timeout: float = 120
    ) -> dict[str, Any]:
        """The ``event_type`` event of try ``try_number`` of the task, once written."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events(task_id):
                retry = event["run"]["facets"].get(RETRY_FACET, {})
                if event["eventType"] == event_type and retry.get("try_number") == try_number:
                    return event
            time.sleep(1)
        raise AssertionError(
            f"no {event_type} event of try {try_number} of {task_id}: {self.events(task_id)}"
        )

    def set_variable(self, key: str, value: str) -> None:
        try:
            self.stack.api("PATCH", f"/api/v2/variables/{key}", json={"key": key, "value": value})
        except RuntimeError:
            self.stack.api("POST", "/api/v2/variables", json={"key": key, "value": value})


@pytest.fixture(scope="module")
def lineage(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lineage]:
    """A real Airflow whose OpenLineage listener writes to a file and asks our facet function."""
    events = tmp_path_factory.mktemp("openlineage") / "events.jsonl"
    extra_env = {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(events), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__CUSTOM_RUN_FACETS": "airflow_retry_provider.lineage.run_facets",
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "e2e",
    }
    with running_airflow(
        pg_server, tmp_path_factory.mktemp("lineage-airflow-home"), "lineage", extra_env=extra_env
    ) as airflow:
        yield Lineage(airflow.stack, airflow.provider_dsn, events)


@pytest.fixture(scope="module")
def failed_run(lineage: Lineage) -> str:
    """One run of the DAG, finished: the retried task succeeded at try 2, the poison task is a letter."""
    lineage.stack.wait_for_dag(DAG_ID)
    lineage.stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json={"is_paused": False})
    run = lineage.stack.api("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", json={"logical_date": None})
    run_id = str(run["dag_run_id"])
    assert lineage.stack.wait_for_run(DAG_ID, run_id, timeout=240)["state"] == "failed"
    return run_id


def check_schema(event: dict[str, Any]) -> None:
    """Each facet of ours in ``event`` validates against its published schema."""
    facets = event["run"]["facets"]
    for key, file_name in SCHEMA_FILES.items():
        if key in facets:
            schema = json.loads((SCHEMAS / file_name).read_text())
            jsonschema.validate(facets[key], schema, format_checker=jsonschema.FormatChecker())
            assert facets[key]["_schemaURL"].endswith(f"/docs/lineage/{file_name}")


def test_a_retried_try_fails_with_its_class_delay_and_attempt(lineage: Lineage, failed_run: str):
    """Try 1 of the retried task: a FAIL event saying retryable/connection-failed, attempt 1 of 3, a 1 s retry."""
    failed = lineage.wait_event("export_positions", "FAIL", 1)
    check_schema(failed)
    facet = failed["run"]["facets"][RETRY_PROVIDER_FACET]["failure"]
    assert facet["failureClass"] == "retryable" and facet["category"] == "connection-failed", facet
    assert (facet["attempt"], facet["maxAttempts"], facet["outcome"]) == (1, 3, "retry")
    assert facet["delaySeconds"] == 1.0 and facet["policy"] == "ClassifiedRetryPolicy"
    assert facet["profile"] == "report" and "letter" not in facet
    retried = lineage.wait_event("export_positions", "COMPLETE", 2)
    check_schema(retried)
    retry = retried["run"]["facets"][RETRY_FACET]
    assert retry["previous_run_id"] == failed["run"]["runId"] == retry["original_run_id"]
    # report: 2 retries + the infra allowance's 2
    assert (retry["max_tries"], retry["retries_left"]) == (4, 3)
    assert RETRY_PROVIDER_FACET not in retried["run"]["facets"]  # a plain success: nothing to say


def test_a_poison_try_names_its_letter(lineage: Lineage, failed_run: str):
    """The poison task's FAIL event carries the letter's id and page, and says dead letter."""
    (letter,) = lineage.store.list(LetterFilter(dag_id=DAG_ID, task_id="load_positions"))
    event = lineage.wait_event("load_positions", "FAIL", 1)
    check_schema(event)
    facet = event["run"]["facets"][RETRY_PROVIDER_FACET]["failure"]
    assert (facet["failureClass"], facet["outcome"], facet["attempt"]) == ("poison", "dead letter", 1)
    assert facet["letter"]["id"] == letter.id
    assert facet["letter"]["url"].endswith(f"/retry-provider/letters/{letter.id}")
    assert (
        event["run"]["facets"][RETRY_FACET]["retries_left"] == 0
    )  # a dead letter: no retry, though Airflow had four


def test_the_replays_successful_run_carries_the_replay(lineage: Lineage, failed_run: str):
    """After the fix, a replay's COMPLETE event names the letter, the job, the actor, the fix and the try it replays."""
    (letter,) = lineage.store.list(LetterFilter(dag_id=DAG_ID, task_id="load_positions"))
    lineage.set_variable("lineage_fix_applied", "yes")
    body = {"ids": [letter.id], "reason": "positions_lineage created", "fix_version": "v2"}
    job = lineage.stack.api("POST", "/retry-provider/api/replays", json=body)
    event = lineage.wait_event("load_positions", "COMPLETE", 2, timeout=240)
    check_schema(event)
    replay = event["run"]["facets"][RETRY_PROVIDER_FACET]["replay"]
    assert replay["letter"]["id"] == letter.id and replay["jobId"] == job["id"]
    assert (replay["fixVersion"], replay["replaysRunId"], replay["replaysTryNumber"]) == ("v2", failed_run, 1)
    assert replay["actor"] == "admin"

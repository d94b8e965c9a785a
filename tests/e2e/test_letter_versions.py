"""Letters remember the DAG version that failed, in a real Airflow (issue 29 item 1).

The worker's callback records the task instance's ``dag_version`` UUID and bundle; the sweeper
files a letter no callback filed with the REST API's version number, and looks up the number of
the worker's letters; a version Airflow does not have stays unknown, and the sweep goes on.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.dlq.sweeper import number_versions
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER
from tests.e2e.conftest import E2E, sample_until
from tests.factories import new_letter
from tests.one_by_one import sweep

pytestmark = pytest.mark.e2e

CALLBACK_DAG = "dlq_sweeper_probe"  # poison, apply_profile: its failure callback files the letter
SWEEP_DAG = "dlq_sweep_target"  # no callback: only a sweep files its failure
VANISHED = "0195f3c2-0000-7000-8000-0000000000ff"


def _api(e2e: E2E) -> AirflowApi:
    return AirflowApi(ApiCredentials(e2e.stack.base_url, ADMIN_USER, ADMIN_PASSWORD))


def _failed_ti(e2e: E2E, dag_id: str, task_id: str) -> tuple[str, dict[str, Any]]:
    run = e2e.trigger(dag_id)
    assert e2e.wait(run, timeout=240)["state"] == "failed"
    ti = e2e.stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}/taskInstances/{task_id}")
    return str(run["dag_run_id"]), dict(ti["dag_version"])


def _letter(store: DeadLetterStore, dag_id: str, run_id: str) -> Any:
    (letter,) = [lt for lt in store.list(LetterFilter(dag_id=dag_id), limit=500) if lt.run_id == run_id]
    return letter


def test_the_callbacks_letter_holds_the_version_and_the_sweep_numbers_it(e2e: E2E):
    """The worker records the UUID and bundle Airflow ran; the sweep adds the number; an unknown version stays unknown."""
    store = DeadLetterStore.from_dsn(e2e.provider_dsn)
    run_id, version = _failed_ti(e2e, CALLBACK_DAG, "always_poison")
    mine = LetterFilter(dag_id=CALLBACK_DAG)
    sample_until(lambda: any(lt.run_id == run_id for lt in store.list(mine, limit=500)), timeout=60)
    letter = _letter(store, CALLBACK_DAG, run_id)
    assert (letter.dag_version_id, letter.bundle_name) == (version["id"], version["bundle_name"])
    assert letter.dag_version_number is None  # a worker knows the UUID, not the number
    # a letter naming a version Airflow does not have (deleted since), and one of a DAG Airflow never had
    store.file(new_letter(dag_id=CALLBACK_DAG, run_id=f"{run_id}-gone", dag_version_id=VANISHED), 3)
    store.file(new_letter(dag_id="dag_airflow_never_had", run_id="r1", dag_version_id=VANISHED), 3)
    with _api(e2e) as api:
        numbered, errors = number_versions(store, api)
    assert errors == [] and numbered >= 1
    letter = _letter(store, CALLBACK_DAG, run_id)
    assert letter.dag_version_number == version["version_number"]
    assert letter.version_label().startswith(f"v{version['version_number']}")
    for dag_id, gone_run in ((CALLBACK_DAG, f"{run_id}-gone"), ("dag_airflow_never_had", "r1")):
        gone = _letter(store, dag_id, gone_run)
        assert gone.dag_version_number is None and gone.version_label() == "version 0195f3c2 (number unknown)"


def test_the_sweepers_letter_holds_the_version_airflow_reports(e2e: E2E):
    """A failure no callback filed is filed by the sweep with the REST API's version id, number and bundle."""
    store = DeadLetterStore.from_dsn(e2e.provider_dsn)
    run_id, version = _failed_ti(e2e, SWEEP_DAG, "fails_without_a_letter")
    with _api(e2e) as api:
        report = sweep(store, api, [SWEEP_DAG], replay_cap=3, grace=timedelta(0))
    assert report.errors == ()
    letter = _letter(store, SWEEP_DAG, run_id)
    assert letter.filed_by == "sweeper"
    assert (letter.dag_version_id, letter.dag_version_number, letter.bundle_name, letter.bundle_version) == (
        version["id"],
        version["version_number"],
        version["bundle_name"],
        version["bundle_version"],
    )

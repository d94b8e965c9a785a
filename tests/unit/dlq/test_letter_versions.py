"""What a letter says about the DAG version it failed on (issue 29 item 1), from each source."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_retry_provider.dlq.callback import ran_version
from airflow_retry_provider.hooks.airflow_api import TaskInstanceRef
from airflow_retry_provider.plugin.queries import Group
from tests.factories import new_letter

UUID = "0195f3c2-6a1e-7c3d-9b1a-2f4e5d6c7b8a"


@pytest.mark.parametrize(
    ("fields", "label"),
    [
        ({}, "unknown"),  # filed before migration 0005: nothing is guessed
        ({"dag_version_id": UUID}, "version 0195f3c2 (number unknown)"),  # a worker's letter before the sweep
        ({"dag_version_id": UUID, "dag_version_number": 3}, "v3"),  # a local bundle has no version
        (
            {"dag_version_number": 5, "bundle_name": "dags", "bundle_version": "ab12cd34ef56789"},
            "v5 (bundle dags@ab12cd34ef56)",
        ),  # a git bundle: the commit, cut to 12
    ],
)
def test_the_version_label_says_only_what_was_recorded(fields, label):
    """The label names the number, or the UUID while the number is unknown, or says unknown."""
    assert new_letter(**fields).version_label() == label


def test_the_rest_api_task_instance_carries_its_dag_version():
    """A task instance of ``GET .../taskInstances`` gives the letter its version's id, number and bundle."""
    item = {
        "dag_id": "etl",
        "dag_run_id": "r1",
        "task_id": "load",
        "try_number": 2,
        "dag_version": {
            "id": UUID,
            "version_number": 4,
            "bundle_name": "dags",
            "bundle_version": "c0ffee",
            "dag_id": "etl",
        },
    }
    ti = TaskInstanceRef.from_json(item)
    assert ti.version_fields() == {
        "dag_version_id": UUID,
        "dag_version_number": 4,
        "bundle_name": "dags",
        "bundle_version": "c0ffee",
    }


def test_a_task_instance_whose_version_airflow_no_longer_has_names_none():
    """``dag_version: null`` (the version was deleted) records nothing rather than a guess."""
    ti = TaskInstanceRef.from_json(
        {"dag_id": "etl", "dag_run_id": "r1", "task_id": "load", "dag_version": None}
    )
    assert set(ti.version_fields().values()) == {None}


class _GitBundle:
    """A versioned bundle the task runner was not asked for a version: it reports its checkout."""

    name = "repo"
    version = None

    def get_current_version(self) -> str:
        return "9f8e7d6c"


class _BrokenBundle:
    name = "repo"
    version = None

    def get_current_version(self) -> str:
        raise OSError("checkout gone")


@pytest.mark.parametrize(
    ("ti", "expected"),
    [
        (  # the task runner's RuntimeTaskInstance with a git bundle
            SimpleNamespace(dag_version_id=UUID, bundle_instance=_GitBundle()),
            {"dag_version_id": UUID, "bundle_name": "repo", "bundle_version": "9f8e7d6c"},
        ),
        (  # a bundle asked for a version keeps it
            SimpleNamespace(dag_version_id=UUID, bundle_instance=SimpleNamespace(name="repo", version="v7")),
            {"dag_version_id": UUID, "bundle_name": "repo", "bundle_version": "v7"},
        ),
        (  # dag.test(): no bundle instance
            SimpleNamespace(dag_version_id=UUID),
            {"dag_version_id": UUID, "bundle_name": None, "bundle_version": None},
        ),
        (  # a bundle that cannot say: unknown, and the letter is still filed
            SimpleNamespace(dag_version_id=None, bundle_instance=_BrokenBundle()),
            {"dag_version_id": None, "bundle_name": "repo", "bundle_version": None},
        ),
    ],
)
def test_the_worker_records_what_its_task_instance_knows(ti, expected):
    """The callback reads the UUID and the bundle from the task instance and never raises."""
    assert ran_version(ti) == expected


def test_a_group_says_which_versions_its_letters_failed_on():
    """A root-cause group lists its versions and counts the letters that do not say."""
    base = {name: None for name in Group.__dataclass_fields__}
    assert Group(**{**base, "versions": [3, 4], "unknown_versions": 0}).failed_on() == "v3, v4"
    assert Group(**{**base, "versions": [3], "unknown_versions": 2}).failed_on() == "v3 + 2 unknown"
    assert Group(**{**base, "versions": [], "unknown_versions": 0}).failed_on() == "unknown"

"""The lineage facets (airflow_retry_provider/lineage/): what they say, their schemas, and the provider without OpenLineage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
from openlineage.client.serde import Serde

from airflow_retry_provider import ClassifiedRetryPolicy
from airflow_retry_provider.dlq import ClosedReplay
from airflow_retry_provider.lineage import RETRY_FACET, RETRY_PROVIDER_FACET, SCHEMAS, facts, run_facets
from airflow_retry_provider.lineage.facets import RetryProviderRunFacet, RetryRunFacet

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
BASE = "https://airflow.example.com"


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def _valid(facet: object, name: str) -> dict:
    """The facet as a lineage backend receives it, checked against its published schema."""
    body = Serde.to_dict(facet)
    jsonschema.validate(body, _schema(name), format_checker=jsonschema.FormatChecker())
    return body


def _evaluation(exception: BaseException, try_number: int = 1):
    policy = ClassifiedRetryPolicy("report", clock=lambda: NOW)
    ti = SimpleNamespace(dag_id="sales", run_id="r1", task_id="load", map_index=-1, try_number=try_number)
    context = {"ti": ti, "task": SimpleNamespace(retries=2), "data_interval_end": NOW}
    return policy, policy.assess(exception, try_number, 2, context)


@pytest.mark.parametrize("name", ["RetryProviderRunFacet-1.0.0.json", "RetryRunFacet-1.0.0.json"])
def test_the_docs_publish_the_packages_schemas(name):
    """docs/lineage/ holds the same schema the package ships, and its $id is where the facets point."""
    assert (REPO / "docs" / "lineage" / name).read_text() == (SCHEMAS / name).read_text()
    assert _schema(name)["$id"].endswith(f"/docs/lineage/{name}")


def test_a_retried_try_says_class_rule_attempt_and_delay():
    """A connection reset under `report`: retryable, attempt 1 of 3, a retry after the decided delay."""
    policy, evaluation = _evaluation(ConnectionResetError(104, "Connection reset by peer"))
    failure = facts.failure_facts(evaluation, policy, None, BASE)
    body = _valid(RetryProviderRunFacet(failure=failure), "RetryProviderRunFacet-1.0.0.json")["failure"]
    assert (body["failureClass"], body["category"], body["outcome"]) == (
        "retryable",
        "connection-failed",
        "retry",
    )
    assert (body["attempt"], body["maxAttempts"], body["profile"]) == (1, 3, "report")
    assert body["delaySeconds"] == evaluation.decision.delay.total_seconds() > 0


def test_a_retry_airflow_had_no_attempt_for_is_the_letter_filed():
    """A retry decision whose try was filed as a letter (Airflow's retries ran out) says dead letter and names it."""
    policy, evaluation = _evaluation(ConnectionResetError(104, "reset"))
    body = facts.failure_facts(evaluation, policy, 42, BASE)
    assert body["outcome"] == "dead letter" and "delaySeconds" not in body
    assert body["letter"] == {"id": 42, "url": f"{BASE}/retry-provider/letters/42"}


def test_a_replay_says_letter_job_actor_fix_and_the_try_it_replays_with_secrets_redacted():
    """The replay's facts pass the provider's redaction: a password in the fix version never reaches the event."""
    resolved = ClosedReplay(7, 1, replay_id=3, job_id=5, actor="ana", fix_version="v2 password=hunter2")
    body = facts.replay_facts(resolved, "manual__1", BASE)
    _valid(RetryProviderRunFacet(replay=body), "RetryProviderRunFacet-1.0.0.json")
    assert (body["jobId"], body["actor"], body["replaysRunId"], body["replaysTryNumber"]) == (
        5,
        "ana",
        "manual__1",
        1,
    )
    assert "hunter2" not in json.dumps(body)


def test_a_hold_names_the_dependency_and_the_hold():
    """A breaker's expired hold: the dependency, since when, and that it expired."""
    verdict = SimpleNamespace(
        admission=SimpleNamespace(kind="hold", reason="breaker open", until=None),
        held_since=NOW,
        expired=True,
    )
    body = facts.hold_facts("crm-api", verdict)
    _valid(RetryProviderRunFacet(hold=body), "RetryProviderRunFacet-1.0.0.json")
    assert body == {
        "dependency": "crm-api",
        "expired": True,
        "heldSince": NOW.isoformat(),
        "reason": "breaker open",
    }
    assert facts.hold_facts("crm-api", SimpleNamespace(admission=SimpleNamespace(kind="run"))) is None


@pytest.mark.parametrize(
    ("try_number", "max_tries", "expected"),
    [
        # the first try: nothing before it
        (1, 2, {"try_number": 1, "max_tries": 2, "retries_left": 2}),
        # the last try Airflow allows: no retry left, the first and previous tries named
        (
            3,
            2,
            {
                "try_number": 3,
                "max_tries": 2,
                "retries_left": 0,
                "original_run_id": "a",
                "previous_run_id": "b",
            },
        ),
    ],
)
def test_the_retry_facet_has_the_proposals_shape(try_number, max_tries, expected):
    """The #4517-shaped facet: try_number, max_tries, retries left, the first and previous try's run ids."""
    body = facts.retry_facts(try_number, max_tries, "a", "b")
    assert body == expected
    ids = {
        "original_run_id": "0190a1b2-0000-7000-8000-000000000001",
        "previous_run_id": "0190a1b2-0000-7000-8000-000000000002",
    }
    _valid(RetryRunFacet(**{**body, **{k: ids[k] for k in ids if k in body}}), "RetryRunFacet-1.0.0.json")


@pytest.mark.parametrize(
    "ti",
    [
        # an ORM task instance (scheduler, api-server): no task runner, nothing of ours ran
        SimpleNamespace(dag_id="d", run_id="r", task_id="t", try_number=1),
        # something that breaks on every attribute: the facet is left out, never raised
        object(),
    ],
)
def test_run_facets_never_raises_and_says_nothing_outside_the_task_runner(ti):
    """The function the OpenLineage listener calls returns {} where it has nothing to read."""
    assert run_facets(ti, "failed") == {}


BLOCKER = """
# OpenLineage as if not installed: its modules cannot be imported and its distributions are not
# listed (Airflow discovers providers by their entry points, so both must go).
import importlib.abc, importlib.metadata, sys

BLOCKED = ("openlineage", "airflow.providers.openlineage")


class _NoOpenLineage(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None


def _without_openlineage(module):
    discover = module.Distribution.discover.__func__

    def filtered(cls, **kwargs):
        for dist in discover(cls, **kwargs):
            if "openlineage" not in (dist.metadata["Name"] or "").lower():
                yield dist

    module.Distribution.discover = classmethod(filtered)


sys.meta_path.insert(0, _NoOpenLineage())
_without_openlineage(importlib.metadata)
try:
    import importlib_metadata
except ImportError:
    pass
else:
    _without_openlineage(importlib_metadata)
"""


def test_the_provider_imports_and_decides_without_openlineage(tmp_path):
    """With OpenLineage not importable, the provider, its plugin and its retry policy work, and the facet function says nothing."""
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    code = textwrap.dedent(
        """
        import airflow_retry_provider, airflow_retry_provider.plugin, airflow_retry_provider.lineage as lineage
        from types import SimpleNamespace
        from airflow_retry_provider import ClassifiedRetryPolicy
        try:
            import airflow.providers.openlineage
        except ModuleNotFoundError:
            pass
        else:
            raise SystemExit("the blocker did not block")
        from airflow.providers_manager import ProvidersManager
        assert "apache-airflow-providers-openlineage" not in ProvidersManager().providers
        decision = ClassifiedRetryPolicy("report").evaluate(PermissionError("access denied"), 1, 2)
        ti = SimpleNamespace(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
        print(decision.action.value, lineage.run_facets(ti, "failed"))
        """
    )
    paths = [str(tmp_path), *sys.path]
    env = {"PYTHONPATH": ":".join(p for p in paths if p), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "fail {}"


def test_openlineage_installed_without_a_transport_stays_off():
    """The test extra installs the OpenLineage provider; with no transport configured its plugin has no listener, so no event and no fork."""
    code = (
        "from airflow.providers.openlineage.plugins.openlineage import OpenLineageProviderPlugin as P; "
        "print(P.listeners)"
    )
    env = {k: v for k, v in os.environ.items() if "OPENLINEAGE" not in k.upper()}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_facets_keys():
    """The two facets are keyed as the docs show them."""
    assert (RETRY_PROVIDER_FACET, RETRY_FACET) == ("airflowRetryProvider", "retry")

"""Text PostgreSQL refuses never loses a letter, a ledger error or a sweep; the unfiled line tells the truth."""

from __future__ import annotations

import logging
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from airflow_retry_provider.dlq.callback import UNFILED_EVENT, build_letter, file_letter, sweeper_fate
from airflow_retry_provider.dlq.managed import MANAGED_TAG, SWEEP_VARIABLE, mark_managed
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.ledger import Ledger, WorkUnit, apply_ledger_schema
from airflow_retry_provider.maintenance.work_sweeper import decide
from airflow_retry_provider.policy.text import REPLACEMENT
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy
from devstack.postgres import free_port
from tests.integration.dlq import support

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=timezone.utc)
R = REPLACEMENT


def _context(exception: BaseException, params: dict[str, Any] | None = None, tags: set[str] | None = None):
    """An on_failure_callback context with a real policy that judged the try, its DAG carrying ``tags``."""
    policy = ClassifiedRetryPolicy("report")
    task = SimpleNamespace(retry_policy=policy, retries=2, task_id="load")
    ti = SimpleNamespace(dag_id="hostile", run_id="manual__1", task_id="load", map_index=-1, try_number=1)
    ti.max_tries = 2
    context = {
        "ti": ti,
        "task": task,
        "dag": SimpleNamespace(dag_id="hostile", tags=tags or set()),
        "exception": exception,
        "params": params or {},
        "data_interval_start": T0 - timedelta(days=1),
        "data_interval_end": T0,
    }
    policy.assess(exception, 1, 2, context)
    return context


def test_every_text_field_of_a_letter_is_stored_with_nul_and_surrogates_replaced(provider_conn):
    """NUL and lone surrogates in the message and in every id from params: the row is written, each replaced."""
    params = {"workspace_id": "ws\x00a", "code_version": "v\ud8001", "payload_ref": "s3://b/\x00k"}
    letter = build_letter(_context(ValueError("bad\x00input \udcff"), params))
    result = DeadLetterStore.from_dsn(provider_conn).file(letter, replay_cap=3)
    assert result.created
    (row,) = support.rows(provider_conn)
    assert f"bad{R}input" in row["message"] and f"bad{R}input" in row["reason"]
    assert (row["workspace_id"], row["payload_ref"]) == (f"ws{R}a", f"s3://b/{R}k")
    assert row["code_version"] in (f"v{R}1", "v?1")  # redaction may replace the surrogate first
    assert all("\x00" not in str(v) for v in row.values())


def test_the_store_files_a_letter_built_elsewhere_with_a_nul(provider_conn):
    """A letter not built by build_letter (sweeper, work sweeper, a caller) is made storable by the store itself."""
    letter = support.letter()
    hostile = type(letter)(**{**letter.as_params(), "message": "x\x00y", "run_id": "r\x00"})
    DeadLetterStore.from_dsn(provider_conn).file(hostile, replay_cap=3)
    (row,) = support.rows(provider_conn)
    assert (row["message"], row["run_id"]) == (f"x{R}y", f"r{R}")


def test_the_ledger_stores_an_error_and_a_result_holding_nul(pg_dsn):
    """Ledger.fail with a NUL in the error and complete with one in the result both write their row."""
    with psycopg.connect(pg_dsn) as conn:
        apply_ledger_schema(conn)
    ledger = Ledger.from_dsn(pg_dsn)
    failed = ledger.fail(ledger.claim("unit-a"), "remote said \x00 no \ud800")
    assert failed.error in (f"remote said {R} no {R}", f"remote said {R} no ?")  # ? if redaction replaced it
    done = ledger.complete(ledger.claim("unit-b"), {"note": "ok\x00"})
    assert done.result_ref == {"note": f"ok{R}"}


def test_the_work_sweeper_makes_a_remote_jobs_error_text_storable():
    """A remote job's error text with NUL becomes a storable reason for the unit and its letter."""
    unit = WorkUnit.from_row(
        {
            "work_unit_key": "k",
            "status": "running",
            "owner": "o",
            "owner_ti": "d/r/t/-1",
            "owner_try": 1,
            "claims": 1,
            "claimed_from": None,
            "remote_job_id": "j",
            "result_ref": None,
            "error": None,
            "claimed_at": None,
            "lease_expires_at": None,
            "finished_at": None,
            "dedup_expires_at": None,
        }
    )
    job = SimpleNamespace(state="failed", error="disk\x00full \udcff")
    action = decide(unit, 0, job, None, max_attempts=3, interval=30)
    assert action.kind == "fail" and action.detail.endswith(f"disk{R}full {R}")


@pytest.mark.parametrize(
    ("tags", "variable", "expected"),
    [
        (
            {MANAGED_TAG},
            None,
            f"the sweeper will file it (DAG 'hostile' is tagged '{MANAGED_TAG}')",
        ),  # tagged
        (
            set(),
            '["other", "hostile"]',
            "the sweeper will file it (DAG 'hostile' is listed in the Variable",
        ),  # listed
        (set(), '["other"]', "NO sweeper will file it: DAG 'hostile' is neither tagged"),  # neither: say so
        (
            set(),
            "[not json",
            "the sweeper will file it only if DAG 'hostile' is tagged",
        ),  # unreadable Variable
    ],
)
def test_the_unfiled_line_says_whether_a_sweeper_will_file_the_letter(
    caplog, monkeypatch, tags: set[str], variable: str | None, expected: str
):
    """With PostgreSQL down, the one unfiled line says what is true of this DAG and the sweeper."""
    if variable is not None:
        monkeypatch.setenv(f"AIRFLOW_VAR_{SWEEP_VARIABLE.upper()}", variable)
    context = _context(RuntimeError("relation x does not exist"), tags=tags)
    letter = build_letter(context)
    down = DeadLetterStore.from_dsn(f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere")
    with caplog.at_level(logging.ERROR):
        assert (
            file_letter(letter, down, 3, sleep=lambda _: None, swept=lambda: sweeper_fate(context, "hostile"))
            is None
        )
    (line,) = [r.getMessage() for r in caplog.records if UNFILED_EVENT in r.getMessage()]
    assert expected in line
    assert ("only record" in line) == (expected.startswith(("NO", "the sweeper will file it only")))


def test_the_unfiled_line_of_a_profiled_dag_parsed_in_the_task_says_the_sweeper_files_it(caplog, monkeypatch):
    """In the task, the DAG was parsed without the cluster policy's tag; its task files dead letters,
    so the dag-processor's copy is tagged and the sweeper will file it: the line says so, not "NO sweeper"."""
    from airflow_retry_provider.dlq.callback import file_dead_letter

    monkeypatch.setenv(f"AIRFLOW_VAR_{SWEEP_VARIABLE.upper()}", '["other"]')
    context = _context(RuntimeError("relation x does not exist"))
    context["task"].on_failure_callback = [print, file_dead_letter]
    context["dag"].tasks = [context["task"]]
    fate = sweeper_fate(context, "hostile")
    assert fate.startswith("the sweeper will file it (DAG 'hostile' applies a retry profile"), fate


DEFAULT_ARGS_DAG = """
import pendulum
from airflow.sdk import DAG, task
from airflow_retry_provider import apply_profile

with DAG("managed_by_default_args", schedule=None, start_date=pendulum.datetime(2026, 1, 1),
         default_args=apply_profile({"owner": "data"}, "report")):
    @task
    def load():
        pass
    load()

with DAG("managed_by_one_task", schedule=None, start_date=pendulum.datetime(2026, 1, 1), tags=["mine"]):
    @task
    def extract():
        pass
    @task
    def other():
        pass
    apply_profile(extract(), "pipeline")
    other()

with DAG("not_managed", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
    @task
    def plain():
        pass
    plain()
"""


def test_the_dag_processors_cluster_policy_tags_every_dag_apply_profile_configures(tmp_path: Path):
    """Parsed by Airflow's DagBag (the dag-processor's), both apply_profile forms get the sweeper's tag; others not."""
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "managed.py").write_text(textwrap.dedent(DEFAULT_ARGS_DAG))
    bag = DagBag(dag_folder=str(tmp_path), safe_mode=False)
    assert not bag.import_errors
    tags = {dag_id: set(dag.tags) for dag_id, dag in bag.dags.items()}
    assert tags == {
        "managed_by_default_args": {MANAGED_TAG},
        "managed_by_one_task": {"mine", MANAGED_TAG},
        "not_managed": set(),
    }


def test_mark_managed_leaves_a_dag_without_the_callback_untagged():
    """A DAG none of whose tasks files dead letters is not tagged (the sweeper would list it for nothing)."""
    dag = SimpleNamespace(tags=set(), tasks=[SimpleNamespace(on_failure_callback=[print])])
    assert mark_managed(dag) is False and dag.tags == set()

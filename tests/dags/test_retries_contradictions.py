"""Every ``retries`` that contradicts a retry profile fails the DAG file at parse, in Airflow's own DagBag.

The provider's cluster policy (entry point ``airflow.policy``) refuses the DAG wherever ``retries`` was set;
``apply_profile`` refuses what it sees itself. Either way the file gets an import error naming the task,
both values and the fix.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.dags

HEADER = """
from datetime import datetime
from airflow.sdk import DAG, BaseOperator, TaskGroup, task
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy, apply_profile

class Sleepy(BaseOperator):
    def __init__(self, **kwargs):
        kwargs.setdefault("retries", 7)  # an operator whose class sets its own default
        super().__init__(**kwargs)

    def execute(self, context):
        return None

class Echo(BaseOperator):
    def __init__(self, *, x, **kwargs):
        super().__init__(**kwargs)
        self.x = x

    def execute(self, context):
        return self.x

with DAG("contradiction", schedule=None, start_date=datetime(2026, 1, 1),
         default_args=apply_profile({"owner": "data"}, "report")):
"""


def _parse(tmp_path: Path, body: str):
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "contradiction.py").write_text(HEADER + textwrap.indent(textwrap.dedent(body), "    "))
    return DagBag(dag_folder=str(tmp_path), safe_mode=False)


@pytest.mark.parametrize(
    ("body", "task_id", "retries"),
    [
        # the case: the DAG's profile in default_args, a hand-set retries on the task
        ("@task(retries=5)\ndef load(): pass\nload()\n", "load", 5),
        # retries=0 is a contradiction too: Airflow would stop before the policy's second attempt
        ("@task(retries=0)\ndef load(): pass\nload()\n", "load", 0),
        # a classic operator: retries as its argument
        ("Echo(task_id='echo', x=1, retries=5)\n", "echo", 5),
        # default_args of a task group, below the DAG's profile: they win over the DAG's for its tasks
        ("with TaskGroup('g', default_args={'retries': 6}):\n    Echo(task_id='echo', x=1)\n", "g.echo", 6),
        # default_args passed to the task itself
        ("Echo(task_id='echo', x=1, default_args={'retries': 3})\n", "echo", 3),
        # a mapped operator: retries set in partial() (2: the sizing before the infra allowance)
        ("Echo.partial(task_id='echo', retries=2).expand(x=[1, 2])\n", "echo", 2),
        # a mapped @task: retries set by override()
        ("@task\ndef load(x): pass\nload.override(retries=1).expand(x=[1, 2])\n", "load", 1),
        # the operator's class sets its own default retries
        ("Sleepy(task_id='nap')\n", "nap", 7),
        # a policy passed directly with a profile: its ceiling (and allowance) holds too
        (
            "@task(retries=1, retry_policy=ClassifiedRetryPolicy('dashboard'))\ndef load(): pass\nload()\n",
            "load",
            1,
        ),
    ],
)
def test_a_contradicting_retries_is_an_import_error_naming_task_values_and_fix(
    tmp_path, body, task_id, retries
):
    """The DAG is not loaded; its file's import error names the task, the hand-set and the required retries."""
    bag = _parse(tmp_path, body)
    assert "contradiction" not in bag.dags
    (error,) = bag.import_errors.values()
    assert f"task {task_id!r}: retries={retries} contradicts retry profile" in error, error
    assert "so retries must be" in error and f"remove retries={retries}" in error, error


@pytest.mark.parametrize(
    ("default_args", "where"),
    [
        # retries in the dict apply_profile is given: apply_profile refuses it itself
        ('apply_profile({"retries": 5}, "report")', "default_args"),
        # retries added after apply_profile: the cluster policy refuses the task
        ('{**apply_profile({}, "report"), "retries": 5}', "task 'load'"),
    ],
)
def test_a_contradicting_retries_in_the_dags_default_args_is_an_import_error(tmp_path, default_args, where):
    """retries set in the DAG's default_args beside a profile fails the file, naming where, both values and the fix."""
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "contradiction.py").write_text(
        HEADER.replace('apply_profile({"owner": "data"}, "report")', default_args)
        + "    @task\n    def load(): pass\n    load()\n"
    )
    bag = DagBag(dag_folder=str(tmp_path), safe_mode=False)
    assert "contradiction" not in bag.dags
    (error,) = bag.import_errors.values()
    assert f"{where}: retries=5 contradicts retry profile 'report'" in error, error
    assert "infra_allowance=2, so retries must be 4" in error and "remove retries" in error, error


@pytest.mark.parametrize(
    "body",
    [
        # the profile's own retries (2 + the infra allowance's 2), written out by hand: no contradiction
        "@task(retries=4)\ndef load(): pass\nload()\n",
        # no retries anywhere but the profile's
        "@task\ndef load(x): pass\nload.expand(x=[1, 2])\n",
        # a policy without a ceiling follows the task's retries
        "@task(retries=9, retry_policy=ClassifiedRetryPolicy())\ndef load(): pass\nload()\n",
    ],
)
def test_retries_that_agree_with_the_profile_parse(tmp_path, body):
    """A DAG whose retries match its policies' ceilings parses and is tagged for the sweeper."""
    bag = _parse(tmp_path, body)
    assert not bag.import_errors, bag.import_errors
    assert "airflow-retry-provider" in bag.dags["contradiction"].tags


def test_python_dag_py_with_dag_test_fails_at_once_naming_both_values(airflow_db, tmp_path):
    """``python dag.py`` ending in ``dag.test()``: a contradicting retries stops the run at once with the
    message naming the task and both values (it logged it mid-run, then failed with 'the dag is not serialized')."""
    import os
    import subprocess
    import sys

    from tests.conftest import bundle_config

    body = "@task(retries=5)\ndef load(): pass\nload()\n"
    (tmp_path / "empty").mkdir()
    dag_file = tmp_path / "contradiction.py"
    dag_file.write_text(
        HEADER.replace('"report")):\n', '"report")) as dag:\n')
        + textwrap.indent(body, "    ")
        + '\nif __name__ == "__main__":\n    dag.test()\n'
    )
    env = {
        **os.environ,
        "AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path),
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": bundle_config(tmp_path, tmp_path / "empty"),
    }
    done = subprocess.run(
        [sys.executable, str(dag_file)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "airflow_retry_provider.dlq.managed.RetriesContradictionInTest: DAG 'contradiction'"
    )
    assert "task 'load': retries=5 contradicts retry profile 'report'" in last and "retries must be 4" in last
    assert "not serialized" not in done.stderr

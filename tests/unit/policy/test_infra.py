"""The classification of failures no exception explains (policy/infra.py), on Airflow's own texts."""

from __future__ import annotations

import time

import pytest

from airflow_retry_provider.policy.infra import (
    INFRA_CATEGORIES,
    INFRA_RULES,
    InfraEvidence,
    classify_infra,
)

# The supervisor's line for a child killed by a signal, as 3.3.2 and 3.4.0b2 log it
# (WatchedSubprocess._check_subprocess_exit): it says "Likely out of memory" of every SIGKILL.
SUPERVISOR_SIGKILL = (
    "Process terminated by signal. Likely out of memory error (OOM). For more information, see "
    "https://airflow.apache.org/docs/apache-airflow/stable/troubleshooting.html#process-terminated-by-signal. "
    "signal=-9 signal_name=SIGKILL"
)
SUPERVISOR_SIGTERM = (
    "Process terminated by signal. For more information, see https://airflow.apache.org/docs/"
    "apache-airflow/stable/troubleshooting.html#process-terminated-by-signal. signal=-15 signal_name=SIGTERM"
)
# SchedulerJobRunner._purge_task_instances_without_heartbeats: str() of the details dict
HEARTBEAT = (
    "{'DAG Id': 'sales', 'Task Id': 'load', 'Run Id': 'scheduled__2026-12-04', 'Hostname': 'worker-7'}"
)
# SchedulerJobRunner.process_executor_events, when the executor reports failed for a running task
EXECUTOR_FAILED = (
    "Executor CeleryExecutor(parallelism=32) reported that the task instance <TaskInstance: sales.load "
    "scheduled__2026-12-04 [running]> finished with state failed, but the task instance's state attribute "
    "is running. Learn more: https://airflow.apache.org/docs/apache-airflow/stable/troubleshooting.html"
    "#task-state-changed-externally"
)
# SchedulerJobRunner._maybe_requeue_stuck_ti
STUCK_IN_QUEUED = "Task was requeued more than 2 times and will be failed."


@pytest.mark.parametrize(
    ("evidence", "category"),
    [
        # Kubernetes says OOMKilled: memory, whatever the exit code
        (InfraEvidence(exit_code=137, message="container base terminated: OOMKilled"), "oom-killed"),
        # the kernel's log line of the OOM killer
        (InfraEvidence(message="Memory cgroup out of memory: Killed process 4242 (python)"), "oom-killed"),
        # the supervisor's exit line alone: SIGKILL, its "likely OOM" is no sign (said of every SIGKILL)
        (InfraEvidence(message=SUPERVISOR_SIGKILL), "killed"),
        # the exit code alone, as the supervisor sees it (psutil's -9) or a container runtime's 137
        (InfraEvidence(exit_code=-9), "killed"),
        (InfraEvidence(exit_code=137), "killed"),
        # SIGTERM: an eviction, a preemption, a scale-down
        (InfraEvidence(message=SUPERVISOR_SIGTERM), "terminated"),
        (InfraEvidence(exit_code=143), "terminated"),
        (InfraEvidence(message="The node was drained: pod evicted"), "terminated"),
        (InfraEvidence(message="Spot instance interruption notice"), "terminated"),
        # Celery's text for a worker killed mid-task names SIGKILL too: the worker, not the task, went
        (
            InfraEvidence(message="WorkerLostError('Worker exited prematurely: signal 9 (SIGKILL) Job: 0.')"),
            "worker-lost",
        ),
        (InfraEvidence(message=EXECUTOR_FAILED), "worker-lost"),
        # the heartbeat-timeout callback's message
        (InfraEvidence(message=HEARTBEAT), "heartbeat-timeout"),
        # the same, as the scheduler's audit log keeps it (event and text)
        (
            InfraEvidence(
                message="heartbeat timeout: Task did not emit heartbeat within time limit (300 seconds) "
                "and will be terminated."
            ),
            "heartbeat-timeout",
        ),
        # a task that never started
        (InfraEvidence(message=STUCK_IN_QUEUED), "start-failed"),
        (InfraEvidence(message="Back-off pulling image: ImagePullBackOff"), "start-failed"),
        (InfraEvidence(state="queued"), "start-failed"),
    ],
)
def test_signal_maps_to_category(evidence: InfraEvidence, category: str) -> None:
    """Each signal Airflow or the executor reports names its infra category."""
    found = classify_infra(evidence)
    assert found is not None
    assert found.category == category
    assert found.failure == f"infra/{category}"


@pytest.mark.parametrize(
    "evidence",
    [
        # nothing said at all: stays unknown/task-died
        InfraEvidence(),
        # an ordinary non-zero exit: the code's own doing, not the infrastructure's
        InfraEvidence(exit_code=1, message="Process exited abnormally exit_code=1"),
        # a number that merely contains 9 or 137
        InfraEvidence(message="loaded 1379 rows, signal strength 90"),
    ],
)
def test_evidence_that_cannot_be_told_apart(evidence: InfraEvidence) -> None:
    """Evidence no rule recognises is not classified (the caller keeps unknown/task-died)."""
    assert classify_infra(evidence) is None


def test_oom_advice_says_what_would_help() -> None:
    """An OOM's advice names more memory and a smaller partition, not 'exhausted'."""
    found = classify_infra(InfraEvidence(message="OOMKilled"))
    assert found is not None
    assert "more memory" in found.advice and "smaller partition" in found.advice
    assert "exhausted" not in found.advice


def test_heartbeat_names_the_host() -> None:
    """The host the scheduler's heartbeat-timeout message names is kept (one alert per node)."""
    found = classify_infra(InfraEvidence(message=HEARTBEAT))
    assert found is not None
    assert found.hostname == "worker-7"


def test_every_category_has_a_rule_with_a_source() -> None:
    """Each category has a rule, and each rule names the source it was read from."""
    assert {rule.category for rule in INFRA_RULES} == set(INFRA_CATEGORIES)
    assert all(rule.sources and rule.advice for rule in INFRA_RULES)


@pytest.mark.parametrize(
    ("field", "value"),
    [("exit_code", "9"), ("exit_code", True), ("message", None), ("state", 3)],
)
def test_bad_evidence_names_field_and_value(field: str, value: object) -> None:
    """Bad evidence is refused with an error naming the field and the value."""
    with pytest.raises(ValueError, match=f"{field} must be .*got {value!r}"):
        InfraEvidence(**{field: value})  # type: ignore[arg-type]


def test_message_is_redacted() -> None:
    """A secret in the evidence does not reach the classification's message."""
    found = classify_infra(InfraEvidence(exit_code=-9, message="killed; password=hunter2secret"))
    assert found is not None
    assert "hunter2secret" not in found.message


def test_huge_message_is_fast() -> None:
    """A megabyte of hostile text is classified in well under a second (bounded, RE2)."""
    started = time.perf_counter()
    classify_infra(InfraEvidence(message="'dag id': " + "a" * 1_000_000 + " sigkill"))
    assert time.perf_counter() - started < 1.0


def test_the_docs_table_is_the_rule_table() -> None:
    """docs/CLASSIFICATION.md's table lists every rule, in order, with its category."""
    from pathlib import Path

    doc = (Path(__file__).parents[3] / "docs" / "CLASSIFICATION.md").read_text(encoding="utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("| ") and "`infra-" in line]
    assert [(row.split("|")[2].strip(), row.split("|")[3].strip()) for row in rows] == [
        (f"`{rule.category}`", f"`{rule.name}`") for rule in INFRA_RULES
    ]

"""Classify a failure no exception explains: the task's process was killed, evicted, lost or never started.

Airflow consults a retry policy only when the task's code raised. When the process dies (the
kernel's OOM killer, a pod eviction, a lost Celery worker, a stopped heartbeat), what is left is
what Airflow and the executor report: the exit code the supervisor saw (negative: the signal),
the scheduler's audit-log row for the failure (``heartbeat timeout``, ``state mismatch`` with the
executor's info, ``stuck in queued tries exceeded``; the dag-processor does not hand a task
callback this text), the supervisor's exit line in the try's log, the task instance's note and state. :func:`classify_infra` reads that evidence
against :data:`INFRA_RULES`, in order, and names the category; evidence no rule recognises is
not infrastructure we can tell apart (the caller keeps ``unknown/task-died``).

Each rule names the Airflow source its signal was read from (3.3.2 and 3.4.0b2);
docs/CLASSIFICATION.md ("Failures no exception explains") shows the table.

Pure: stdlib and RE2 only, no I/O. The evidence is text from outside: bounded before matching,
matched with RE2.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from airflow_retry_provider.policy.engine import bounded, pattern
from airflow_retry_provider.policy.redact import redact
from airflow_retry_provider.policy.rules import FailureClass

INFRA_CLASS: FailureClass = "infra"
"""The class of a failure of the infrastructure the task ran on, not of its code."""

MAX_EVIDENCE_CHARS = 4000
"""The evidence's text is cut to this many characters (head and tail) before it is matched."""

OOM_KILLED = "oom-killed"
KILLED = "killed"
TERMINATED = "terminated"
WORKER_LOST = "worker-lost"
HEARTBEAT_TIMEOUT = "heartbeat-timeout"
START_FAILED = "start-failed"
INFRA_CATEGORIES: tuple[str, ...] = (
    OOM_KILLED,
    KILLED,
    TERMINATED,
    WORKER_LOST,
    HEARTBEAT_TIMEOUT,
    START_FAILED,
)
"""Every category of the ``infra`` class, in the order their rules are tried."""

SUPERVISOR = "airflow/sdk/execution_time/supervisor.py: WatchedSubprocess._check_subprocess_exit"
SCHEDULER_EVENTS = "airflow/jobs/scheduler_job_runner.py: SchedulerJobRunner.process_executor_events"
SCHEDULER_HEARTBEATS = (
    "airflow/jobs/scheduler_job_runner.py: SchedulerJobRunner._purge_task_instances_without_heartbeats"
)
SCHEDULER_QUEUED = "airflow/jobs/scheduler_job_runner.py: SchedulerJobRunner._maybe_requeue_stuck_ti"
KUBERNETES = "Kubernetes container status: state.terminated.reason OOMKilled, waiting.reason ImagePullBackOff"
CELERY = "billiard/celery: WorkerLostError('Worker exited prematurely: signal 9 (SIGKILL)')"

# Signs of the kernel's OOM killer or of a container's memory limit. Not the supervisor's own
# "Likely out of memory error (OOM)": it says that of every SIGKILL (see SUPERVISOR).
_OOM_SIGN = pattern(r"oom[-_ ]?kill|memory cgroup out of memory|out of memory: kill(ed)? process")
_SIGKILL = pattern(r"\bsigkill\b|\bsignal[=: ]+-?9\b|\bexit(ed)?[ _]?(code|status)[=: ]+137\b")
_SIGTERM = pattern(
    r"\bsigterm\b|\bsignal[=: ]+-?15\b|\bexit(ed)?[ _]?(code|status)[=: ]+143\b|\bevicted\b|preempt|spot "
    r"(instance )?interruption|node (is )?(draining|shutting down)"
)
_WORKER_LOST = pattern(
    r"workerlosterror|worker exited prematurely|reported that the task instance [^\n]{0,500} finished with "
    r"state failed, but the task instance's state attribute is (running|queued)"
)
# The scheduler's heartbeat-timeout message is str() of a dict: {'DAG Id': ..., 'Task Id': ..., 'Run Id': ...}
_HEARTBEAT = pattern(
    r"'dag id': [^\n]{0,500}'task id': [^\n]{0,500}'run id':|did not emit heartbeat|without a heartbeat|"
    r"heartbeat timeout"
)
_START_FAILED = pattern(
    r"task was requeued more than \d+ times|stuck in queued|imagepullbackoff|errimagepull|"
    r"createcontainer(config)?error|unschedulable|failedscheduling|pod (is )?pending"
)
_HOSTNAME = pattern(
    r"'hostname': '([^'\n]{1,253})'|\bhostname[=: ]+([A-Za-z0-9_.:-]{1,253})", ignore_case=True
)


@dataclass(frozen=True)
class InfraEvidence:
    """What Airflow and the executor report about a try that ended with no exception from the task's code.

    :param exit_code: the task process's exit code as the supervisor saw it: negative for a
        signal (``-9`` SIGKILL), or a container's ``128 + signal`` (137, 143); None when unknown.
    :param message: every text that says why, joined: the scheduler's audit-log event and its
        text (or its callback request's message), the supervisor's exit line from the try's log,
        the executor's event info, the task instance's note.
    :param state: the task instance's state when it was seen (``queued`` for a task that never started).
    """

    exit_code: int | None = None
    message: str = ""
    state: str | None = None

    def __post_init__(self) -> None:
        if self.exit_code is not None and (
            isinstance(self.exit_code, bool) or not isinstance(self.exit_code, int)
        ):
            raise ValueError(f"exit_code must be an integer or None, got {self.exit_code!r}")
        if not isinstance(self.message, str):
            raise ValueError(f"message must be a string, got {self.message!r}")
        if self.state is not None and not isinstance(self.state, str):
            raise ValueError(f"state must be a string or None, got {self.state!r}")

    @property
    def text(self) -> str:
        """The message, bounded and lower-cased: what the rules match."""
        return bounded(self.message, MAX_EVIDENCE_CHARS).lower()

    @property
    def signal(self) -> int | None:
        """The signal that ended the process, from the exit code (``-9`` and ``137`` both give 9)."""
        if self.exit_code is None:
            return None
        if self.exit_code < 0:
            return -self.exit_code
        if 128 < self.exit_code < 160:  # a shell's or a container runtime's 128 + signal
            return self.exit_code - 128
        return None


def _killed(evidence: InfraEvidence) -> bool:
    return evidence.signal == signal.SIGKILL or bool(_SIGKILL.search(evidence.text))


def _oom(evidence: InfraEvidence) -> bool:
    return bool(_OOM_SIGN.search(evidence.text))


def _terminated(evidence: InfraEvidence) -> bool:
    return evidence.signal == signal.SIGTERM or bool(_SIGTERM.search(evidence.text))


def _worker_lost(evidence: InfraEvidence) -> bool:
    return bool(_WORKER_LOST.search(evidence.text))


def _heartbeat(evidence: InfraEvidence) -> bool:
    return bool(_HEARTBEAT.search(evidence.text))


def _start_failed(evidence: InfraEvidence) -> bool:
    return evidence.state in ("queued", "scheduled") or bool(_START_FAILED.search(evidence.text))


@dataclass(frozen=True)
class InfraRule:
    """One row of the table: when the evidence shows ``signal``, the failure is ``infra/<category>``.

    :param name: the rule's stable name (shown as the classification's rule).
    :param category: one of :data:`INFRA_CATEGORIES`.
    :param signal: what the rule looks for, in words (the docs' table shows it).
    :param sources: the Airflow (or executor) sources the signal was read from.
    :param advice: what would help when the same failure comes back after its allowance.
    """

    name: str
    category: str
    signal: str
    sources: tuple[str, ...]
    advice: str

    def matches(self, evidence: InfraEvidence) -> bool:
        """Whether ``evidence`` shows this rule's signal."""
        return _TESTS[self.name](evidence)


_TESTS = {
    "infra-oom": _oom,
    "infra-worker-lost": _worker_lost,
    "infra-start-failed": _start_failed,
    "infra-heartbeat": _heartbeat,
    "infra-sigkill": _killed,
    "infra-sigterm": _terminated,
}

INFRA_RULES: tuple[InfraRule, ...] = (
    InfraRule(
        "infra-oom",
        OOM_KILLED,
        "an OOM sign: Kubernetes OOMKilled, the kernel's oom-kill / memory cgroup out of memory",
        (KUBERNETES, SUPERVISOR),
        "the task ran out of memory: give it more memory (the pod's or worker's limit), or a smaller "
        "partition to work on",
    ),
    InfraRule(
        "infra-worker-lost",
        WORKER_LOST,
        "Celery WorkerLostError, or the executor reported failed while the task instance was running",
        (CELERY, SCHEDULER_EVENTS),
        "the worker running the task went away: look at the worker's host (restarts, memory, "
        "autoscaling) before running it again",
    ),
    InfraRule(
        "infra-start-failed",
        START_FAILED,
        "requeued too often from queued, an image pull or scheduling error, a pod pending",
        (SCHEDULER_QUEUED, KUBERNETES),
        "the task never started: check the queue has a worker and the pod can be scheduled and its "
        "image pulled",
    ),
    InfraRule(
        "infra-heartbeat",
        HEARTBEAT_TIMEOUT,
        "the scheduler's heartbeat-timeout callback ({'DAG Id': ..., 'Task Id': ..., 'Run Id': ...})",
        (SCHEDULER_HEARTBEATS,),
        "the task stopped heartbeating: its worker or node died or was cut off; look at that host",
    ),
    InfraRule(
        "infra-sigkill",
        KILLED,
        "SIGKILL (exit -9 or 137) with no OOM sign",
        (SUPERVISOR,),
        "the process was killed with SIGKILL: often memory (give it more memory, or a smaller "
        "partition to work on), else an operator or the node",
    ),
    InfraRule(
        "infra-sigterm",
        TERMINATED,
        "SIGTERM (exit -15 or 143): an eviction, a preemption, a scale-down",
        (SUPERVISOR,),
        "the process was stopped by its node (eviction, preemption, scale-down): it runs again on "
        "another node; if it keeps happening, use on-demand nodes or a PodDisruptionBudget",
    ),
)
"""The rules, in the order they are tried: the first that matches names the category."""


@dataclass(frozen=True)
class InfraClassification:
    """What killed a try, and what would help.

    :param category: one of :data:`INFRA_CATEGORIES` (the failure is ``infra/<category>``).
    :param rule: the name of the rule that matched.
    :param advice: what would help, for a letter's reason after the allowance.
    :param hostname: the worker or node named in the evidence, when Airflow named it.
    :param message: the evidence's message, redacted (it is stored and shown).
    """

    category: str
    rule: str
    advice: str
    hostname: str | None
    message: str

    @property
    def failure(self) -> str:
        """``infra/<category>``."""
        return f"{INFRA_CLASS}/{self.category}"


def _hostname(text: str) -> str | None:
    found = _HOSTNAME.search(text)
    if not found:
        return None
    return found.group(1) or found.group(2)


def classify_infra(evidence: InfraEvidence) -> InfraClassification | None:
    """The category of a failure no exception explains, or None when the evidence cannot tell it apart."""
    if not isinstance(evidence, InfraEvidence):
        raise ValueError(f"evidence must be an InfraEvidence, got {evidence!r}")
    for rule in INFRA_RULES:
        if rule.matches(evidence):
            return InfraClassification(
                category=rule.category,
                rule=rule.name,
                advice=rule.advice,
                hostname=_hostname(bounded(evidence.message, MAX_EVIDENCE_CHARS)),
                message=redact(evidence.message),
            )
    return None

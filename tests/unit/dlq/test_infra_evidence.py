"""The infra watcher's reading of a try's log and its letters' root cause (issue 57), without I/O."""

from __future__ import annotations

import pytest

from airflow_retry_provider.alerts import messages
from airflow_retry_provider.dlq.infra import EndedTry, exit_lines, infra_letter, node_fingerprint, node_of
from airflow_retry_provider.policy.infra import InfraEvidence, classify_infra

SIGKILL_ENTRY = {
    "event": "Process terminated by signal. Likely out of memory error (OOM). For more information, see ...",
    "signal": -9,
    "signal_name": "SIGKILL",
}


@pytest.mark.parametrize(
    ("entries", "lines", "code"),
    [
        ([{"event": "starting"}, SIGKILL_ENTRY], 1, -9),  # the supervisor's structured exit line
        ([{"event": "Process exited abnormally", "exit_code": 137}], 1, 137),  # a container's 128 + 9
        (
            [{"event": "ValueError: Process terminated by signal 9, said the task"}],
            0,
            None,
        ),  # the task's text
        (
            ["[2026-12-04] CRITICAL - Process terminated by signal. signal=-15 signal_name=SIGTERM"],
            1,
            -15,
        ),  # plain
        ([], 0, None),  # a log Airflow had nothing in
    ],
)
def test_only_the_supervisors_exit_line_is_read(entries, lines, code):
    """The exit line and its code are read; the task's own text never is, whatever it says."""
    found, exit_code = exit_lines(entries)
    assert (len(found), exit_code) == (lines, code)


def _ended(**changes) -> EndedTry:
    fields = dict(
        dag_id="nightly",
        run_id="r1",
        task_id="load",
        map_index=-1,
        try_number=2,
        state="failed",
        hostname="node-3",
        end_date=None,
        final=True,
        max_tries=1,
    )
    return EndedTry(**{**fields, **changes})


def test_an_infra_letter_gives_advice_names_its_host_and_shares_the_hosts_root_cause():
    """The letter's reason is the category's advice and host, not "exhausted"; its fingerprint is the host's."""
    found = classify_infra(InfraEvidence(exit_code=-9, message="Process terminated by signal."))
    assert found is not None
    letter = infra_letter(_ended(), found, {})
    assert letter.reason.startswith(
        "[attempt 2/2] dead letter infra/killed: the process was killed with SIGKILL"
    )
    assert "(host node-3)" in letter.reason and "exhausted" not in letter.reason
    assert (
        letter.fingerprint
        == node_fingerprint("node-3")
        == infra_letter(_ended(task_id="x"), found, {}).fingerprint
    )
    assert node_of(letter) == "node-3"
    alert = messages.root_cause(letter, 7, 1, "http://airflow.example.test")
    assert alert.title == "Worker or node node-3: tasks lost (infra/killed)"
    without_host = infra_letter(_ended(hostname=None), found, {})
    assert node_of(without_host) is None and without_host.fingerprint != letter.fingerprint

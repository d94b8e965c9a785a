"""`airflow-retry demo` finds the devstack of the clone it runs from, and says so when there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_retry_provider.cli import main
from airflow_retry_provider.commands import UsageError
from airflow_retry_provider.commands import demo as demo_command
from tests.conftest import REPO


def test_devstack_folder_is_the_clones_tools() -> None:
    """From a clone, the demo uses tools/ of that clone (tools/devstack/ is not in the wheel)."""
    assert demo_command.devstack_folder() == REPO / "tools"


def test_demo_outside_a_clone_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Installed from a wheel (no tools/devstack/), the demo exits 2 with one line naming the folder."""
    installed = tmp_path / "site-packages" / "airflow_retry_provider" / "commands" / "demo.py"
    monkeypatch.setattr(demo_command, "__file__", str(installed))
    with pytest.raises(UsageError, match="no tools/devstack/"):
        demo_command.devstack_folder()
    assert main(["demo", "--once", "--workdir", str(tmp_path / "w")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert (
        err.startswith("airflow-retry: demo: runs only from a clone")
        and str(tmp_path / "site-packages") in err
    )


def _try(number: int, state: str, delay: float | None = None, reason: str | None = None) -> dict:
    """One row of ``run_tries_query``."""
    return {"try_number": number, "state": state, "retry_delay_override": delay, "retry_reason": reason}


def test_the_demo_story_shows_the_poison_tries_reason_and_its_letter() -> None:
    """A poison task failed at try 1 (Airflow 3.3 keeps no reason on it): its line says why, from its letter, and names the letter."""
    from types import SimpleNamespace

    from devstack.demo import task_story

    letter = SimpleNamespace(
        id=7,
        task_id="gold_risk_report",
        map_index=-1,
        status="dlq",
        failure_class="poison",
        category="permission-denied",
        reason="[attempt 1/2] dead letter poison/permission-denied: PermissionError: no access",
    )
    lines = task_story(("gold_risk_report", -1), [_try(1, "failed")], [letter])
    assert lines[1] == f"      try 1: failed: {letter.reason}"
    assert lines[2] == "      letter #7 [dlq] poison/permission-denied"
    retried = task_story(
        ("extract", -1), [_try(1, "up_for_retry", 0.3, "[attempt 2/3] ..."), _try(2, "success")], []
    )
    assert retried[1:] == [
        "      try 1: up_for_retry, retry after 0.300s: [attempt 2/3] ...",
        "      try 2: success",
    ]


def test_a_task_that_never_ran_says_so() -> None:
    """A task that never ran (upstream failed) reads 'did not run', never 'try 0: upstream_failed'."""
    from devstack.demo import task_story

    (line,) = task_story(("publish", -1), [_try(0, "upstream_failed")], [])
    assert line.split() == ["publish", "did", "not", "run", "(upstream_failed)"]
    assert "try 0" not in line

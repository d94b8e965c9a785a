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

"""The CLI reports every bad input one way: ``airflow-retry: <where>: <problem>`` on one line, exit code 2."""

from __future__ import annotations

import pytest

from airflow_retry_provider.cli import main


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        # argparse's own errors name the command and the flag
        (
            ["policy", "schedule", "--max-attempts", "x", "--seed", "s"],
            "policy schedule: argument --max-attempts: invalid int value: 'x'",
        ),
        (["reconcile", "gaps"], "reconcile gaps: the following arguments are required: --input"),
        (["dlq", "list", "--bogus"], "unrecognized arguments: --bogus"),
        # a command's own check (once BadInput in the policy commands)
        (
            ["policy", "classify", "--sqlstate", "nope!", "boom"],
            "--sqlstate must be five letters or digits (e.g. 40P01), got 'nope!'",
        ),
        # a command's own check in the dlq commands (once their _usage helper)
        (
            ["dlq", "list", "--limit", "0", "--dsn", "postgresql://nobody@127.0.0.1:1/x"],
            "--limit: '0' is not a positive integer",
        ),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever finds the bad input (argparse or a command), stderr holds one line naming it, stdout nothing."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"airflow-retry: {line}\n"

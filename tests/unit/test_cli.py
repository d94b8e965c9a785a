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


def test_log_lines_of_a_command_that_talks_to_airflow_go_to_stderr():
    """Once a command has Airflow's API client, a log line (a replay job stopped at its canary) is on
    stderr, so stdout holds only the command's JSON and a pipe to a JSON parser never breaks."""
    import subprocess
    import sys

    code = (
        "import argparse, logging; from airflow_retry_provider.commands import api_client; "
        "api_client(argparse.Namespace(api_url='http://127.0.0.1:9', api_user='a', api_password='p', console=True)); "
        "logging.getLogger('airflow_retry_provider.dlq.driver').warning('replay job 1 stopped: canary'); "
        "print('{}')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "{}\n" and "replay job 1 stopped: canary" in result.stderr


def _helps() -> list[tuple[str, str]]:
    """Every ``--help`` text of the CLI, by command path."""
    import argparse

    from airflow_retry_provider.cli import build_parser

    found: list[tuple[str, str]] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        found.append((path, parser.format_help()))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")

    walk(build_parser(), "airflow-retry")
    return found


def test_no_help_points_at_a_file_of_the_clone_without_saying_so():
    """A path that only a clone has (docs/, tools/, dags/, bench/) is named in a help text only beside the
    words "repository" or "clone": an installed wheel has none of them (issue 47)."""
    import re

    clone_only = re.compile(r"(?<![\w.])(docs|tools|dags|bench)/")
    problems = [
        path
        for path, text in _helps()
        if clone_only.search(" ".join(text.split())) and not re.search(r"repository|clone", text)
    ]
    assert problems == []
    assert any("docs/BREAKER.md in the repository" in " ".join(text.split()) for _, text in _helps())


def test_every_help_lists_the_exit_codes_the_cli_returns():
    """Each command's --help ends with the one exit-code convention, 0 to 5 (dlq --help listed 0-4; 5 is returned)."""
    from airflow_retry_provider.commands import EXIT_CODES

    assert "5 the provider's schema is missing" in EXIT_CODES and "1 nothing matched" in EXIT_CODES
    missing = [path for path, text in _helps() if " ".join(EXIT_CODES.split()) not in " ".join(text.split())]
    assert missing == []
    dlq = dict(_helps())["airflow-retry dlq"]
    assert "4 unexpected error." not in dlq  # the old, partial list is gone


def test_every_command_has_a_description_in_its_help():
    """A command's --help says what it does, not only its flags (deliveries --help had no description)."""
    helps = dict(_helps())
    assert "Today's deliveries" in helps["airflow-retry deliveries"]


def test_retention_without_dry_run_or_yes_deletes_nothing_and_says_how(capsys):
    """``airflow-retry retention`` alone refuses (exit 2) before it reaches a database: --dry-run or --yes."""
    assert main(["retention", "--dsn", "postgresql://nobody@127.0.0.1:1/none"]) == 2
    err = capsys.readouterr().err
    assert "pass --dry-run to count them first, or --yes to delete them now" in err

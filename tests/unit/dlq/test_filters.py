"""The letter filter is declared once (``dlq/filters.py``): its fields, its SQL clauses and the CLI's
flags all follow the declaration."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timezone

import pytest

from airflow_retry_provider import sql
from airflow_retry_provider.cli import build_parser, main
from airflow_retry_provider.commands.dlq import CLI_FILTERS, _filter
from airflow_retry_provider.dlq import LETTER_FILTERS, LetterFilter

PARAMETER = re.compile(r"%\((\w+)\)s")


def _clauses() -> list[str]:
    """The clauses of ``letter_filter``, one per ``AND (`` at the start of a line."""
    fragment = sql.fragment("airflow_retry_provider.dlq.sql", "letter_filter")
    return re.split(r"\n\s*AND (?=\()", fragment.strip())


def test_the_declaration_is_the_letter_filters_fields() -> None:
    """Each declared filter is a field of LetterFilter, in the same order, and each field is declared."""
    assert [field.name for field in LETTER_FILTERS] == [f.name for f in dataclasses.fields(LetterFilter)]
    assert set(LetterFilter().as_params()) == {field.name for field in LETTER_FILTERS}


def _mismatch(clauses: list[str], declared: set[str]) -> tuple[set[str], set[str]]:
    """The declared filters with no clause, and the parameters of clauses that name no declared filter."""
    named = [set(PARAMETER.findall(clause)) for clause in clauses]
    assert [len(names) for names in named] == [1] * len(named), f"a clause names not one parameter: {named}"
    in_sql = [names.pop() for names in named]
    assert len(in_sql) == len(set(in_sql)), f"a filter with two clauses: {in_sql}"
    return declared - set(in_sql), set(in_sql) - declared


def test_each_declared_filter_has_one_clause_and_each_clause_one_declared_parameter() -> None:
    """A filter declared without its clause in ``letter_filter``, or a clause naming a parameter not declared, fails."""
    missing, undeclared = _mismatch(_clauses(), {field.name for field in LETTER_FILTERS})
    assert not missing, f"declared in dlq/filters.py without a clause in dlq/sql/fragments.sql: {missing}"
    assert not undeclared, f"a clause of letter_filter names no declared filter: {undeclared}"


def test_the_clause_check_finds_a_missing_and_an_undeclared_clause() -> None:
    """The check reads the clauses as written: one dropped and one added are both found."""
    extra = "(%(owner)s::text IS NULL OR owner = %(owner)s)"
    declared = {field.name for field in LETTER_FILTERS}
    assert _mismatch([*_clauses()[1:], extra], declared) == ({LETTER_FILTERS[0].name}, {"owner"})


def test_every_cli_filter_flag_is_in_the_help_of_each_command_that_selects_letters() -> None:
    """``list``, ``preview``, ``replay``, ``park`` and ``dismiss`` show each filter's flag with its help."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    dlq = next(a for a in subparsers["dlq"]._actions if a.dest == "dlq_command").choices
    for action in ("list", "preview", "replay", "park", "dismiss"):
        flags = {opt: a for a in dlq[action]._actions for opt in a.option_strings}
        for field in CLI_FILTERS:
            assert flags[f"--{field.flag}"].dest == field.name
            assert flags[f"--{field.flag}"].help == field.cli_help()


def test_the_flags_fill_every_field_of_the_filter() -> None:
    """Each CLI flag lands in its LetterFilter field, typed (a timestamp, ids as integers)."""
    argv = ["dlq", "list", "--dag", "d", "--task", "t", "--category", "not-found", "--class", "poison"]
    argv += ["--status", "dlq", "--fingerprint", "f", "--workspace", "w", "--since", "2026-01-01T00:00:00Z"]
    argv += ["--until", "2026-01-02T00:00:00+00:00", "--id", "3", "--id", "4"]
    where = _filter(build_parser().parse_args(argv))
    assert where == LetterFilter(
        dag_id="d",
        task_id="t",
        category="not-found",
        failure_class="poison",
        status="dlq",
        fingerprint="f",
        workspace_id="w",
        since=datetime(2026, 1, 1, tzinfo=timezone.utc),
        until=datetime(2026, 1, 2, tzinfo=timezone.utc),
        ids=[3, 4],
    )


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--class", "bogus"], "--class: 'bogus' is not one of poison, retryable, unknown, infra"),
        (["--status", "gone"], "--status: 'gone' is not one of dlq, replaying, resolved, parked, dismissed"),
        (["--dag", "  "], "--dag: '  ' is empty"),
        (["--workspace", ""], "--workspace: '' is empty"),
        (["--since", "yesterday"], "--since: 'yesterday' is not an ISO 8601 timestamp"),
        (
            ["--until", "2026-01-01T00:00:00"],
            "--until: '2026-01-01T00:00:00' has no UTC offset (e.g. 2026-11-01T00:00:00-03:00)",
        ),
        (["--id", "0"], "--id: '0' is not a positive integer"),
        (
            ["--since", "2026-01-02T00:00:00Z", "--until", "2026-01-01T00:00:00Z"],
            "--until: '2026-01-01T00:00:00Z' is not after --since '2026-01-02T00:00:00Z'",
        ),
    ],
)
def test_a_bad_filter_value_names_its_flag(
    flags: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value a filter refuses is one line naming the flag and the value, exit code 2, before any database."""
    assert main(["dlq", "list", "--dsn", "postgresql://nobody@127.0.0.1:1/x", *flags]) == 2
    assert capsys.readouterr().err == f"airflow-retry: {line}\n"


def test_acting_on_the_whole_queue_needs_a_filter(capsys: pytest.CaptureFixture[str]) -> None:
    """``park`` with no filter flag at all is refused; any declared filter flag is a selection."""
    assert main(["dlq", "park", "--actor", "me", "--dsn", "postgresql://nobody@127.0.0.1:1/x"]) == 2
    assert "park needs --id or a filter" in capsys.readouterr().err

"""The states declared once in dlq/states.py are exactly those the migrations' CHECK constraints allow."""

from __future__ import annotations

import re

import pytest

from airflow_retry_provider.commands import dlq as dlq_command
from airflow_retry_provider.dlq import models, states
from airflow_retry_provider.migrations import migrations

CHECK = re.compile(
    r"CONSTRAINT\s+(?P<name>\w+)\s+CHECK\s*\(\s*(?P<column>\w+)\s+IN\s*\((?P<values>[^)]*)\)", re.IGNORECASE
)


def allowed_by_migrations() -> dict[str, tuple[str, ...]]:
    """Each named CHECK constraint's allowed values, as the last migration that (re)defines it leaves them."""
    found: dict[str, tuple[str, ...]] = {}
    for migration in migrations():
        for match in CHECK.finditer(migration.sql()):
            found[match["name"]] = tuple(re.findall(r"'([^']*)'", match["values"]))
    return found


@pytest.mark.parametrize(
    ("enum", "constraint"),
    [
        (states.LetterStatus, "retry_dead_letters_status"),  # 0001
        (states.ReplayOutcome, "retry_replays_outcome"),  # 0001, widened by 0002 (unknown, abandoned)
        (states.JobStatus, "retry_replay_jobs_status"),  # 0002, widened by 0009 (stopped)
        (states.ItemOutcome, "retry_replay_job_items_outcome"),  # 0002, widened by 0009 (stopped)
    ],
)
def test_enum_matches_check_constraint(enum: type[states.State], constraint: str) -> None:
    """An enum of dlq/states.py names the same states, in any order, as its column's CHECK constraint."""
    assert sorted(enum.values()) == sorted(allowed_by_migrations()[constraint])


@pytest.mark.parametrize(
    ("entity", "enum"),
    [
        (states.LETTER, states.LetterStatus),  # the state table of letters
        (states.REPLAY, states.ReplayOutcome),  # of replays
        (states.JOB, states.JobStatus),  # of jobs
        (states.JOB_ITEM, states.ItemOutcome),  # of job items
    ],
)
def test_state_tables_use_the_enums(entity: states.Entity, enum: type[states.State]) -> None:
    """Each state table lists its enum's states in the declared order, and its transitions name only those."""
    assert entity.states == enum.values()
    for transition in entity.transitions:
        assert transition.target in (*enum.values(), states.DELETED)
        assert set(transition.sources) <= {*enum.values(), states.CREATED}


def test_models_and_cli_choices_come_from_the_enum() -> None:
    """The models' statuses and the CLI's --status choices are the letter enum's, not a copy."""
    assert models.STATUSES == states.LetterStatus.values()
    assert dlq_command.STATUSES == states.LetterStatus.values()


def test_a_state_is_its_text() -> None:
    """A state compares, formats and serialises as the text PostgreSQL stores."""
    assert states.ReplayOutcome.CLEAR_FAILED == "clear-failed"
    assert f"{states.LetterStatus.DLQ}" == "dlq"
    assert str(states.JobStatus.STOPPED) == "stopped"
    assert states.LetterStatus("parked") is states.LetterStatus.PARKED

"""The state vocabulary (airflow_retry_provider/states.py) against everything that spells a state:
the migrations' CHECK constraints, the SQL's literals, the state tables, the templates and the docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_retry_provider import states
from airflow_retry_provider.dlq import states as tables
from airflow_retry_provider.migrations import migrations

PACKAGE = Path(states.__file__).resolve().parent
ROOT = PACKAGE.parent
CHECK = re.compile(
    r"CONSTRAINT\s+(?P<name>\w+)\s+CHECK\s*\(\s*(?P<column>\w+)\s+IN\s*\((?P<values>[^)]*)\)", re.IGNORECASE
)
BLOCK = re.compile(r"^-- name: (\w+)[^\n]*\n(.*?)(?=^-- name: |\Z)", re.S | re.M)
TABLE = re.compile(
    r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(?!(?:OF|SET|SKIP|LATERAL)\b)(\w+)(?:\s+(?:AS\s+)?(?!WHERE|SET|ON|JOIN|LEFT|USING)(\w+))?",
    re.I,
)
COMPARISON = re.compile(
    r"(?<![\w.'])(?:(\w+)\.)?(status|outcome)\s*(?:=|<>|!=|(?:NOT\s+)?IN)\s*(\([^)]*\)|'[^']*')", re.I
)
CTE = re.compile(
    r"\b(\w+)\s+AS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?\(\s*(?:UPDATE|SELECT|INSERT|DELETE)\b", re.I
)
NOT_OURS = {"source_runs", "extraction_events", "retry_breakers", "retry_alert_connector_status"}
"""Tables whose status column is not a state of the vocabulary (the trails', the breakers' own machine)."""


def allowed_by_migrations() -> dict[str, tuple[str, ...]]:
    """Each named CHECK constraint's allowed values, as the last migration that (re)defines it leaves them."""
    found: dict[str, tuple[str, ...]] = {}
    for migration in migrations():
        for match in CHECK.finditer(migration.sql()):
            found[match["name"]] = tuple(re.findall(r"'([^']*)'", match["values"]))
    return found


def _visible(between: str) -> bool:
    """Whether a table named ``between`` before a comparison is in the comparison's scope (no subquery closed between)."""
    depth = 0
    for char in between:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return True


def literals_in_sql() -> list[tuple[str, str, str]]:
    """Every literal a statement compares a state column with: (where, table.column, literal)."""
    found = []
    for path in sorted(PACKAGE.glob("*/sql/*.sql")):
        text = "\n".join(
            line
            for line in path.read_text().splitlines()
            if not line.lstrip().startswith("--") or line.startswith("-- name:")
        )
        for name, body in BLOCK.findall(text):
            tables = list(TABLE.finditer(body))
            aliases = {word: t[1] for t in tables for word in t.groups() if word}
            for cte in CTE.finditer(body):  # a CTE's name stands for the table its statement reads or writes
                aliases[cte[1]] = next(t[1] for t in tables if t.start() > cte.start())
            for comparison in COMPARISON.finditer(body):
                alias, column, values = comparison.groups()
                # unqualified: the nearest table named before it in its own statement (not a closed subquery)
                before = [t for t in tables if t.start() < comparison.start()]
                visible = [t for t in reversed(before) if _visible(body[t.end() : comparison.start()])]
                after = [
                    t for t in tables if t.start() > comparison.start()
                ]  # a select list: its FROM follows
                named = alias or (visible or after)[0][1]
                table = aliases.get(named, named)
                if table in NOT_OURS:
                    continue
                for literal in re.findall(r"'([^']*)'", values):
                    found.append((f"{path.relative_to(PACKAGE)}:{name}", f"{table}.{column}", literal))
    return found


@pytest.mark.parametrize(
    ("column", "constraint"),
    [
        ("retry_dead_letters.status", "retry_dead_letters_status"),  # 0001
        ("retry_replays.outcome", "retry_replays_outcome"),  # 0001, widened by 0002 (unknown, abandoned)
        ("retry_replay_jobs.status", "retry_replay_jobs_status"),  # 0002, widened by 0009 (stopped)
        (
            "retry_replay_job_items.outcome",
            "retry_replay_job_items_outcome",
        ),  # 0002, widened by 0009 (stopped)
        ("retry_work_units.status", "retry_work_units_status"),  # 0001, widened by 0003 (parked)
        ("retry_alerts.status", "retry_alerts_status"),  # 0003
    ],
)
def test_enum_matches_check_constraint(column: str, constraint: str) -> None:
    """A state column's enum names the same states, in any order, as the column's CHECK constraint."""
    assert sorted(states.COLUMNS[column].values()) == sorted(allowed_by_migrations()[constraint])


def test_every_state_literal_in_the_sql_is_a_member_of_its_columns_enum() -> None:
    """Each literal a statement compares a state column with is a state of that column's enum."""
    found = literals_in_sql()
    assert len(found) > 100  # the check sees the SQL: about 150 literals
    unknown = {column for _, column, _ in found if column not in states.COLUMNS}
    assert unknown == set()  # a state column of no enum: add it to states.COLUMNS (or to NOT_OURS)
    wrong = [
        (where, column, literal)
        for where, column, literal in found
        if literal not in states.COLUMNS[column].values()
    ]
    assert wrong == []


def test_a_list_of_every_state_in_the_sql_names_them_all() -> None:
    """A statement listing every state of a column (the gauges' ``unnest(ARRAY[...])``) lists exactly its enum's."""
    lists = [
        (table, re.findall(r"'([^']*)'", values))
        for path in PACKAGE.glob("*/sql/*.sql")
        for values, table in re.findall(
            r"unnest\(ARRAY\[([^\]]*)\]\)\s+AS\s+\w+\s*\(status\)\s+LEFT\s+JOIN\s+(\w+)",
            path.read_text(),
            re.I,
        )
    ]
    assert [table for table, _ in lists] == ["retry_dead_letters"]  # the letters' gauges
    for table, values in lists:
        assert sorted(values) == sorted(states.COLUMNS[f"{table}.status"].values())


def test_the_sql_check_sees_a_misspelt_state(tmp_path: Path) -> None:
    """A literal that is no member of its column's enum is caught (here 'dismised' on a letter's status)."""
    body = "SELECT 1 FROM retry_dead_letters l WHERE l.status IN ('dlq', 'dismised')"
    aliases = {alias or table: table for table, alias in TABLE.findall(body)}
    (alias, column, values) = COMPARISON.findall(body)[0]
    enum = states.COLUMNS[f"{aliases[alias]}.{column}"]
    assert [v for v in re.findall(r"'([^']*)'", values) if v not in enum.values()] == ["dismised"]


@pytest.mark.parametrize(
    ("entity", "groups"),
    [
        (tables.LETTER, (states.LETTER_AT_REST, states.LETTER_STARTED, states.LETTER_TERMINAL)),
        (tables.REPLAY, (states.REPLAY_OPEN, states.REPLAY_TERMINAL)),
        (tables.JOB, (states.JOB_OPEN, states.JOB_TERMINAL)),
        (tables.JOB_ITEM, (states.ITEM_OPEN, states.ITEM_TERMINAL)),
    ],
    ids=lambda value: getattr(value, "name", ""),
)
def test_every_state_is_in_a_group_and_the_terminal_group_is_the_state_tables(entity, groups) -> None:
    """Each state belongs to one of its entity's named groups; the terminal group is the state table's terminal states."""
    enum = states.COLUMNS[f"{entity.table}.{entity.column}"]
    assert {state for group in groups for state in group} == set(enum)
    assert sorted(groups[-1]) == sorted(entity.terminal)


@pytest.mark.parametrize("entity", tables.ENTITIES, ids=lambda e: e.name)
def test_state_tables_use_the_enums(entity: tables.Entity) -> None:
    """Each state table lists its enum's states in the declared order; its transitions name only those and reach each one."""
    enum = states.COLUMNS[f"{entity.table}.{entity.column}"]
    assert entity.states == enum.values()
    for transition in entity.transitions:
        assert transition.target in (*enum.values(), tables.DELETED)
        assert set(transition.sources) <= {*enum.values(), tables.CREATED}
    assert {t.target for t in entity.transitions} >= set(enum.values())


def test_every_letter_status_has_its_colour_and_the_templates_name_only_states() -> None:
    """base.html declares a colour for each letter status; the templates compare statuses only with the enums' members."""
    templates = PACKAGE / "plugin" / "templates"
    base = (templates / "base.html").read_text()
    assert [s for s in states.LetterStatus.values() if f"--{s}:" not in base] == []
    spelt = [
        literal
        for page in templates.glob("*.html")
        for values in re.findall(r"status\s*(?:==|!=|in)\s*(\([^)]*\)|'[^']*')", page.read_text())
        for literal in re.findall(r"'([^']*)'", values)
    ]
    known = {value for enum in states.COLUMNS.values() for value in enum.values()}
    assert [literal for literal in spelt if literal not in known] == []


def test_the_docs_name_every_edit_a_letter_status_takes() -> None:
    """CONTRIBUTING.md and docs/ARCHITECTURE.md name each file adding a letter status touches."""
    edits = (
        "airflow_retry_provider/states.py",
        "LETTER_AT_REST",
        "migrations/",
        "dlq/states.py",
        "plugin/templates/base.html",
        "maintenance/sql/queries.sql",
        "dlq/decide.py",
    )
    for doc in ("CONTRIBUTING.md", "docs/ARCHITECTURE.md"):
        recipe = re.search(
            r"^(?:- |\d+\. )\**a letter status\b.*?(?=\n\n|\n\d+\. |\n- )",
            (ROOT / doc).read_text(),
            re.M | re.S | re.I,
        )
        assert recipe is not None, doc
        assert [edit for edit in edits if edit not in recipe[0]] == [], doc


def test_a_state_is_its_text() -> None:
    """A state compares, formats and serialises as the text PostgreSQL stores."""
    assert states.ReplayOutcome.CLEAR_FAILED == "clear-failed"
    assert f"{states.LetterStatus.DLQ}" == "dlq"
    assert str(states.JobStatus.STOPPED) == "stopped"
    assert states.LetterStatus("parked") is states.LetterStatus.PARKED

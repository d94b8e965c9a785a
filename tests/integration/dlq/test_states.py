"""The state tables (``dlq/states.py``) against the SQL that moves rows between states, and docs/ARCHITECTURE.md."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_retry_provider.dlq import states
from airflow_retry_provider.dlq.states import CREATED, DELETED, ENTITIES, Entity

PACKAGE = Path(states.__file__).resolve().parents[1]
ARCHITECTURE = PACKAGE.parent / "docs" / "ARCHITECTURE.md"
BLOCK = re.compile(r"^-- name: (\w+)[^\n]*\n(.*?)(?=^-- name: |\Z)", re.S | re.M)
WRITE = re.compile(
    r"\b(?:UPDATE\s+(retry_\w+)(?:\s+(?:AS\s+)?(?!SET\b)\w+)?\s+SET\b|INSERT\s+INTO\s+(retry_\w+)|DELETE\s+FROM\s+(retry_\w+))",
    re.I,
)
LITERAL = re.compile(r"'((?:[^']|'')*)'")


@dataclass(frozen=True)
class Write:
    """One statement (a segment of a named block) that writes ``table``: its kind, targets and guards."""

    statement: str
    table: str
    kind: str  # update, insert, delete
    sets: str  # the SET clause ('' for a plain insert or a delete)
    where: str


def _blocks() -> dict[str, str]:
    found = {}
    for path in sorted(PACKAGE.glob("*/sql/*.sql")):
        text = "\n".join(
            line
            for line in path.read_text().splitlines()
            if not line.lstrip().startswith("--") or line.startswith("-- name:")
        )
        for name, body in BLOCK.findall(text):
            found[f"{path.parent.parent.name}:{name}"] = body
    return found


def _until(text: str, stops: tuple[str, ...]) -> str:
    """``text`` up to the first of ``stops`` at its own parenthesis depth, or a parenthesis closing it."""
    depth, quoted = 0, False
    for i, char in enumerate(text):
        if char == "'":
            quoted = not quoted
        if quoted:
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return text[:i]
        elif depth == 0 and any(re.match(rf"\b{stop}\b", text[i:], re.I) for stop in stops):
            if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"):
                return text[:i]
    return text


def _writes(blocks: dict[str, str]) -> list[Write]:
    found = []
    for statement, body in blocks.items():
        for match in WRITE.finditer(body):
            rest = body[match.end() :]
            if match[1]:
                sets = _until(rest, ("WHERE", "FROM", "RETURNING"))
                where = rest[len(sets) :]
                where = _until(where[5:], ("RETURNING",)) if where[:5].upper() == "WHERE" else ""
                found.append(Write(statement, match[1], "update", sets, where))
            elif match[2]:
                upsert = re.search(r"DO\s+UPDATE\s+SET\b", rest, re.I)
                sets = _until(rest[upsert.end() :], ("WHERE", "RETURNING")) if upsert else ""
                where = ""
                if upsert:
                    after = rest[upsert.end() + len(sets) :]
                    where = _until(after[5:], ("RETURNING",)) if after[:5].upper() == "WHERE" else ""
                found.append(Write(statement, match[2], "insert", sets, where))
            else:
                found.append(Write(statement, match[3], "delete", "", ""))
    return found


def _assignment(sets: str, column: str) -> str | None:
    """The expression ``column`` is set to in a SET clause, or None."""
    match = re.search(rf"(?<![\w.])(?:\w+\.)?{column}\s*=(?!=)", sets)
    if match is None:
        return None
    return _expression(sets[match.end() :])


def _expression(text: str) -> str:
    depth, quoted = 0, False
    for i, char in enumerate(text):
        if char == "'":
            quoted = not quoted
        elif not quoted:
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
            elif char == "," and depth == 0:
                return text[:i]
    return text


def _guards(where: str, column: str) -> tuple[set[str], bool]:
    """The states a WHERE clause admits by literal, and whether it also admits a parameterised set."""
    literals: set[str] = set()
    parameter = False
    for match in re.finditer(
        rf"(?<![\w.])(?:\w+\.)?{column}\s*(=\s*'([^']*)'|IN\s*\(([^)]*)\)|=\s*ANY\s*\()", where, re.I
    ):
        if match[2] is not None:
            literals.add(match[2])
        elif match[3] is not None:
            literals |= set(LITERAL.findall(match[3]))
        else:
            parameter = True
    return literals, parameter


BLOCKS = _blocks()
WRITES = _writes(BLOCKS)


def _state_writes(entity: Entity) -> dict[str, list[Write]]:
    """The entity's writes by statement: updates of its state column, inserts and deletes of its rows."""
    by: dict[str, list[Write]] = {}
    for write in WRITES:
        if write.table != entity.table:
            continue
        if write.kind == "update" and _assignment(write.sets, entity.column) is None:
            continue
        by.setdefault(write.statement, []).append(write)
    return by


@pytest.mark.parametrize("entity", ENTITIES, ids=lambda e: e.name)
def test_every_state_column_write_in_the_sql_is_a_declared_transition(entity):
    """Each statement that inserts, deletes, or sets the state column of the entity's table is named in its table."""
    declared = {t.statement for t in entity.transitions}
    undeclared = sorted(
        statement
        for statement, writes in _state_writes(entity).items()
        if statement not in declared
        and not (all(w.kind == "delete" for w in writes) and entity.name != "letter")
    )
    assert undeclared == [], (
        f"{entity.name}: statements writing {entity.table}.{entity.column} not in dlq/states.py"
    )


@pytest.mark.parametrize("entity", ENTITIES, ids=lambda e: e.name)
def test_every_declared_transition_is_a_statement_with_those_targets_and_guards(entity):
    """A declared transition's statement exists, writes those target states, and its WHERE (or its row lock's) admits exactly its sources."""
    writes = _state_writes(entity)
    by_statement: dict[str, list[states.Transition]] = {}
    for transition in entity.transitions:
        assert set(transition.sources) <= {*entity.states, CREATED}, transition
        assert transition.target in {*entity.states, DELETED}, transition
        assert transition.statement in BLOCKS, f"{transition.statement}: no such named SQL block"
        by_statement.setdefault(transition.statement, []).append(transition)
    for statement, transitions in by_statement.items():
        found = writes.get(statement, [])
        assert found, f"{statement} does not write {entity.table}.{entity.column}"
        targets = {t.target for t in transitions}
        sources = {s for t in transitions for s in t.sources if s != CREATED}
        if targets == {DELETED}:
            assert any(w.kind == "delete" for w in found), statement
        if any(CREATED in t.sources for t in transitions):
            assert any(w.kind == "insert" for w in found), f"{statement} creates no {entity.name}"
        setting = [w for w in found if _assignment(w.sets, entity.column) is not None]
        if not sources:
            continue
        assert setting or targets == {DELETED}, f"{statement} leaves {sources} but sets no {entity.column}"
        literals: set[str] = set()
        parameterised = False
        for write in setting:
            expression = _assignment(write.sets, entity.column) or ""
            literals |= set(LITERAL.findall(expression))
            parameterised |= "%(" in expression
        if setting and not parameterised:
            assert literals == targets, f"{statement} sets {entity.column} to {literals}, declared {targets}"
        guards, guard_parameter = set(), False
        for write in setting or found:  # a delete's guard may sit in the CTE that picks its rows
            g, p = _guards(write.where if write.kind != "delete" else BLOCKS[statement], entity.column)
            guards |= g
            guard_parameter |= p
        held = {t.held_by for t in transitions}
        if not guards and not guard_parameter:
            assert held != {None} and None not in held, (
                f"{statement}: no guard on {entity.column} and no row lock named"
            )
            (holder,) = held
            assert holder in BLOCKS, f"{holder}: no such named SQL block"
            guards, guard_parameter = _guards(BLOCKS[holder], entity.column)
            guards = guards or set(entity.states)  # a row lock that admits any state: every state is a source
        if not guard_parameter:
            assert guards == sources, f"{statement} admits {guards}, declared sources {sources}"


@pytest.mark.parametrize("entity", ENTITIES, ids=lambda e: e.name)
def test_every_non_terminal_state_has_an_exit_and_a_way_out(entity):
    """Each non-terminal state names what ends it and is left by at least one transition; each state can be reached."""
    assert set(entity.exits) <= set(entity.states)
    for state in entity.exits:
        assert entity.exits[state].strip()
        assert any(state in t.sources and t.target != state for t in entity.transitions), state
    for state in entity.states:
        assert any(t.target == state for t in entity.transitions), f"{entity.name}: nothing reaches {state}"


def test_the_checker_sees_a_guard_that_disagrees():
    """The parser reads a literal guard and target: a block whose WHERE admits another state is told apart."""
    (write,) = _writes({"x:y": "UPDATE retry_alerts SET status = 'sent' WHERE id = 1 AND status = 'dropped'"})
    assert LITERAL.findall(_assignment(write.sets, "status") or "") == ["sent"]
    assert _guards(write.where, "status") == ({"dropped"}, False)


def test_docs_architecture_shows_the_declared_tables():
    """docs/ARCHITECTURE.md's State tables section is ``dlq/states.py``'s markdown (regenerate: python -m airflow_retry_provider.dlq.states)."""
    text = ARCHITECTURE.read_text()
    begin, end = (
        text.index("<!-- states:begin"),
        text.index("<!-- states:end -->") + len("<!-- states:end -->\n"),
    )
    assert text[begin:end] == states.markdown()

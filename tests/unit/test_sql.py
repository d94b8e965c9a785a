"""Named SQL files: every statement loads by name, comments never become parameters."""

from __future__ import annotations

import pytest

from airflow_retry_provider import sql


def test_parse_named_drops_comment_lines_and_semicolons():
    """A placeholder inside a whole-line comment is not part of the statement."""
    text = "-- header\n-- name: one\n-- uses %(dag_ids)s in prose\nSELECT %(x)s;\n\n-- name: two\nSELECT 2;\n"
    assert sql.parse_named(text) == {"one": "SELECT %(x)s", "two": "SELECT 2"}


def test_parse_named_refuses_a_name_twice():
    """Two statements with one name is an error naming it."""
    with pytest.raises(ValueError, match="'one'"):
        sql.parse_named("-- name: one\nSELECT 1;\n-- name: one\nSELECT 2;\n")


@pytest.mark.parametrize(
    ("package", "filename"),
    [
        ("airflow_retry_provider.dlq.sql", "queries.sql"),  # dead letters and replays
        ("airflow_retry_provider.dlq.sql", "deliveries.sql"),  # the Deliveries view and the sweeper's watch
        ("airflow_retry_provider.dlq.sql", "fragments.sql"),  # clauses statements include (the letter filter)
        ("airflow_retry_provider.plugin.sql", "queries.sql"),  # the pages' reads of the letters
        ("airflow_retry_provider.alerts.sql", "queries.sql"),  # the alert outbox
        ("airflow_retry_provider.ledger.sql", "queries.sql"),  # work-unit ledger
        ("airflow_retry_provider.reconciliation.sql", "queries.sql"),  # trails and reports
        ("airflow_retry_provider.operators.sql", "medallion.sql"),  # medallion templates, same loader
        ("airflow_retry_provider.migrations", "queries.sql"),  # the migration runner
    ],
)
def test_shipped_queries_parse_and_have_no_comment_placeholders(package, filename):
    """Every shipped named-SQL file parses through the one loader, and no statement is empty."""
    statements = sql.named(package, filename)
    assert statements
    assert all(body and not body.lstrip().startswith("--") for body in statements.values())


def test_medallion_templates_come_from_the_one_loader():
    """The medallion operators' query() returns the loader's statement, and names an unknown one."""
    from airflow_retry_provider.operators.sql import query

    statements = sql.named("airflow_retry_provider.operators.sql", "medallion.sql")
    name = next(iter(statements))
    assert query(name) == statements[name]
    with pytest.raises(KeyError, match="no_such_statement"):
        query("no_such_statement")


def test_an_include_line_becomes_the_fragment_in_parentheses():
    """``-- include: <package>:<name>`` is replaced by that fragment of the package's fragments.sql."""
    text = "-- name: one\nSELECT * FROM retry_dead_letters WHERE\n  -- include: airflow_retry_provider.dlq.sql:letter_filter\n"
    statement = sql.parse_named(sql.compose(text))["one"]
    head, included = statement.split("\n", 1)
    assert head == "SELECT * FROM retry_dead_letters WHERE"
    letter_filter = sql.fragment("airflow_retry_provider.dlq.sql", "letter_filter")
    assert included.startswith("(") and included.endswith(")")
    assert included[1:-1] == letter_filter


def test_an_unknown_fragment_is_named():
    """Including a fragment that does not exist fails naming it."""
    with pytest.raises(KeyError, match="no_such_fragment"):
        sql.compose("-- include: airflow_retry_provider.dlq.sql:no_such_fragment\n")


@pytest.mark.parametrize(
    ("package", "statement"),
    [
        ("airflow_retry_provider.dlq.sql", "list_letters"),  # the CLI's list and a replay's selection
        ("airflow_retry_provider.plugin.sql", "ui_list_letters"),  # the Dead letters page
        ("airflow_retry_provider.plugin.sql", "ui_count_letters"),  # its count
        ("airflow_retry_provider.plugin.sql", "ui_fingerprint_groups"),  # its groups by root cause
        ("airflow_retry_provider.plugin.sql", "ui_export_letters"),  # the CSV and JSON exports
    ],
)
def test_the_letter_filter_is_written_once(package: str, statement: str) -> None:
    """Each statement that filters letters includes the one letter filter, and no file repeats its clauses."""
    letter_filter = sql.fragment("airflow_retry_provider.dlq.sql", "letter_filter")
    assert f"({letter_filter})" in sql.named(package)[statement]
    assert "%(task_id)s::text IS NULL" not in sql.read(package, "queries.sql")

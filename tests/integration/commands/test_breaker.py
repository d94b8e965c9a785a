"""``airflow-retry breaker ...`` on a real PostgreSQL: forcing is recorded with who and why; bad input is one line, exit 2."""

from __future__ import annotations

from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.capacity import example_dependencies_path
from airflow_retry_provider.cli import main

MAP = str(example_dependencies_path())  # declares positions_db and partner_api


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_force_open_then_auto_is_listed_with_its_history(pg_dsn, capsys):
    code, out, _ = _run(
        capsys,
        "breaker",
        "open",
        "positions_db",
        "--reason",
        "planned failover",
        "--actor",
        "ana",
        "--file",
        MAP,
        "--dsn",
        pg_dsn,
    )
    assert (code, out) == (0, "positions_db: forced open (automatic state: closed)\n")
    assert BreakerStore.from_dsn(pg_dsn).get("positions_db").forced == "open"
    code, out, _ = _run(capsys, "breaker", "list", "--dsn", pg_dsn, "--history", "positions_db")
    assert code == 0
    assert out.splitlines()[0].startswith("positions_db: forced open (automatic state: closed), open since ")
    assert "closed -> forced open (automatic state: closed) by user:ana: planned failover" in out
    code, out, _ = _run(capsys, "breaker", "auto", "positions_db", "--reason", "done", "--dsn", pg_dsn)
    assert (code, out) == (0, "positions_db: closed\n")
    assert BreakerStore.from_dsn(pg_dsn).get("positions_db").forced is None


def test_a_blank_reason_or_a_nul_is_refused_naming_the_flag(pg_dsn, capsys):
    code, out, err = _run(capsys, "breaker", "close", "positions_db", "--reason", "  ", "--dsn", pg_dsn)
    assert (code, out) == (2, "")
    assert err == "airflow-retry: --reason: say why the breaker is forced (it is recorded)\n"
    code, _, err = _run(capsys, "breaker", "close", "positions\x00db", "--reason", "x", "--dsn", pg_dsn)
    assert code == 2 and err.startswith("airflow-retry: dependency: 'positions\\x00db' holds a character")
    assert BreakerStore.from_dsn(pg_dsn).statuses() == []


def test_an_unknown_dependency_is_refused_with_the_known_names(pg_dsn, capsys):
    """A misspelled dependency is a usage error listing the map's names; no phantom breaker is made."""
    code, out, err = _run(
        capsys, "breaker", "open", "positons_db", "--reason", "test", "--file", MAP, "--dsn", pg_dsn
    )
    assert (code, out) == (2, "")
    assert (
        "unknown dependency 'positons_db'" in err and "known dependencies: partner_api, positions_db" in err
    )
    code, _, err = _run(capsys, "breaker", "open", "positons_db", "--reason", "test", "--dsn", pg_dsn)
    assert code == 2 and "no dependency map is set" in err and "known dependencies: none" in err
    assert BreakerStore.from_dsn(pg_dsn).statuses() == []
    assert _run(capsys, "breaker", "list", "--dsn", pg_dsn) == (1, "no breaker has been used yet\n", "")

"""``airflow-retry reconcile`` and ``airflow-retry health``: JSON in, sorted JSON out, one-line errors."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from airflow_retry_provider import cli
from airflow_retry_provider.commands import reconcile

MODULE = "airflow_retry_provider.commands.reconcile"


def run_cli(argv: Sequence[str]) -> int:
    """Run exactly like ``airflow-retry reconcile gaps|health``: through ``cli.main``, where it is registered."""
    action = {"reconcile": "gaps", "health": "health"}[argv[0]]
    return cli.main(["reconcile", action, *argv[1:]])


def write(tmp_path: Path, document: Any, name: str = "input.json") -> str:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return str(path)


def snapshot() -> dict[str, Any]:
    return {
        "source_runs": [
            {
                "workspace_id": "w1",
                "source_id": "crm",
                "status": "ok",
                "started_at": "2026-11-30T07:00:00-03:00",
                "finished_at": None,
            },
            {
                "workspace_id": "w2",
                "source_id": "crm",
                "status": "ok",
                "started_at": "2026-11-30T10:00:00Z",
                "finished_at": None,
            },
        ],
        "bronze_tables": [
            {
                "workspace_id": "w1",
                "source_id": "crm",
                "table": "orders",
                "selected": True,
                "processed_at": None,
            },
            {
                "workspace_id": "w1",
                "source_id": "crm",
                "table": "users",
                "selected": True,
                "processed_at": "2026-11-30T09:00:00Z",
            },
            {
                "workspace_id": "w2",
                "source_id": "crm",
                "table": "orders",
                "selected": True,
                "processed_at": "2026-11-30T10:00:00Z",
            },
        ],
        "transforms": [
            {
                "workspace_id": "w1",
                "transform_id": "stg",
                "layer": "silver",
                "inputs": ["crm/users"],
                "last_run_at": "2026-11-30T08:00:00Z",
            },
            {"workspace_id": "w1", "transform_id": "rev", "layer": "gold", "inputs": [], "last_run_at": None},
            {
                "workspace_id": "w2",
                "transform_id": "stg",
                "layer": "silver",
                "inputs": ["orders"],
                "last_run_at": "2026-11-30T10:00:00Z",
            },
        ],
    }


def events() -> dict[str, Any]:
    def event(
        run_id: str, started_at: str, duration_ms: int, status: str = "ok", connector: str = "api"
    ) -> dict[str, Any]:
        return {
            "workspace_id": "w1",
            "connector_id": connector,
            "run_id": run_id,
            "operation": "fetch",
            "started_at": started_at,
            "duration_ms": duration_ms,
            "status": status,
        }

    return {
        "connectors": [{"workspace_id": "w1", "connector_id": "idle"}],
        "events": [
            event("r1", "2026-11-30T06:00:00-03:00", 1000),
            event("r1", "2026-11-30T06:00:01-03:00", 1000),
            event("r2", "2026-11-30T08:00:00-03:00", 4000, "error"),
            event("r3", "2026-11-30T12:00:00-03:00", 500),  # after as_of: ignored
        ],
    }


def assert_sorted_json(text: str) -> Any:
    document = json.loads(text)
    assert text == json.dumps(document, sort_keys=True, indent=2) + "\n"
    return document


def test_reconcile_prints_sorted_findings_in_utc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``reconcile --input`` prints every workspace's findings as sorted JSON with UTC timestamps."""
    assert run_cli(["reconcile", "--input", write(tmp_path, snapshot())]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    findings = assert_sorted_json(out)["findings"]
    assert [(f["workspace_id"], f["layer"], f["kind"], f["subject"]) for f in findings] == [
        ("w1", "bronze", "missing", "crm/orders"),
        ("w1", "bronze", "stale", "crm/users"),
        ("w1", "silver", "stale", "stg"),
        ("w1", "gold", "missing", "rev"),
    ]
    assert findings[0] == {
        "workspace_id": "w1",
        "layer": "bronze",
        "kind": "missing",
        "subject": "crm/orders",
        "expected_after": "2026-11-30T10:00:00+00:00",
        "observed_at": None,
        "action": "Run source 'crm' to load bronze table 'crm/orders', which it has never loaded.",
    }
    assert findings[2]["observed_at"] == "2026-11-30T08:00:00+00:00"


def test_reconcile_workspace_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--workspace`` keeps one workspace; a clean workspace prints an empty list."""
    path = write(tmp_path, snapshot())
    assert run_cli(["reconcile", "--input", path, "--workspace", "w2"]) == 0
    assert json.loads(capsys.readouterr().out) == {"findings": []}
    assert run_cli(["reconcile", "--input", path, "--workspace", "w1"]) == 0
    assert {f["workspace_id"] for f in json.loads(capsys.readouterr().out)["findings"]} == {"w1"}


def test_reconcile_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``--input -`` reads the snapshot from standard input."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(snapshot())))
    assert run_cli(["reconcile", "--input", "-", "--workspace", "w1"]) == 0
    assert len(json.loads(capsys.readouterr().out)["findings"]) == 4


def test_stdin_bad_input_is_named_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad JSON on standard input is reported as ``<stdin>`` with exit code 2."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("nope"))
    assert run_cli(["reconcile", "--input", "-"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "airflow-retry: <stdin>: not valid JSON: Expecting value at line 1 column 1\n")


def test_health_prints_sorted_connectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``health`` prints each connector's figures as sorted JSON; expected silent connectors are stopped."""
    argv = ["health", "--input", write(tmp_path, events()), "--as-of", "2026-11-30T09:00:00-03:00"]
    assert run_cli(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert assert_sorted_json(out) == {
        "connectors": [
            {
                "workspace_id": "w1",
                "connector_id": "api",
                "runs": 2,
                "failed_runs": 1,
                "error_rate": 0.5,
                "p50_ms": 3000.0,  # durations 2000 and 4000: halfway
                "p95_ms": 3900.0,  # 2000 + 0.95 * 2000
                "last_run_at": "2026-11-30T11:00:04+00:00",
                "freshness_seconds": 10798.0,  # as-of 12:00:00 minus r1's finish 09:00:02 (UTC)
                "status": "failing",
            },
            {
                "workspace_id": "w1",
                "connector_id": "idle",
                "runs": 0,
                "failed_runs": 0,
                "error_rate": None,
                "p50_ms": None,
                "p95_ms": None,
                "last_run_at": None,
                "freshness_seconds": None,
                "status": "stopped",
            },
        ]
    }


def test_health_window_hours(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--window-hours`` shortens the window: only the later run is counted."""
    argv = [
        "health",
        "--input",
        write(tmp_path, events()),
        "--as-of",
        "2026-11-30T12:00:00Z",
        "--window-hours",
        "1.5",
    ]
    assert run_cli(argv) == 0
    api = json.loads(capsys.readouterr().out)["connectors"][0]
    assert (api["runs"], api["failed_runs"], api["freshness_seconds"]) == (1, 1, None)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        # not JSON at all
        (
            "{not json",
            "input.json: not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2",
        ),
        # JSON, but not an object
        ("[]", "input.json: input: expected an object, got []"),
        # a missing top-level list
        ({"source_runs": [], "bronze_tables": []}, "input.json: transforms: missing field"),
        # a missing field in a row
        (
            {
                **snapshot(),
                "bronze_tables": [{"workspace_id": "w1", "source_id": "crm", "table": "t", "selected": True}],
            },
            "input.json: bronze_tables[0].processed_at: missing field",
        ),
        # a bad timestamp
        (
            {
                **snapshot(),
                "bronze_tables": [
                    {
                        "workspace_id": "w1",
                        "source_id": "crm",
                        "table": "t",
                        "selected": True,
                        "processed_at": "yesterday",
                    }
                ],
            },
            "input.json: bronze_tables[0].processed_at: 'yesterday' is not an ISO 8601 timestamp with offset",
        ),
        # an unknown layer
        (
            {
                **snapshot(),
                "transforms": [
                    {
                        "workspace_id": "w1",
                        "transform_id": "x",
                        "layer": "platinum",
                        "inputs": [],
                        "last_run_at": None,
                    }
                ],
            },
            "input.json: transforms[0].layer: 'platinum' is not one of 'silver', 'gold'",
        ),
        # an unknown source run status
        (
            {
                **snapshot(),
                "source_runs": [
                    {
                        "workspace_id": "w1",
                        "source_id": "crm",
                        "status": "done",
                        "started_at": "2026-11-30T10:00:00Z",
                        "finished_at": None,
                    }
                ],
            },
            "input.json: source_runs[0].status: 'done' is not one of 'ok', 'failed', 'running'",
        ),
        # the input file does not exist
        (None, "missing.json: no such file"),
    ],
)
def test_reconcile_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: Any, message: str
) -> None:
    """Bad snapshot input: exit 2, nothing on stdout, one stderr line naming the problem."""
    path = str(tmp_path / "missing.json") if document is None else write(tmp_path, document)
    assert run_cli(["reconcile", "--input", path]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"airflow-retry: {str(tmp_path)}/{message}\n"


@pytest.mark.parametrize(
    ("document", "options", "message"),
    [
        # not JSON at all
        ("", [], "{dir}/input.json: not valid JSON: Expecting value at line 1 column 1"),
        # events is required
        ({"connectors": []}, [], "{dir}/input.json: events: missing field"),
        # an unknown event status
        (
            {"events": [{**events()["events"][0], "status": "warn"}]},
            [],
            "{dir}/input.json: events[0].status: 'warn' is not one of 'ok', 'error'",
        ),
        # a bad event timestamp
        (
            {"events": [{**events()["events"][0], "started_at": "2026-11-30"}]},
            [],
            "{dir}/input.json: events[0].started_at: '2026-11-30' is not an ISO 8601 timestamp with offset",
        ),
        # a negative duration
        (
            {"events": [{**events()["events"][0], "duration_ms": -5}]},
            [],
            "{dir}/input.json: events[0].duration_ms: -5 is not a non-negative integer",
        ),
        # --as-of without an offset
        (
            events(),
            ["--as-of", "2026-11-30T12:00:00"],
            "--as-of: '2026-11-30T12:00:00' is not an ISO 8601 timestamp with offset",
        ),
        # --as-of that is not a timestamp
        (events(), ["--as-of", "now"], "--as-of: 'now' is not an ISO 8601 timestamp with offset"),
        # a zero window
        (events(), ["--window-hours", "0"], "--window-hours: '0' is not a positive number of hours"),
        # a negative window
        (events(), ["--window-hours", "-2"], "--window-hours: '-2' is not a positive number of hours"),
        # a window that is not a number
        (events(), ["--window-hours", "day"], "--window-hours: 'day' is not a positive number of hours"),
        # a window that is not finite
        (events(), ["--window-hours", "inf"], "--window-hours: 'inf' is not a positive number of hours"),
        # a timestamp that does not fit in UTC
        (
            {"events": [{**events()["events"][0], "started_at": "9999-12-31T23:00:00-03:00"}]},
            [],
            "{dir}/input.json: events[0].started_at: '9999-12-31T23:00:00-03:00' is out of range in UTC",
        ),
        # an event that would finish after the year 9999
        (
            {
                "events": [
                    {**events()["events"][0], "started_at": "9999-12-31T23:59:59Z", "duration_ms": 5000}
                ]
            },
            [],
            "{dir}/input.json: an event's started_at + duration_ms is out of range",
        ),
        # the input file does not exist
        (None, [], "{dir}/missing.json: no such file"),
    ],
)
def test_health_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: Any, options: list[str], message: str
) -> None:
    """Bad health input: exit 2, nothing on stdout, one stderr line naming the problem."""
    path = str(tmp_path / "missing.json") if document is None else write(tmp_path, document)
    argv = ["health", "--input", path, "--as-of", "2026-11-30T12:00:00Z", *options]
    assert run_cli(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"airflow-retry: {message.format(dir=tmp_path)}\n"


def test_reconcile_module_is_registered_with_the_cli() -> None:
    """``airflow-retry`` itself knows ``reconcile`` and ``health``: no test-side parser stands in."""
    assert MODULE in cli.COMMAND_MODULES


def test_register_adds_both_subcommands() -> None:
    """``register`` adds ``reconcile gaps`` and ``reconcile health``, each with a ``func`` default."""
    parser = argparse.ArgumentParser()
    reconcile.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["reconcile", "health", "--input", "-", "--as-of", "2026-11-30T12:00:00Z"])
    assert args.func is reconcile.run_health
    assert args.window_hours == "24"
    assert parser.parse_args(["reconcile", "gaps", "--input", "-"]).func is reconcile.run_reconcile


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        (
            ["reconcile"],
            ["reconcile", "gaps"],
            "'reconcile --input' is deprecated: use 'airflow-retry reconcile gaps'",
        ),
        (["health"], ["reconcile", "health"], "'health' is deprecated: use 'airflow-retry reconcile health'"),
    ],
)
def test_the_old_forms_still_work_and_warn(tmp_path, capsys, old, new, line) -> None:
    """0.1.0's ``reconcile --input`` and ``health`` print what the new commands print, and warn once."""
    if old == ["health"]:
        rest = ["--input", write(tmp_path, events()), "--as-of", "2026-11-30T09:00:00-03:00"]
    else:
        rest = ["--input", write(tmp_path, snapshot())]
    assert cli.main([*new, *rest]) == 0
    expected = capsys.readouterr()
    assert cli.main([*old, *rest]) == 0
    got = capsys.readouterr()
    assert got.out == expected.out
    assert got.err == f"airflow-retry: {line}\n"


def test_reconcile_without_an_action_names_the_actions(capsys) -> None:
    """``airflow-retry reconcile`` alone is a usage error listing gaps and health."""
    assert cli.main(["reconcile"]) == 2
    assert "choose an action: gaps or health" in capsys.readouterr().err

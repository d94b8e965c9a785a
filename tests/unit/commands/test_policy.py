"""The `airflow-retry classify`, `schedule` and `decide` commands."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_retry_provider import ClassifiedRetryPolicy
from airflow_retry_provider.cli import main
from airflow_retry_provider.commands import policy as policy_commands
from airflow_retry_provider.policy import Backoff, get_profile

# the case `decide --example` prints: one task waiting out its backoff, one still running
CASE: dict[str, Any] = policy_commands.EXAMPLE_CASE


def set_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``airflow-retry policy <argv>``: code, stdout and stderr."""
    code = main(["policy", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--type", "TimeoutError", "timed out"], ["unknown", "timeout", "type-timeout"]),  # builtin type
        (
            ["--type", "requests.exceptions.ConnectTimeout", "HTTPSConnectionPool: Max retries exceeded"],
            ["retryable", "connect-timeout", "type-connect-timeout"],
        ),  # a dotted name matches by name
        (
            ["--type", "airflow.sdk.exceptions.AirflowTaskTimeout", "Timeout, PID: 7"],
            ["unknown", "task-timeout", "type-task-timeout"],
        ),  # Airflow's timeout, the real class
        (["--status", "429", "slow down"], ["retryable", "rate-limited", "http-rate-limited"]),  # HTTP status
        (
            ["--sqlstate", "40P01", "deadlock detected"],
            ["retryable", "deadlock", "sqlstate-deadlock"],
        ),  # SQLSTATE
        (["table x not found"], ["poison", "not-found", "message-not-found"]),  # message only, default type
        (["something odd"], ["retryable", "unclassified", "default"]),  # nothing matched
    ],
)
def test_classify_json(capsys: pytest.CaptureFixture[str], argv: list[str], expected: list[str]) -> None:
    """classify --json prints failure_class, category and rule."""
    code, out, err = run(capsys, "classify", *argv, "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == dict(zip(["failure_class", "category", "rule"], expected, strict=True))


def test_classify_text(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json, classify prints one readable line."""
    assert run(capsys, "classify", "--status", "404", "gone") == (
        0,
        "poison/not-found (rule: http-not-found)\n",
        "",
    )


def test_classify_resolves_a_dotted_type_to_the_real_class(capsys: pytest.CaptureFixture[str]) -> None:
    """--type psycopg.errors.UndefinedTable classifies as the real exception does in a task (its SQLSTATE)."""
    code, out, err = run(capsys, "classify", "--type", "psycopg.errors.UndefinedTable", "x", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "failure_class": "poison",
        "category": "not-found",
        "rule": "sqlstate-not-found",
    }


def test_classify_says_when_a_dotted_type_cannot_be_imported(capsys: pytest.CaptureFixture[str]) -> None:
    """A dotted --type that cannot be imported is judged by its name, and stderr says so."""
    code, out, err = run(capsys, "classify", "--type", "nowhere_pkg.errors.Gone", "x")
    assert (code, out) == (0, "retryable/unclassified (rule: default)\n")
    assert err.startswith("airflow-retry: note: cannot import 'nowhere_pkg.errors.Gone' (ModuleNotFoundError")
    assert "classified by its name alone" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--type", "not a name", "x"], "--type must be an exception name"),  # not an identifier
        (["--type", "UnicodeDecodeError", "x"], "--type UnicodeDecodeError cannot be built from a message"),
        (["--sqlstate", "4000", "x"], "--sqlstate must be five letters or digits"),  # too short
        (["--status", "999", "x"], "--status must be an HTTP status from 100 to 599"),  # not an HTTP status
    ],
)
def test_classify_bad_input(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    """Bad classify input: one line on stderr, exit 2."""
    code, out, err = run(capsys, "classify", *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"airflow-retry: {message}")
    assert err.count("\n") == 1


def test_classify_with_a_rule_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """classify applies the rule file (--rules, else $AIRFLOW__RETRY_PROVIDER__RULES_FILE) before the defaults."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n- {class: retryable, category: eventually-consistent, status: 404}\n")
    expected = (0, "retryable/eventually-consistent (rule: file-rules-0)\n", "")
    assert run(capsys, "classify", "--status", "404", "--rules", str(rules), "gone") == expected
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__RULES_FILE", str(rules))
    assert run(capsys, "classify", "--status", "404", "gone") == expected


def test_classify_answers_without_importing_airflow_and_reads_the_rule_file_of_airflow_cfg(
    tmp_path: Path,
) -> None:
    """``policy classify`` does not import Airflow (seconds: it answered in 2-5 s, ``schedule`` in 0.3 s),
    and still applies ``[retry_provider] rules_file`` set in airflow.cfg, as Airflow would read it."""
    import os

    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n- {class: retryable, category: eventually-consistent, status: 404}\n")
    config = tmp_path / "airflow.cfg"
    config.write_text(f"[core]\nload_examples = False\n\n[retry_provider]\nrules_file = {rules}\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIRFLOW__RETRY_PROVIDER__", "AIRFLOW_RETRY_"))
    }
    script = (
        "import sys\nfrom airflow_retry_provider.cli import main\n"
        "code = main(['policy', 'classify', '--status', '404', 'gone'])\n"
        "print('airflow imported' if 'airflow' in sys.modules else 'airflow not imported', code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**env, "AIRFLOW_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == [
        "retryable/eventually-consistent (rule: file-rules-0)",
        "airflow not imported 0",
    ], done.stderr


def test_classify_with_a_bad_rule_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A bad rule file: one line naming the file, the rule and the field; exit 2."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n- {class: retryable, category: x, status: 42}\n")
    code, out, err = run(capsys, "classify", "--rules", str(rules), "gone")
    assert (code, out) == (2, "")
    assert err.startswith(f"airflow-retry: {rules}: rules[0].status: codes must be HTTP status codes")


def test_schedule_json_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a profile: the default Backoff and 3 attempts, so two rows."""
    code, out, _ = run(capsys, "schedule", "--seed", "job", "--json")
    assert code == 0
    assert json.loads(out) == [
        {"attempt": 1, "nominal_seconds": 300.0, "delay_seconds": 280.108, "cumulative_seconds": 280.108},
        {"attempt": 2, "nominal_seconds": 600.0, "delay_seconds": 558.459, "cumulative_seconds": 838.567},
    ]


def test_schedule_of_the_spec_example_is_fnv1a(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's command gives the spec's FNV-1a delays, computed here with a reference FNV-1a."""
    code, out, _ = run(
        capsys,
        *("schedule", "--base", "300", "--multiplier", "2", "--cap", "3600", "--jitter", "0.25"),
        *("--seed", "run-123", "--max-attempts", "8", "--json"),
    )
    assert code == 0

    def fnv1a(data: bytes) -> int:
        h = 2166136261
        for octet in data:
            h = ((h ^ octet) * 16777619) % 2**32
        return h

    expected = [
        (300 * 2 ** (n - 1) if n < 5 else 3600) * (1 - 0.25 * fnv1a(f"run-123#{n}".encode()) / 2**32)
        for n in range(1, 8)
    ]
    assert [row["delay_seconds"] for row in json.loads(out)] == pytest.approx(expected, abs=0.001)


@pytest.mark.parametrize(
    ("flags", "start", "end"),
    [
        # a scheduled run: the data interval is the seed's identity
        (
            [
                "--data-interval-start",
                "2026-11-29T00:00:00+00:00",
                "--data-interval-end",
                "2026-11-30T00:00Z",
            ],
            datetime(2026, 11, 29, tzinfo=timezone.utc),
            datetime(2026, 11, 30, tzinfo=timezone.utc),
        ),
        ([], None, None),  # a manual run without a data interval: the run id is
    ],
)
def test_schedule_of_a_task_instance_is_the_delay_its_task_gets(
    capsys: pytest.CaptureFixture[str], flags: list[str], start: datetime | None, end: datetime | None
) -> None:
    """--dag-id/--task-id/--run-id build the seed a task builds: the first delay is the one its policy returns."""
    code, out, _ = run(
        capsys,
        *("schedule", "--profile", "report", "--dag-id", "daily_sales", "--task-id", "load"),
        *("--run-id", "scheduled__2026-11-29", "--map-index", "3", "--json", *flags),
    )
    assert code == 0
    ti = SimpleNamespace(dag_id="daily_sales", task_id="load", run_id="scheduled__2026-11-29", map_index=3)
    context = {
        "ti": ti,
        "task": SimpleNamespace(retries=2),
        "data_interval_start": start,
        "data_interval_end": end,
    }
    policy = ClassifiedRetryPolicy("report", clock=lambda: datetime(2026, 11, 30, 1, tzinfo=timezone.utc))
    decision = policy.evaluate(ConnectionResetError(104, "reset"), 1, 2, context)
    assert json.loads(out)[0]["delay_seconds"] == decision.retry_delay.total_seconds()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--dag-id", "d"], "--task-id, --run-id missing"),  # half a task instance
        (["--seed", "s", "--dag-id", "d"], "not both"),  # two seeds
        (
            ["--dag-id", "d", "--task-id", "t", "--run-id", "r", "--data-interval-start", "2026-11-29"],
            "--data-interval-start must be an ISO 8601 time with its offset",  # naive: which zone?
        ),
        (
            [
                "--dag-id",
                "d",
                "--task-id",
                "t",
                "--run-id",
                "r",
                "--data-interval-start",
                "2026-11-29T00:00Z",
            ],
            "both --data-interval-start and --data-interval-end",  # half an interval
        ),
    ],
)
def test_schedule_seed_errors_name_the_flag(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """A seed given wrongly is a usage error naming the flag."""
    code, _, err = run(capsys, "schedule", *flags)
    assert code == 2 and message in err


def test_schedule_profile(capsys: pytest.CaptureFixture[str]) -> None:
    """--profile takes the profile's backoff and ceiling."""
    profile = get_profile("report")
    code, out, _ = run(capsys, "schedule", "--profile", "report", "--seed", "s", "--json")
    rows = json.loads(out)
    assert code == 0
    assert len(rows) == profile.max_attempts - 1
    assert rows[0]["delay_seconds"] == profile.backoff.delay(1, "s").total_seconds()


def test_schedule_flags_override_profile(capsys: pytest.CaptureFixture[str]) -> None:
    """Explicit flags override the profile's values."""
    argv = ["schedule", "--profile", "dashboard", "--base", "10", "--jitter", "0", "--max-attempts", "4"]
    code, out, _ = run(capsys, *argv, "--seed", "s", "--json")
    assert code == 0
    assert [row["delay_seconds"] for row in json.loads(out)] == [10.0, 20.0, 40.0]


def test_schedule_fractional_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    """Seconds are printed with millisecond precision."""
    argv = ["schedule", "--base", "1.5", "--multiplier", "1.5", "--cap", "60", "--jitter", "0.1"]
    code, out, _ = run(capsys, *argv, "--max-attempts", "3", "--seed", "s", "--json")
    backoff = Backoff(base=timedelta(seconds=1.5), multiplier=1.5, cap=timedelta(seconds=60), jitter=0.1)
    expected = [round(row.delay.total_seconds(), 3) for row in backoff.schedule(3, "s")]
    assert code == 0
    assert [row["delay_seconds"] for row in json.loads(out)] == expected
    assert [row["nominal_seconds"] for row in json.loads(out)] == [1.5, 2.25]


def test_schedule_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json, schedule prints a readable table."""
    code, out, _ = run(capsys, "schedule", "--seed", "job")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].startswith("backoff: base 5m, multiplier 2, cap 1h, jitter 0.25; max_attempts 3")
    assert "after attempt" in lines[1]
    assert lines[2].split() == ["1", "300.000s", "280.108s", "280.108s"]


def test_schedule_single_attempt(capsys: pytest.CaptureFixture[str]) -> None:
    """max_attempts 1 has no retries: an empty list."""
    assert run(capsys, "schedule", "--max-attempts", "1", "--seed", "s", "--json") == (0, "[]\n", "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--profile", "nope"],
            "unknown retry profile 'nope'; known profiles: dashboard, ",
        ),  # then any registered
        (["--base", "-1"], "--base must be a number of seconds"),  # negative
        (["--cap", "nan"], "--cap must be a number of seconds"),  # not a number
        (["--base", "600", "--cap", "60"], "cap must be a timedelta >= base"),  # cap below base
        (["--jitter", "2"], "jitter must be between 0 and 1"),  # jitter above 1
        (["--multiplier", "0.5"], "multiplier must be between 1 and 1000"),  # shrinking
        (["--max-attempts", "0"], "--max-attempts must be from 1 to 100"),  # no attempt
    ],
)
def test_schedule_bad_input(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    """Bad schedule input: one line on stderr naming the problem, exit 2."""
    code, out, err = run(capsys, "schedule", *argv, "--seed", "s")
    assert (code, out) == (2, "")
    assert err.startswith(f"airflow-retry: {message}")
    assert err.count("\n") == 1


def test_decide(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """decide reads a case on stdin and writes the plan with sorted keys."""
    set_stdin(monkeypatch, json.dumps(CASE).encode())
    code, out, err = run(capsys, "decide")
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert out == json.dumps(result, sort_keys=True, indent=2) + "\n"
    assert [(t["id"], t["decision"]) for t in result["tasks"]] == [
        ("extract", "observe-running"),
        ("load", "wait-backoff"),
    ]
    assert result["productionApproval"] is False


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "input: not valid JSON: Expecting value at line 1 column 1"),  # empty input
        (b"{", "input: not valid JSON"),  # truncated
        (b"\xff\xfe", "input: not valid UTF-8 at byte 0"),  # binary
        (b'{"asOf": 1, "asOf": 2}', 'input: duplicate key "asOf"'),  # ambiguous
        (b"[" * 100_000 + b"]" * 100_000, "input: nested too deeply"),  # recursion bomb
        (b"NaN", "input: must be an object, got NaN"),  # JSON extension, still not an object
        (json.dumps({**CASE, "asOf": True}).encode(), "asOf: must be an integer, got true"),  # a bool
        (
            json.dumps({**CASE, "tasks": [{**CASE["tasks"][0], "observedAt": 2000}]}).encode(),
            "tasks[0].observedAt: must be between 0 and asOf (1000), got 2000",
        ),  # a future observation
        (b" " * 1_000_001, "input: larger than 1000000 bytes, refused"),  # over 1 MB
        (
            b"{}",
            'input: missing "asOf" (it needs asOf, deadline, maxObservationAge, policy, tasks), it has nothing; '
            "`airflow-retry policy decide --example` prints a whole case",
        ),  # an empty case: the missing field named in the user's words, not "got []"
    ],
)
def test_decide_bad_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: bytes, message: str
) -> None:
    """Invalid input: exactly one line on stderr naming the problem, nothing on stdout, exit 2."""
    set_stdin(monkeypatch, data)
    code, out, err = run(capsys, "decide")
    assert (code, out) == (2, "")
    assert err.startswith(f"airflow-retry: {message}")
    assert err.count("\n") == 1


def test_decide_accepts_exactly_one_megabyte(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An input of exactly MAX_INPUT_BYTES (padded with whitespace) is read."""
    data = json.dumps(CASE).encode()
    set_stdin(monkeypatch, data + b" " * (policy_commands.MAX_INPUT_BYTES - len(data)))
    assert run(capsys, "decide")[0] == 0


def test_console_script() -> None:
    """The installed `airflow-retry` console script runs the decide command end to end."""
    script = Path(sys.executable).with_name("airflow-retry")
    completed = subprocess.run(
        [str(script), "policy", "decide"],
        input=json.dumps(CASE),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (completed.returncode, completed.stderr) == (0, "")
    assert json.loads(completed.stdout)["tasks"][1]["decision"] == "wait-backoff"


@pytest.mark.parametrize(
    "argv",
    [
        ["classify", "--status", "404", "gone"],  # 0.1.0's top-level classify
        ["schedule", "--seed", "job", "--json"],  # 0.1.0's top-level schedule
    ],
)
def test_the_old_top_level_names_still_work_and_warn(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """``airflow-retry classify`` runs ``policy classify`` (same stdout, exit code) and says so on stderr."""
    new = run(capsys, *argv)
    code = main(argv)
    captured = capsys.readouterr()
    assert (code, captured.out) == new[:2]
    assert captured.err == f"airflow-retry: '{argv[0]}' is deprecated: use 'airflow-retry policy {argv[0]}'\n"


def test_the_aliases_are_not_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` lists the groups only: a new user learns one grammar."""
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    listed = [line.split()[0] for line in listing.splitlines() if line.startswith("    ") and line[4] != " "]
    assert "policy" in listed and "reconcile" in listed
    assert not {"classify", "schedule", "decide", "health"} & set(listed)


def test_decide_example_is_a_case_decide_accepts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``decide --example`` prints a valid case: piped back into ``decide`` it plans both tasks."""
    code, example, err = run(capsys, "decide", "--example")
    assert (code, err) == (0, "")
    set_stdin(monkeypatch, example.encode())
    code, out, err = run(capsys, "decide")
    assert (code, err) == (0, "")
    assert {t["id"]: t["decision"] for t in json.loads(out)["tasks"]} == {
        "extract": "observe-running",
        "load": "wait-backoff",
    }


def test_decide_help_shows_an_example_case(capsys: pytest.CaptureFixture[str]) -> None:
    """``decide --help`` shows a case to start from and how to get it as a file."""
    with pytest.raises(SystemExit):
        run(capsys, "decide", "--help")
    out = capsys.readouterr().out
    assert '"asOf": 1000' in out and "decide --example > case.json" in out

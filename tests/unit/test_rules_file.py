"""[retry_provider] rules_file: a platform team's rules, checked when the DAG is parsed, tried before the defaults."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from airflow_retry_provider import ClassifiedRetryPolicy
from airflow_retry_provider.policy import classify
from airflow_retry_provider.rules_file import RULES_FILE_ENV, RulesFileError, load_rules_file, parse_rules

RULES = textwrap.dedent(
    r"""
    rules:
      - name: lake-not-yet-visible
        class: retryable
        category: eventually-consistent
        type: NoSuchKeyError
        status: [404]
      - class: poison
        category: quota-exhausted
        message: "monthly quota used up"
        regex: 'quota \d+ exceeded'
      - class: unknown
        category: lock-timeout
        sqlstate: ["55P03"]
    """
)


class NoSuchKeyError(Exception):
    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def _with(exc: BaseException, **attributes: object) -> BaseException:
    exc.__dict__.update(attributes)
    return exc


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            NoSuchKeyError("k", status_code=404),
            ("retryable", "eventually-consistent", "lake-not-yet-visible"),
        ),
        (NoSuchKeyError("k"), ("retryable", "unclassified", "default")),  # type and status must both match
        (Exception("table not found"), ("poison", "not-found", "message-not-found")),  # defaults still apply
        (Exception("Monthly quota used up"), ("poison", "quota-exhausted", "file-rules-1")),  # substring
        (Exception("quota 7 exceeded"), ("poison", "quota-exhausted", "file-rules-1")),  # or regex
        (_with(Exception("lock timeout"), sqlstate="55P03"), ("unknown", "lock-timeout", "file-rules-2")),
    ],
)
def test_file_rules_classify(exc: BaseException, expected: tuple[str, str, str]) -> None:
    """Each kind of file rule matches as written; several fields must all match."""
    result = classify(exc, parse_rules(RULES, "rules.yaml"))
    assert (result.failure_class, result.category, result.rule) == expected


def test_the_policy_tries_file_rules_before_the_defaults(tmp_path, monkeypatch):
    """A policy built with [retry_provider] rules_file set classifies a 404 as the file says, not as poison."""
    monkeypatch.setenv(RULES_FILE_ENV, str(write(tmp_path, RULES)))
    policy = ClassifiedRetryPolicy("report")
    evaluation = policy.assess(NoSuchKeyError("not yet", status_code=404), 1, 2)
    assert evaluation.classification.category == "eventually-consistent"
    assert evaluation.decision.reason.startswith("[attempt 2/3]")


def test_the_policys_own_rules_come_first(tmp_path, monkeypatch):
    """rules= in the DAG beat the file's rules."""
    from airflow_retry_provider.policy import HttpStatus

    monkeypatch.setenv(RULES_FILE_ENV, str(write(tmp_path, RULES)))
    policy = ClassifiedRetryPolicy("report", rules=[HttpStatus(404, "poison", "gone")])
    assert policy.assess(NoSuchKeyError("x", status_code=404), 1, 2).classification.category == "gone"


def test_no_file_no_rules(monkeypatch):
    """Unset or empty, the setting adds no rules."""
    monkeypatch.setenv(RULES_FILE_ENV, "")
    assert load_rules_file() == ()
    monkeypatch.delenv(RULES_FILE_ENV)
    assert load_rules_file() == ()


def test_an_edited_file_is_read_again(tmp_path):
    """The rules follow the file: a new version is parsed again."""
    path = write(tmp_path, RULES)
    assert len(load_rules_file(path)) == 3
    path.write_text("rules: []\n# edited, and longer than before ......................", encoding="utf-8")
    assert load_rules_file(path) == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: [\n", "rules.yaml: not valid YAML"),  # broken YAML
        ("- a\n", "rules.yaml: expected a mapping with the single key 'rules'"),  # not a mapping
        ("rules: {}\n", "rules.yaml: rules: must be a list"),
        ("rules: [3]\n", "rules.yaml: rules[0]: must be a mapping, got 3"),
        (
            "rules:\n- {class: poison, category: x, status: 404, colour: red}\n",
            "rules.yaml: rules[0].colour: unknown key",
        ),
        ("rules:\n- {category: x, status: 404}\n", "rules.yaml: rules[0].class: missing"),
        ("rules:\n- {class: poison, status: 404}\n", "rules.yaml: rules[0].category: missing"),
        ("rules:\n- {class: poison, category: x}\n", "rules.yaml: rules[0]: needs at least one of type"),
        (
            "rules:\n- {class: fatal, category: x, status: 404}\n",
            "rules.yaml: rules[0].class: failure_class must be",
        ),
        (
            "rules:\n- {class: poison, category: Not Found, status: 404}\n",
            "rules.yaml: rules[0].category: category must be kebab-case",
        ),
        (
            "rules:\n- {class: poison, category: a, status: 404}\n- {class: poison, category: b, status: 42}\n",
            "rules.yaml: rules[1].status: codes must be HTTP status codes (100..599), got 42",
        ),  # the index of the bad rule
        (
            "rules:\n- {class: poison, category: x, status: '429'}\n",
            "rules.yaml: rules[0].status: codes must be HTTP",
        ),
        (
            "rules:\n- {class: poison, category: x, sqlstate: '4000'}\n",
            "rules.yaml: rules[0].sqlstate: codes must be SQLSTATE",
        ),
        (
            "rules:\n- {class: poison, category: x, type: []}\n",
            "rules.yaml: rules[0].type: must be a non-empty string",
        ),
        (
            "rules:\n- {class: poison, category: x, message: ''}\n",
            "rules.yaml: rules[0].message: must be a non-empty string",
        ),
        (  # not a regex at all
            "rules:\n- {class: poison, category: x, regex: '(unclosed'}\n",
            "rules.yaml: rules[0].regex: not a regex RE2 can run in linear time: '(unclosed' (missing )",
        ),
        (  # a look-behind: RE2 cannot run it, so it could backtrack
            "rules:\n- {name: slow, class: poison, category: x, regex: '(?<=quota) exceeded'}\n",
            "rules.yaml: rules[0].regex: not a regex RE2 can run in linear time: '(?<=quota) exceeded' "
            "(invalid perl operator: (?<=)",
        ),
        (  # a back-reference, the classic catastrophic construct
            "rules:\n- {class: poison, category: x, regex: '(a+)\\1'}\n",
            "rules.yaml: rules[0].regex: not a regex RE2 can run in linear time",
        ),
        (  # a possessive quantifier
            "rules:\n- {class: poison, category: x, regex: 'a++b'}\n",
            "rules.yaml: rules[0].regex: not a regex RE2 can run in linear time: 'a++b' (bad repetition operator",
        ),
        (
            "rules:\n- {class: poison, category: x, status: 404, name: ''}\n",
            "rules.yaml: rules[0].name: must be a non-empty",
        ),
    ],
)
def test_bad_files_name_the_file_rule_and_field(text: str, message: str) -> None:
    """Every mistake is refused with the file, the rule index and the field."""
    with pytest.raises(RulesFileError) as info:
        parse_rules(text, "rules.yaml")
    assert str(info.value).startswith(message), str(info.value)


def test_a_bad_file_fails_when_the_dag_is_parsed(tmp_path, monkeypatch):
    """Building a policy (in the DAG file) with a bad rule file is an import error naming the file."""
    path = write(tmp_path, "rules:\n- {class: poison, category: x, status: 42}\n")
    monkeypatch.setenv(RULES_FILE_ENV, str(path))
    dag_file = tmp_path / "dag_with_policy.py"
    dag_file.write_text(
        textwrap.dedent(
            """
            import pendulum
            from airflow.sdk import DAG, task
            from airflow_retry_provider import apply_profile

            with DAG("rules_file_dag", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
                @task
                def work():
                    pass

                apply_profile(work(), "report")
            """
        ),
        encoding="utf-8",
    )
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(dag_file))
    assert "rules_file_dag" not in bag.dags
    (error,) = bag.import_errors.values()
    assert f"{path}: rules[0].status: codes must be HTTP status codes (100..599), got 42" in error


def test_a_missing_file_is_named(tmp_path, monkeypatch):
    """A path that does not exist is refused with its name."""
    monkeypatch.setenv(RULES_FILE_ENV, str(tmp_path / "nope.yaml"))
    with pytest.raises(
        RulesFileError, match=r"nope.yaml: cannot read the rule file \(\[retry_provider\] rules_file\)"
    ):
        ClassifiedRetryPolicy("report")


def test_the_documented_example_parses() -> None:
    """The YAML example in docs/CLASSIFICATION.md is a valid rule file."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "CLASSIFICATION.md").read_text(encoding="utf-8")
    example = docs.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert [rule.category for rule in parse_rules(example, "docs")] == [
        "eventually-consistent",
        "quota-exhausted",
        "lock-timeout",
    ]

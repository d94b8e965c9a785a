"""The README and docs/ hold together: every local link resolves, every command they show exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from airflow_retry_provider.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", *(REPO / "docs").glob("*.md")]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|<img [^>]*src=\"([^\"]+)\"")
FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
INLINE = re.compile(r"`(airflow-retry [^`]+)`")
README_MAX_LINES = 200


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def _links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_local_link_resolves(doc: Path) -> None:
    """A link to a file of the repository names one that exists, and its #anchor a heading in it."""
    broken = []
    for target in _links(doc):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(target)
    assert broken == [], f"{doc.name}: broken links {broken}"


def _commands(doc: Path) -> list[list[str]]:
    text = doc.read_text(encoding="utf-8")
    found = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("airflow-retry "):
                found.append(line)
    found += INLINE.findall(FENCE.sub("", text))
    commands = []
    for line in found:
        if "#<" in line:  # the note a replay leaves on the task instance, not a command
            continue
        line = line.split("<", 1)[0].split("|", 1)[0].split("#", 1)[0]
        try:
            words = shlex.split(line)
        except ValueError:
            words = line.split()
        commands.append(words[1:])
    return commands


def _walk(words: list[str]) -> str | None:
    """None if ``words`` name an existing command (its subcommands as far as they go), else the problem."""
    parser = build_parser()
    path = []
    for word in words:
        actions = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not actions or word.startswith("-") or word.startswith("["):
            return None if path else f"no command in {words}"
        choices = actions[0].choices  # type: ignore[attr-defined]
        if word not in choices:
            if path and not actions[0].required:
                return None
            return f"'airflow-retry {' '.join([*path, word])}' is no command"
        parser = choices[word]
        path.append(word)
    return None if path else "no command"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_shown_exists(doc: Path) -> None:
    """Each ``airflow-retry ...`` in a code span or block is a command the CLI has (its --help works)."""
    problems = [problem for words in _commands(doc) if (problem := _walk(words))]
    assert problems == [], f"{doc.name}: {problems}"


def test_the_readme_is_a_front_door() -> None:
    """The README stays short: the reference lives in docs/."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


def _pip_lines(doc: Path) -> list[str]:
    return [
        line.strip().removeprefix("$ ")
        for block in FENCE.findall(doc.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if line.strip().startswith("$ pip ")
    ]


def test_the_readme_installs_as_install_md_does() -> None:
    """The README's two pip lines are docs/INSTALL.md's (the ones tests/e2e/test_install.py runs): a
    wheel built from the clone, never a package index, with Airflow's constraints."""
    readme, install = _pip_lines(REPO / "README.md"), _pip_lines(REPO / "docs" / "INSTALL.md")
    assert readme == install and len(readme) == 2, (readme, install)
    assert readme[0].startswith("pip wheel ") and "dist/airflow_retry_provider-*.whl" in readme[1]
    assert "--constraint" in readme[1] and "pip install airflow-retry-provider" not in readme[1]
    for doc in ("README.md", "docs/INSTALL.md"):
        assert "not on a public package index yet" in (REPO / doc).read_text(encoding="utf-8"), doc


def test_the_readme_dag_is_the_file_the_tests_run() -> None:
    """The README's first DAG is dags/positions_daily.py word for word (tests/dags/test_example_dags.py
    runs it with dag.test())."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.DOTALL)
    assert blocks and blocks[0] == (REPO / "dags" / "positions_daily.py").read_text(encoding="utf-8")


def _provider_imports() -> list[tuple[str, str, str]]:
    """Each ``from airflow_retry_provider... import a, b`` of a python block: (doc, module, name)."""
    found = []
    for doc in DOCS:
        blocks = re.findall(r"```python[^\n]*\n(.*?)```", doc.read_text(encoding="utf-8"), re.DOTALL)
        for block in blocks:
            for module, names in re.findall(
                r"^from (airflow_retry_provider[\w.]*) import ([^\n#(]+)", block, re.M
            ):
                found += [(doc.name, module, name.strip()) for name in names.split(",") if name.strip()]
    return found


@pytest.mark.parametrize(("doc", "module", "name"), _provider_imports())
def test_every_import_the_docs_show_works(doc: str, module: str, name: str) -> None:
    """A DAG author copying an import line of the docs gets the name (e.g. ``Profile``, ``Backoff``)."""
    import importlib

    imported = importlib.import_module(module)
    assert name == "*" or hasattr(imported, name), f"{doc}: from {module} import {name}"


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        # issue 47: the pools must exist before a guarded task can run; BREAKER.md said no other line was needed
        ("docs/BREAKER.md", "`airflow-retry pools sync` once the map is written"),
        ("docs/BREAKER.md", "Airflow does not have never runs"),
        # issue 47: apply_capacity on a mapped task, never shown before
        ("docs/EXECUTION.md", 'apply_capacity(extract_day.expand(day=days), "positions_db", "light")'),
        # issue 47: where Profile and Backoff come from
        ("docs/CLASSIFICATION.md", "`from airflow_retry_provider import Backoff, Profile, register_profile`"),
        # issue 47: --fix-version was marked required and then said to default to the latest
        ("docs/DEAD_LETTERS.md", "--fix-version is required unless --run-on-latest-version"),
        # issue 47: dlq list and the preview number a version through the REST API, before any sweep
        ("docs/DEAD_LETTERS.md", "replay preview do not wait for a sweep"),
        # issue 47: the switch for tests, as a context manager and as a pytest fixture
        ("docs/TESTING.md", "with testing_delays():"),
        ("docs/TESTING.md", "def test_positions_daily(retry_testing_delays):"),
        # issue 47: a first failure's decision is one line, Airflow's
        ("docs/TESTING.md", "the provider logs no copy of it"),
    ],
)
def test_the_first_hours_answers_are_in_the_docs(doc: str, line: str) -> None:
    """Each friction point of the first hour (issue 47) has its answer written where a user looks."""
    assert line in (REPO / doc).read_text(encoding="utf-8"), f"{doc}: {line!r}"


@pytest.mark.parametrize(
    "doc",
    # GLOSSARY.md is the glossary; BENCHMARKS.md is written by `make bench`
    [doc for doc in DOCS if doc.parent.name == "docs" and doc.name not in ("GLOSSARY.md", "BENCHMARKS.md")],
    ids=lambda p: p.name,
)
def test_every_page_links_to_the_glossary(doc: Path) -> None:
    """A reader meeting "letter", "park" or "canary" on any page finds its definition one link away."""
    assert "(GLOSSARY.md)" in doc.read_text(encoding="utf-8"), doc.name


FOLDER_TEST = """
from datetime import timedelta

from airflow_retry_provider import ClassifiedRetryPolicy


def test_a_retry_waits_at_most_a_second():
    decision = ClassifiedRetryPolicy("report").evaluate(ConnectionResetError("reset"), 1, 2, None)
    assert timedelta(0) < decision.retry_delay <= timedelta(seconds=1), decision.retry_delay
"""


def test_the_folder_recipe_of_testing_md_makes_a_folders_retries_fast(tmp_path: Path) -> None:
    """docs/TESTING.md's conftest.py for a whole folder, run literally by pytest: a test there that
    does not name the fixture still gets testing_delays() (a 'report' retry waits at most 1 s)."""
    import subprocess
    import sys

    text = (REPO / "docs" / "TESTING.md").read_text(encoding="utf-8")
    recipe = text.split("For every test of a folder", 1)[1]
    conftest = re.search(r"```python\n(.*?)```", recipe, re.DOTALL)
    assert conftest is not None
    folder = tmp_path / "dags_tests"
    folder.mkdir()
    (folder / "conftest.py").write_text(conftest.group(1), encoding="utf-8")
    (folder / "test_fast.py").write_text(FOLDER_TEST, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(folder)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


def test_the_readme_dag_is_importable_as_the_testing_page_imports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``from positions_daily import dag`` (docs/TESTING.md) gets the README's DAG: its ``with DAG(...)`` says ``as dag``."""
    import importlib

    from airflow.sdk import DAG

    monkeypatch.syspath_prepend(str(REPO / "dags"))
    monkeypatch.delitem(__import__("sys").modules, "positions_daily", raising=False)
    module = importlib.import_module("positions_daily")
    for doc in DOCS:
        for names in re.findall(r"^from positions_daily import ([\w, ]+)", doc.read_text("utf-8"), re.M):
            for name in names.split(","):
                assert hasattr(module, name.strip()), f"{doc.name}: from positions_daily import {name}"
    assert isinstance(module.dag, DAG) and module.dag.dag_id == "positions_daily"


def test_the_glossarys_example_dependency_is_in_the_example_map() -> None:
    """Each dependency the glossary's examples name (``apply_capacity(task, "x", ...)``) is in the shipped map."""
    from airflow_retry_provider.capacity import DependencyMap, example_dependencies_path

    declared = DependencyMap.from_file(example_dependencies_path()).dependencies
    named = re.findall(
        r'apply_capacity\([^,]+, "([^"]+)"', (REPO / "docs" / "GLOSSARY.md").read_text("utf-8")
    )
    assert named and all(name in declared for name in named), (named, sorted(declared))


# -- every block of the README and docs/TESTING.md runs as written ---------------------------------
#
# A block that needs what a unit test does not have (a running Airflow, its metadata database, the
# network) says so in its fence: ```console needs: <what, and which test runs it>. Every other block
# is run here: python as a script, shell line by line (a console block's `$ ` lines).

RUN_DOCS = ("README.md", "docs/TESTING.md")
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[pytest.param]:
    found = []
    for name in RUN_DOCS:
        text = (REPO / name).read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            language, info, body = match.group(1), match.group(2).strip(), match.group(3)
            line = text[: match.start()].count("\n") + 1
            if not info.startswith("needs:"):  # the others: test_every_block_that_needs_more_names_its_test
                found.append(pytest.param(language, body, id=f"{name}:{line}"))
    return found


def test_every_block_that_needs_more_names_the_test_that_runs_it() -> None:
    """A ``needs:`` fence names, by its path, the test that runs its block with what it needs, and that test exists."""
    needs = [
        info
        for name in RUN_DOCS
        for info in re.findall(r"^```\w+[ \t]+(needs:[^\n]*)$", (REPO / name).read_text("utf-8"), re.M)
    ]
    assert needs, "no block says what it needs"
    for info in needs:
        named = re.findall(r"tests/[\w/]+\.py", info)
        assert named and all((REPO / path).is_file() for path in named), info


def test_every_block_that_needs_more_than_a_unit_test_says_so() -> None:
    """A block is runnable here or marked ``needs: ...`` in its fence; an unlabelled fence is not allowed."""
    for name in RUN_DOCS:
        text = (REPO / name).read_text(encoding="utf-8")
        fences = re.findall(r"^```(.*)$", text, re.MULTILINE)
        openers = fences[0::2]
        assert all(re.match(r"\w+", opener) for opener in openers), (name, openers)
        assert all(opener.split(None, 1)[0] in ("python", "console", "shell") for opener in openers), openers


@pytest.mark.parametrize(("language", "body"), _blocks())
def test_every_block_of_the_readme_and_testing_md_runs_as_written(
    language: str, body: str, tmp_path: Path
) -> None:
    """Each block runs as a user would run it, in a folder holding the DAG folder ``dags/`` (a python
    block as a script beside dags/, a shell or console block's commands in bash with the virtualenv
    first on PATH) and succeeds."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "dags"), str(REPO), os.environ.get("PYTHONPATH", "")]),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    if language == "python":
        command = [sys.executable, "-c", body]
    else:
        lines = (
            body
            if language == "shell"
            else "\n".join(line.removeprefix("$ ") for line in body.splitlines() if line.startswith("$ "))
        )
        command = ["bash", "-e", "-o", "pipefail", "-c", lines]
    (tmp_path / "dags").symlink_to(REPO / "dags")  # a user's project: its DAG folder beside it
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{body}\n---\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"

"""The docs name only code that exists: every file path, ``module.py:function``, ``module.Class`` and
dotted ``airflow_retry_provider.x.y`` they show in backticks resolves against the code (by its AST,
never by importing what a page names), so a rename that forgets a page fails here."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "airflow_retry_provider"
DOCS = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").glob("*.md")])
CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w./-]+\.(?:py|sql|html|md|toml|yaml|yml|cfg|sh)(?::[\w.]+)?$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?$")
BASES = (REPO, PACKAGE, REPO / "docs", REPO / "tools")
"""Where a path the docs show may start: the repository, the package (the docs' default), docs/, tools/."""
ENTRY_POINT_GROUPS = set(
    re.findall(r'^\[project\.entry-points\."?([\w.]+)"?\]', (REPO / "pyproject.toml").read_text(), re.M)
)
NOT_CODE = {
    "instrumentation/_hooks.py",  # stamina's file, named as an example to follow
    "dags.gitSync",  # a value of Airflow's Helm chart
    "airflow.cfg",  # Airflow's configuration file
    "summary.md",  # a file the reconciliation writes
    "settings.export_chunk_rows",  # CONTRIBUTING.md's example of a setting to add
    "0004_what.sql",  # CONTRIBUTING.md's example of a migration to add
    "migrations/0002_letter_owner.sql",  # OPERATIONS.md's example of a migration to add
}
"""What the pages show in backticks that is not the provider's code."""
FOLLOWING_NAME = re.compile(r"^[\s(]*`([A-Za-z_][\w.]*)(?:\(\))?`")


@functools.cache
def _repository_files() -> tuple[str, ...]:
    """Every file of the repository (the virtualenvs and caches left out), as a posix path."""
    skip = {".git", ".venv", ".venv34", "node_modules", "__pycache__", ".demo"}
    return tuple(
        path.relative_to(REPO).as_posix()
        for path in REPO.rglob("*")
        if path.is_file() and not skip & set(path.relative_to(REPO).parts)
    )


def _file(path: str) -> Path | None:
    """The file ``path`` names: from a base, or (a page's shorthand: ``letters.py`` in a sentence about
    ``dlq/store/``) the repository's one file ending so; Airflow's own files in its installed package."""
    for base in BASES:
        if (base / path).is_file() or (base / path).is_dir():
            return base / path
    ending = [name for name in _repository_files() if name == path or name.endswith(f"/{path}")]
    if ending:
        return REPO / ending[0]
    if path.startswith("airflow/"):
        import airflow.sdk

        for root in {Path(airflow.__file__).parent.parent, Path(airflow.sdk.__file__).parent.parent.parent}:
            if (root / path).is_file():
                return root / path
    return None


@functools.cache
def _names(path: Path) -> frozenset[str]:
    """What a Python file defines: its top-level names, and ``Class.attribute`` for each class's."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        if isinstance(node, ast.Assign):
            return [t.id for t in node.targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return [node.target.id]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        return []

    for node in tree.body + [
        n for block in tree.body if isinstance(block, (ast.If, ast.Try)) for n in block.body
    ]:
        found.update(targets(node))
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                found.update(f"{node.name}.{name}" for name in targets(inner))
                if isinstance(inner, ast.FunctionDef) and inner.name == "__init__":  # self.x = ... attributes
                    for sub in ast.walk(inner):
                        if (
                            isinstance(sub, ast.Attribute)
                            and isinstance(sub.value, ast.Name)
                            and sub.value.id == "self"
                        ):
                            found.add(f"{node.name}.{sub.attr}")
    return frozenset(found)


def _module(parts: list[str]) -> tuple[Path, list[str]] | None:
    """The longest prefix of ``parts`` that is a module of the package, and the rest."""
    for cut in range(len(parts), 0, -1):
        base = PACKAGE.joinpath(*parts[:cut])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate, parts[cut:]
    return None


def _defines(path: Path, rest: list[str]) -> bool:
    if not rest:
        return True
    if path.name == "__init__.py" and (path.parent / f"{rest[0]}.py").is_file():
        return _defines(path.parent / f"{rest[0]}.py", rest[1:])
    if path.name == "__init__.py" and (path.parent / rest[0] / "__init__.py").is_file():
        return _defines(path.parent / rest[0] / "__init__.py", rest[1:])
    names = _names(path)
    if ".".join(rest[:2]) in names or (len(rest) == 1 and rest[0] in names):
        return True
    if path.name == "__init__.py" and rest[0] in names:  # re-exported: where it comes from
        text = path.read_text(encoding="utf-8")
        source = re.search(rf"from airflow_retry_provider\.([\w.]+) import [^\n]*\b{rest[0]}\b", text)
        if source is None:
            source = re.search(rf'"{rest[0]}": "(\w+)"', text)  # dlq/__init__.py's _EXPORTS
            module = (
                f"{path.parent.relative_to(PACKAGE).as_posix().replace('/', '.')}.{source[1]}"
                if source
                else None
            )
        else:
            module = source[1]
        found = _module(module.split(".")) if module else None
        return found is not None and _defines(found[0], rest)
    if len(rest) == 1 and any(
        name.endswith(f".{rest[0]}") for name in names
    ):  # a method named after its file
        return True
    return len(rest) == 1 and f'query("{rest[0]}")' in path.read_text(encoding="utf-8")  # a statement it runs


def _names_the_package(dotted: str) -> bool:
    """Whether a dotted name starts at the package or at one of its modules (``dlq.decide``, ``announce.Event``)."""
    first = dotted.split(".")[0]
    return first == "airflow_retry_provider" or _module([first]) is not None


def references(doc: Path) -> list[tuple[int, str, str | None]]:
    """Each code reference of a page: (line, the reference, the name after it when a path is followed by one)."""
    found = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for match in CODE.finditer(line):
            text = match[1].strip()
            if PATH.match(text):
                after = FOLLOWING_NAME.match(line[match.end() :])
                found.append((number, text, after[1] if after and text.endswith(".py") else None))
            elif DOTTED.match(text) and _names_the_package(text):
                found.append((number, text.removesuffix("()"), None))
    return found


def broken(reference: str, after: str | None) -> str | None:
    """Why ``reference`` names nothing, or None."""
    if reference in NOT_CODE or reference in ENTRY_POINT_GROUPS:
        return None
    if PATH.match(reference):
        path, _, name = reference.partition(":")
        if "NNNN" in path or "<" in path:
            return None
        file = _file(path)
        if file is None:
            return f"no file {path}"
        name = name or after or ""
        if name and file.suffix == ".py" and not _defines(file, name.split(".")):
            return f"{path} defines no {name}"
        return None
    parts = reference.split(".")
    if parts[0] == "airflow_retry_provider":
        parts = parts[1:]
    found = _module(parts)
    if found is None:
        return f"no module {reference}"
    if not _defines(*found):
        return f"{found[0].relative_to(REPO)} defines no {'.'.join(found[1])}"
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_code_reference_resolves(doc: Path) -> None:
    """Each file, ``module.py:function``, ``module.Class`` and ``airflow_retry_provider.x.y`` a page names exists."""
    problems = [
        f"{doc.name}:{line}: `{reference}`{f' `{after}`' if after else ''}: {why}"
        for line, reference, after in references(doc)
        if (why := broken(reference, after))
    ]
    assert problems == []


@pytest.mark.parametrize(
    ("reference", "after"),
    [
        ("dlq/sync.py:sync_outcomes", None),  # a function that moved to tests/
        ("dlq/sync.py", "OutcomeSync.sync_outcomes"),  # a method named after its file
        ("dlq.sweeper.check_one_by_one", None),  # dotted
        ("airflow_retry_provider.dlq.nothing", None),  # a module that does not exist
        ("policy/nothing.py", None),  # a file that does not exist
    ],
)
def test_the_checker_sees_a_name_that_no_longer_exists(reference: str, after: str | None) -> None:
    """A reference to something gone is reported."""
    assert broken(reference, after) is not None

"""``airflow-retry dags``: a DAG folder as the provider sees it.

- ``install FOLDER``: the file that gives a DAG folder the maintenance DAGs. It holds the one line
  of docs/INSTALL.md (``from airflow_retry_provider.dags.maintenance import *``); Airflow's
  dag-processor finds the four maintenance DAGs in it. Exit 0 written (or already there), 2 bad
  input (no such folder, another file of that name).
- ``check PATH...``: parses DAG files as the dag-processor does, cluster policies included, and
  prints each file's import error (a ``retries`` that contradicts a retry profile is one). A plain
  ``python dag.py`` runs no cluster policy, so it cannot show these. Exit 0 every file parses, 1 no
  DAG found, 2 an import error (or no such path).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from airflow_retry_provider.commands import UsageError

DEFAULT_NAME = "retry_provider_maintenance.py"
HEADER = '"""The maintenance DAGs of airflow-retry-provider (docs/INSTALL.md): one line, nothing else."""\n\n'


def register(subparsers: argparse._SubParsersAction) -> None:
    dags = subparsers.add_parser("dags", help="the provider's maintenance DAGs in a DAG folder")
    dags_sub = dags.add_subparsers(dest="dags_command", metavar="ACTION", required=True)
    install = dags_sub.add_parser(
        "install",
        help="write the one-line file that imports the maintenance DAGs into a DAG folder",
        description=(
            "Write FOLDER/NAME holding one line, `from airflow_retry_provider.dags.maintenance import *` "
            "(the provider's install guide, docs/INSTALL.md in its repository). Exit 0 done, 2 bad input."
        ),
    )
    install.add_argument("folder", type=Path, help="the DAG folder (or bundle) of the deployment")
    install.add_argument("--name", default=DEFAULT_NAME, help="the file's name (default: %(default)s)")
    install.set_defaults(func=_install)
    check = dags_sub.add_parser(
        "check",
        help="parse DAG files as the dag-processor does (cluster policies included) and show their import errors",
        description=(
            "Parse each DAG file (or every DAG file of a folder) as Airflow's dag-processor does, the "
            "provider's cluster policy included, and print its DAGs or its import error: a `retries` that "
            "contradicts a retry profile is refused there, never by a plain `python dag.py`. "
            "Exit 0 every file parses, 1 no DAG found, 2 an import error or no such path."
        ),
    )
    check.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a DAG file or a DAG folder")
    check.set_defaults(func=_check)


def maintenance_file_text() -> str:
    """What the file holds: a docstring and the line."""
    from airflow_retry_provider.dags import MAINTENANCE_LINE

    return HEADER + MAINTENANCE_LINE + "\n"


def _install(args: argparse.Namespace) -> int:
    if not args.folder.is_dir():
        raise UsageError(f"dags install: folder {str(args.folder)!r} is not a directory")
    if "/" in args.name or not args.name.endswith(".py"):
        raise UsageError(f"--name: {args.name!r} is not a file name ending in .py")
    target = args.folder / args.name
    text = maintenance_file_text()
    if target.exists() and target.read_text(encoding="utf-8") != text:
        raise UsageError(f"dags install: {str(target)!r} exists and holds something else; choose --name")
    target.write_text(text, encoding="utf-8")
    print(f"airflow-retry: {target} imports the maintenance DAGs (unpause them in Airflow)")
    return 0


def _check(args: argparse.Namespace) -> int:
    from airflow_retry_provider.commands import EXIT_EMPTY, logs_to_stderr

    for path in args.paths:
        if not path.exists():
            raise UsageError(f"dags check: PATH {str(path)!r} does not exist")
    logs_to_stderr(args)  # the dag-processor's own log lines (a traceback per import error) go to stderr
    from airflow.dag_processing.dagbag import DagBag

    failed = found = 0
    for path in args.paths:
        bag = DagBag(dag_folder=path, safe_mode=False, load_op_links=False)
        for file, error in sorted(bag.import_errors.items()):
            failed += 1
            print(f"error: {file}: {error.strip()}")
        for dag_id in sorted(bag.dags):
            found += 1
            print(f"ok: {bag.dags[dag_id].fileloc}: DAG {dag_id!r}")
    if failed:
        print(f"airflow-retry: {failed} file(s) with an import error", file=sys.stderr)
        return 2
    if not found:
        print(f"no DAG found in {', '.join(str(path) for path in args.paths)}")
        return EXIT_EMPTY
    return 0

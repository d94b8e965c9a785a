"""``airflow-retry dags install FOLDER``: the file that gives a DAG folder the maintenance DAGs.

The file holds the one line of docs/INSTALL.md (``from airflow_retry_provider.dags.maintenance
import *``); Airflow's dag-processor finds the four maintenance DAGs in it. Exit 0 written (or
already there), 2 bad input (no such folder, another file of that name).
"""

from __future__ import annotations

import argparse
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

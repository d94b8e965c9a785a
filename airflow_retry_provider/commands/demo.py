"""``airflow-retry demo``: run the example DAGs in a real local Airflow and print what happened."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="from a clone of the repository only (not in the wheel): a local Airflow on the clone's dags/, "
        "the examples triggered (make demo)",
    )
    demo.add_argument("--once", action="store_true", help="exit after printing the summary")
    demo.add_argument(
        "--workdir",
        type=Path,
        default=Path(".demo"),
        help="where AIRFLOW_HOME and logs go (default: %(default)s)",
    )
    demo.add_argument(
        "--dags-folder",
        type=Path,
        default=Path("dags"),
        help="DAG folder to serve (default: %(default)s)",
    )
    demo.add_argument("--timeout", type=float, default=600, help="seconds to wait for the runs")
    demo.add_argument(
        "--celery",
        action="store_true",
        help="the distributed shape: Redis, CeleryExecutor with two workers, two schedulers, "
        "an api-server with two workers (needs redis-server)",
    )
    demo.set_defaults(func=_demo)


def devstack_folder() -> Path:
    """``tools/`` of the clone this package runs from; UsageError when it is not a clone.

    The throwaway PostgreSQL and Airflow stacks (``tools/devstack/``) are not shipped in the wheel.
    """
    from airflow_retry_provider.commands import UsageError

    clone = Path(__file__).resolve().parents[2]
    tools = clone / "tools"
    if not (tools / "devstack" / "demo.py").is_file():
        raise UsageError(
            f"demo: runs only from a clone of the repository: this installed package has no "
            f"tools/devstack/ beside it ({clone}); clone the repository and run make demo there"
        )
    return tools


def _demo(args: argparse.Namespace) -> int:
    tools = str(devstack_folder())
    if tools not in sys.path:
        sys.path.insert(0, tools)
    run_demo = importlib.import_module("devstack.demo").run_demo
    return int(
        run_demo(args.workdir, args.dags_folder, once=args.once, timeout=args.timeout, celery=args.celery)
    )

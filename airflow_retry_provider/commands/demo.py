"""``airflow-retry demo``: run the example DAGs in a real local Airflow and print what happened."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    demo = subparsers.add_parser("demo", help="run a local Airflow on dags/ and trigger the examples")
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
    demo.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from airflow_retry_provider.devstack.demo import run_demo

    return run_demo(args.workdir, args.dags_folder, once=args.once, timeout=args.timeout)

"""``make screenshots``: PNGs of the plugin's pages, populated by the demo, for the README.

Starts ``airflow-retry demo`` (or uses a running one: ``--base-url``), signs in through Debian's
headless Chromium and writes docs/screenshots/*.png: the Dead letters list, a letter with its
history, the Retries tab of the retried task, Medallion gaps and Connector health. The demo it started is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from devstack.browser import chromium, signed_in_page  # noqa: E402

PREFIX = "/retry-provider"
WORKSPACE = "demo"


def start_demo(workdir: Path, timeout: float) -> tuple[subprocess.Popen[str], str]:
    """Start the demo in a session of its own; return it and its base URL once its story is told."""
    demo = subprocess.Popen(
        [str(Path(sys.executable).with_name("airflow-retry")), "demo", "--workdir", str(workdir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    base_url = None
    deadline = time.monotonic() + timeout
    assert demo.stdout is not None
    for line in demo.stdout:
        print(line, end="", flush=True)
        found = re.match(r"Airflow UI: (\S+)", line)
        if found:
            base_url = found.group(1)
        if line.startswith("The stack stays up") and base_url:
            return demo, base_url
        if time.monotonic() > deadline:
            break
    stop_demo(demo)
    raise RuntimeError("the demo ended or timed out before its stack was up")


def stop_demo(demo: subprocess.Popen[str]) -> None:
    """SIGTERM: the demo stops its Airflow stack and PostgreSQL, then exits."""
    if demo.poll() is None:
        os.killpg(demo.pid, signal.SIGTERM)
        demo.wait(timeout=120)


def take(base_url: str, out: Path) -> list[Path]:
    """Sign in, open each page and write its PNG; return the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with chromium(width=1280, height=800) as browser:
        page = signed_in_page(browser, base_url)
        letters = page.request.get(f"{base_url}{PREFIX}/api/letters").json()["letters"]
        if not letters:
            raise RuntimeError("no dead letter to show: run the demo first")
        pages = {
            "dead-letters": f"{PREFIX}/",
            "letter": f"{PREFIX}/letters/{letters[0]['id']}",
            "retries": f"{PREFIX}/tries?dag_id={letters[0]['dag_id']}&run_id={quote(letters[0]['run_id'])}"
            "&task_id=load_bronze_positions&map_index=-1",  # the demo's retried task, in the same run
            "medallion-gaps": f"{PREFIX}/medallion-gaps?workspace_id={WORKSPACE}",
            "connector-health": f"{PREFIX}/connector-health?workspace_id={WORKSPACE}",
        }
        for name, path in pages.items():
            response = page.goto(base_url + path)
            if response is None or response.status != 200:
                raise RuntimeError(f"{path}: {response.status if response else 'no response'}")
            page.wait_for_load_state("networkidle")
            target = out / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            written.append(target)
            print(f"{target.relative_to(REPO)}: {target.stat().st_size // 1024} KB", flush=True)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="a running demo's Airflow URL (default: start one)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--workdir", type=Path, default=REPO / ".demo-screenshots")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the demo's story")
    args = parser.parse_args(argv)
    if args.base_url:
        take(args.base_url.rstrip("/"), args.out)
        return 0
    demo, base_url = start_demo(args.workdir, args.timeout)
    try:
        take(base_url, args.out)
    finally:
        stop_demo(demo)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A real Airflow 3 stack (scheduler, dag-processor, api-server, triggerer) for the demo and e2e tests.

With a ``broker_url`` the stack runs the CeleryExecutor: ``celery_workers`` Celery workers (each
with its own hostname, queue, log-server port and ``AIRFLOW_DEVSTACK_WORKER`` name), and it can
run ``schedulers`` schedulers side by side and an api-server with ``api_workers`` workers.

Each process runs in a session of its own; ``stop()`` collects every descendant first
(task processes run in process groups of their own) and stops them all, so nothing is
left behind.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack.postgres import free_port

COMPONENTS = ("scheduler", "dag-processor", "api-server", "triggerer")
ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin"


def airflow_executable() -> str:
    """The ``airflow`` script next to this interpreter (the project's virtualenv)."""
    candidate = Path(sys.executable).with_name("airflow")
    return str(candidate) if candidate.exists() else "airflow"


@dataclass
class AirflowStack:
    """Configuration and processes of one local Airflow deployment."""

    home: Path
    dags_folder: Path
    metadata_url: str
    provider_dsn: str
    extra_env: Mapping[str, str] = field(default_factory=dict)
    broker_url: str | None = None
    schedulers: int = 1
    celery_workers: int = 2
    worker_concurrency: int = 2
    api_workers: int = 1
    api_port: int = field(default_factory=free_port)
    users: Mapping[str, str] = field(
        default_factory=dict
    )  # more sign-in users: name -> role (viewer, op, ...)
    # the ``airflow`` script every process runs (another virtualenv's, e.g. a wheel installed for a test)
    executable: str = field(default_factory=airflow_executable)
    cwd: Path | None = None  # the working directory of every process (None: this one's)
    # False: no AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT, the connection lives in the metadata database
    # (`airflow connections add`, as tests/e2e/test_install.py does)
    provider_conn_in_env: bool = True
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _token: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def env(self) -> dict[str, str]:
        """The environment every Airflow process of this stack shares."""
        self.home.mkdir(parents=True, exist_ok=True)
        passwords = self.home / "passwords.json"
        passwords.write_text(
            json.dumps({ADMIN_USER: ADMIN_PASSWORD, **{u: self.password(u) for u in self.users}})
        )
        secret_file = self.home / "jwt_secret"
        if not secret_file.exists():
            secret_file.write_text(secrets.token_urlsafe(32))
        env = dict(os.environ)
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder.resolve()),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor" if self.broker_url else "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": "16",
                "AIRFLOW__CORE__DEFAULT_TIMEZONE": "America/Sao_Paulo",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.metadata_url,
                "AIRFLOW__CORE__AUTH_MANAGER": (
                    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
                ),
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
                    [f"{ADMIN_USER}:admin", *(f"{user}:{role}" for user, role in self.users.items())]
                ),
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
                "AIRFLOW__API__PORT": str(self.api_port),
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__BASE_URL": self.base_url,
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
                "AIRFLOW__API_AUTH__JWT_SECRET": secret_file.read_text(),
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                # A file is parsed again when it changes (the default modified_time sort mode) and
                # once a minute besides: parsing every file every 10 s kept a third of a core busy
                # in an idle stack, on a 2-core machine that runs two stacks at once.
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "60",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
                "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT": self.provider_dsn,
                "AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API": (
                    f"http://{ADMIN_USER}:{ADMIN_PASSWORD}@127.0.0.1:{self.api_port}"
                ),
            }
        )
        if self.broker_url:
            env.update(
                {
                    "AIRFLOW__CELERY__BROKER_URL": self.broker_url,
                    "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + self.metadata_url,
                    "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(self.worker_concurrency),
                    "AIRFLOW__CELERY__SYNC_PARALLELISM": "1",
                    "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT": "21600",
                }
            )
        if self.api_workers > 1:
            env["AIRFLOW__API__WORKERS"] = str(self.api_workers)
        env.update(self.extra_env)
        if not self.provider_conn_in_env:
            env.pop("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", None)
        return env

    def password(self, user: str) -> str:
        """The sign-in password of ``user`` (one of :attr:`users`): random, kept in the stack's home."""
        path = self.home / f"password-{user}"
        if not path.exists():
            self.home.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(16))
        return path.read_text()

    def components(self) -> dict[str, list[str]]:
        """Each process of the stack by name, with its ``airflow`` arguments."""
        commands: dict[str, list[str]] = {name: [name] for name in COMPONENTS}
        for number in range(2, self.schedulers + 1):
            commands[f"scheduler-{number}"] = ["scheduler"]
        if self.broker_url:
            for number in range(1, self.celery_workers + 1):
                name = f"worker-{number}"
                commands[name] = [
                    "celery", "worker",
                    "--celery-hostname", f"{name}@%h",
                    "--queues", f"default,{name}",
                    "--concurrency", str(self.worker_concurrency),
                    "--pid", str(self.home / f"{name}.pid"),
                    "--without-gossip",
                    "--without-mingle",
                ]  # fmt: skip
        return commands

    def _component_env(self, name: str, env: dict[str, str]) -> dict[str, str]:
        """A Celery worker serves its logs on a port of its own and knows its name."""
        if not name.startswith("worker-"):
            return env
        return {
            **env,
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW_DEVSTACK_WORKER": name,
        }

    def run_cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run ``airflow ARGS`` with this stack's environment and fail loudly on error."""
        result = subprocess.run(
            [self.executable, *args],
            env=self.env(),
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"airflow {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def migrate(self) -> None:
        self.run_cli("db", "migrate")

    def start(self) -> None:
        """Start every component, each in a session of its own, logging under AIRFLOW_HOME/stack-logs."""
        env = self.env()
        for name in self.components():
            self.start_component(name, env)

    def start_component(self, name: str, env: dict[str, str] | None = None) -> None:
        """Start (or restart) one component by name, e.g. ``worker-2`` or ``scheduler-2``."""
        logs = self.home / "stack-logs"
        logs.mkdir(parents=True, exist_ok=True)
        env = self._component_env(name, env or self.env())
        with open(logs / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                [self.executable, *self.components()[name]],
                env=env,
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def process_tree(self, name: str) -> list[int]:
        """The pids of component ``name`` and of every process it started (task processes included)."""
        import psutil

        try:
            parent = psutil.Process(self.processes[name].pid)
            return [parent.pid, *(child.pid for child in parent.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    @contextmanager
    def paused(self, name: str) -> Iterator[None]:
        """SIGSTOP component ``name`` with everything it started, and SIGCONT whatever is still alive on leaving.

        A process that ends between the listing and its signal (a task process its parent reaped) is skipped.
        """
        stopped = [pid for pid in self.process_tree(name) if _signal(pid, signal.SIGSTOP)]
        try:
            yield
        finally:
            for pid in stopped:
                _signal(pid, signal.SIGCONT)

    def kill_component(self, name: str) -> None:
        """SIGKILL component ``name`` with everything it started, as a crashed host would lose it."""
        _stop_all([self.processes.pop(name)], grace=0)

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self.home / "stack-logs" / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def wait_healthy(self, timeout: float = 240) -> None:
        """Wait for every component to report healthy and for the execution API to answer once."""
        import httpx

        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"airflow {name} exited with {proc.returncode}:\n{self.log_tail(name)}"
                    )
            try:
                last = httpx.get(f"{self.base_url}/api/v2/monitor/health", timeout=5).json()
                if all(
                    (last.get(part) or {}).get("status") == "healthy"
                    for part in ("metadatabase", "scheduler", "triggerer", "dag_processor")
                ):
                    # The execution API app is built on first use; warm it up before any task needs it.
                    httpx.get(f"{self.base_url}/execution/health", timeout=120)
                    return
            except (httpx.HTTPError, ValueError) as exc:
                last = exc
            time.sleep(1)
        raise TimeoutError(
            f"Airflow did not become healthy in {timeout}s: {last}\n{self.log_tail('api-server')}"
        )

    def token(self) -> str:
        import httpx

        if self._token is None:
            response = httpx.post(
                f"{self.base_url}/auth/token",
                json={"username": ADMIN_USER, "password": ADMIN_PASSWORD},
                timeout=30,
            )
            response.raise_for_status()
            self._token = str(response.json()["access_token"])
        return self._token

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        """Call the public REST API as the admin user; return the decoded JSON (None for 204)."""
        import httpx

        response = httpx.request(
            method,
            f"{self.base_url}{path}",
            headers={"Authorization": f"Bearer {self.token()}"},
            timeout=60,
            **kwargs,
        )
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path} -> {response.status_code}: {response.text[:2000]}")
        return response.json() if response.content else None

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> None:
        """Wait until the dag-processor has serialized ``dag_id``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.api("GET", f"/api/v2/dags/{dag_id}")
                return
            except RuntimeError:
                time.sleep(2)
        raise TimeoutError(
            f"DAG {dag_id} was not parsed within {timeout}s:\n{self.log_tail('dag-processor')}"
        )

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 600) -> dict[str, Any]:
        """Wait until a DAG run is success or failed; return it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
            if run["state"] in ("success", "failed"):
                return dict(run)
            time.sleep(2)
        raise TimeoutError(f"{dag_id}/{run_id} did not finish within {timeout}s")

    def stop(self, grace: float = 20) -> None:
        """Stop every component and every process they started (each in its own process group)."""
        _stop_all(list(self.processes.values()), grace)
        self.processes.clear()


def _signal(pid: int, signum: int) -> bool:
    """Send ``signum`` to ``pid``; False when the process has already ended."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True


def _stop_all(processes: list[subprocess.Popen[bytes]], grace: float) -> None:
    """SIGTERM the process groups of ``processes`` and of all their descendants; SIGKILL after ``grace``."""
    import psutil

    victims: dict[int, psutil.Process] = {}
    for proc in processes:
        try:
            parent = psutil.Process(proc.pid)
            victims[parent.pid] = parent
            for child in parent.children(recursive=True):
                victims[child.pid] = child
        except psutil.NoSuchProcess:
            continue
    groups = set()
    for victim in victims.values():
        try:
            groups.add(os.getpgid(victim.pid))
        except ProcessLookupError:
            continue
    for group in groups:
        _signal_group(group, signal.SIGTERM if grace > 0 else signal.SIGKILL)
    _, alive = psutil.wait_procs(list(victims.values()), timeout=grace)
    for group in groups:
        _signal_group(group, signal.SIGKILL)
    for victim in alive:
        try:
            victim.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    for proc in processes:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _signal_group(group: int, sig: int) -> None:
    if group in (0, os.getpgrp()):
        return  # never signal our own group
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass

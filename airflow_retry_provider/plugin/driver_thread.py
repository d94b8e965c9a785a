"""The background threads of one api-server worker: the replay driver, which drives jobs from
``retry_replay_jobs``, and the impact thread, which computes what letters block as they are filed.

Jobs live in PostgreSQL, so every worker reads the same job and any worker (or another process)
may drive it; this driver only makes sure a job starts without waiting for the sweeper. Both
threads start when the api-server starts the app (its lifespan; the plugin is imported by every
Airflow component, only the api-server runs it) or on the worker's first request, whichever comes
first. The driver wakes when ``POST /api/replays`` creates a job, and otherwise looks every
``[retry_provider] replay_driver_interval_seconds``; it clears through the Airflow connection
``retry_provider_airflow_api`` (the person who asked was checked when the job was created).

The infra watcher (``dlq.infra_watch.InfraWatcher``, issue 57) reads, every 15 seconds, the tries of
managed tasks that ended since its watermark and files those no exception explains as
``infra/<category>``; one worker at a time (a session lock), as the impact thread.

The impact thread (``dlq.impact.ImpactWorker``, issue 58) wakes on each letter filed (PostgreSQL
``LISTEN``/``NOTIFY``) and computes the impacts once per DAG run through the same connection; a
thread of its own, so a replay job's canary wait never delays an at-risk alert.

The actions router reaches it through ``app.state.driver_thread`` (:func:`~airflow_retry_provider.plugin.deps.get_driver`).
"""

import logging
import os
import threading
from collections.abc import Callable

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import DeadLetterStore, ImpactWorker, InfraWatcher, ReplayDriver, ReplayEngine
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials

log = logging.getLogger(__name__)

WORKER_HEADER = "X-Retry-Provider-Worker"


def service_api() -> AirflowApi:
    """Airflow's REST API as the connection ``retry_provider_airflow_api`` (environment first, then Airflow)."""
    credentials = ApiCredentials.from_env()
    if credentials is None:
        from airflow_retry_provider.hooks.airflow_api import credentials_from_airflow

        credentials = credentials_from_airflow()
    return AirflowApi(credentials)


class DriverThread:
    """Starts this worker's replay driver, impact thread and infra watcher once, and wakes the driver when a job is created.

    :param api_factory: the Airflow REST client the driver clears with and the impacts are read with
        (default :func:`service_api`).
    :param enabled: False for an app that only serves pages (jobs and impacts then wait for another process).
    """

    def __init__(self, api_factory: Callable[[], AirflowApi] = service_api, enabled: bool = True) -> None:
        self._api_factory = api_factory
        self.enabled = enabled
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._impact_thread: threading.Thread | None = None
        self._infra_thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()

    @property
    def worker(self) -> str:
        """This worker's name (its process id): the two workers of a deployment answer with different ones."""
        return str(os.getpid())

    def ensure_started(self, db: ProviderDatabase) -> None:
        """Start the driver and the impact thread on ``db`` unless they run (or are disabled)."""
        if not self.enabled or (self._thread is not None and self._thread.is_alive()):
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            if self._impact_thread is None or not self._impact_thread.is_alive():
                impacts = ImpactWorker(DeadLetterStore(db), self._api_factory)
                self._impact_thread = threading.Thread(
                    target=impacts.loop,
                    args=(self._stop,),
                    name=f"retry-provider-impacts-{self.worker}",
                    daemon=True,
                )
                self._impact_thread.start()
            if self._infra_thread is None or not self._infra_thread.is_alive():
                watcher = InfraWatcher(DeadLetterStore(db), self._api_factory)
                self._infra_thread = threading.Thread(
                    target=watcher.loop,
                    args=(self._stop,),
                    name=f"retry-provider-infra-watcher-{self.worker}",
                    daemon=True,
                )
                self._infra_thread.start()
            try:
                driver = ReplayDriver(ReplayEngine(DeadLetterStore(db)), self._api_factory)
            except ValueError as exc:  # a bad [retry_provider] setting: the sweeper still drains
                log.error("airflow-retry-provider: replay driver not started: %s", exc)
                return
            self._thread = threading.Thread(
                target=driver.loop,
                args=(self._stop,),
                kwargs={"wake": self._wake},
                name=f"retry-provider-replay-driver-{self.worker}",
                daemon=True,
            )
            self._thread.start()

    def wake(self) -> None:
        """A job was created: look now instead of at the next interval."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the driver after its current round (a job it holds is handed on by its lease)."""
        self._stop.set()
        self._wake.set()
        for thread in (self._thread, self._impact_thread, self._infra_thread):
            if thread is not None:
                thread.join(timeout)

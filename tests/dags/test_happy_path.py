"""The happy path costs nothing: a success under ``apply_profile`` that is not a replay opens no provider connection
(a failed try before it opens one: the retry policy records it in ``retry_failed_tries``)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from airflow_retry_provider.dlq.callback import resolve_dead_letter
from tests.dag_files import happy_path_dags

pytestmark = pytest.mark.dags


class CountingListener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts (and closes each at once)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def counting_provider_db(monkeypatch) -> Iterator[CountingListener]:
    """``retry_provider_default`` points at a listener that counts every connection made to it."""
    listener = CountingListener()
    monkeypatch.setenv(
        "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", f"postgresql://etl:etl@127.0.0.1:{listener.port}/provider"
    )
    try:
        yield listener
    finally:
        listener.close()


def test_successes_that_are_not_replays_open_no_provider_connection(airflow_db, counting_provider_db):
    """Tries that succeed at once, after retries, mapped, with the profile's or their own retries: no connection
    for a success, one for each failed try (the policy records it)."""
    run = happy_path_dags.happy_dag.test()
    tries = {(ti.task_id, ti.map_index): (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert tries == {
        ("succeeds", -1): ("success", 1),
        ("fails_once", -1): ("success", 2),
        ("mapped_fails_once", 0): ("success", 2),
        ("mapped_fails_once", 1): ("success", 2),
        ("mapped_fails_once", 2): ("success", 2),
        ("no_retries", -1): ("success", 1),
        ("more_retries", -1): ("success", 3),
    }
    failed_tries = sum(try_number - 1 for _, try_number in tries.values())
    assert failed_tries == 6 and counting_provider_db.accepted == failed_tries


def test_the_listener_counts_the_lookup_of_a_success_after_a_clear(counting_provider_db):
    """The control: a success after a clear (max_tries = 1 + retries) does connect, so the zero above means something."""
    ti = SimpleNamespace(
        dag_id="sales", run_id="manual__1", task_id="load", map_index=-1, try_number=2, max_tries=2
    )
    resolve_dead_letter({"ti": ti, "task": SimpleNamespace(retries=1)})
    assert counting_provider_db.accepted >= 1

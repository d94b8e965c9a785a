"""The provider past one machine: CeleryExecutor on Redis, two workers, two schedulers, two api-server workers.

One distributed stack serves the whole module (it is the heaviest thing the suite starts).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import psycopg
import pytest

from airflow_retry_provider.identity import make_work_unit_key
from devstack.redis import start_redis
from tests.conftest import running_airflow
from tests.dag_files.scenario_parts import FAST, LOAD_KINDS
from tests.e2e.conftest import E2E, StatsdListener, sample_until

pytestmark = [pytest.mark.e2e, pytest.mark.distributed]

WORKERS = {"worker-1", "worker-2"}
HEARTBEAT_TIMEOUT = 20


@pytest.fixture(scope="module")
def dist(pg_server, tmp_path_factory) -> Iterator[E2E]:
    """Redis, two schedulers, two Celery workers (concurrency 2), an api-server with two workers."""
    statsd = StatsdListener()
    pid_dir = tmp_path_factory.mktemp("dist-marks")
    redis = start_redis()
    extra_env = {
        "E2E_PID_DIR": str(pid_dir),
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "15",
        "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "15",
        "AIRFLOW__RETRY_PROVIDER__SWEEP_GRACE_SECONDS": "0",
        "AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE": "60",
        "AIRFLOW__RETRY_PROVIDER__REPLAY_LEASE_SECONDS": "15",
        "AIRFLOW__RETRY_PROVIDER__REPLAY_DRIVER_INTERVAL_SECONDS": "2",
    }
    options = {"broker_url": redis.url, "schedulers": 2, "celery_workers": 2, "api_workers": 2}
    try:
        with running_airflow(
            pg_server,
            tmp_path_factory.mktemp("dist-home"),
            "dist",
            extra_env=extra_env,
            stack_options=options,
        ) as airflow:
            yield E2E(airflow.stack, airflow.provider_dsn, airflow.metadata_dsn, statsd, pid_dir)
    finally:
        redis.stop()
        statsd.close()


def _marks(dist: E2E, kind: str) -> dict[str, str]:
    folder = dist.pid_dir / kind
    return {path.name: path.read_text() for path in folder.iterdir()} if folder.exists() else {}


def _metadata(dist: E2E, sql: str, params: dict) -> list[tuple]:
    with psycopg.connect(dist.metadata_dsn) as conn:
        return conn.execute(sql, params).fetchall()


def test_components_run_as_distributed_processes(dist):
    """Both schedulers heartbeat, both Celery workers answer, and the api-server runs two workers."""
    sample_until(
        lambda: (
            len(
                _metadata(
                    dist,
                    "SELECT id FROM job WHERE job_type = 'SchedulerJob' AND state = 'running' "
                    "AND latest_heartbeat > now() - interval '30 seconds'",
                    {},
                )
            )
            == 2
        ),
        timeout=120,
    )
    assert {"scheduler", "scheduler-2", "worker-1", "worker-2"} <= set(dist.stack.processes)
    assert len(dist.stack.process_tree("api-server")) >= 3  # the server and its two workers


def test_200_mapped_failures_over_both_workers_file_exactly_200_letters(dist):
    """Poison, unknown and retryable failures spread over both workers: 200 letters, right class and try."""
    started = datetime.now().astimezone()
    run = dist.trigger("dist_load")
    bystander_ends: list[datetime] = []
    while dist.stack.api("GET", f"/api/v2/dags/dist_load/dagRuns/{run['dag_run_id']}")["state"] not in (
        "success",
        "failed",
    ):
        bystander = dist.wait(dist.trigger("e2e_bystander"), timeout=300)
        assert bystander["state"] == "success"
        bystander_ends.append(datetime.fromisoformat(bystander["end_date"]))
    finished = dist.wait(run, timeout=30)
    assert finished["state"] == "failed"
    load_end = datetime.fromisoformat(finished["end_date"])
    print(f"\n200 mapped failures drained in {(load_end - started).total_seconds():.1f} s on two workers")
    assert [end for end in bystander_ends if end < load_end], bystander_ends  # it kept running meanwhile
    with psycopg.connect(dist.provider_dsn) as conn:
        letters = conn.execute(
            "SELECT map_index, category, failure_class, try_number FROM retry_dead_letters "
            "WHERE dag_id = 'dist_load'"
        ).fetchall()
    assert len(letters) == 200 and {row[0] for row in letters} == set(range(200))
    by_kind: dict[str, set[tuple]] = {}
    for map_index, category, failure_class, try_number in letters:
        by_kind.setdefault(LOAD_KINDS[map_index], set()).add((category, failure_class, try_number))
    assert by_kind == {
        "poison": {("not-found", "poison", 1)},
        "unknown": {("unknown-outcome", "unknown", 1)},
        "retryable": {("exhausted", "retryable", 2)},
    }
    assert {text.split()[0] for text in _marks(dist, "load").values()} == WORKERS


def test_pool_of_two_slots_is_never_exceeded_across_workers(dist):
    """Six 1-slot tasks, three pinned to each worker, in a 2-slot pool: never more than 2 at once."""
    dist.stack.api(
        "POST",
        "/api/v2/pools",
        json={"name": "dist_positions_db", "slots": 2, "description": "positions", "include_deferred": False},
    )
    run = dist.trigger("dist_pool")
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            (used,) = _metadata(
                dist,
                "SELECT coalesce(sum(pool_slots), 0) FROM task_instance "
                "WHERE pool = 'dist_positions_db' AND state IN ('queued', 'running')",
                {},
            )[0]
            samples.append(int(used))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        finished = dist.wait(run, timeout=600)
    finally:
        done.set()
        sampler.join(timeout=10)
    assert finished["state"] == "success"
    assert max(samples) == 2, samples  # used to the full, never beyond
    assert {text.split()[0] for text in _marks(dist, "pool").values()} == WORKERS


def test_a_work_unit_claimed_from_both_workers_at_once_runs_once(dist):
    """Two tasks on the two workers claim the same ledger unit together: one runs, the other gets its result."""
    run = dist.wait(dist.trigger("dist_ledger"), timeout=600)
    assert run["state"] == "success"
    ran = _marks(dist, "ledger-ran")
    assert len(ran) == 1, ran
    arrived = _marks(dist, "ledger-arrived")
    assert {text.split()[0] for name, text in arrived.items() if name.endswith("-1")} == WORKERS
    winner = next(iter(ran.values())).split()[0]
    results = {
        task_id: dist.stack.api(
            "GET",
            f"/api/v2/dags/dist_ledger/dagRuns/{run['dag_run_id']}/taskInstances/{task_id}/xcomEntries/return_value",
        )["value"]
        for task_id in ("claim_on_worker_1", "claim_on_worker_2")
    }
    assert set(results.values()) == {winner}  # the loser returned the recorded result, not its own run
    loser = next(task for task in results if not task.endswith(winner.replace("-", "_")))
    assert len(dist.tries(run, loser)) >= 2  # its first claim found the unit busy and failed


def test_worker_sigkilled_mid_task_fails_by_heartbeat_and_files_one_letter(dist):
    """SIGKILL a Celery worker mid-task: heartbeat timeout, one letter, and the sweeper adds no duplicate."""
    run = dist.trigger("dist_worker_killed")
    sample_until(lambda: "try-1" in _marks(dist, "killed"), timeout=300)
    assert _marks(dist, "killed")["try-1"].split()[0] == "worker-2"
    dist.stack.kill_component("worker-2")
    try:
        finished = dist.wait(run, timeout=300)
        assert finished["state"] == "failed"
        assert "try-2" not in _marks(dist, "killed")  # one attempt: the heartbeat timeout was final
        sample_until(lambda: len(_worker_killed_letters(dist, run)) >= 1, timeout=180)
        sample_until(lambda: _worker_killed_letters(dist, run)[0][0] == "infra", timeout=60)
        ((failure_class, category, try_number),) = _worker_killed_letters(dist, run)
        # issue 57: the scheduler's events tell the infra watcher what ended the try: the heartbeat timeout,
        # and, when Celery reported the lost worker's task failed first, the executor's state mismatch
        assert (failure_class, try_number) == ("infra", 1)
        assert category in ("worker-lost", "heartbeat-timeout")
        sweep = dist.wait(dist.trigger("dead_letter_sweeper"), timeout=300)
        assert sweep["state"] == "success"
        assert len(_worker_killed_letters(dist, run)) == 1  # filed by one path, found by the other
    finally:
        dist.stack.start_component("worker-2")


def _worker_killed_letters(dist: E2E, run: dict) -> list[tuple]:
    with psycopg.connect(dist.provider_dsn) as conn:
        return conn.execute(
            "SELECT failure_class, category, try_number FROM retry_dead_letters "
            "WHERE dag_id = 'dist_worker_killed' AND run_id = %s",
            (run["dag_run_id"],),
        ).fetchall()


def test_a_celery_pool_child_killed_mid_task_is_worker_lost_and_the_task_reruns_to_success(dist):
    """SIGKILL the Celery pool child running a try: the executor reports WorkerLostError, the infra watcher
    records the try infra/worker-lost on its worker's host, and try 2 succeeds with no letter filed."""
    run = dist.trigger("dist_worker_child_killed")
    sample_until(lambda: "try-1" in _marks(dist, "child-killed"), timeout=300)
    worker, _, child = _marks(dist, "child-killed")["try-1"].split()
    assert worker == "worker-1"
    killed_at = time.time()
    os.kill(int(child), signal.SIGKILL)
    finished = dist.wait(run, timeout=300)
    assert finished["state"] == "success"
    assert [t["try_number"] for t in dist.tries(run, "extraction_whose_celery_child_dies")] == [1, 2]

    def recorded() -> list[tuple]:
        with psycopg.connect(dist.provider_dsn) as conn:
            return conn.execute(
                "SELECT try_number, failure_class, category, hostname, recorded_at FROM retry_failed_tries "
                "WHERE dag_id = 'dist_worker_child_killed' AND run_id = %s",
                (run["dag_run_id"],),
            ).fetchall()

    sample_until(lambda: bool(recorded()), timeout=120)
    ((try_number, failure_class, category, hostname, recorded_at),) = recorded()
    print(
        f"\ninfra watcher: Celery child kill -> try recorded {category} in {recorded_at.timestamp() - killed_at:.1f} s"
    )
    assert (try_number, failure_class, category) == (1, "infra", "worker-lost")
    assert hostname
    with psycopg.connect(dist.provider_dsn) as conn:
        letters = conn.execute(
            "SELECT count(*) FROM retry_dead_letters WHERE dag_id = 'dist_worker_child_killed'"
        ).fetchone()
    assert letters == (0,)


def test_scheduler_sigkilled_while_retries_pend_the_other_keeps_their_delays(dist):
    """SIGKILL one scheduler while a retry waits: the other schedules tries 2 and 3 at the policy's delays."""
    run = dist.trigger("e2e_transient")
    sample_until(lambda: any(t["state"] == "up_for_retry" for t in dist.tries(run, "flaky")), timeout=300)
    dist.stack.kill_component("scheduler")
    try:
        finished = dist.wait(run, timeout=300)
        assert finished["state"] == "success"
        tries = dist.tries(run, "flaky")
        assert [t["try_number"] for t in tries] == [1, 2, 3]
        interval = [datetime.fromisoformat(run[k]) for k in ("data_interval_start", "data_interval_end")]
        key = make_work_unit_key(run["dag_id"], "flaky", -1, *interval, run["dag_run_id"])
        for attempt, (failed, following) in enumerate(zip(tries, tries[1:], strict=False), start=1):
            delay = FAST.delay(attempt, key)
            assert timedelta(seconds=failed["retry_delay_override"]) == delay
            not_before = failed["end_date"] + delay
            assert not_before <= following["start_date"] < not_before + timedelta(seconds=30)
    finally:
        dist.stack.start_component("scheduler")


def _plugin(dist: E2E, method: str, path: str, **kwargs) -> httpx.Response:
    """The plugin's API as the admin on a fresh connection: either api-server worker may answer."""
    return httpx.request(
        method,
        f"{dist.stack.base_url}/retry-provider{path}",
        headers={"Authorization": f"Bearer {dist.stack.token()}"},
        timeout=60,
        **kwargs,
    )


def _sent(dist: E2E, job_id: int) -> int:
    with psycopg.connect(dist.provider_dsn) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM retry_replays WHERE job_id = %s AND clear_sent_at IS NOT NULL", (job_id,)
        ).fetchone()
    return int(count)


def _replays(dist: E2E, job_id: int) -> list[tuple]:
    """The job's replays as the assertions' messages show them: letter, outcome, detail."""
    with psycopg.connect(dist.provider_dsn) as conn:
        return conn.execute(
            "SELECT letter_id, outcome, detail FROM retry_replays WHERE job_id = %s ORDER BY id", (job_id,)
        ).fetchall()


def _no_sweeps(dist: E2E) -> None:
    """Pause the sweeper (an earlier test's trigger unpaused it, on its 10-minute schedule) and wait for a
    run of it to end: a sweep draining this job while the api-server is down would see its clears refused
    and stop the job by the stop rule (three failed clears in a row), which is the sweep's test, not this one's."""
    dist.stack.wait_for_dag("dead_letter_sweeper")
    dist.stack.api("PATCH", "/api/v2/dags/dead_letter_sweeper", json={"is_paused": True})
    sample_until(
        lambda: (
            not dist.stack.api(
                "GET", "/api/v2/dags/dead_letter_sweeper/dagRuns", params={"state": ["queued", "running"]}
            )["dag_runs"]
        ),
        timeout=300,
    )


def test_a_replay_job_is_read_through_both_api_workers_and_survives_an_api_server_restart(dist):
    """20 letters replayed at 60/min: progress answered by both api-server workers, the api-server SIGKILLed
    and restarted mid-job, and the job still ends with every letter cleared once, resolved or back in dlq.

    The suite's one test of a job surviving a killed api-server (it was also run on the LocalExecutor
    stack, where the driver and the assertions are the same and only the executor differs)."""
    run = dist.wait(dist.trigger("dlq_replay_many"), timeout=600)
    assert run["state"] == "failed"
    with psycopg.connect(dist.provider_dsn) as conn:
        sample_until(
            lambda: (
                conn.execute(
                    "SELECT count(*) FROM retry_dead_letters WHERE dag_id = 'dlq_replay_many' AND status = 'dlq'"
                ).fetchone()[0]
                == 20
            ),
            timeout=120,
        )
        ids = [
            row[0]
            for row in conn.execute("SELECT id FROM retry_dead_letters WHERE dag_id = 'dlq_replay_many'")
        ]
    dist.stack.api("POST", "/api/v2/variables", json={"key": "many_fix_applied", "value": "yes"})
    _no_sweeps(dist)
    answer = _plugin(
        dist,
        "POST",
        "/api/replays",
        json={"ids": ids, "reason": "table created", "fix_version": "v5", "canary": False},
    )
    assert answer.status_code in (200, 201, 202), answer.text
    job_id = answer.json()["id"]

    workers: dict[str, dict] = {}  # the job's progress, as each api-server worker answers it
    sample_until(lambda: _sent(dist, job_id) >= 2, timeout=120, every=0.2)
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline:
        response = _plugin(dist, "GET", f"/api/jobs/{job_id}")
        assert response.status_code == 200, response.text
        workers[response.headers["x-retry-provider-worker"]] = response.json()
    assert len(workers) == 2, f"only worker(s) {list(workers)} answered"

    before_kill = _sent(dist, job_id)
    assert 2 <= before_kill < 20, before_kill  # the restart lands mid-job
    dist.stack.kill_component("api-server")
    dist.stack.start_component("api-server")
    dist.stack.wait_healthy()

    deadline = time.monotonic() + 300
    job = _plugin(dist, "GET", f"/api/jobs/{job_id}").json()
    while not job["finished"] and time.monotonic() < deadline:
        time.sleep(1)
        job = _plugin(dist, "GET", f"/api/jobs/{job_id}").json()
    assert job["finished"] and job["status"] == "done" and sum(job["counts"].values()) == 20, (
        job,
        _replays(dist, job_id),
    )
    assert set(job["counts"]) <= {"cleared", "unknown", "clear-failed", "included"}, job["counts"]
    assert _sent(dist, job_id) == 20  # every clear was sent, once (below), the restart notwithstanding
    with psycopg.connect(dist.provider_dsn) as conn:
        per_letter = conn.execute(
            "SELECT letter_id, count(*) FROM retry_replays WHERE job_id = %s GROUP BY 1", (job_id,)
        ).fetchall()
        assert sorted(letter for letter, _ in per_letter) == sorted(ids)
        assert all(count == 1 for _, count in per_letter), per_letter  # no letter cleared twice

        def settled() -> bool:
            statuses = conn.execute(
                "SELECT DISTINCT status FROM retry_dead_letters WHERE dag_id = 'dlq_replay_many'"
            ).fetchall()
            return {status for (status,) in statuses} <= {"resolved", "dlq"}

        sample_until(settled, timeout=480, every=2)  # an unknown clear waits for its rerun to end
    final = dist.stack.api("GET", f"/api/v2/dags/dlq_replay_many/dagRuns/{run['dag_run_id']}")
    print(
        f"\nreplay job {job_id}: {job['counts']}, {before_kill} clears sent before the restart; run {final['state']}"
    )

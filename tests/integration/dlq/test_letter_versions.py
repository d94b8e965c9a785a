"""The store's DAG-version state on a real PostgreSQL (issue 29 items 1 and 2): numbering, notices, their exit."""

from __future__ import annotations

from typing import Any

from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.hooks.airflow_api import DagVersion
from devstack.provider import fix_notices
from tests.factories import new_letter


def _uuid(n: int) -> str:
    return f"0195f3c2-0000-7000-8000-{n:012d}"


def test_the_newest_unnumbered_versions_come_first_and_get_their_number(pg_dsn):
    """Versions Airflow no longer has stay unnumbered, so the lookup takes the newest first and never starves."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    for n in (1, 2, 3):
        store.file(new_letter(run_id=f"r{n}", dag_version_id=_uuid(n)), replay_cap=3)
    assert store.unnumbered_versions(limit=2) == [("etl", _uuid(3)), ("etl", _uuid(2))]
    assert store.number_version("etl", _uuid(3), 7, "repo", "c0ffee") == 1
    assert store.unnumbered_versions() == [("etl", _uuid(2)), ("etl", _uuid(1))]
    (numbered,) = [letter for letter in store.list() if letter.run_id == "r3"]
    assert (numbered.dag_version_number, numbered.bundle_name, numbered.bundle_version) == (
        7,
        "repo",
        "c0ffee",
    )


def test_a_fix_is_noticed_once_and_forgotten_with_its_last_open_letter(pg_dsn):
    """One notice per DAG version and group, told in its transaction; dismissing the last letter deletes it and the version."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    filed = store.file(new_letter(dag_version_number=3, fingerprint="fp-a"), replay_cap=3)
    assert store.open_groups_by_version() == [("etl", "fp-a", 3, 1)]
    store.record_dag_version(DagVersion(_uuid(5), "etl", 5, "repo", None, None))
    told: list[Any] = []

    def tell(cur: Any, notice: Any, connect: Any) -> list:
        cur.execute("SELECT count(*) FROM retry_fix_notices WHERE id = %s", (notice.id,))
        told.append(
            (notice.version_number, notice.failed_on, cur.fetchone()[0])
        )  # visible in the transaction
        return [lambda: told.append("after commit")]

    first = store.notice_fix("etl", "fp-a", 5, 3, 1, None, tell)
    assert first is not None and first.line() == "failed on version 3; version 5 deployed"
    assert store.notice_fix("etl", "fp-a", 5, 3, 1, None, tell) is None  # told already: nobody is told again
    assert told == [(5, 3, 1), "after commit"]
    assert fix_notices(pg_dsn) == [first]
    assert store.forget_closed_versions() == (0, 0)  # the letter is still open
    store.dismiss([filed.letter_id], "ana", "not ours")
    assert store.forget_closed_versions() == (1, 1) and fix_notices(pg_dsn) == []

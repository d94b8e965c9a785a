"""The grouped view's query reads the letters through its covering index (migration 0015), on a real
PostgreSQL holding enough letters for the planner to choose it."""

from __future__ import annotations

import json
import time

import psycopg

from airflow_retry_provider import sql
from airflow_retry_provider.dlq import LetterFilter
from airflow_retry_provider.plugin.queries import _params
from airflow_retry_provider.plugin.sql import query
from tests.conftest import REPO

LETTERS = 100_000
SEED = sql.parse_named((REPO / "bench" / "pages.sql").read_text("utf-8"))
"""The pages benchmark's letters: 300 DAGs, 60 days, 500 root causes of very different sizes."""


def test_the_grouped_view_counts_its_root_causes_from_the_index_alone(pg_dsn):
    """The pages benchmark's 100,000 letters: an index-only scan in fingerprint order, no table read."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(SEED["seed_letters"], {"n": LETTERS})
        # as autovacuum leaves a table at rest: its pages all-visible (here the first VACUUM after the load
        # left relallvisible at 0 on PostgreSQL 15; the next mark them, once no transaction that began
        # before the load is still open: on a loaded machine that can take a few rounds)
        conn.execute("VACUUM ANALYZE retry_dead_letters")
        for _ in range(60):
            conn.execute("VACUUM retry_dead_letters")
            pages, visible = conn.execute(
                "SELECT relpages, relallvisible FROM pg_class WHERE relname = 'retry_dead_letters'"
            ).fetchone()
            if visible >= pages:
                break
            time.sleep(0.5)
        assert visible >= pages, f"only {visible} of {pages} pages all-visible after the vacuums"
        dags = [f"dag_{n}" for n in range(300)]
        parameters = _params(LetterFilter(), dags) | {
            "limit": 50,
            "after_letters": None,
            "after_fingerprint": None,
        }
        [(plan,)] = conn.execute(
            "EXPLAIN (FORMAT JSON) " + query("ui_fingerprint_groups"), parameters
        ).fetchall()
    scans = [
        (node["Node Type"], node.get("Index Name"))
        for node in _nodes(plan[0]["Plan"])
        if node.get("Relation Name") == "retry_dead_letters"
    ]
    assert ("Index Only Scan", "retry_dead_letters_fingerprint_versions") in scans
    assert "Seq Scan" not in {node_type for node_type, _ in scans}, json.dumps(plan)[:2000]


def _nodes(node: dict) -> list[dict]:
    """A plan node and every node under it."""
    return [node, *(found for child in node.get("Plans", []) for found in _nodes(child))]

"""Named SQL for reconciliation: ``trails.sql`` (the tables) and ``queries.sql`` (``-- name: x`` blocks).

Statements use ``%(name)s`` placeholders and work with psycopg 3 and psycopg2. Python never builds
SQL from strings: it runs a statement of these files by name.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

__all__ = ["parse_named", "queries", "query", "trails_sql"]

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def parse_named(text: str) -> dict[str, str]:
    """Split ``-- name: x`` blocks into ``{name: statement}`` (text before the first name is ignored)."""
    parts = _NAME.split(text)
    named = {
        name: body.strip().rstrip(";").strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)
    }
    if len(named) != len(parts) // 2:
        raise ValueError("a statement name is used twice")
    return named


@functools.cache
def queries() -> dict[str, str]:
    """Every named statement of ``queries.sql``."""
    return parse_named(resources.files(__name__).joinpath("queries.sql").read_text("utf-8"))


def query(name: str) -> str:
    """One named statement of ``queries.sql``; ``KeyError`` names an unknown one."""
    return queries()[name]


@functools.cache
def trails_sql() -> str:
    """The idempotent ``CREATE ... IF NOT EXISTS`` script of the trail and report tables."""
    return resources.files(__name__).joinpath("trails.sql").read_text("utf-8")

"""Named SQL statements of the ledger (``-- name: x`` blocks in ``queries.sql``), loaded once."""

from __future__ import annotations

import functools
import re
from importlib import resources

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@functools.cache
def queries() -> dict[str, str]:
    """Every named statement of queries.sql."""
    text = resources.files(__name__).joinpath("queries.sql").read_text("utf-8")
    parts = _NAME.split(text)
    return {name: body.strip().rstrip(";") for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def query(name: str) -> str:
    return queries()[name]


@functools.cache
def ledger_sql() -> str:
    """The idempotent ``ledger.sql``."""
    return resources.files(__name__).joinpath("ledger.sql").read_text("utf-8")

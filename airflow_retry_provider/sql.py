"""Named SQL: every statement lives in a ``.sql`` file as a ``-- name: x`` block, loaded once.

Statements use ``%(name)s`` placeholders and run on psycopg 3 and psycopg2 alike; Python never
builds SQL from strings, it runs a statement of these files by name. :func:`transaction` is the
one way the provider commits or rolls back a connection.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_COMMENT_LINE = re.compile(r"^\s*--.*$\n?", re.MULTILINE)


def parse_named(text: str) -> dict[str, str]:
    """Split ``-- name: x`` blocks into ``{name: statement}``.

    Text before the first name is ignored, and so are whole-line comments (a placeholder in a
    comment must never become a parameter). A name used twice is an error.
    """
    parts = _NAME.split(text)
    named = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in named:
            raise ValueError(f"SQL statement {name!r} is defined twice")
        named[name] = _COMMENT_LINE.sub("", body).strip().rstrip(";").strip()
    return named


@functools.cache
def read(package: str, filename: str) -> str:
    """The text of ``filename`` shipped in ``package``."""
    return resources.files(package).joinpath(filename).read_text("utf-8")


@functools.cache
def named(package: str, filename: str = "queries.sql") -> dict[str, str]:
    """Every named statement of ``filename`` in ``package``."""
    return parse_named(read(package, filename))


@contextmanager
def transaction(conn: Any, *, close: bool = True) -> Iterator[Any]:
    """``conn`` as one transaction: committed when the block ends, rolled back if it raises.

    A connection in autocommit mode commits each statement itself, so nothing is sent for it.

    :param conn: an open DB-API connection (psycopg 3 or psycopg2).
    :param close: close ``conn`` afterwards; ``False`` for a connection the caller keeps.
    """
    try:
        yield conn
        if not conn.autocommit:
            conn.commit()
    except BaseException:
        if not conn.autocommit:
            conn.rollback()
        raise
    finally:
        if close:
            conn.close()

"""Named SQL: every statement lives in a ``.sql`` file as a ``-- name: x`` block, loaded once.

Statements use ``%(name)s`` placeholders and run on psycopg 3 and psycopg2 alike; Python never
builds SQL from strings, it runs a statement of these files by name. A clause several statements
share is written once, as a named block of a ``fragments.sql`` file, and a statement includes it
with a line of its own, ``-- include: <package>:<name>`` (the letter filter:
``-- include: airflow_retry_provider.dlq.sql:letter_filter``), when the file is loaded. :func:`transaction` is the
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
_INCLUDE = re.compile(r"^[ \t]*-- include: ([\w.]+):(\w+)[ \t]*$", re.MULTILINE)


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
    """Every named statement of ``filename`` in ``package``, its ``-- include:`` lines replaced."""
    return parse_named(compose(read(package, filename)))


def compose(text: str) -> str:
    """``text`` with each ``-- include: <package>:<name>`` line replaced by that fragment, in parentheses."""
    return _INCLUDE.sub(lambda include: f"({fragment(include[1], include[2])})", text)


def fragment(package: str, name: str) -> str:
    """The clause ``name`` of ``package``'s ``fragments.sql``; ``KeyError`` names an unknown one."""
    return named(package, "fragments.sql")[name]


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

"""Text every store can keep: the characters PostgreSQL (and Airflow's own columns) refuse, replaced.

PostgreSQL refuses NUL (``\\x00``) in ``text`` and in ``jsonb`` strings (``DataError``), and a
lone surrogate (``\\ud800``, from ``surrogateescape`` decoding or a bad JSON escape) cannot be
encoded to UTF-8 at all (``UnicodeEncodeError`` in the driver). A failure message may hold
either: an exception is input from outside. :func:`storable` replaces each with U+FFFD (the
Unicode replacement character, one character for one, so a cut length stays right) and leaves
every other character as it is. It is applied to every text field of a dead letter, to the
retry reason sent to Airflow, to the ledger's error column and to the work-unit sweeper's text.
"""

from __future__ import annotations

import functools
from typing import Any, overload

REPLACEMENT = "\ufffd"
"""What replaces a character that cannot be stored."""


@functools.cache
def _unstorable() -> dict[int, str]:
    """The translation table (NUL and the 2,048 surrogates), built on first use: importing stays free."""
    return {0: REPLACEMENT, **dict.fromkeys(range(0xD800, 0xE000), REPLACEMENT)}


def _encodes(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (a lone surrogate does not)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


@overload
def storable(text: str) -> str: ...
@overload
def storable(text: None) -> None: ...


def storable(text: str | None) -> str | None:
    """``text`` with NUL and lone surrogates replaced by U+FFFD; None stays None.

    Linear in the text and allocation-free for the usual text (no NUL, valid UTF-8).
    """
    if text is None:
        return None
    if "\x00" in text or not _encodes(text):
        return text.translate(_unstorable())
    return text


def storable_value(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, strings, numbers) with every string, key included, :func:`storable`."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable_value(k): storable_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable_value(v) for v in value]
    return value

"""Airflow's secrets masker over text the provider has already redacted.

The provider's own :func:`~airflow_retry_provider.policy.redact` knows how secrets look; Airflow's
masker knows which values are secrets here (connection passwords, masked Variables, values a
task registered with ``mask_secret``). Every text that leaves a task (the retry reason stored on
the task instance, a dead letter, an alert, a log line) passes through both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

_METACHARACTERS = frozenset("()[]{}?*+^$.")  # outside a class, unescaped: not a literal


@functools.cache
def _airflow_masker() -> tuple[Callable[[], Any], type[Any], Callable[[Any], Any]]:
    """Airflow's masker getter, its class and its ``redact``, imported on first use (an import
    statement costs every call a lookup)."""
    from airflow.sdk._shared.secrets_masker import SecretsMasker, _secrets_masker, redact

    return _secrets_masker, SecretsMasker, redact


def literals(source: str) -> tuple[str, ...] | None:
    """The strings a regex ``source`` of ``re.escape``-d alternatives (``a\\.b|c``) matches, one per
    alternative; None when any part is not a plain literal (a class, a group, a repeat, ``\\d``)."""
    found: list[str] = []
    current: list[str] = []
    escaped = False
    for char in source:
        if escaped:
            if char.isalnum() or char == "_":  # \d, \b, \1, \x41...: not a literal character
                return None
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            found.append("".join(current))
            current = []
        elif char in _METACHARACTERS:
            return None
        else:
            current.append(char)
    if escaped:
        return None
    found.append("".join(current))
    return tuple(found)


# the last replacer seen and its literals, one tuple (read at once by any thread); held by
# identity: a pattern's hash would hash its compiled code on every call
_last_replacer: list[tuple[object, tuple[str, ...] | None]] = [(None, None)]


def _literals_of(replacer: re.Pattern[str]) -> tuple[str, ...] | None:
    """:func:`literals` of ``replacer`` when it has no flag but the default, else None."""
    plain = isinstance(replacer.pattern, str) and replacer.flags == re.UNICODE
    return literals(replacer.pattern) if plain else None


def _may_change(replacer: re.Pattern[str], text: str) -> bool:
    """Whether ``replacer`` matches anywhere in ``text``: for literals (what ``add_mask`` registers),
    whether one is in it, with ``in`` (a fifth of a regex search). The literals are remembered for
    the last replacer (Airflow compiles a new one only when a value is registered)."""
    seen, found = _last_replacer[0]
    if seen is not replacer:
        found = _literals_of(replacer)
        _last_replacer[0] = (replacer, found)
    if found is None:
        return replacer.search(text) is not None
    for literal in found:
        if literal in text:
            return True
    return False


def mask(text: str) -> str:
    """``text`` with every secret Airflow's masker knows replaced by ``***`` (best effort, never raises).

    Airflow's masker (its own class) changes a string only where its ``replacer`` (the values
    registered, one alternation) matches: with no replacer, or no match in ``text``, the text is
    returned as it is, without the call (a worker always has some values registered: Airflow masks
    its secret settings when it reads them). The masker is asked each time (``mask_secret`` may
    register a value at any moment); a masker of another class always gets the call.
    """
    try:
        masker_of, masker_class, redact = _airflow_masker()
        masker = masker_of()
        if type(masker) is masker_class:
            replacer = masker.replacer
            if replacer is None or not _may_change(replacer, text):
                return text
        masked = redact(text)
        return str(masked) if masked is not None else ""
    except Exception:  # the masker is best effort here; our own redaction already ran
        return text

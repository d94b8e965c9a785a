"""Bad input named by where it is: ``tasks[2].observedAt: must be between 0 and asOf (1000), got 1500``.

The one helper of every input checker: the retry-window planner (``policy.window``), the
reconciliation models and the capacity map. It lives in ``policy/`` because the pure core may
import nothing else of the package; it is standard library only.
"""

from __future__ import annotations

import json
from datetime import timedelta

MAX_SHOWN = 80
"""A value is shown in at most this many characters (longer ones end in ``...``)."""


class FieldError(ValueError):
    """Bad input at one place; the message is ``path: problem``.

    :param problem: what is wrong there, naming the bad value.
    :param path: where: a field path (``tasks[2].observedAt``), a file or a named entry; empty
        when the problem is not at one place (the message is then the problem alone).
    """

    def __init__(self, problem: str, *, path: str = "") -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


def duration_words(value: timedelta) -> str:
    """A duration as people write it: ``10 s``, ``-5 min``, ``1 h 30 min``, ``0.25 s``, ``2 d 1 h``."""
    sign = "-" if value < timedelta(0) else ""
    total_us = abs(value) // timedelta(microseconds=1)
    days, rest = divmod(total_us, 86_400_000_000)
    hours, rest = divmod(rest, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = f"{rest / 1_000_000:.6f}".rstrip("0").rstrip(".")
    parts = [f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if n]
    if rest or not parts:
        parts.append(f"{seconds} s")
    return sign + " ".join(parts)


def show(value: object, *, as_json: bool = False) -> str:
    """``value`` on one line, shortened to :data:`MAX_SHOWN` characters: its ``repr``, or JSON; a
    duration as people write it (``10 s``, not ``datetime.timedelta(seconds=10)``)."""
    if isinstance(value, timedelta):
        return duration_words(value)
    text = repr(value)
    if as_json:
        try:
            text = json.dumps(value, sort_keys=True)
        except (TypeError, ValueError):
            pass
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def at(path: str, key: str | int) -> str:
    """The path of ``key`` inside ``path``: ``tasks`` + 2 is ``tasks[2]``, ``tasks[2]`` + ``id`` is ``tasks[2].id``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key

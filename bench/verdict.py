"""How every benchmark judges what it names: one word per target, and an exit code from them.

A figure against a budget is ``OK`` or ``MISSED``; an invariant (an exact count) is ``OK`` or
``WRONG``. ``bench/run_all.py`` reads these words back out of each benchmark's output.
"""

from __future__ import annotations

_failed: list[str] = []


def judge(target: str, ok: bool) -> str:
    """``OK`` or ``MISSED`` for a figure against its target; a miss makes ``exit_code()`` non-zero."""
    if not ok:
        _failed.append(target)
    return "OK" if ok else "MISSED"


def check(invariant: str, ok: bool) -> str:
    """``OK`` or ``WRONG`` for an invariant that must hold exactly; a wrong one fails the run."""
    if not ok:
        _failed.append(invariant)
    return "OK" if ok else "WRONG"


def exit_code() -> int:
    """0 when every target was met and every invariant held, else 1 (naming them on stderr)."""
    if _failed:
        import sys

        print(f"not met: {', '.join(_failed)}", file=sys.stderr)
    return 1 if _failed else 0

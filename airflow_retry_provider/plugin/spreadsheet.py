"""CSV cells that open safely in a spreadsheet (no formula injection)."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting with one of these is read as a formula (or hides one) by Excel, LibreOffice, Sheets."""


def safe_cell(value: object) -> str:
    """``value`` as CSV cell text: empty for None, prefixed with ``'`` when it would start a formula.

    A negative number such as ``-1`` is text like any other here: the prefix keeps it readable and
    inert, which is what an export of failure messages needs.
    """
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text

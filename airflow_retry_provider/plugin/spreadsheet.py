"""CSV cells that open safely in a spreadsheet (no formula injection)."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting with one of these is read as a formula (or hides one) by Excel, LibreOffice, Sheets."""
LEADING_BLANKS = " \t\r\n\v\f\u00a0"
"""Skipped before the first character a spreadsheet reads: ``" =1"`` or ``"\\n=1"`` is still a formula."""


def safe_cell(value: object) -> str:
    """``value`` as CSV cell text: empty for None, prefixed with ``'`` when it would start a formula,
    after any leading blanks or line breaks.

    A negative number such as ``-1`` is text like any other here: the prefix keeps it readable and
    inert, which is what an export of failure messages needs.
    """
    text = "" if value is None else str(value)
    # a spreadsheet skips leading blanks and line breaks before it reads the first character
    formula = text.startswith(FORMULA_STARTS) or text.lstrip(LEADING_BLANKS).startswith(FORMULA_STARTS)
    return "'" + text if formula else text

"""CSV cells that cannot start a formula."""

from __future__ import annotations

import pytest

from airflow_retry_provider.plugin.spreadsheet import safe_cell


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=1+1", "'=1+1"),  # a formula
        ("+cmd", "'+cmd"),  # plus starts a formula too
        ("-2+3", "'-2+3"),  # so does minus
        ("@SUM(A1)", "'@SUM(A1)"),  # and the at sign
        ("\t=1", "'\t=1"),  # a tab that hides a formula
        ("\r=1", "'\r=1"),  # a carriage return that hides one
        (" =1+1", "' =1+1"),  # a space before the formula: still read as one
        ("\n=HYPERLINK(1)", "'\n=HYPERLINK(1)"),  # a newline before it
        ("  \r\n @SUM(A1)", "'  \r\n @SUM(A1)"),  # blanks and line breaks before the at sign
        ("\u00a0-2+3", "'\u00a0-2+3"),  # a no-break space before minus
        (" a=1", " a=1"),  # blanks before ordinary text: unchanged
        ("\rrun", "'\rrun"),  # a carriage return first is guarded itself, whatever follows
        ("a=1", "a=1"),  # only the first character after blanks counts
        ("", ""),  # empty stays empty
        (None, ""),  # None is an empty cell
        (3, "3"),  # numbers become text
        (-1, "'-1"),  # a negative number is neutralised like any text
    ],
)
def test_safe_cell(value: object, expected: str) -> None:
    """A cell that would start a formula (after any leading blanks) gets a ' prefix; anything else is unchanged."""
    assert safe_cell(value) == expected

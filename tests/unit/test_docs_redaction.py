"""docs/REDACTION.md holds the tables the redaction data gives (key words, CLI flags, gitleaks' rules)."""

from __future__ import annotations

from pathlib import Path

import pytest
from redaction_tables import tables

PAGE = Path(__file__).resolve().parents[2] / "docs" / "REDACTION.md"


@pytest.mark.parametrize("title", ["Key words", "CLI flags", "gitleaks"])
def test_page_holds_the_generated_table(title: str) -> None:
    """Each table of the page is what tools/redaction_tables.py prints from the data, so it cannot drift."""
    assert "\n".join(tables()[title]) in PAGE.read_text(encoding="utf-8")

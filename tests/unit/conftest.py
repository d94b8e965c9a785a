"""The unit layer uses no database: the provider's connection points nowhere.

The retry policy then cannot record a failed try in ``retry_failed_tries`` and counts the author's
attempts by try number, as Airflow does (its documented fallback); the counting with the table is
tested in ``tests/integration/test_failed_tries.py``.
"""

from __future__ import annotations

import pytest

NOWHERE = "postgresql://unit:unit@127.0.0.1:9/no_database"


@pytest.fixture(autouse=True)
def _no_provider_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point ``retry_provider_default`` at a closed port (refused at once)."""
    monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", NOWHERE)

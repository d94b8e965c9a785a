"""A pytest plugin (entry point ``pytest11``): the fixture ``retry_testing_delays`` for your DAG tests.

Installed with the provider, pytest loads it by itself; a test that asks for the fixture runs inside
:func:`airflow_retry_provider.testing.testing_delays` (each retry's wait x 0.001, at most 1 s), with
every decision and letter as in production::

    def test_my_dag(retry_testing_delays):
        run = my_dag.test()  # a 5-minute retry waits 0.3 s

Every test of a folder, in its ``conftest.py`` (a ``pytestmark`` there applies to nothing)::

    import pytest


    @pytest.fixture(autouse=True)
    def _fast_retries(retry_testing_delays):
        pass  # every test of this folder runs inside testing_delays()

Without the entry point (``-p no:airflow_retry_provider``), ``pytest_plugins =
["airflow_retry_provider.pytest_plugin"]`` in a ``conftest.py`` loads the same fixture.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_retry_provider.testing import testing_delays

__all__ = ["retry_testing_delays"]


@pytest.fixture
def retry_testing_delays() -> Iterator[None]:
    """The test runs inside ``testing_delays()``: the retries' waits scaled down, their decisions unchanged."""
    with testing_delays():
        yield

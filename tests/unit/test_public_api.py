"""What a DAG author imports comes from ``airflow_retry_provider`` itself, and importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys

import pytest

import airflow_retry_provider


@pytest.mark.parametrize("name", airflow_retry_provider.__all__)
def test_every_public_name_imports(name):
    """Each name in ``__all__`` resolves (the lazy table names a module that defines it)."""
    assert getattr(airflow_retry_provider, name) is not None


@pytest.mark.parametrize(
    "name",
    # the names the docs use in DAG code; each was importable only from a submodule before
    ["DeliveryDeadline", "register_profile", "Profile", "Backoff", "apply_capacity", "testing_delays"],
)
def test_the_names_the_docs_use_are_public(name):
    """``from airflow_retry_provider import <name>`` works for what README and docs/ show in a DAG."""
    assert name in airflow_retry_provider.__all__


def test_an_unknown_name_is_an_attribute_error():
    """A typo is an AttributeError naming it, as for any module."""
    with pytest.raises(AttributeError, match="'Profil'"):
        airflow_retry_provider.Profil  # noqa: B018


def test_importing_the_package_imports_neither_airflow_nor_the_policy():
    """A DAG file that imports the package pays for the names it uses, not for the others."""
    code = (
        "import sys, airflow_retry_provider; "
        "print(sorted(m for m in sys.modules if m.startswith(('airflow.', 'airflow_retry_provider.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out

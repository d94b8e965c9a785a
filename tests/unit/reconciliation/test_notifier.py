"""The reconciliation notifier is imported only from the module prefixes configuration allows."""

from __future__ import annotations

import pytest

from airflow_retry_provider import settings
from airflow_retry_provider.reconciliation.report import load_notifier


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ("os:system", ()),  # nothing allowed by default: not even the standard library
        ("os:system", ("json",)),  # another module
        ("subprocess.run", ("json", "tests")),  # the dotted form is checked as well
        ("jsonschema:validate", ("json",)),  # a prefix is a whole module name, not a string prefix
    ],
)
def test_a_notifier_outside_the_allow_list_is_refused_and_not_imported(spec, allowed):
    """A module not under an allowed prefix is a clear error naming the module and the setting."""
    with pytest.raises(
        ValueError, match=r"is not under an allowed prefix \(\[retry_provider\] notifier_modules = "
    ):
        load_notifier(spec, allowed)


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ("json:dumps", ("json",)),  # the module itself
        ("json.decoder:JSONDecoder", ("json",)),  # a submodule
        ("json.decoder.JSONDecoder", ("tests", "json.")),  # the dotted form; a trailing dot is fine
    ],
)
def test_a_notifier_under_an_allowed_prefix_loads(spec, allowed):
    """A callable under an allowed prefix is returned."""
    assert callable(load_notifier(spec, allowed))


def test_the_allow_list_is_a_setting(monkeypatch):
    """[retry_provider] notifier_modules: comma-separated module names, blanks ignored, empty by default."""
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__NOTIFIER_MODULES", raising=False)
    assert settings.notifier_modules() == ()
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__NOTIFIER_MODULES", " my_co.alerts, ,ops.hooks ")
    assert settings.notifier_modules() == ("my_co.alerts", "ops.hooks")
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__NOTIFIER_MODULES", "os; rm -rf /")
    with pytest.raises(
        ValueError, match=r"\[retry_provider\] notifier_modules .* must be comma-separated module"
    ):
        settings.notifier_modules()

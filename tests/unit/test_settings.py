"""Settings: declared once, read through Airflow's conf, old AIRFLOW_RETRY_* names still honoured."""

from __future__ import annotations

import json
import re
import warnings
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import airflow
import jsonschema
import pytest

from airflow_retry_provider import get_provider_info, settings

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "CONFIGURATION.md"
TABLE = re.compile(r"<!-- settings table: start -->\n(.*?)<!-- settings table: end -->", re.DOTALL)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting comes from the developer's environment."""
    for setting in settings.SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
        if setting.legacy_env:
            monkeypatch.delenv(setting.legacy_env, raising=False)


def test_the_config_section_matches_airflows_provider_info_schema():
    """get_provider_info()['config'] validates against Airflow's provider_info.schema.json."""
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)
    options = get_provider_info()["config"]["retry_provider"]["options"]
    assert list(options) == [setting.key for setting in settings.SETTINGS]
    assert all(option["description"] and option["example"] for option in options.values())


def test_defaults_come_from_the_declaration():
    """With nothing set, each setting is its declared default, parsed."""
    assert settings.replay_max_attempts() == 3
    assert settings.replay_rate_per_minute() == 10
    assert settings.sweep_grace_seconds() == timedelta(seconds=120)
    assert settings.ledger_dedup_seconds() == timedelta(hours=1)
    assert settings.ui_timezone() == ZoneInfo("America/Sao_Paulo")
    assert settings.dependencies_file() is None
    assert settings.reconciliation_dir() is None


def test_airflow_environment_variables_set_a_value(monkeypatch):
    """AIRFLOW__RETRY_PROVIDER__<KEY> is read through Airflow's conf."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_MAX_ATTEMPTS", "7")
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__UI_TIMEZONE", "Asia/Tokyo")
    assert settings.replay_max_attempts() == 7
    assert settings.ui_timezone() == ZoneInfo("Asia/Tokyo")


def test_a_deprecated_name_still_works_with_a_warning_naming_the_new_key(monkeypatch):
    """AIRFLOW_RETRY_DLQ_REPLAY_MAX_ATTEMPTS applies, and the warning names [retry_provider] replay_max_attempts."""
    monkeypatch.setenv("AIRFLOW_RETRY_DLQ_REPLAY_MAX_ATTEMPTS", "5")
    with pytest.warns(DeprecationWarning, match=r"\[retry_provider\] replay_max_attempts"):
        assert settings.replay_max_attempts() == 5


def test_the_new_key_wins_over_a_deprecated_name(monkeypatch):
    """When both are set, AIRFLOW__RETRY_PROVIDER__* is used (and the old name still warns)."""
    monkeypatch.setenv("AIRFLOW_RETRY_LEDGER_DEDUP_SECONDS", "60")
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__LEDGER_DEDUP_SECONDS", "90")
    with pytest.warns(DeprecationWarning, match="AIRFLOW_RETRY_LEDGER_DEDUP_SECONDS"):
        assert settings.ledger_dedup_seconds() == timedelta(seconds=90)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        # not a number
        (
            "AIRFLOW__RETRY_PROVIDER__REPLAY_MAX_ATTEMPTS",
            "many",
            r"\[retry_provider\] replay_max_attempts .* 'many'",
        ),
        # below the minimum
        (
            "AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE",
            "0",
            r"replay_rate_per_minute .* integer from 1 to 60000, got '0'",
        ),
        # a fraction where whole seconds are expected
        ("AIRFLOW__RETRY_PROVIDER__SWEEP_GRACE_SECONDS", "1.5", r"sweep_grace_seconds .* got '1.5'"),
        # negative, and then NaN and infinity, which float() accepts
        ("AIRFLOW__RETRY_PROVIDER__LEDGER_DEDUP_SECONDS", "-1", r"ledger_dedup_seconds .* >= 0, got '-1'"),
        ("AIRFLOW__RETRY_PROVIDER__LEDGER_DEDUP_SECONDS", "nan", r"ledger_dedup_seconds .* got 'nan'"),
        ("AIRFLOW__RETRY_PROVIDER__LEDGER_DEDUP_SECONDS", "inf", r"ledger_dedup_seconds .* got 'inf'"),
        # an unknown zone
        (
            "AIRFLOW__RETRY_PROVIDER__UI_TIMEZONE",
            "Mars/Olympus",
            r"ui_timezone .* IANA time zone.* 'Mars/Olympus'",
        ),
        # a bad value under the deprecated name is reported under that name
        (
            "AIRFLOW_RETRY_DLQ_SWEEP_GRACE_SECONDS",
            "soon",
            r"AIRFLOW_RETRY_DLQ_SWEEP_GRACE_SECONDS .* got 'soon'",
        ),
    ],
)
def test_a_bad_value_is_an_error_naming_the_key_and_the_value(monkeypatch, variable, value, message):
    """A value that does not parse raises ValueError naming where it came from and what it was."""
    monkeypatch.setenv(variable, value)
    setting = next(s for s in settings.SETTINGS if variable in (s.env, s.legacy_env))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the deprecated-name row warns; tested above
        with pytest.raises(ValueError, match=message):
            setting()


def test_the_documented_table_is_generated_from_the_declaration():
    """docs/CONFIGURATION.md's settings table is exactly settings.markdown_table()."""
    match = TABLE.search(CONFIGURATION.read_text())
    assert match, "docs/CONFIGURATION.md lacks the <!-- settings table: start/end --> markers"
    assert match[1] == settings.markdown_table(), (
        "regenerate it: python -c 'from airflow_retry_provider import settings; print(settings.markdown_table())'"
    )


def test_every_setting_is_the_module_attribute_of_its_name(monkeypatch):
    """``settings.<key>`` is the declared setting itself, so ``settings.<key>()`` reads it and a misspelt name fails mypy."""
    assert len({s.key for s in settings.SETTINGS}) == len(settings.SETTINGS)
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_MAX_ATTEMPTS", "7")
    for setting in settings.SETTINGS:
        assert getattr(settings, setting.key) is setting
        assert getattr(settings, setting.key)() == setting.read()
    assert settings.replay_max_attempts() == 7

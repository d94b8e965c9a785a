"""Alert settings: notifiers by dotted path, the repeat window, and errors that name the field."""

from __future__ import annotations

import json

import pytest

from airflow_retry_provider.alerts.notifiers import load_settings, parse_notifiers

SMTP = "airflow.providers.smtp.notifications.smtp.SmtpNotifier"


def test_an_smtp_notifier_gets_subject_and_html_from_the_alert():
    """The known notifiers' message fields default to templates over the alert; the entry's kwargs win."""
    [spec] = parse_notifiers(
        json.dumps(
            [{"class": SMTP, "kwargs": {"to": "a@example.test", "subject": "[prod] {{ alert.title }}"}}]
        )
    )
    notifier = spec.build()
    assert (spec.name, notifier.subject, notifier.html_content) == (
        "SmtpNotifier-0",
        "[prod] {{ alert.title }}",
        "{{ alert.html }}",
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{", "[retry_provider] alert_notifiers: not valid JSON"),  # a typo in the JSON
        ('{"class": "x"}', "expected a JSON list"),  # one object instead of a list
        (
            '[{"klass": "x"}]',
            "[retry_provider] alert_notifiers[0]: unknown field(s) ['klass']",
        ),  # misspelt key
        ('[{"class": 3}]', "[retry_provider] alert_notifiers[0].class: expected a dotted path, got 3"),
        (
            '[{"class": "json.JSONDecoder"}]',
            "is not a subclass of airflow.sdk.BaseNotifier",
        ),  # not a notifier
        (
            f'[{{"class": "{SMTP}", "kwargs": []}}]',
            "[retry_provider] alert_notifiers[0].kwargs: expected an object",
        ),
        (
            f'[{{"class": "{SMTP}", "name": "m"}}, {{"class": "{SMTP}", "name": "m"}}]',
            "[1].name: 'm' is used twice",
        ),
    ],
)
def test_bad_notifier_configuration_names_the_field(raw, message):
    """Each mistake is one clear error naming the entry and field."""
    with pytest.raises(ValueError) as info:
        parse_notifiers(raw)
    assert message in str(info.value)


@pytest.mark.parametrize(("raw", "minutes"), [(None, 60), ("15", 15)])
def test_repeat_minutes_default_to_an_hour(raw, minutes, monkeypatch):
    """Unset means 60; a number is taken as given."""
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__ALERT_REPEAT_MINUTES", raising=False)
    if raw is not None:
        monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_REPEAT_MINUTES", raw)
    assert load_settings().repeat_minutes == minutes


@pytest.mark.parametrize("raw", ["0", "-5", "1.5", "soon"])
def test_bad_repeat_minutes_are_refused(raw, monkeypatch):
    """Zero, negative and non-integer windows are errors naming the key and value."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_REPEAT_MINUTES", raw)
    with pytest.raises(ValueError) as info:
        load_settings()
    assert (
        f"[retry_provider] alert_repeat_minutes (AIRFLOW__RETRY_PROVIDER__ALERT_REPEAT_MINUTES) must be an integer from 1 to 525600, got {raw!r}"
        in str(info.value)
    )


def test_without_notifiers_alerts_are_off(monkeypatch):
    """No alert_notifiers: nothing is queued; the base URL loses its trailing slash."""
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", raising=False)
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_BASE_URL", "http://x/")
    assert not load_settings().enabled
    assert load_settings().base_url == "http://x"

"""The deployment's notifiers: Airflow ``BaseNotifier`` classes named in the configuration.

``[retry_provider] alert_notifiers`` (``AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS``) is a JSON list; each entry names a notifier class by dotted
path and the keyword arguments to build it with, e.g.::

    [{"name": "oncall-mail",
      "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier",
      "kwargs": {"to": "oncall@example.com", "smtp_conn_id": "smtp_alerts"}}]

Credentials stay in Airflow connections (``smtp_conn_id``, ``slack_conn_id``, ...), never here.
A notifier is built afresh for every message (rendering its templates changes it) and called
with a context holding ``alert`` (title, text, html, links): the known notifiers get their message
fields filled in from it (``subject``/``html_content`` for mail, ``text`` for Slack) unless the
entry sets them itself, as Jinja templates over ``alert``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NOTIFIERS_KEY = "[retry_provider] alert_notifiers"
DEFAULT_REPEAT_MINUTES = 60

#: Message fields of the notifiers Airflow users run, as templates over the ``alert`` in the context.
MESSAGE_FIELDS: dict[str, dict[str, str]] = {
    "SmtpNotifier": {"subject": "{{ alert.title }}", "html_content": "{{ alert.html }}"},
    "SlackNotifier": {"text": "{{ alert.text }}"},
    "SlackWebhookNotifier": {"text": "{{ alert.text }}"},
}


@dataclass(frozen=True)
class NotifierSpec:
    """One configured notifier: its name (the channel recorded on each alert), class and arguments."""

    name: str
    cls: type
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        """A new notifier instance with the message fields filled in."""
        kwargs = {**MESSAGE_FIELDS.get(self.cls.__name__, {}), **self.kwargs}
        return self.cls(**kwargs)


@dataclass(frozen=True)
class AlertSettings:
    """What alerting needs: the notifiers (none: alerts are off), the repeat window, the UI's address."""

    notifiers: tuple[NotifierSpec, ...] = ()
    repeat_minutes: int = DEFAULT_REPEAT_MINUTES
    base_url: str = "http://localhost:8080"

    @property
    def enabled(self) -> bool:
        return bool(self.notifiers)

    def channel(self, name: str) -> NotifierSpec | None:
        return next((spec for spec in self.notifiers if spec.name == name), None)


def load_class(path: str, where: str) -> type:
    """The ``BaseNotifier`` subclass at dotted ``path``; ``where`` names the setting in errors."""
    from airflow.sdk import BaseNotifier

    module_name, _, class_name = path.rpartition(".")
    if not module_name:
        raise ValueError(f"{where}: expected a dotted path like package.module.Class, got {path!r}")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{where}: cannot import {path!r} ({type(exc).__name__})") from None
    if not (isinstance(cls, type) and issubclass(cls, BaseNotifier)):
        raise ValueError(f"{where}: {path!r} is not a subclass of airflow.sdk.BaseNotifier")
    return cls


def parse_notifiers(raw: str | None) -> tuple[NotifierSpec, ...]:
    """The notifiers of ``[retry_provider] alert_notifiers``; a bad entry is an error naming its field."""
    if raw is None or not raw.strip():
        return ()
    try:
        entries = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{NOTIFIERS_KEY}: not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(entries, list):
        raise ValueError(f"{NOTIFIERS_KEY}: expected a JSON list of notifiers, got {type(entries).__name__}")
    specs: list[NotifierSpec] = []
    for index, entry in enumerate(entries):
        where = f"{NOTIFIERS_KEY}[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object with 'class' and 'kwargs'")
        unknown = sorted(set(entry) - {"name", "class", "kwargs"})
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {unknown}; expected name, class, kwargs")
        path = entry.get("class")
        if not isinstance(path, str):
            raise ValueError(f"{where}.class: expected a dotted path, got {path!r}")
        kwargs = entry.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise ValueError(f"{where}.kwargs: expected an object, got {type(kwargs).__name__}")
        name = entry.get("name", f"{path.rpartition('.')[2]}-{index}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{where}.name: expected a non-empty string, got {name!r}")
        if any(spec.name == name for spec in specs):
            raise ValueError(f"{where}.name: {name!r} is used twice")
        specs.append(NotifierSpec(name, load_class(path, f"{where}.class"), kwargs))
    return tuple(specs)


def load_settings() -> AlertSettings:
    """Alert settings from ``[retry_provider]``; the UI address defaults to Airflow's ``[api] base_url``."""
    from airflow_retry_provider import settings

    return AlertSettings(
        notifiers=parse_notifiers(settings.alert_notifiers()),
        repeat_minutes=settings.alert_repeat_minutes(),
        base_url=ui_base_url(),
    )


def ui_base_url() -> str:
    """The Airflow UI address links point at: ``[retry_provider] alert_base_url``, else ``[api] base_url``."""
    from airflow_retry_provider import settings

    return (settings.alert_base_url() or _airflow_base_url()).rstrip("/")


def _airflow_base_url() -> str:
    try:
        from airflow.sdk import conf

        return str(conf.get("api", "base_url", fallback="") or "http://localhost:8080")
    except Exception:  # no Airflow configuration here (a bare CLI): links still point somewhere sane
        return "http://localhost:8080"


def send(spec: NotifierSpec, alert: Mapping[str, Any]) -> None:
    """Send one alert through one notifier (raises what the notifier raises)."""
    notifier = spec.build()
    notifier({"alert": dict(alert)})

"""Alerts have one way in: every kind of event announced has its entry in ``alerts.MESSAGES``."""

from __future__ import annotations

import inspect

from airflow_retry_provider import alerts, announce
from airflow_retry_provider.breaker import announce as breaker_announce
from airflow_retry_provider.dlq import announce as dlq_announce


def _event_kinds() -> set[type[announce.Event]]:
    """Every concrete event class the dead-letter queue and the breakers announce (a ``name`` of its own)."""
    return {
        cls
        for module in (dlq_announce, breaker_announce)
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, announce.Event) and "name" in vars(cls)
    }


def test_every_announced_event_kind_has_its_message_builder() -> None:
    """An event kind added without its entry in MESSAGES (the docs' recipe) fails here."""
    assert _event_kinds() - set(alerts.MESSAGES) == set()


def test_an_event_the_alerts_do_not_know_is_ignored() -> None:
    """``listen`` looks the event's type up in the table and does nothing for a kind it lacks."""
    assert alerts.listen(announce.Event()) is None

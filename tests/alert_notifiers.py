"""Notifiers the alert tests name by dotted path: real ``BaseNotifier`` subclasses, one that raises."""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.sdk import BaseNotifier

SECRET = "hunter2-Secr3t"


class RecordingNotifier(BaseNotifier):
    """Keeps what it was asked to send (rendered ``text``) in ``sent``."""

    template_fields = ("text",)
    sent: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, text: str = "{{ alert.text }}") -> None:
        super().__init__()
        self.text = text

    def notify(self, context: Any) -> None:
        RecordingNotifier.sent.append({"title": context["alert"]["title"], "text": self.text})


class FailingNotifier(BaseNotifier):
    """A notifier whose server refuses, with a credential in its error message."""

    def notify(self, context: Any) -> None:
        raise ConnectionError(f"smtp://alerts:{SECRET}@mail.example.test:25 refused the connection")

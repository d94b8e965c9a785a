"""A real SMTP server on loopback (aiosmtpd) that keeps every message it receives."""

from __future__ import annotations

import email
import email.policy
import json
import threading
import time
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from devstack.postgres import free_port


class _Keep:
    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.sink.lock:
            self.sink.messages.append(message)
            self.sink.received.append(time.time())
        return "250 OK"


class SmtpSink:
    """Start with ``start()``; ``messages`` are parsed e-mails, ``received`` when each arrived (epoch
    seconds); ``connection_json()`` is for Airflow."""

    def __init__(self) -> None:
        self.port = free_port()
        self.messages: list[EmailMessage] = []
        self.received: list[float] = []
        self.lock = threading.Lock()
        self.controller = Controller(_Keep(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpSink:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def connection_json(self) -> str:
        """An Airflow SMTP connection (JSON form) to this server: no TLS, no retries, short timeout."""
        extra = {
            "disable_tls": True,
            "disable_ssl": True,
            "retry_limit": 0,
            "timeout": 10,
            "from_email": "airflow@example.test",
        }
        return json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": self.port, "extra": extra})

    def subjects(self) -> list[str]:
        with self.lock:
            return [str(m["Subject"]) for m in self.messages]

    def received_at(self, index: int) -> float:
        """When message ``index`` arrived (epoch seconds)."""
        with self.lock:
            return self.received[index]

    def body(self, index: int) -> str:
        with self.lock:
            part = self.messages[index].get_body(("html", "plain"))
            return part.get_content() if part is not None else ""

    def wait_for(self, count: int, timeout: float = 60) -> list[str]:
        """The subjects once at least ``count`` messages arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.subjects()) >= count:
                return self.subjects()
            time.sleep(0.2)
        raise TimeoutError(f"expected {count} e-mails, got {self.subjects()}")

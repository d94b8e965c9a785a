"""A local stand-in for an Airflow that is up and acts on nothing: it signs in, then answers 409.

Used where a command must get past its sign-in and every clear must fail without reaching a real Airflow.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _RefusingAirflow(BaseHTTPRequestHandler):
    """Signs in, then answers every other call with 409."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/auth/token":
            self._answer(201, {"access_token": "t0ken"})
        else:
            self._answer(409, {"detail": "refused"})

    def do_GET(self) -> None:  # noqa: N802
        self._answer(409, {"detail": "refused"})

    def _answer(self, status: int, body: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def refusing_airflow() -> Iterator[str]:
    """The base URL of a local server that signs in and then refuses every call with HTTP 409."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingAirflow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

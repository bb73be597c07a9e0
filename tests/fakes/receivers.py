"""Local receivers for notification tests: a threaded HTTP server on 127.0.0.1 that records
every request, and an SMTP server (aiosmtpd) that records every message.

The HTTP receiver answers from a script of statuses (default 200); `hang()` makes it hold
requests unanswered until `stop()`, to exercise client timeouts without sleeping.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        import json

        return json.loads(self.body)


class HttpReceiver:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._statuses: dict[str | None, list[int]] = {}
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._hang = False
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def url(self, path: str) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{path}"

    def respond(self, *statuses: int, path: str | None = None) -> None:
        """Answer the next requests (to `path`, or to any path) with these statuses, then 200."""
        with self._lock:
            self._statuses.setdefault(path, []).extend(statuses)

    def hang(self) -> None:
        self._hang = True

    def _next_status(self, path: str) -> int:
        with self._lock:
            for key in (path, None):
                if self._statuses.get(key):
                    return self._statuses[key].pop(0)
            return 200

    def start(self) -> HttpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.requests.append(Request("POST", self.path, dict(self.headers.items()), body))
                if receiver._hang:
                    receiver._release.wait()
                    return
                status = receiver._next_status(self.path)
                text = b"ok" if status < 400 else b"invalid_payload"
                self.send_response(status)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> HttpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class _Mailbox:
    messages: list[Message] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    reject_recipients: bool = False

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: list) -> str:  # noqa: N802
        if self.reject_recipients:
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's naming
        self.messages.append(message_from_bytes(envelope.content))
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 Message accepted for delivery"


class SmtpReceiver:
    """aiosmtpd on a free port of 127.0.0.1."""

    def __init__(self, *, reject_recipients: bool = False) -> None:
        self.mailbox = _Mailbox(reject_recipients=reject_recipients)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self) -> list[Message]:
        return self.mailbox.messages

    def __enter__(self) -> SmtpReceiver:
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._controller.stop()

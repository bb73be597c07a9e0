"""Chat APIs the portal edits messages through, as local HTTP servers on 127.0.0.1.

`SlackWebAPI` answers Slack Web API methods as Slack does (https://api.slack.com/methods):
`chat.postMessage`, `chat.update`, `conversations.replies`, with JSON or form bodies or a GET
query, a bearer token checked, `{"ok": false, "error": "..."}` with HTTP 200 for refusals, and
HTTP 429 with `Retry-After` and `{"ok": false, "error": "ratelimited"}` when a rate limit is
scripted. A message can be deleted (as a person would) to exercise `message_not_found`.

`DiscordWebhook` answers one webhook as Discord does
(https://discord.com/developers/docs/resources/webhook): POST (with `?wait=true`, the message
object; without, 204), PATCH `/messages/<id>` (the edited message, or 404 with
`{"message": "Unknown Message", "code": 10008}`), and scripted 429s with Retry-After.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

BOT_USER = "U07PORTAL1"
BOT_ID = "B07PORTAL1"
TEAM = "T024BE7LD"


@dataclass
class SlackMessage:
    ts: str
    text: str
    blocks: list[Any]
    thread_ts: str | None = None
    edits: int = 0
    deleted: bool = False

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "message", "subtype": None, "text": self.text, "user": BOT_USER, "bot_id": BOT_ID,
            "team": TEAM, "ts": self.ts, "blocks": self.blocks,
        }
        if self.thread_ts:
            data["thread_ts"] = self.thread_ts
            data["parent_user_id"] = BOT_USER
        if self.edits:
            data["edited"] = {"user": BOT_USER, "ts": self.ts}
        return {k: v for k, v in data.items() if v is not None}


@dataclass
class _Server:
    server: ThreadingHTTPServer | None = None
    thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)
        self.thread.start()

    def base(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}" if isinstance(host, str) else f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(self, status: int, payload: Any | None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode() if payload is not None else b""
        self.send_response(status)
        if payload is not None:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class SlackWebAPI:
    def __init__(self, token: str, conversations: tuple[str, ...] = ("C0PORTAL01",)) -> None:
        self.token = token
        # channel -> its messages, oldest first
        self.conversations: dict[str, list[SlackMessage]] = {channel: [] for channel in conversations}
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (method, arguments), every call
        self._limits: dict[str, list[int]] = {}
        self._clock = 1767225600  # 2026-01-01, ts seconds; a counter keeps each ts unique
        self._seq = 0
        self._server = _Server()

    @property
    def base_url(self) -> str:
        """What slack_sdk's WebClient takes as base_url (ends with /)."""
        return self._server.base() + "/api/"

    def rate_limit(self, method: str, retry_after: int) -> None:
        """Answer the next call of `method` with HTTP 429 and this Retry-After."""
        with self._server.lock:
            self._limits.setdefault(method, []).append(retry_after)

    def delete(self, channel: str, ts: str) -> None:
        """A person deletes the message: Slack no longer updates it."""
        self._find(channel, ts).deleted = True  # type: ignore[union-attr]

    def top_level(self, channel: str) -> list[SlackMessage]:
        return [m for m in self.conversations[channel] if m.thread_ts is None and not m.deleted]

    def thread(self, channel: str, ts: str) -> list[SlackMessage]:
        return [m for m in self.conversations[channel] if m.thread_ts == ts]

    def _find(self, channel: str, ts: str) -> SlackMessage | None:
        return next((m for m in self.conversations.get(channel, []) if m.ts == ts), None)

    def _next_ts(self) -> str:
        self._seq += 1
        return f"{self._clock + self._seq}.{self._seq:06d}"

    def call(self, method: str, args: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any], dict]:
        with self._server.lock:
            self.calls.append((method, args))
            limits = self._limits.get(method)
            if limits:
                wait = limits.pop(0)
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)}
            if authorization != f"Bearer {self.token}":
                return 200, {"ok": False, "error": "invalid_auth"}, {}
            channel = str(args.get("channel") or "")
            if channel not in self.conversations:
                return 200, {"ok": False, "error": "channel_not_found"}, {}
            return 200, self._method(method, channel, args), {}

    def _method(self, method: str, channel: str, args: dict[str, Any]) -> dict[str, Any]:
        blocks = args.get("blocks") or []
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if method == "chat.postMessage":
            if not args.get("text") and not blocks:
                return {"ok": False, "error": "no_text"}
            thread_ts = args.get("thread_ts")
            if thread_ts and self._find(channel, thread_ts) is None:
                return {"ok": False, "error": "thread_not_found"}
            message = SlackMessage(self._next_ts(), str(args.get("text") or ""), blocks, thread_ts)
            self.conversations[channel].append(message)
            return {"ok": True, "channel": channel, "ts": message.ts, "message": message.as_json()}
        if method == "chat.update":
            edited = self._find(channel, str(args.get("ts") or ""))
            if edited is None or edited.deleted:
                return {"ok": False, "error": "message_not_found"}
            edited.text, edited.blocks, edited.edits = str(args.get("text") or ""), blocks, edited.edits + 1
            return {"ok": True, "channel": channel, "ts": edited.ts, "text": edited.text,
                    "message": edited.as_json()}
        if method == "conversations.replies":
            parent = self._find(channel, str(args.get("ts") or ""))
            if parent is None or parent.deleted:
                return {"ok": False, "error": "thread_not_found"}
            messages = [parent, *self.thread(channel, parent.ts)]
            head = parent.as_json() | {"reply_count": len(messages) - 1, "thread_ts": parent.ts}
            return {"ok": True, "messages": [head, *(m.as_json() for m in messages[1:])], "has_more": False,
                    "response_metadata": {"next_cursor": ""}}
        return {"ok": False, "error": "unknown_method"}

    def start(self) -> SlackWebAPI:
        api = self

        class Handler(_Handler):
            def handle_call(self, args: dict[str, Any]) -> None:
                path = urlsplit(self.path)
                method = path.path.removeprefix("/api/")
                status, payload, headers = api.call(method, args, self.headers.get("Authorization", ""))
                self.answer(status, payload, headers)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self.handle_call(dict(parse_qsl(urlsplit(self.path).query)))

            def do_POST(self) -> None:  # noqa: N802
                raw = self.body()
                kind = self.headers.get("Content-Type", "")
                args = json.loads(raw or b"{}") if kind.startswith("application/json") else dict(
                    parse_qsl(raw.decode()))
                self.handle_call(args)

        self._server.start(Handler, "slack-web-api")
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> SlackWebAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class DiscordMessage:
    id: str
    embeds: list[Any]
    edits: int = 0
    deleted: bool = False


class DiscordWebhook:
    WEBHOOK_ID = "1234567890123456789"
    CHANNEL_ID = "987654321098765432"

    def __init__(self, token: str = "DiscordWebhookT0ken") -> None:
        self.token = token
        self.messages: list[DiscordMessage] = []
        self.requests: list[tuple[str, str]] = []  # (method, path with query)
        self._limits: list[float] = []
        self._seq = 0
        self._server = _Server()

    @property
    def url(self) -> str:
        return f"{self._server.base()}/api/webhooks/{self.WEBHOOK_ID}/{self.token}"

    def rate_limit(self, retry_after: float) -> None:
        with self._server.lock:
            self._limits.append(retry_after)

    def delete(self, message_id: str) -> None:
        next(m for m in self.messages if m.id == message_id).deleted = True

    def live(self) -> list[DiscordMessage]:
        return [m for m in self.messages if not m.deleted]

    def _message_json(self, message: DiscordMessage) -> dict[str, Any]:
        return {"id": message.id, "type": 0, "content": "", "channel_id": self.CHANNEL_ID,
                "author": {"id": self.WEBHOOK_ID, "username": "GitOps portal", "bot": True},
                "embeds": message.embeds, "webhook_id": self.WEBHOOK_ID,
                "edited_timestamp": "2026-01-01T00:00:00+00:00" if message.edits else None}

    def handle(self, method: str, raw_path: str, body: bytes) -> tuple[int, Any, dict[str, str]]:
        with self._server.lock:
            self.requests.append((method, raw_path))
            if self._limits:
                wait = self._limits.pop(0)
                return 429, {"message": "You are being rate limited.", "retry_after": wait, "global": False}, {
                    "Retry-After": f"{wait:g}", "X-RateLimit-Scope": "user"}
            path = urlsplit(raw_path)
            prefix = f"/api/webhooks/{self.WEBHOOK_ID}/{self.token}"
            if not path.path.startswith(prefix):
                return 401, {"message": "Invalid Webhook Token", "code": 50027}, {}
            rest = path.path.removeprefix(prefix)
            payload = json.loads(body or b"{}")
            if method == "POST" and rest == "":
                self._seq += 1
                message = DiscordMessage(f"11{self._seq:017d}", payload.get("embeds") or [])
                self.messages.append(message)
                wait = dict(parse_qsl(path.query)).get("wait") == "true"
                return (200, self._message_json(message), {}) if wait else (204, None, {})
            if method == "PATCH" and rest.startswith("/messages/"):
                found = next((m for m in self.messages if m.id == rest.removeprefix("/messages/")), None)
                if found is None or found.deleted:
                    return 404, {"message": "Unknown Message", "code": 10008}, {}
                found.embeds, found.edits = payload.get("embeds", found.embeds), found.edits + 1
                return 200, self._message_json(found), {}
            return 405, {"message": "405: Method Not Allowed", "code": 0}, {}

    def start(self) -> DiscordWebhook:
        hook = self

        class Handler(_Handler):
            def dispatch(self, method: str) -> None:
                status, payload, headers = hook.handle(method, self.path, self.body())
                self.answer(status, payload, headers)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self.dispatch("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self.dispatch("PATCH")

        self._server.start(Handler, "discord-webhook")
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> DiscordWebhook:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

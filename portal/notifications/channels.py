"""Channels: one small class per integration, each with `notify(event)`.

`notify` returns on success and raises `TransportError` otherwise; `permanent=True` means
trying again cannot help (4xx other than 429, a bad address), so the sender stops. HTTP
goes through `http.client` directly: it logs nothing, so a webhook URL (a credential)
cannot leak through a library's debug log, and our error messages never contain it.

The Slack app is the exception: it speaks Slack's Web API through the official slack_sdk
(which redacts the Authorization header in its debug log); its bot token is read from the
variable the channel names, never stored. Channels that edit what they posted
(`EditingTransport`: the Slack app, Discord webhooks) also `post_message`, `update_message`
and `reply`, which portal.notifications.chat_messages drives per episode.
"""

from __future__ import annotations

import abc
import base64
import hashlib
import hmac
import http.client
import json
import logging
import smtplib
import ssl
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.template.loader import render_to_string
from django.utils import timezone
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from portal.kernel.redaction import redact
from portal.kernel.timestamps import utc_stamp
from portal.notifications.events import Event, EventKind, Step
from portal.notifications.models import Channel

USER_AGENT = "gitops-portal-notifications/1"
RESPONSE_SNIPPET = 200


class TransportError(Exception):
    """`retry_after`: seconds the receiver asked us to wait (HTTP 429 Retry-After), when it said."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.retry_after = retry_after


class MessageRefused(TransportError):
    """The chat will not update the message it was asked to (deleted, too old, not ours)."""


class Transport(abc.ABC):
    def __init__(self, channel: Channel, clock: Callable[[], datetime] = timezone.now) -> None:
        self.channel = channel
        self.clock = clock

    @abc.abstractmethod
    def notify(self, event: Event) -> None:
        """Deliver one event; raise TransportError (permanent or not) when it cannot be."""

    def redact(self, text: str) -> str:
        """A receiver's error text without the channel's secrets or any echoed credential."""
        return redact(text, self.channel.secrets())


class EditingTransport(Transport):
    """A chat that edits what it posted: an episode is one message, updated as it moves on
    (portal.notifications.chat_messages decides when to post, update or fall back)."""

    def notify(self, event: Event) -> None:
        self.post_message(event, ())

    @abc.abstractmethod
    def post_message(self, event: Event, steps: Sequence[Step], note: str = "") -> str:
        """Post a new message for the episode; the chat's id of it."""

    @abc.abstractmethod
    def update_message(self, message_id: str, event: Event, steps: Sequence[Step]) -> None:
        """Replace the message's content; MessageRefused when the chat will not."""

    def reply(self, message_id: str, event: Event, step: Step) -> None:
        """Follow the message up with one step, where the chat has threads (else nothing)."""


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header in seconds (RFC 9110 also allows a date, which chats do not send)."""
    try:
        seconds = float(value) if value else None
    except ValueError:
        return None
    return max(0.0, seconds) if seconds is not None else None


class HttpTransport(Transport):
    def timeout(self) -> float:
        return settings.PORTAL_NOTIFY_TIMEOUT

    def post_json(self, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload, separators=(",", ":")).encode()
        self.post(body, {"Content-Type": "application/json", **(headers or {})})

    def post(self, body: bytes, headers: dict[str, str]) -> None:
        self.request("POST", body, headers)

    def request(self, method: str, body: bytes, headers: dict[str, str], *, suffix: str = "",
                query: str = "") -> bytes:
        """Send to the channel's URL (with `suffix` added to its path and `query` to its query);
        the answer's body when it is a 2xx."""
        url = self.channel.url
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise TransportError("the channel's URL does not parse", permanent=True)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TransportError("the channel's URL is not an http(s) URL", permanent=True)
        timeout = self.timeout()
        if parts.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname, port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname, port, timeout=timeout)
        full_query = "&".join(q for q in (parts.query, query) if q)
        target = ((parts.path or "/") + suffix) + (f"?{full_query}" if full_query else "")
        try:
            conn.request(method, target, body=body, headers={"User-Agent": USER_AGENT, **headers})
            response = conn.getresponse()
            content = response.read(65536)
            status = response.status
            retry_after = retry_after_seconds(response.getheader("Retry-After"))
        except TimeoutError:
            raise TransportError(f"no answer within {timeout:g} s")
        except ssl.SSLError as exc:
            raise TransportError(f"TLS error: {type(exc).__name__}")
        except OSError as exc:
            # strerror ("Connection refused") names no host, path or query.
            raise TransportError(f"connection failed: {exc.strerror or type(exc).__name__}")
        except http.client.HTTPException as exc:
            raise TransportError(f"bad HTTP response: {type(exc).__name__}")
        finally:
            conn.close()
        if 200 <= status < 300:
            return content
        raise self.error_for(status, content, retry_after)

    def error_for(self, status: int, content: bytes, retry_after: float | None = None) -> TransportError:
        # 5xx and 429 pass; any other answer (4xx, a redirect) will be the same next time.
        permanent = status < 500 and status != 429
        detail = self.redact(content.decode("utf-8", "replace").strip())[:RESPONSE_SNIPPET]
        message = f"HTTP {status}" + (f": {detail}" if detail else "")
        return TransportError(message, permanent=permanent, retry_after=retry_after if status == 429 else None)


def _mrkdwn(text: str) -> str:
    # Slack's only escapes: untrusted names cannot become links or mentions.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def step_lines(steps: Sequence[Step]) -> list[str]:
    """One line per step, oldest first, with its time: the message's short history."""
    return [f"{utc_stamp(step.at)} · {step.text}" for step in steps]


def slack_message(event: Event, steps: Sequence[Step] = (), note: str = "") -> dict[str, Any]:
    """Block Kit: header, the likeliest cause, where the episode is now, facts, URL buttons.

    The same layout for the incoming webhook and the app; the app's later versions add the steps."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": event.title[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _mrkdwn(event.summary)[:3000]}},
    ]
    if note:
        blocks.insert(1, {"type": "context", "elements": [{"type": "mrkdwn", "text": _mrkdwn(note)[:3000]}]})
    if steps:
        now_text = f"*Now:* {_mrkdwn(steps[-1].text)}"[:3000]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": now_text}})
        history = "\n".join(_mrkdwn(line) for line in step_lines(steps))
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": history[-3000:]}]})
    if event.facts:
        blocks.append({
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": f"*{_mrkdwn(label)}*\n{_mrkdwn(value)}"[:2000]}
                for label, value in event.facts[:10]
            ],
        })
    if len(event.causes) > 1:
        also = "; ".join(_mrkdwn(c) for c in event.causes[1:3])
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"Also: {also}"[:3000]}]})
    if event.links:
        buttons = []
        for index, link in enumerate(event.links[:5]):
            button = {
                "type": "button",
                "text": {"type": "plain_text", "text": link.label[:75]},
                "url": link.url,
                "action_id": f"link-{index}",
            }
            if index == 0:
                button["style"] = "primary"
            buttons.append(button)
        blocks.append({"type": "actions", "elements": buttons})
    now = f" — now: {steps[-1].text}" if steps else ""
    return {"text": f"{event.title}: {event.summary}{now}", "blocks": blocks}


class Slack(HttpTransport):
    """Incoming webhook, Block Kit (`slack_message`): one message per event, never edited."""

    def payload(self, event: Event) -> dict[str, Any]:
        return slack_message(event)

    def notify(self, event: Event) -> None:
        self.post_json(self.payload(event))


# Slack's answers that mean "this message will not be updated": post a new one instead.
SLACK_REFUSED_UPDATES = frozenset({
    "message_not_found", "cant_update_message", "edit_window_closed", "is_inactive", "msg_too_long",
})
# Slack's errors that the same call may get past later; every other one is permanent.
SLACK_TRANSIENT = frozenset({
    "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout", "team_added_to_org",
})
# slack_sdk logs requests at DEBUG (the token redacted); our log lines name channels by id only.
_SLACK_SDK_LOG = logging.getLogger("portal.notifications.slack_sdk")


class SlackApp(EditingTransport):
    """A Slack app's bot in one conversation, through the official slack_sdk WebClient:
    `chat.postMessage` for an episode's first message, `chat.update` of that message (its `ts`)
    as the episode moves on, and a reply in its thread (`thread_ts`) for each step.

    slack_sdk's own retry handlers are off: a rate limit (HTTP 429, `ratelimited`) is a
    TransportError carrying Retry-After, and the sender schedules the next attempt then,
    instead of a worker sleeping."""

    def client(self) -> WebClient:
        token = self.channel.bot_token()
        if not token:
            raise TransportError(f"no bot token: the variable {self.channel.token_env or '(none named)'} is not set",
                                 permanent=True)
        if not self.channel.chat_channel:
            raise TransportError("the channel names no Slack conversation", permanent=True)
        timeout = max(1, int(settings.PORTAL_NOTIFY_TIMEOUT))
        return WebClient(token=token, base_url=settings.PORTAL_SLACK_API_URL, timeout=timeout,
                         retry_handlers=[], logger=_SLACK_SDK_LOG)

    def call(self, method: str, **arguments: Any) -> dict[str, Any]:
        client = self.client()
        try:
            response = client.api_call(method, json={"channel": self.channel.chat_channel, **arguments})
        except SlackApiError as exc:
            raise self.slack_error(exc.response.status_code, exc.response.data, exc.response.headers)
        except TimeoutError:
            raise TransportError(f"no answer within {settings.PORTAL_NOTIFY_TIMEOUT:g} s")
        except OSError as exc:  # URLError included: its reason names no token
            raise TransportError(f"connection failed: {getattr(exc, 'reason', None) or type(exc).__name__}")
        except SlackClientError as exc:
            raise TransportError(f"Slack answered unexpectedly: {type(exc).__name__}")
        return dict(response.data) if isinstance(response.data, dict) else {}

    def slack_error(self, status: int, data: Any, headers: Any) -> TransportError:
        code = str(data.get("error") or "") if isinstance(data, dict) else ""
        code = self.redact(code)[:RESPONSE_SNIPPET] or f"HTTP {status}"
        if status == 429 or code == "ratelimited":
            wait = retry_after_seconds((headers or {}).get("Retry-After") or (headers or {}).get("retry-after"))
            return TransportError(f"Slack: ratelimited (retry after {wait or 0:g} s)", retry_after=wait)
        if code in SLACK_REFUSED_UPDATES:
            return MessageRefused(f"Slack: {code}", permanent=True)
        return TransportError(f"Slack: {code}", permanent=code not in SLACK_TRANSIENT and status < 500)

    def post_message(self, event: Event, steps: Sequence[Step], note: str = "") -> str:
        answer = self.call("chat.postMessage", unfurl_links=False, **slack_message(event, steps, note))
        return str(answer.get("ts") or "")

    def update_message(self, message_id: str, event: Event, steps: Sequence[Step]) -> None:
        self.call("chat.update", ts=message_id, **slack_message(event, steps))

    def reply(self, message_id: str, event: Event, step: Step) -> None:
        text = _mrkdwn(step.text) + (f" <{step.url}|Open>" if step.url else "")
        self.call("chat.postMessage", thread_ts=message_id, text=text[:3000], unfurl_links=False)


class Teams(HttpTransport):
    """Incoming webhook or Workflows trigger: one Adaptive Card with Action.OpenUrl buttons."""

    def payload(self, event: Event) -> dict[str, Any]:
        body: list[dict[str, Any]] = [
            {"type": "TextBlock", "text": event.title, "weight": "Bolder", "size": "Medium", "wrap": True},
            {"type": "TextBlock", "text": event.summary, "wrap": True},
        ]
        if event.facts:
            facts = [{"title": label, "value": value} for label, value in event.facts]
            body.append({"type": "FactSet", "facts": facts})
        card = {
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": body,
            "actions": [{"type": "Action.OpenUrl", "title": link.label, "url": link.url} for link in event.links],
        }
        return {
            "type": "message",
            "attachments": [
                {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
            ],
        }

    def notify(self, event: Event) -> None:
        self.post_json(self.payload(event))


class Discord(HttpTransport, EditingTransport):
    """Webhook with one embed; Discord webhooks cannot carry buttons, so links go in the text.

    Posted with `?wait=true`, so Discord answers with the message (its `id`); an episode's
    later steps edit it (`PATCH <webhook>/messages/<id>`). Discord webhooks have no threads
    in a text channel: the steps are in the edited embed."""

    COLOR_PROBLEM = 0xD92D20
    COLOR_INFO = 0x1570EF
    COLOR_OVER = 0x12B76A

    def embed(self, event: Event, steps: Sequence[Step] = (), note: str = "") -> dict[str, Any]:
        lines = [note, event.summary] if note else [event.summary]
        if steps:
            lines.append("**Now:** " + steps[-1].text + "\n" + "\n".join(step_lines(steps)))
        if event.links:
            lines.append(" · ".join(f"[{link.label}]({link.url})" for link in event.links))
        over = bool(steps) and steps[-1].ended
        color = self.COLOR_INFO if event.kind == EventKind.TEST else self.COLOR_OVER if over else self.COLOR_PROBLEM
        return {
            "title": event.title[:256],
            "description": "\n\n".join(lines)[:4096],
            "url": event.action_url,
            "color": color,
            "fields": [
                {"name": label[:256], "value": value[:1024], "inline": True} for label, value in event.facts[:25]
            ],
            "timestamp": event.started_at.isoformat(),
        }

    def payload(self, event: Event, steps: Sequence[Step] = (), note: str = "") -> dict[str, Any]:
        # No pings: a cluster-provided name must not mention @everyone.
        return {"username": "GitOps portal", "embeds": [self.embed(event, steps, note)],
                "allowed_mentions": {"parse": []}}

    def notify(self, event: Event) -> None:
        self.post_message(event, ())

    def post_message(self, event: Event, steps: Sequence[Step], note: str = "") -> str:
        body = json.dumps(self.payload(event, steps, note), separators=(",", ":")).encode()
        content = self.request("POST", body, {"Content-Type": "application/json"}, query="wait=true")
        try:
            answer = json.loads(content)
        except ValueError:
            return ""  # sent; without its id it cannot be edited, and the next step posts anew
        return str(answer.get("id") or "") if isinstance(answer, dict) else ""

    def update_message(self, message_id: str, event: Event, steps: Sequence[Step]) -> None:
        edit = {"embeds": [self.embed(event, steps)], "allowed_mentions": {"parse": []}}
        body = json.dumps(edit, separators=(",", ":")).encode()
        try:
            self.request("PATCH", body, {"Content-Type": "application/json"}, suffix=f"/messages/{message_id}")
        except TransportError as exc:
            # 404 "Unknown Message" (code 10008): deleted, or never this webhook's.
            if exc.message.startswith("HTTP 404"):
                raise MessageRefused(f"Discord: {exc.message}", permanent=True)
            raise


class Webhook(HttpTransport):
    """Generic JSON POST, signed: X-Portal-Signature = "sha256=" + HMAC-SHA256(secret, body).

    The body carries the same timestamp as X-Portal-Timestamp, so the signature covers it
    and a receiver can refuse old (replayed) requests.
    """

    def body(self, event: Event, timestamp: int) -> bytes:
        return json.dumps({"timestamp": timestamp, "event": event.to_dict()}, separators=(",", ":")).encode()

    def notify(self, event: Event) -> None:
        if not self.channel.secret:
            raise TransportError("the channel has no signing secret", permanent=True)
        timestamp = int(self.clock().timestamp())
        body = self.body(event, timestamp)
        signature = hmac.new(self.channel.secret.encode(), body, hashlib.sha256).hexdigest()
        self.post(
            body,
            {
                "Content-Type": "application/json",
                "X-Portal-Event": event.kind,
                "X-Portal-Timestamp": str(timestamp),
                "X-Portal-Signature": f"sha256={signature}",
            },
        )


class Ntfy(HttpTransport):
    """Push to phones and desktops through ntfy: one HTTP POST to the topic URL
    (https://ntfy.example.com/deploys), the message as the body, Title / Click / Actions /
    Priority / Tags as headers (https://docs.ntfy.sh/publish/); the channel's secret, when
    set, is the access token (Authorization: Bearer).

    Why ntfy rather than Web Push: ntfy is what teams already self-host for alerts (one small
    server, or ntfy.sh) with Android, iOS and desktop apps, and sending is a plain POST the
    portal makes like its other webhooks. Web Push would need VAPID keys, a service worker on
    an HTTPS origin, and a subscription per person and browser stored and renewed by the
    portal, and reaches only browsers that subscribed.

    Header values travel as RFC 2047 (=?UTF-8?B?…?=) when they are not ASCII, which ntfy
    decodes (http.client sends headers as latin-1 and cannot carry "→" otherwise). Actions are
    ntfy's `view` buttons, at most three (ntfy's limit); further links go in the message.
    """

    MAX_ACTIONS = 3
    PRIORITY_PROBLEM = "4"  # high: a notification that vibrates
    PRIORITY_INFO = "3"

    @staticmethod
    def header(value: str) -> str:
        value = " ".join(value.split())  # no line breaks in a header
        if value.isascii():
            return value
        return "=?UTF-8?B?" + base64.b64encode(value.encode()).decode() + "?="

    @staticmethod
    def _quoted(value: str) -> str:
        # ntfy's short action format: fields split on commas, actions on semicolons; quoting keeps them.
        return '"' + value.replace('"', "'") + '"'

    def message(self, event: Event) -> str:
        lines = [event.summary, ""]
        lines += [f"{label}: {value}" for label, value in event.facts]
        if len(event.causes) > 1:
            lines += ["", "Also: " + "; ".join(event.causes[1:3])]
        rest = event.links[self.MAX_ACTIONS:]
        if rest:
            lines += ["", *(f"{link.label}: {link.url}" for link in rest)]
        return "\n".join(lines).strip()[:4000]

    def headers(self, event: Event) -> dict[str, str]:
        actions = "; ".join(f"view, {self._quoted(link.label[:60])}, {link.url}"
                            for link in event.links[: self.MAX_ACTIONS])
        headers = {
            "Content-Type": "text/plain; charset=utf-8",
            "Title": self.header(event.title[:250]),
            "Click": event.action_url,
            "Priority": self.PRIORITY_INFO if event.kind == EventKind.TEST else self.PRIORITY_PROBLEM,
            "Tags": "test_tube" if event.kind == EventKind.TEST else "warning",
        }
        if actions:
            headers["Actions"] = self.header(actions)
        if self.channel.secret:
            headers["Authorization"] = f"Bearer {self.channel.secret}"
        return headers

    def notify(self, event: Event) -> None:
        self.post(self.message(event).encode(), self.headers(event))


class Email(Transport):
    """Django's e-mail backend (SMTP in production, locmem in tests); HTML and plain text."""

    def subject(self, event: Event) -> str:
        prefix = f"[{event.environment}] " if event.environment else ""
        return " ".join(f"{prefix}{event.title}".split())[:200]

    def notify(self, event: Event) -> None:
        recipients = self.channel.recipient_list()
        if not recipients:
            raise TransportError("the channel has no recipients", permanent=True)
        context = {"event": event}
        message = EmailMultiAlternatives(
            subject=self.subject(event),
            body=render_to_string("notifications/email/event.txt", context),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=recipients,
            connection=get_connection(fail_silently=False),
        )
        message.attach_alternative(render_to_string("notifications/email/event.html", context), "text/html")
        try:
            message.send()
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            raise TransportError(f"SMTP refused every recipient ({', '.join(map(str, codes))})",
                                 permanent=all(code >= 500 for code in codes))
        except smtplib.SMTPResponseException as exc:
            error = exc.smtp_error
            text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
            text = redact(text, [settings.EMAIL_HOST_PASSWORD])[:RESPONSE_SNIPPET]
            raise TransportError(f"SMTP {exc.smtp_code}: {text}", permanent=exc.smtp_code >= 500)
        except (smtplib.SMTPException, OSError) as exc:
            raise TransportError(f"SMTP failed: {getattr(exc, 'strerror', None) or type(exc).__name__}")


TRANSPORTS: dict[str, type[Transport]] = {
    Channel.Kind.SLACK: Slack,
    Channel.Kind.SLACK_APP: SlackApp,
    Channel.Kind.TEAMS: Teams,
    Channel.Kind.EMAIL: Email,
    Channel.Kind.WEBHOOK: Webhook,
    Channel.Kind.DISCORD: Discord,
    Channel.Kind.NTFY: Ntfy,
}


def transport_for(channel: Channel, clock: Callable[[], datetime] = timezone.now) -> Transport:
    return TRANSPORTS[channel.kind](channel, clock)

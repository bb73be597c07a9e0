"""Release-note summaries of an upgrade, written by a language model, when one is configured.

Only with PORTAL_LLM_URL, PORTAL_LLM_MODEL and PORTAL_LLM_API_KEY_ENV all set (an
OpenAI-compatible `/chat/completions` endpoint); without them nothing here runs and nothing
changes anywhere. Asked from a periodic task on the forge queue (delivery.summarise_release_notes),
never while a person waits: pages and pull requests only read what is stored.

One summary per upgrade (service, from -> to), asked at most once a day: a success is kept
(and asked again only when the notes in between changed, so an edited changelog is read
again), a failure or a slow answer is recorded on the row and retried the next day. The
prompt holds the notes of the releases between the two versions only (notes.notes_between),
each cut to its share, and the answer is stored as generated text, shown as such beside the
quoted notes, never instead of them.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import requests
from django.conf import settings
from django.utils import timezone

from portal.kernel.catalog.models import Service
from portal.kernel.credentials import named_secret
from portal.kernel.redaction import redact
from portal.releases.models import ReleaseSummary
from portal.releases.notes import notes_between

log = logging.getLogger(__name__)

PROMPT_MAX_CHARS = 24_000  # all notes together; each release gets its share
SUMMARY_MAX_CHARS = 4_000  # what is stored and shown
INSTRUCTIONS = (
    "You summarise software release notes for the engineers who deploy an upgrade. From the notes below "
    "only (do not add anything they do not say), write short Markdown bullet lists under these headings, "
    "in this order, leaving out a heading with nothing under it: Security, Breaking changes, "
    "Migrations needed first, Notable fixes. Name the version each point comes from."
)


@dataclass(frozen=True)
class Endpoint:
    url: str
    model: str
    key: str
    timeout: float


def endpoint() -> Endpoint | None:
    """The configured chat endpoint, or None when summaries are off (any setting missing)."""
    url, model, key_env = settings.PORTAL_LLM_URL, settings.PORTAL_LLM_MODEL, settings.PORTAL_LLM_API_KEY_ENV
    if not (url and model and key_env):
        return None
    if not url.endswith("/chat/completions"):
        url = f"{url}/chat/completions"
    return Endpoint(url=url, model=model, key=named_secret(key_env), timeout=settings.PORTAL_LLM_TIMEOUT)


def prompt(service: Service, from_version: str, to_version: str, notes: list[tuple[str, str]]) -> str:
    share = max(500, PROMPT_MAX_CHARS // max(1, len(notes)))
    parts = [f"Service {service.name}: upgrade from {from_version} to {to_version}.", ""]
    for tag, text in notes:
        body = text.strip()
        if len(body) > share:
            body = body[:share] + "\n[… cut]"
        parts += [f"## Release {tag}", "", body, ""]
    return "\n".join(parts).strip()


def _fingerprint(notes: list[tuple[str, str]]) -> str:
    return hashlib.sha256("\0".join(f"{t}\0{n}" for t, n in notes).encode()).hexdigest()[:16]


def ask(where: Endpoint, text: str) -> str:
    """One chat completion; the answer's text, or an exception saying what went wrong."""
    headers = {"Content-Type": "application/json"}
    if where.key:
        headers["Authorization"] = f"Bearer {where.key}"
    body = {"model": where.model, "temperature": 0,
            "messages": [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": text}]}
    response = requests.post(where.url, json=body, headers=headers, timeout=where.timeout)
    if response.status_code != 200:
        raise RuntimeError(f"the endpoint answered HTTP {response.status_code}: {response.text[:300]}")
    try:
        answer = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise RuntimeError("the endpoint's answer is not a chat completion") from None
    if not isinstance(answer, str) or not answer.strip():
        raise RuntimeError("the endpoint answered with no text")
    return answer.strip()[:SUMMARY_MAX_CHARS]


def summarise(service: Service, from_version: str, to_version: str, *, now: datetime | None = None,
              where: Endpoint | None = None) -> ReleaseSummary | None:
    """Ask for the summary of one upgrade unless asked today (or nothing to summarise)."""
    where = where or endpoint()
    if where is None:
        return None
    now = now or timezone.now()
    notes = notes_between(service, from_version, to_version)
    if not notes:
        return None
    row, _ = ReleaseSummary.objects.get_or_create(service=service, from_version=from_version, to_version=to_version)
    fingerprint = _fingerprint(notes)
    if row.asked_on == now.date():
        return row  # once a day, whatever the answer was
    if row.text and row.model.endswith(f"#{fingerprint}"):
        return row  # the notes in between are the ones it summarised
    row.asked_on = now.date()
    try:
        text = ask(where, prompt(service, from_version, to_version, notes))
    except (requests.RequestException, RuntimeError) as exc:
        row.error = redact(f"{type(exc).__name__}: {exc}", [where.key])[:1000]
        row.error_at = now
        log.warning("release-note summary of %s %s -> %s failed: %s", service.name, from_version, to_version,
                    row.error)
        row.save(update_fields=["asked_on", "error", "error_at"])
        return row
    row.text, row.model, row.generated_at, row.error, row.error_at = (
        text, f"{where.model}#{fingerprint}", now, "", None)
    row.save()
    return row


def summarise_all(upgrades: Iterable[tuple[Service, str, str]], *, now: datetime | None = None) -> int:
    """Each distinct upgrade once; how many were asked for (or found asked already today)."""
    where = endpoint()
    if where is None:
        return 0
    done = 0
    seen: set[tuple[int, str, str]] = set()
    for service, from_version, to_version in upgrades:
        key = (service.pk, from_version, to_version)
        if key in seen:
            continue
        seen.add(key)
        if summarise(service, from_version, to_version, now=now, where=where) is not None:
            done += 1
    return done


def summaries_for(upgrades: Iterable[tuple[int, str, str]]) -> dict[tuple[int, str, str], ReleaseSummary]:
    """The stored summaries (with text) of these (service id, from, to), in one query; for pages."""
    wanted = set(upgrades)
    if not wanted or endpoint() is None:
        return {}
    rows = ReleaseSummary.objects.filter(service_id__in={s for s, _, _ in wanted},
                                         to_version__in={t for _, _, t in wanted}).exclude(text="")
    return {(r.service_id, r.from_version, r.to_version): r for r in rows
            if (r.service_id, r.from_version, r.to_version) in wanted}


def model_name(row: ReleaseSummary) -> str:
    """The model as configured, without the notes' fingerprint kept beside it."""
    return row.model.split("#", 1)[0]


def summary_text(service: Service, from_version: str, to_version: str) -> str:
    """The stored summary of one upgrade, for a pull request's description; "" when none."""
    if endpoint() is None:
        return ""
    row = ReleaseSummary.objects.filter(service=service, from_version=from_version, to_version=to_version).first()
    return row.text if row is not None else ""

"""Matching packages against OSV: `POST /v1/querybatch` with versioned purls, then
`GET /v1/vulns/{id}` for what the batch leaves out (severity, aliases, fixed versions).

Runs on the registry queue, never while a person waits. Each package version's answer is kept
(`PackageCheck`) until it expires (PORTAL_OSV_CACHE_HOURS): a second pass over the same
images asks nothing. A record is read again only when the batch says it was modified since.
OSV at PORTAL_OSV_URL (default https://api.osv.dev), reached with requests, which honours the
standard HTTPS_PROXY / NO_PROXY variables; or, with PORTAL_OSV_OFFLINE set, OSV's exported
records imported into the database (portal.releases.osv_offline), with the same answers.
When OSV cannot be read the failure is recorded in `FeedStatus("osv")` and what was known
stays: a page then says "not checked since …", never "no vulnerabilities".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import quote

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from portal.kernel.redaction import redact
from portal.releases.models import FeedStatus, PackageCheck, Vulnerability

log = logging.getLogger(__name__)

BATCH = 1000  # OSV's limit of queries per querybatch
MAX_PAGES = 10  # per query: a package with thousands of records must not keep a worker forever
SEVERITIES = ("critical", "high", "moderate", "low", "unknown")
_SEVERITY_WORDS = {"critical": "critical", "high": "high", "moderate": "moderate", "medium": "moderate", "low": "low"}


class OsvError(Exception):
    """OSV could not be read; the message never carries more than OSV's status and a short text."""


@dataclass
class CheckReport:
    asked: int = 0  # package versions sent to OSV (the rest were fresh in the cache)
    records_read: int = 0
    requests: int = 0
    error: str = ""
    ids: set[str] = field(default_factory=set)


class OsvClient:
    def __init__(
        self, base_url: str | None = None, *, timeout: float | None = None, session: requests.Session | None = None
    ) -> None:
        self.base_url = (base_url or settings.PORTAL_OSV_URL).rstrip("/")
        self.timeout = timeout if timeout is not None else settings.PORTAL_FEED_TIMEOUT
        self.session = session or requests.Session()  # trust_env: HTTPS_PROXY applies
        self.requests = 0

    def query_batch(self, purls: list[str]) -> dict[str, dict[str, str]]:
        """purl -> {vulnerability id: modified} for every purl (an empty mapping: none known)."""
        found: dict[str, dict[str, str]] = {purl: {} for purl in purls}
        for start in range(0, len(purls), BATCH):
            pending = [(purl, "") for purl in purls[start : start + BATCH]]
            for _ in range(MAX_PAGES):
                queries = [
                    {"package": {"purl": purl}} | ({"page_token": token} if token else {}) for purl, token in pending
                ]
                body = self._send("POST", "/v1/querybatch", json={"queries": queries})
                results = body.get("results") if isinstance(body, dict) else None
                if not isinstance(results, list) or len(results) != len(pending):
                    raise OsvError("OSV querybatch answered with a different number of results")
                again = []
                for (purl, _token), result in zip(pending, results, strict=True):
                    result = result if isinstance(result, dict) else {}
                    for vuln in result.get("vulns") or []:
                        if isinstance(vuln, dict) and vuln.get("id"):
                            found[purl][str(vuln["id"])[:100]] = str(vuln.get("modified", ""))[:40]
                    if result.get("next_page_token"):
                        again.append((purl, str(result["next_page_token"])))
                if not again:
                    break
                pending = again
        return found

    def vuln(self, osv_id: str) -> dict:
        body = self._send("GET", f"/v1/vulns/{quote(osv_id, safe='')}")
        if not isinstance(body, dict):
            raise OsvError(f"OSV {osv_id}: not a JSON object")
        return body

    def _send(self, method: str, path: str, json: dict | None = None) -> object:
        self.requests += 1
        try:
            response = self.session.request(method, self.base_url + path, timeout=self.timeout, json=json)
        except requests.RequestException as exc:
            raise OsvError(f"OSV at {self.base_url} cannot be reached ({type(exc).__name__})")
        if response.status_code >= 400:
            text = redact(response.text.strip())[:200]
            raise OsvError(f"OSV at {self.base_url} answered {response.status_code}: {text}")
        try:
            return response.json()
        except ValueError:
            raise OsvError(f"OSV at {self.base_url} did not answer JSON")


def osv_client() -> OsvClient:
    """The API's client, or the imported exports' when PORTAL_OSV_OFFLINE names them."""
    if settings.PORTAL_OSV_OFFLINE:
        # Imported here: the offline client is built on this module's OsvError.
        from portal.releases.osv_offline import OfflineOsvClient

        return OfflineOsvClient()  # type: ignore[return-value]
    return OsvClient()


def check_purls(purls: Iterable[str], *, now: datetime | None = None, client: OsvClient | None = None) -> CheckReport:
    """Ask OSV about the package versions whose answer is missing or expired, keep the answers
    and the records they name. A failure is recorded and keeps every answer already stored."""
    now = now or timezone.now()
    client = client or osv_client()
    wanted = sorted({p for p in purls if p and "@" in p})
    fresh = set(PackageCheck.objects.filter(purl__in=wanted, expires_at__gt=now).values_list("purl", flat=True))
    due = [p for p in wanted if p not in fresh]
    report = CheckReport(asked=len(due))
    try:
        if due:
            answers = client.query_batch(due)
            known = dict(
                Vulnerability.objects.filter(osv_id__in={i for ids in answers.values() for i in ids}).values_list(
                    "osv_id", "modified"
                )
            )
            stale = sorted(
                {
                    i
                    for ids in answers.values()
                    for i, modified in ids.items()
                    if i not in known or (modified and known[i] != modified)
                }
            )
            records = [client.vuln(osv_id) for osv_id in stale]
            _store(answers, records, now)
            report.records_read = len(records)
            report.ids = {i for ids in answers.values() for i in ids}
        _status_ok(now)
    except OsvError as exc:
        report.error = str(exc)
        log.warning("OSV check failed: %s", exc)
        _status_failed(now, report.error)
    report.requests = client.requests
    return report


def _store(answers: dict[str, dict[str, str]], records: list[dict], now: datetime) -> None:
    expires = now + timedelta(hours=settings.PORTAL_OSV_CACHE_HOURS)
    with transaction.atomic():
        for record in records:
            fields = record_fields(record)
            Vulnerability.objects.update_or_create(osv_id=fields.pop("osv_id"), defaults=fields | {"fetched_at": now})
        PackageCheck.objects.filter(purl__in=list(answers)).delete()
        PackageCheck.objects.bulk_create(
            [
                PackageCheck(purl=purl, vuln_ids=sorted(ids), checked_at=now, expires_at=expires)
                for purl, ids in answers.items()
            ]
        )


def record_fields(record: dict) -> dict:
    """What the portal keeps of an OSV record."""
    fixed: dict[str, list[str]] = {}
    for affected in record.get("affected") or []:
        if not isinstance(affected, dict):
            continue
        name = str((affected.get("package") or {}).get("name", ""))[:200]
        for rng in affected.get("ranges") or []:
            for event in (rng or {}).get("events") or []:
                if isinstance(event, dict) and event.get("fixed"):
                    fixed.setdefault(name, [])
                    if str(event["fixed"]) not in fixed[name]:
                        fixed[name].append(str(event["fixed"])[:100])
    return {
        "osv_id": str(record.get("id", ""))[:100],
        "aliases": [str(a)[:100] for a in record.get("aliases") or []][:20],
        "summary": str(record.get("summary") or record.get("details") or "")[:300],
        "severity": severity_of(record),
        "fixed": fixed,
        "modified": str(record.get("modified", ""))[:40],
    }


def severity_of(record: dict) -> str:
    """The record's severity word: the database's own rating (GHSA's `database_specific.severity`,
    an ecosystem's `severity`), else a CVSS base score when the record gives a number; else unknown.
    A CVSS vector alone is not scored here."""
    words = [(record.get("database_specific") or {}).get("severity")]
    words += [
        (a.get("ecosystem_specific") or {}).get("severity") for a in record.get("affected") or [] if isinstance(a, dict)
    ]
    for word in words:
        if isinstance(word, str) and word.lower() in _SEVERITY_WORDS:
            return _SEVERITY_WORDS[word.lower()]
    for entry in record.get("severity") or []:
        try:
            score = float((entry or {}).get("score", ""))
        except (TypeError, ValueError):
            continue
        return "critical" if score >= 9 else "high" if score >= 7 else "moderate" if score >= 4 else "low"
    return "unknown"


def _status_ok(now: datetime) -> None:
    FeedStatus.objects.update_or_create(
        name="osv", defaults={"last_ok_at": now, "last_error": "", "last_error_at": None}
    )


def _status_failed(now: datetime, error: str) -> None:
    FeedStatus.objects.update_or_create(name="osv", defaults={"last_error": error, "last_error_at": now})

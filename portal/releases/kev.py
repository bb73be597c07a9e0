"""CISA's Known Exploited Vulnerabilities catalogue: which CVEs are exploited in the wild.

Read daily (beat `releases.refresh_kev`) from PORTAL_KEV_URL, CISA's JSON feed
(`{"catalogVersion", "dateReleased", "count", "vulnerabilities": [{"cveID", "vulnerabilityName",
"dateAdded", "knownRansomwareCampaignUse", …}]}`), with requests, which honours HTTPS_PROXY.
A good read replaces the whole set (CISA also removes entries); a failed one keeps the set
read before and is recorded in `FeedStatus("kev")`, so a page can say since when
"exploited" has not been checked.
"""

from __future__ import annotations

import logging
import re
from datetime import date, datetime

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from portal.kernel.redaction import redact
from portal.releases.models import FeedStatus, KnownExploited

log = logging.getLogger(__name__)

_CVE = re.compile(r"^CVE-\d{4}-\d{4,}$")
MIN_ENTRIES = 1  # an empty catalogue is a broken feed, not a world without exploits


class KevError(Exception):
    pass


def read_catalogue(url: str | None = None, session: requests.Session | None = None) -> list[KnownExploited]:
    url = url or settings.PORTAL_KEV_URL
    try:
        response = (session or requests.Session()).get(url, timeout=settings.PORTAL_FEED_TIMEOUT)
    except requests.RequestException as exc:
        raise KevError(f"the KEV catalogue at {url} cannot be reached ({type(exc).__name__})")
    if response.status_code >= 400:
        raise KevError(f"the KEV catalogue at {url} answered {response.status_code}: {redact(response.text)[:200]}")
    try:
        body = response.json()
    except ValueError:
        raise KevError(f"the KEV catalogue at {url} is not JSON")
    entries = body.get("vulnerabilities") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise KevError(f"the KEV catalogue at {url} has no vulnerabilities list")
    rows: dict[str, KnownExploited] = {}
    for entry in entries:
        cve = str((entry or {}).get("cveID", "")).strip().upper() if isinstance(entry, dict) else ""
        if not _CVE.match(cve):
            continue
        rows[cve] = KnownExploited(
            cve_id=cve,
            name=str(entry.get("vulnerabilityName", ""))[:300],
            date_added=_date(entry.get("dateAdded")),
            ransomware=str(entry.get("knownRansomwareCampaignUse", ""))[:20],
        )
    if len(rows) < MIN_ENTRIES:
        raise KevError(f"the KEV catalogue at {url} lists no CVE")
    return list(rows.values())


def refresh_kev(*, now: datetime | None = None, url: str | None = None, session: requests.Session | None = None) -> str:
    """Replace the stored catalogue with CISA's; "" or the recorded error."""
    now = now or timezone.now()
    try:
        rows = read_catalogue(url, session)
    except KevError as exc:
        log.warning("KEV refresh failed: %s", exc)
        FeedStatus.objects.update_or_create(name="kev", defaults={"last_error": str(exc), "last_error_at": now})
        return str(exc)
    with transaction.atomic():
        KnownExploited.objects.all().delete()
        KnownExploited.objects.bulk_create(rows)
        FeedStatus.objects.update_or_create(
            name="kev", defaults={"last_ok_at": now, "last_error": "", "last_error_at": None}
        )
    return ""


def exploited(cve_ids: set[str]) -> set[str]:
    return set(KnownExploited.objects.filter(cve_id__in=sorted(cve_ids)).values_list("cve_id", flat=True))


def _date(value: object) -> date | None:
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        return None

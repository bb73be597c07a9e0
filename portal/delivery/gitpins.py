"""Git pins: which version Git declares for each service, per application.

A task reads the files under each application's path at the branch it follows (at most
every 10 minutes per application, never while a person waits), finds the image pins
(`forges.pins.scan`) and stores one `GitPin` per place that pins a known service's
image. Pages then answer "why did my change not go out?": Git pins 1.7.0, runs 1.6.0.
A failed read is recorded on the application and keeps the pins already stored.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from forges.forge import Forge, ForgeError
from forges.hosts import forge_for
from forges.pins import scan
from gitops.models import GitOpsApp
from portal.catalog.images import normalise_name
from portal.catalog.models import Service, service_image_index
from portal.delivery import placements
from portal.delivery.changes import followed_branch
from portal.delivery.models import GitPin, GitPinRead

log = logging.getLogger(__name__)

READ_INTERVAL = timedelta(minutes=10)


@dataclass
class PinReadReport:
    app: str
    ok: bool
    pins: list[dict] = field(default_factory=list)
    error: str = ""


def readable_apps() -> QuerySet[GitOpsApp]:
    """Applications with a repository and a path: the ones whose pins can be read."""
    return GitOpsApp.objects.exclude(repo_url="").exclude(path="")


def due_app_ids(now: datetime | None = None, interval: timedelta = READ_INTERVAL) -> list[int]:
    """Applications not read within `interval` (or never read)."""
    now = now or timezone.now()
    cutoff = now - interval
    return list(
        readable_apps()
        .filter(
            Q(git_pin_read__isnull=True)
            | Q(git_pin_read__last_read_at__isnull=True)
            | Q(git_pin_read__last_read_at__lte=cutoff)
        )
        .order_by("id")
        .values_list("id", flat=True)
    )


def read_app_pins(app: GitOpsApp, *, forge: Forge | None = None, now: datetime | None = None) -> PinReadReport:
    """Read `app`'s files and store its pins. Never raises for a forge or parse failure."""
    now = now or timezone.now()
    branch = followed_branch(app)
    path = (app.path or "").strip("/").removeprefix("./")
    status, _ = GitPinRead.objects.get_or_create(app=app)
    try:
        forge = forge or forge_for(app.repo_url)
        _, files = forge.pin_files("" if path in ("", ".") else path, branch)
        found = scan(files)
    except (ForgeError, RuntimeError, OSError) as error:
        message = str(error)[:1000] or type(error).__name__
        log.warning("reading git pins of %s failed: %s", app, message)
        GitPinRead.objects.filter(pk=status.pk).update(branch=branch, last_read_at=now, last_error=message)
        return PinReadReport(app=app.name, ok=False, error=message)

    index = service_image_index(Service.objects.all())
    ids = dict(Service.objects.values_list("name", "id"))
    rows = []
    for pin in found.pins:
        service = index.get(normalise_name(pin.image))
        if service is None:
            continue
        rows.append(
            GitPin(app=app, service_id=ids[service], version=pin.version, path=pin.path, line=pin.line, read_at=now)
        )
    with transaction.atomic():
        before = set(GitPin.objects.filter(app=app).values_list("service_id", flat=True))
        GitPin.objects.filter(app=app).delete()
        GitPin.objects.bulk_create(rows)
        placements.refresh(app.cluster_id, before | {row.service_id for row in rows})
        GitPinRead.objects.filter(pk=status.pk).update(branch=branch, last_read_at=now, last_ok_at=now, last_error="")
    names = {pk: name for name, pk in ids.items()}
    pins = [{"service": names[r.service_id], "version": r.version, "path": r.path, "line": r.line} for r in rows]
    return PinReadReport(app=app.name, ok=True, pins=pins)


# --- reading the store (pages and the API) ---------------------------------------------


def git_pins(app: GitOpsApp | int) -> list[dict]:
    """What Git pins under one application: [{service, version, path, line}] (one query)."""
    app_id = app if isinstance(app, int) else app.pk
    return git_pins_by_app([app_id]).get(app_id, [])


def git_pins_by_app(app_ids: Iterable[int]) -> dict[int, list[dict]]:
    """`git_pins` for many applications in one query: app id -> pins (absent when none stored)."""
    found: dict[int, list[dict]] = defaultdict(list)
    rows = (
        GitPin.objects.filter(app_id__in=list(app_ids))
        .order_by("app_id", "service__name", "path", "line")
        .values_list("app_id", "service__name", "version", "path", "line")
    )
    for app_id, service, version, path, line in rows:
        found[app_id].append({"service": service, "version": version, "path": path, "line": line})
    return dict(found)


def pinned_versions(app_ids: Iterable[int], service: Service | None = None) -> dict[tuple[int, str], list[str]]:
    """(app id, service name) -> the distinct versions Git pins, sorted (one query)."""
    query = GitPin.objects.filter(app_id__in=list(app_ids))
    if service is not None:
        query = query.filter(service=service)
    found: dict[tuple[int, str], set[str]] = defaultdict(set)
    for app_id, name, version in query.values_list("app_id", "service__name", "version"):
        found[(app_id, name)].add(version)
    return {key: sorted(versions) for key, versions in found.items()}


def pin_summary(pinned: list[str], running: list[str]) -> str:
    """"Git pins 1.7.0, runs 1.6.0" when they differ; "" when they agree or nothing is known."""
    if not pinned:
        return ""
    pins = ", ".join(pinned)
    if sorted(set(running)) == sorted(set(pinned)):
        return ""
    if not running:
        return f"Git pins {pins}"
    return f"Git pins {pins}, runs {', '.join(sorted(set(running)))}"

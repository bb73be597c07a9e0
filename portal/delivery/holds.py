"""Versions held after a rollback: a rollback PR from X to Y holds X in its environment.

Opening a portal rollback pull request (or its merge, when the opening was not seen) adds X to
the skipped versions (`put_off`) of each service it rolls back, for that environment only, with
who opened it, when, why ("rolled back to Y") and its source ("rollback PR #12"). Every offer
reads the policy through `portal.delivery.upgrades.UpgradeTargets`, in the line's environment:
automatic PRs, Updates and the service page no longer propose X there, and as soon as a release
newer than X is acceptable they propose that one (a hold covers X alone). Undone with `release`
(the page audits it, for a member of the service's team); undone, X is offered again.

Kept in the policy document rather than a table of its own: the policy is what every offer
already reads (one query for any number of services), and an admin sees and edits the held
versions where the other skipped versions are. A PR opened outside the portal (Renovate,
Dependabot) that proposes a held version is marked with `rolled_back_on`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.db import transaction

from portal.delivery.models import PullRequest, ServicePolicy
from portal.delivery.version_policy import PolicyError, PutOff
from portal.kernel.audit.models import record
from portal.kernel.catalog.models import Service
from portal.releases.versions import parse_tag


def hold_rolled_back(pr: PullRequest, at: datetime) -> list[str]:
    """Hold the version `pr` rolls back, for each of its services; the services newly held."""
    if pr.kind != PullRequest.Kind.ROLLBACK or not pr.number or not pr.environment:
        return []
    version = pr.from_version
    if not pr.services or parse_tag(version) is None:  # a chart rollback names no service; several versions
        return []
    who = pr.opened_by.get_username() if pr.opened_by is not None else "system"
    hold = PutOff(version, None, environment=pr.environment, by=who, at=at, why=f"rolled back to {pr.to_version}",
                  source=f"rollback PR #{pr.number}")
    held = []
    for service in Service.objects.filter(name__in=pr.services).order_by("name"):
        with transaction.atomic():
            row, _ = ServicePolicy.objects.select_for_update().get_or_create(service=service)
            entries = list(row.put_off or [])
            if any(_names(entry, version, pr.environment) for entry in entries):
                continue
            row.put_off = [*entries, hold.to_dict()]
            row.save(update_fields=["put_off", "updated_at"])
        record(pr.opened_by, "policy.held", service.name, team=service.team, version=version,
               environment=pr.environment, why=hold.why, source=hold.source, pull_request=pr.url)
        held.append(service.name)
    return held


def release(service: Service, version: str, environment: str) -> bool:
    """Undo the hold of `version` in `environment`; whether there was one."""
    with transaction.atomic():
        row = ServicePolicy.objects.select_for_update().filter(service=service).first()
        if row is None:
            return False
        entries = list(row.put_off or [])
        kept = [entry for entry in entries if not _names(entry, version, environment)]
        if len(kept) == len(entries):
            return False
        row.put_off = kept
        row.save(update_fields=["put_off", "updated_at"])
    return True


def _names(entry: object, version: str, environment: str) -> bool:
    return isinstance(entry, dict) and entry.get("version") == version and entry.get("environment") == environment


@dataclass(frozen=True)
class Held:
    """One held version, as the pages show it."""

    service: Service
    hold: PutOff


def held_versions(service: Service | None = None, environment: str | None = None) -> list[Held]:
    """The versions held (of `service`, in `environment`), by service, environment and version."""
    rows = ServicePolicy.objects.select_related("service").exclude(put_off=[])
    if service is not None:
        rows = rows.filter(service=service)
    found = []
    for row in rows:
        try:
            holds = row.as_policy().held(environment)
        except PolicyError:
            continue  # the policy page says what is wrong with it
        found += [Held(row.service, hold) for hold in holds]
    found.sort(key=lambda h: (h.service.name, h.hold.environment, h.hold.version))
    return found


def rolled_back_on(holds: list[Held], pr: PullRequest) -> date | None:
    """When the version an outside PR proposes was rolled back where it would deploy, if it was."""
    for held in holds:
        hold = held.hold
        if held.service.name in (pr.services or []) and hold.environment == pr.environment \
                and hold.version in pr.to_version.split(","):
            return hold.at.date() if hold.at is not None else None
    return None

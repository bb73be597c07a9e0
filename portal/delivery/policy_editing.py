"""Editing a service's version policy: checking a proposed policy against the catalog, the
preview of what it would accept per environment, and saving it with an audit row.

One path for every editor — the service page, the Django admin and the fleet file — so a
policy is checked the same way (portal.delivery.version_policy, plus the environments `auto_pr` names
must exist) and every change leaves the same audit row (`policy.changed`, the document before
and after). The preview answers "what would this policy pick?" with the service's known tags
(portal.releases) and what runs in each environment (the matrix's VersionLine read model),
through `version_policy.newest_acceptable`, the function the Updates page and automatic PRs use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from django.db import transaction

from portal.delivery.models import ServicePolicy, VersionLine
from portal.delivery.version_policy import PolicyError, VersionPolicy, newest_acceptable
from portal.kernel.audit.models import record
from portal.kernel.catalog.models import Environment, Service
from portal.releases.models import Release
from portal.releases.versions import jump, sort_tags

AUDIT_ACTION = "policy.changed"


def check(data: Mapping[str, Any] | None) -> VersionPolicy:
    """`data` as a policy, or PolicyError saying what is wrong (first problem only)."""
    policy = VersionPolicy.from_dict(data)
    known = set(Environment.objects.values_list("name", flat=True))
    unknown = sorted(env for env in policy.auto_pr if env not in known)
    if unknown:
        raise PolicyError(f"auto_pr names no environment called {', '.join(map(repr, unknown))}")
    return policy


def stored_document(service: Service) -> dict[str, Any]:
    """The service's policy as its JSON document: the stored one, or the default policy's."""
    return ServicePolicy.document_of(service)


@transaction.atomic
def save(service: Service, policy: VersionPolicy, actor: object | None, via: str, *,
         keep_holds: bool = False) -> ServicePolicy:
    """Store `policy` (already checked) as the service's, auditing the change; `via` says
    where it was edited (page, admin, fleet file). Saving what is stored already writes nothing.

    `keep_holds`: versions held after a rollback stay held though `policy` does not name them.
    A hold is the portal's record of a rollback (portal.delivery.holds), not the fleet file's,
    so reloading the file does not undo it (the Undo button does)."""
    row = ServicePolicy.objects.select_for_update().filter(service=service).first()
    if keep_holds and row is not None:
        policy = with_holds_of(row, policy)
    before = row.document() if row else None
    row = row or ServicePolicy(service=service)
    row.set_policy(policy)
    after = row.document()
    if before == after:
        return row
    row.save()
    changed = sorted(key for key in after if before is None or before.get(key) != after[key])
    record(actor, AUDIT_ACTION, f"service {service.name}"[:300], team=service.team,
           via=via, before=before, after=after, changed=changed)
    return row


def on_fleet_service(sender: object, service: Service, item: Mapping[str, Any], **kwargs: Any) -> None:
    """The fleet file's `policy:` of a service (portal.kernel.catalog.fleetfile.service_loaded): the
    same JSON document, stored as the service's policy. A service without one keeps the policy
    it has (set on its page); a bad one refuses the file (PolicyError is a ValueError)."""
    if "policy" not in item:
        return
    save(service, check(item["policy"]), None, via="fleet file", keep_holds=True)


def with_holds_of(row: ServicePolicy, policy: VersionPolicy) -> VersionPolicy:
    """`policy` keeping the versions `row` holds after a rollback that it does not name."""
    try:
        stored = row.as_policy().held()
    except PolicyError:
        return policy
    named = {(p.version, p.environment) for p in policy.put_off}
    kept = tuple(hold for hold in stored if (hold.version, hold.environment) not in named)
    return replace(policy, put_off=policy.put_off + kept) if kept else policy


@dataclass(frozen=True)
class EnvironmentPreview:
    """What a policy picks in one environment: per version running there, the newest
    acceptable release (None: nothing newer is acceptable) and whether it would get an
    automatic pull request."""

    environment: str
    runs: tuple[str, ...]
    picks: tuple[tuple[str, str | None, bool], ...]  # (running, newest acceptable, automatic PR)
    auto_pr: str


def preview(service: Service, policy: VersionPolicy, today: date) -> list[EnvironmentPreview]:
    """Every environment in pipeline order, with what `policy` would pick there now."""
    tags = Release.objects.for_service(service).tags()
    runs: dict[int, set[str]] = {}
    for env_id, versions in VersionLine.objects.filter(service=service).values_list("environment_id", "versions"):
        runs.setdefault(env_id, set()).update(v for v in versions.split(",") if v)
    found = []
    for env in Environment.objects.order_by("order", "name"):
        versions = runs.get(env.id, set())
        ordered = sort_tags(versions)  # versions oldest first, then what is no version (a digest)
        running = tuple(ordered + sorted(versions - set(ordered)))
        picks = []
        for current in running:
            newest = newest_acceptable(current, tags, policy, today)
            automatic = newest is not None and policy.auto_pr_allowed(env.name, jump(current, newest))
            picks.append((current, newest, automatic))
        found.append(EnvironmentPreview(env.name, running, tuple(picks), policy.auto_pr.get(env.name, "none")))
    return found

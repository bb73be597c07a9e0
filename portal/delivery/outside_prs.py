"""Pull requests opened outside the portal (Renovate, Dependabot, a person), found before anyone clicks.

Every 30 minutes (`delivery.scan_outside_prs`, on the forge queue) the changes the portal
would offer now are gathered from the store: every upgrade behind (`portal.delivery.upgrades`)
and every promotion waiting (`portal.delivery.promotions`). They are grouped by the repository
their pin lives in (`gitops.git_locations`), and each repository's open pull requests are listed
ONCE per pass, whatever the number of applications in it: a fleet of 1,000 applications in 40
repositories asks its forges 40 times. A title that proposes one of the changes (the one
recognition, `portal.delivery.prtitles.names_change`) is stored as a `PullRequest` row with
`opened_outside`, keyed by the branch the portal would have used for that change
(`planner.branch_name`). That key is what makes the rest hold without a second rule:

- the pages show it where they would offer "Open PR" (`UpgradeTargets.open_pr`, the promotion
  offers) with "Opened outside the portal" on hover;
- a click claims the same (repository, branch) row and is answered "Already open"
  (`portal.delivery.pull_requests`), so no second pull request is opened;
- the automatic policy skips a line whose change has an open pull request (`automatic`).

The rows are then tracked like the portal's own (`portal.delivery.tracking`): merged, closed
and checks. A repository whose forge cannot be reached, or that no token can read, is
counted and told; it never stops the others, and rows already stored are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from forges.forge import Forge, ForgeError, NotConfigured, PullRequestInfo
from gitops.git_locations import pin_source
from gitops.models import GitOpsApp
from portal.delivery import promotions
from portal.delivery.change_builders import group_key
from portal.delivery.models import PullRequest
from portal.delivery.planner import PROMOTION, UPGRADE, Change, branch_name
from portal.delivery.prtitles import names_change
from portal.delivery.upgrades import Behind, BehindLines

log = logging.getLogger(__name__)

ForgeFor = Callable[[str], Forge]
MAX_ERRORS_TOLD = 20  # the report keeps the first few repositories that failed, not thousands


@dataclass
class ScanReport:
    repositories: int = 0  # repositories with something the portal would offer
    list_calls: int = 0  # open-PR listings asked of forges (one per readable repository)
    linked: int = 0  # rows newly stored (or taken back from "closed") for an outside PR
    already: int = 0  # changes whose row was stored already
    unreadable: int = 0  # repositories no configured token can read
    errors: list[str] = field(default_factory=list)  # "repository: why", bounded


def offered_changes(today: datetime | None = None) -> list[Change]:
    """Every single change the portal would offer now: upgrades behind, promotions waiting.
    Read from the store in a fixed number of queries plus one per HelmRelease's parent."""
    today = today or timezone.now()
    changes: list[Change] = []
    # Versions held after a rollback are looked for too: a Renovate PR proposing one is stored,
    # so the pages can say it proposes a version rolled back (portal.delivery.holds).
    lines = BehindLines(today=today.date(), apply_holds=False)
    promoting, _groups = promotions.load()
    app_ids = {line.app_id for line in lines.lines}
    app_ids |= {t.app_id for p in promoting for t in p.targets if t.app_id is not None}
    apps = GitOpsApp.objects.select_related("cluster__environment").in_bulk(app_ids) if app_ids else {}
    for behind in lines.load(apps=apps):
        start = behind.pinned[0] if len(behind.pinned) == 1 else behind.running
        if behind.app is None:
            change = _outside_change(behind) if behind.workload is not None and not behind.no_pr else None
        else:
            change = _change(UPGRADE, behind.app, behind.service.name, behind.service.image_repository,
                             start, behind.target)
        if change is not None:
            changes.append(change)
    images = _images({p.service for p in promoting})
    for promotion in promoting:
        for target in promotion.targets:
            app = apps.get(target.app_id) if target.app_id is not None else None
            if app is None or promotion.service not in images:
                continue
            change = _change(PROMOTION, app, promotion.service, images[promotion.service],
                             target.start, promotion.version)
            if change is not None:
                changes.append(change)
    return changes


def _images(services: Iterable[str]) -> dict[str, str]:
    from portal.kernel.catalog.models import Service

    return dict(Service.objects.filter(name__in=set(services)).values_list("name", "image_repository"))


def _change(kind: str, app: GitOpsApp, service: str, image: str, start: str, target: str) -> Change | None:
    """The change as `change_builders.change_forward` would build it, without reading notes or pins again."""
    source = pin_source(app)
    environment = app.cluster.environment
    if not source.found or environment is None or not target or start == target:
        return None
    return Change(
        kind=kind,
        services=(service,),
        environment=environment.name,
        repository=source.repository,
        base_branch=source.revision.strip(),
        path=source.path,
        image=image,
        from_version=start,
        to_version=target,
        clusters=(app.cluster.name,),
        apps=(app.pk,),
    )


def _outside_change(behind: Behind) -> Change:
    """A workload outside GitOps: the change where its portal.git.* labels say, as
    `change_builders.change_for_workload` builds it (without reading the notes)."""
    workload = behind.workload
    assert workload is not None
    return Change(
        kind=UPGRADE, services=(behind.service.name,), environment=behind.environment,
        repository=workload.git_repo, base_branch=workload.git_branch, path=workload.git_path,
        image=behind.service.image_repository, from_version=behind.running, to_version=behind.target,
        clusters=(workload.cluster.name,),
    )


def by_repository(changes: Iterable[Change]) -> dict[str, list[Change]]:
    """The changes under their repository's key (`https://h/acme/GitOps.git` and
    `git@h:acme/gitops` are one repository), in first-seen order."""
    found: dict[str, list[Change]] = {}
    for change in changes:
        found.setdefault(group_key(change)[1], []).append(change)
    return found


def matching(pulls: Iterable[PullRequestInfo], change: Change) -> PullRequestInfo | None:
    """The open pull request whose title proposes `change`, if any (the oldest when several do)."""
    found = [pull for pull in pulls if names_change(pull.title, change)]
    return min(found, key=lambda pull: pull.number) if found else None


def scan(
    forge_for: ForgeFor | None = None,
    now: datetime | None = None,
    changes: list[Change] | None = None,
) -> ScanReport:
    """One pass: list each repository's open pull requests once and store those that propose a
    change the portal would offer. Never raises for one repository's failure."""
    if forge_for is None:
        from forges.hosts import forge_for as registry_forge_for

        forge_for = registry_forge_for
    now = now or timezone.now()
    report = ScanReport()
    grouped = by_repository(offered_changes(now) if changes is None else changes)
    report.repositories = len(grouped)
    for key, wanted in grouped.items():
        try:
            forge = forge_for(wanted[0].repository)
        except NotConfigured:
            report.unreadable += 1
            continue
        except ForgeError as error:
            _failed(report, key, error)
            continue
        report.list_calls += 1
        try:
            pulls = [pull for pull in forge.open_pull_requests() if pull.number]
        except ForgeError as error:
            _failed(report, key, error)
            continue
        if not pulls:
            continue
        repository = forge.repo.web_url
        for change in wanted:
            pull = matching(pulls, change)
            if pull is None:
                continue
            if _store(repository, forge.kind, change, pull, now):
                report.linked += 1
            else:
                report.already += 1
    return report


def _failed(report: ScanReport, key: str, error: Exception) -> None:
    log.warning("open pull requests of %s could not be listed: %s", key, error)
    if len(report.errors) < MAX_ERRORS_TOLD:
        report.errors.append(f"{key}: {str(error)[:300]}")


def _store(repository: str, forge_kind: str, change: Change, pull: PullRequestInfo, now: datetime) -> bool:
    """Keep `pull` as the row of `change`; True when a row was written. A row already open,
    being opened or merged for the change is left as it is; a closed one is taken back."""
    branch = branch_name(change)
    fields = {
        "kind": change.kind,
        "services": list(change.services),
        "environment": change.environment,
        "clusters": list(change.clusters),
        "forge_kind": forge_kind,
        "number": pull.number,
        "url": pull.url,
        "title": pull.title[:300],
        "base_branch": pull.base_branch or change.base_branch,
        "state": PullRequest.State.OPEN,
        "checks": PullRequest.Checks.NONE,
        "checks_failed_notified_at": None,
        "checks_url": "",
        "opened_by": None,
        "automatic": False,
        "opened_at": pull.created_at or now,
        "merged_at": None,
        "closed_at": None,
        "running_at": None,
        "opened_outside": True,
        "from_version": change.from_version[:128],
        "to_version": change.to_version[:128],
        "image": change.image[:300],
        "last_error": "",
        "tracked_at": now,
    }
    try:
        with transaction.atomic():
            PullRequest.objects.create(repository=repository, branch=branch, **fields)
            return True
    except IntegrityError:
        pass
    # Taken back only from "closed", atomically: a worker opening it right now holds "opening".
    return bool(
        PullRequest.objects.filter(repository=repository, branch=branch, state=PullRequest.State.CLOSED)
        .update(**fields)
    )

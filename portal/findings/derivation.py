"""Storing the discipline findings: judged again whenever their facts change, never asked for.

Findings combine facts of the layers below (gitops' rows of a cluster, delivery's Git pins
and the plain Secrets its pin reader found) and one fact of a layer above (which apps a portal
notification rule covers). Each is stored when its facts are, by the layer that holds them
last, and nothing below ever calls up to ask:

- a poll's store announces `gitops.signals.cluster_stored` inside its transaction, naming the
  apps it read; `on_cluster_stored` (connected in portal.findings.apps) judges those apps
  again (`derive_findings`) in a savepoint, so they commit with the poll, and a failure is
  logged without costing the poll its data. An app judged as before keeps its rows and their
  time (when it was first found so): a poll that changed nothing writes no finding;
- "a sync failure nobody hears of" needs the portal's notification rules, which only
  portal.notifications may read: on the same announcement it works out which of the apps a
  rule covers and hands that down to `derive_silence` (portal.notifications.finding_rules).
  That is simpler than keeping a copy of the rules here, and the rule's answer is as of the
  poll, as every other finding's;
- the raw-Secret finding is judged from Git: delivery's pin reader stores the paths of the
  plain Secrets an application builds on its `GitPinRead`, and `sync_git_findings` (the
  `findings.sync_git` task, every minute) brings the findings in line with them.

A missing notification rule is one finding per environment and tool, not one per app it
leaves silent (72 on a fresh install said one thing 72 times): each poll stores which of its
apps a failed sync would reach nobody from as SILENT rows (a fact, never shown), then the
GROUPED finding of each environment and tool it touched is written again from every SILENT
row of them, on one app of the group (`group_silent`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any, overload

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Window
from django.utils import timezone

from gitops.models import AppProject, Finding, FindingMute, GitOpsApp, StateChange, Workload
from portal.delivery.current_pins import pinned_versions
from portal.delivery.models import GitPinRead
from portal.findings.discipline import (
    GIT_RULES,
    GROUP_NAMED,
    GROUPED,
    SILENT,
    FindingContext,
    findings_for,
    group_message,
    no_failure_notification,
    raw_secret,
)
from portal.findings.practices import practice_findings
from portal.kernel.catalog.models import Environment

log = logging.getLogger(__name__)

MESSAGE_CHARS = 1000


def judged_apps(cluster_id: int, app_ids: Collection[int] | None = None) -> list[GitOpsApp]:
    """The apps read from this cluster (or those of `app_ids` among them), as the rules read
    them: with their cluster and its environment, without the columns no rule reads."""
    read_here = GitOpsApp.objects.filter(read_from_id=cluster_id)
    if app_ids is not None:
        read_here = read_here.filter(pk__in=sorted(app_ids))
    return list(
        read_here.select_related("cluster__environment").defer("history", "health_rules", "warnings")
    )


# The apps of the last announcement, as `judged_apps` loaded them (see `announced_apps`).
_announced: tuple[Collection[int], int, list[GitOpsApp]] | None = None


def announced_apps(cluster_id: int, read: Collection[int]) -> list[GitOpsApp]:
    """The apps a poll's `cluster_stored` announces as `read` from this cluster, as `judged_apps`
    loads them, loaded once for the announcement's receivers (the findings here, the silent
    failures of portal.notifications): they judge the same apps in the same transaction and
    write findings only, and loading 100 apps with their raw objects twice was a tenth of a full
    poll's CPU. An announcement is told by its `read` sequence itself: a signal hands every
    receiver the same object, the store builds a new one per announcement, and the one held
    here keeps its identity from being reused."""
    global _announced
    if _announced is not None and _announced[0] is read and _announced[1] == cluster_id:
        return _announced[2]
    apps = judged_apps(cluster_id, read)
    _announced = (read, cluster_id, apps)
    return apps


def _projects(cluster_id: int) -> dict[tuple[int, str], AppProject]:
    return {(p.cluster_id, p.name): p for p in AppProject.objects.filter(cluster_id=cluster_id)}


def _project(app: GitOpsApp, projects: dict[tuple[int, str], AppProject]) -> AppProject | None:
    return projects.get((app.read_from_id, app.project)) if app.tool == "argo" else None


def derive_findings(cluster_id: int, at: datetime | None = None, app_ids: Collection[int] | None = None) -> int:
    """Judge again the apps read from this cluster (or only those of `app_ids`: a poll that read
    only them; each finding is one app's, judged from that app, its AppProject and Git's pins)
    by every rule but the Git one and the silent sync failure; returns how many were written."""
    return judge_findings(cluster_id, judged_apps(cluster_id, app_ids), at)


def judge_findings(cluster_id: int, apps: list[GitOpsApp], at: datetime | None = None) -> int:
    """`derive_findings` for these apps (read from this cluster, as `judged_apps` loads them)."""
    at = at or timezone.now()
    projects = _projects(cluster_id)
    app_ids = [app.pk for app in apps]
    context = FindingContext(git_pins=pinned_versions(app_ids), suspended_since=suspended_since(apps))
    workloads = _workloads(app_ids)
    rows: list[Finding] = []
    for app in apps:
        production = bool(app.cluster.environment and app.cluster.environment.production)
        found = findings_for(app, production=production, project=_project(app, projects), context=context)
        found += practice_findings(app, workloads.get(app.pk, []), production=production, context=context)
        rows.extend(Finding(app=app, rule=f.rule, message=f.message[:MESSAGE_CHARS], at=at) for f in found)
    judged_here = Finding.objects.exclude(rule__in=GIT_RULES | {GROUPED, SILENT})
    return _replace(judged_here, [app.pk for app in apps], rows)


def _workloads(app_ids: list[int]) -> dict[int, list[Workload]]:
    """The workloads each app runs, with the columns the rules read (portal.findings.practices)."""
    by_app: dict[int, list[Workload]] = defaultdict(list)
    for workload in Workload.objects.filter(app_id__in=app_ids).only(
            "app_id", "kind", "namespace", "name", "containers", "spec_facts").order_by("pk"):
        by_app[workload.app_id].append(workload)
    return by_app


def suspended_since(apps: Iterable[GitOpsApp]) -> dict[int, tuple[datetime, bool]]:
    """For each suspended app, when the store saw it become suspended (its last StateChange to
    suspended, exact), else when the portal first saw it (suspended from the start: "at least")."""
    suspended = {app.pk: app for app in apps if app.suspended}
    if not suspended:
        return {}  # most polls: no query to build
    changed = dict(StateChange.objects.filter(app_id__in=list(suspended), field="suspended", new="True")
                   .order_by("app_id", "at").values_list("app_id", "at"))  # the latest wins
    return {pk: (changed[pk], True) if pk in changed else (app.first_seen, False) for pk, app in suspended.items()}


def derive_silence(cluster_id: int, apps: Iterable[GitOpsApp], heard: Collection[int],
                   at: datetime | None = None, *, every_app: bool = True) -> int:
    """Store which of `apps` (read from this cluster, as `judged_apps` loads them) a failed sync
    would reach nobody from — `heard`: the apps a portal notification rule covers — as SILENT
    rows, then write again the GROUPED finding of every environment and tool they belong to;
    returns how many grouped findings were written.

    A group is written again only when it may say something new: these apps' SILENT rows changed,
    or `every_app` (they are all the cluster's apps, as a full poll reads them: an app it removed
    took its SILENT row along, and a cluster renamed since is read in full). A partial poll whose
    apps stay as silent as they were leaves the groups alone: regrouping took an environment's
    lock and read its whole group, for every changed app of every poll (a tenth of such a poll's
    CPU at 1,000 clusters). What else moves a group's words without a SILENT row moving (an
    environment renamed) is written by the cluster's next full poll, within the hour
    (gitops.derive.unchanged.FULL_POLL_EVERY)."""
    at = at or timezone.now()
    apps = list(apps)
    projects = _projects(cluster_id)
    context = FindingContext(notified_by_portal=set(heard))
    rows = [
        Finding(app=app, rule=SILENT, message=found.message[:MESSAGE_CHARS], at=at)
        for app in apps
        if (found := no_failure_notification(app, _project(app, projects), context)) is not None
    ]
    silent = Finding.objects.filter(rule=SILENT)
    changed = _changed_apps(silent, [app.pk for app in apps], rows)
    _rewrite(silent, changed, rows)
    if not changed and not every_app:
        return 0
    groups = {(app.cluster.environment_id if app.cluster_id else None, app.tool) for app in apps}
    return group_silent(groups, at)


def _replace(judged: QuerySet[Finding], app_ids: list[int], rows: list[Finding]) -> int:
    """Replace the findings of `judged` (one family of rules) of the apps `app_ids` with `rows`,
    app by app where they say something new: an app judged as before keeps its rows and their
    time (when it was first found so), and a poll that changed nothing writes nothing. Returns
    how many rows were written."""
    return _rewrite(judged, _changed_apps(judged, app_ids, rows), rows)


def _changed_apps(judged: QuerySet[Finding], app_ids: list[int], rows: list[Finding]) -> set[int]:
    """The apps of `app_ids` whose findings of `judged` are not `rows`' (gained, lost or reworded)."""
    stored: dict[int, set[tuple[str, str]]] = defaultdict(set)
    for app_id, rule, message in judged.filter(app_id__in=app_ids).values_list("app_id", "rule", "message"):
        stored[app_id].add((rule, message))
    wanted: dict[int, set[tuple[str, str]]] = defaultdict(set)
    for row in rows:
        wanted[row.app_id].add((row.rule, row.message))
    return {app_id for app_id in app_ids if stored[app_id] != wanted[app_id]}


def _rewrite(judged: QuerySet[Finding], changed: set[int], rows: list[Finding]) -> int:
    if not changed:
        return 0
    written = [row for row in rows if row.app_id in changed]
    with transaction.atomic():
        judged.filter(app_id__in=sorted(changed)).delete()
        Finding.objects.bulk_create(written)
    return len(written)


def group_silent(groups: Collection[tuple[int | None, str]], at: datetime) -> int:
    """Write again the GROUPED finding of each (environment id, tool) of `groups` from all their
    SILENT rows, whichever cluster's poll stored them, where it says something new; returns how
    many were written.

    The finding sits on one of its apps: one that carries a mute of the rule if any does (so a
    mute survives polls as every mute does, by naming an app and the rule), else the first by
    cluster, namespace and name. Polls of two clusters of one environment take turns (the
    environment's row is locked), so each group has one finding.

    Its words need the members' count and the first few of them (`group_message`), and that is
    all that is read: a group holds every silent app of an environment (30,000 at 1,000
    clusters), and every poll that stores apps of it writes its finding again."""
    written = 0
    order = ("app__cluster__name", "app__namespace", "app__name")
    with transaction.atomic():
        list(Environment.objects.select_for_update().filter(pk__in={env for env, _ in groups if env is not None}))
        for environment_id, tool in sorted(groups, key=lambda g: (g[0] or 0, g[1])):
            scope = (Q(app__cluster__environment_id=environment_id) if environment_id is not None
                     else Q(app__cluster__environment__isnull=True))
            existing = Finding.objects.filter(scope, rule=GROUPED, app__tool=tool)
            silent = Finding.objects.filter(scope, rule=SILENT, app__tool=tool).order_by(*order)
            # The first members and, on each row, how many there are in all (the window is counted
            # before the limit): one query whatever the group's size.
            first = list(silent.annotate(total=Window(Count("pk"))).values_list(
                "app_id", "app__name", "app__cluster__name", "app__cluster__environment__name", "total")[:GROUP_NAMED])
            if not first:
                existing.delete()
                continue
            muted = FindingMute.objects.filter(rule=GROUPED, app_id=OuterRef("app_id"))
            carrier = silent.filter(Exists(muted)).values_list("app_id", flat=True).first() or first[0][0]
            members = _Members([(name, cluster) for _, name, cluster, _, _ in first], first[0][4])
            message = group_message(tool, first[0][3], members)[:MESSAGE_CHARS]
            if list(existing.values_list("app_id", "message")) == [(carrier, message)]:
                continue  # said as it was: the row (and its time) stays, as an unchanged app's findings do
            existing.delete()
            Finding.objects.create(app_id=carrier, rule=GROUPED, message=message, at=at)
            written += 1
    return written


class _Members(Sequence[tuple[str, str]]):
    """A group's members as `group_message` reads them: the first ones named, and how many there
    are. Asking for a member past the first ones is an error, not a guess."""

    def __init__(self, first: list[tuple[str, str]], total: int) -> None:
        self.first, self.total = first, total

    def __len__(self) -> int:
        return self.total

    @overload
    def __getitem__(self, index: int) -> tuple[str, str]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[str, str]]: ...

    def __getitem__(self, index: int | slice) -> tuple[str, str] | Sequence[tuple[str, str]]:
        start, stop, step = index.indices(self.total) if isinstance(index, slice) else (index, index + 1, 1)
        if start < 0 or step != 1 or stop > len(self.first):
            raise IndexError("only the first members of a group are read")
        return self.first[index]


def sync_git_findings(at: datetime | None = None) -> int:
    """Bring the raw-Secret findings in line with the plain Secrets delivery's pin reader found
    (`GitPinRead.plain_secrets`): a finding where one is found, none where a read found none
    (an application not read since that was kept keeps its finding); a finding that says the
    same stays as it was. Returns how many findings were written or removed. A few small
    queries when nothing changed: plain Secrets in Git are rare."""
    at = at or timezone.now()
    reads = GitPinRead.objects.filter(plain_secrets__isnull=False)
    found = dict(reads.exclude(plain_secrets=[]).values_list("app_id", "plain_secrets"))
    stored = dict(Finding.objects.filter(rule__in=GIT_RULES).values_list("app_id", "message"))
    # A stored finding of an app whose reads say nothing yet (null) stays.
    stored_known = set(reads.filter(app_id__in=list(stored)).values_list("app_id", flat=True))
    names = dict(GitOpsApp.objects.filter(pk__in=list(found)).values_list("pk", "name"))
    wanted: dict[int, str] = {}
    for app_id, paths in found.items():
        judged = raw_secret(GitOpsApp(pk=app_id, name=names.get(app_id, "")), paths) if app_id in names else None
        if judged is not None:
            wanted[app_id] = judged.message[:MESSAGE_CHARS]
    changed = sorted(
        app_id for app_id in wanted.keys() | stored_known if wanted.get(app_id) != stored.get(app_id)
    )
    if not changed:
        return 0
    with transaction.atomic():
        Finding.objects.filter(app_id__in=changed, rule__in=GIT_RULES).delete()
        Finding.objects.bulk_create(
            [Finding(app_id=app_id, rule="raw-secret", message=wanted[app_id], at=at)
             for app_id in changed if app_id in wanted]
        )
    return len(changed)


def on_cluster_stored(sender: Any, cluster: Any, read: Collection[int] = (), at: datetime | None = None,
                      **kwargs: Any) -> None:
    """A poll stored the apps `read` from `cluster` (none: only running versions placed there by
    another cluster's poll changed): judge them again, within the poll's transaction."""
    if not read:
        return
    try:
        with transaction.atomic():  # a savepoint: findings never cost a poll its data
            judge_findings(cluster.pk, announced_apps(cluster.pk, read), at)
    except Exception:  # noqa: BLE001 - logged; the apps are stored all the same
        log.exception("findings of %s not derived", cluster.name)

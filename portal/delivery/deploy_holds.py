"""What holds a deploy to an environment, and the next time a service can deploy there.

Four things hold a deploy: an Argo CD sync window (the app's AppProject, judged by
`gitops.syncwindows.evaluate`, the code behind every badge), a change freeze of the environment
(`portal.delivery.freezes`: upgrades and promotions wait, rollbacks never do), a suspended Flux
object (no end until someone resumes it) and, as a caveat rather than a hold, an app without
automated sync (it deploys when someone syncs it; its windows are judged for a manual sync,
as its badge does).

`DeployHolds.load` reads the apps, their AppProjects' windows and the freezes in three queries,
however many services and environments it is asked about; the calendar
(`portal.delivery.deploy_calendar`), the service page, the API and MCP read it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from django.db.models import Prefetch, TextField
from django.db.models.functions import Cast

from gitops import syncwindows
from gitops.models import AppProject, GitOpsApp
from gitops.queries import with_ids, with_ids_from
from gitops.windowstate import app_target
from portal.delivery.models import ChangeFreeze
from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.kernel.links import app_page_path
from portal.kernel.timestamps import utc_stamp

# Each step moves past one hold; holds that keep handing over to each other (a freeze ending
# inside a window ending inside the next freeze …) are followed this far, then called endless.
MAX_STEPS = 50


@dataclass(frozen=True)
class HeldApp:
    """One GitOps app as the holds read it: where it deploys, what it deploys, its windows."""

    name: str
    namespace: str
    cluster: str
    environment: str
    tool: str
    manual_sync: bool
    suspended: bool
    services: tuple[str, ...]
    project: str  # Argo CD AppProject ("" for Flux)
    project_cluster: str  # where that AppProject was read (a hub's own cluster for a hub's app)
    target: dict[str, str]  # the `app` argument of syncwindows.evaluate
    windows: list[dict] | None  # the AppProject's spec.syncWindows; None: Flux, or project not read
    # The same windows compiled once per AppProject: a service in every cluster of a large fleet
    # has its verdicts asked thousands of times a page, and compiling the windows again for each
    # (cron parsing) was 1.2 s of a 3.5 s service page (bench/pages.py --polled, 2,100 apps).
    compiled: syncwindows.CompiledWindows | None = None

    @property
    def path(self) -> str:
        """The portal page that shows the app (its service's page, or /gitops filtered to it)."""
        return app_page_path(self.services, self.cluster, self.name)

    @property
    def label(self) -> str:
        """The app as the sentences name it: apps of one name run on several clusters."""
        return f"{self.name} on {self.cluster}"


@dataclass(frozen=True)
class NextDeploy:
    """When a service can next deploy to an environment, and what holds it until then.

    `at` is None when a hold has no end in sight (a suspension, a window that never reopens
    within Argo CD's reach, or holds that keep handing over to each other); `now` when nothing
    holds it at the time asked. `holds` says, in order, each hold it waits for.
    """

    service: str
    environment: str
    asked_at: datetime
    at: datetime | None
    holds: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    @property
    def now(self) -> bool:
        return self.at == self.asked_at

    @property
    def reason(self) -> str:
        """One line: what holds it, or that nothing does."""
        words = "; then ".join(self.holds) if self.holds else "nothing holds it"
        return words + "".join(f" ({caveat})" for caveat in self.caveats)


def freeze_covers(freeze: ChangeFreeze, environment: str) -> bool:
    """`ChangeFreeze.objects.in_effect`'s environment rule for a freeze already loaded with its
    environments: one naming no environment covers them all."""
    names = [env.name for env in freeze.environments.all()]
    return not names or environment in names


class _AppRow(NamedTuple):
    """The columns of an app the holds read (`DeployHolds.load`), named as `values_list` names them."""

    id: int
    name: str
    namespace: str
    tool: str
    project: str
    manual_sync: bool
    suspended: bool
    destination_name: str
    destination_namespace: str
    destination_server: str
    cluster_id: int
    read_from_id: int | None
    cluster: str  # the names, read apart (`DeployHolds.load`)
    environment: str
    read_from: str


# What is read of the apps table itself: the fields before the names.
_APP_COLUMNS = _AppRow._fields[:-3]


@dataclass
class DeployHolds:
    apps: list[HeldApp]
    freezes: list[ChangeFreeze]
    # A verdict depends on the app only through which of its project's windows match it: apps
    # matched by the same windows share it (`verdict`). A service in 1,000 clusters asks 2,100.
    _matched: dict[int, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)
    _verdicts: dict[tuple, syncwindows.SyncWindowVerdict] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, since: datetime, *, environments: Iterable[str] | None = None,
             services: Iterable[str] | None = None, clusters: Iterable[str] | None = None) -> DeployHolds:
        """The apps deploying `services` to `environments` on `clusters` (None: all), their
        AppProjects' windows, and the freezes not over at `since`. Six queries."""
        # The clusters first (a small table), then the apps by their ids and the link table's,
        # never joined: joined to the clusters, an apps table never analyzed was walked whole
        # along an index ordered by cluster (174 ms at 100,000 apps; 644 ms made DISTINCT).
        places = Cluster.objects.filter(environment__isnull=False)
        if environments is not None:
            places = places.filter(environment__name__in=list(environments))
        if clusters is not None:
            places = places.filter(name__in=list(clusters))
        where = {pk: (name, env) for pk, name, env in places.values_list("pk", "name", "environment__name")}
        rows = with_ids(GitOpsApp.objects.all(), where, "cluster_id")
        if services is not None:
            deploying = GitOpsApp.services.through.objects.filter(service__name__in=list(services))
            rows = with_ids_from(rows, deploying.values("gitopsapp_id"))
        # Read as values, not model instances: 250 instances and a prefetch were a quarter of a
        # service page's time at 100,000 applications (issue 40).
        found = [_AppRow._make((*row, "", "", "")) for row in rows.values_list(*_APP_COLUMNS)]
        # Where an Argo CD app was read (its AppProject's cluster): a hub may be in no environment.
        read_from = {pk: name for pk, (name, _env) in where.items()}
        read_from.update(Cluster.objects.filter(pk__in={app.read_from_id for app in found} - set(where))
                         .values_list("pk", "name"))
        loaded = sorted((app._replace(cluster=where[app.cluster_id][0], environment=where[app.cluster_id][1],
                                      read_from=read_from.get(app.read_from_id, "")) for app in found),
                        key=lambda app: (app.cluster, app.namespace, app.name))
        # The services each app deploys, by id and then named: joined to the services, the link
        # table was probed once per service (45 ms).
        linked = with_ids(GitOpsApp.services.through.objects.all(), [app.id for app in loaded], "gitopsapp_id")
        pairs = list(linked.values_list("gitopsapp_id", "service_id"))
        service_names = dict(Service.objects.filter(pk__in={s for _, s in pairs}).values_list("pk", "name"))
        names: dict[int, list[str]] = defaultdict(list)
        for app_id, service_id in pairs:
            names[app_id].append(service_names[service_id])
        wanted = {(app.read_from_id, app.project or "default") for app in loaded if app.tool == "argo"}
        # The windows read as text, then decoded and compiled once per distinct text: a fleet's
        # clusters mostly carry the same AppProjects, and a service in 1,000 clusters reads 1,000.
        read = (AppProject.objects.filter(cluster_id__in={c for c, _ in wanted}, name__in={n for _, n in wanted})
                .annotate(windows_text=Cast("sync_windows", TextField()))
                .values_list("cluster_id", "name", "windows_text"))
        decoded: dict[str, tuple[list[dict], syncwindows.CompiledWindows | None]] = {}
        projects, compiled = {}, {}
        for cluster_id, name, text in read:
            if text not in decoded:
                windows = json.loads(text) if text else None
                windows = windows if isinstance(windows, list) else []
                decoded[text] = (windows, syncwindows.compile_windows(windows) if windows else None)
            projects[(cluster_id, name)], compiled[(cluster_id, name)] = decoded[text]
        apps = []
        for app in loaded:
            project = (app.project or "default") if app.tool == "argo" else ""
            apps.append(HeldApp(
                name=app.name, namespace=app.namespace, cluster=app.cluster,
                environment=app.environment, tool=app.tool, manual_sync=app.manual_sync,
                suspended=app.suspended, services=tuple(sorted(names[app.id])), project=project,
                project_cluster=app.read_from if project else "", target=app_target(app),
                windows=projects.get((app.read_from_id, project)) if project else None,
                compiled=compiled.get((app.read_from_id, project)) if project else None,
            ))
        freezes = list(ChangeFreeze.objects.filter(ends_at__gt=since).order_by("starts_at", "id")
                       .prefetch_related(Prefetch("environments", queryset=Environment.objects.only("name"))))
        return cls(apps=apps, freezes=freezes)

    def verdict(self, app: HeldApp, at: datetime) -> syncwindows.SyncWindowVerdict | None:
        """The badge's verdict for `app` (one of `apps`) at `at`, or None when no sync window can
        hold it; shared by the apps that the same windows match (of one AppProject, or of any with
        the same windows: `load` compiles each distinct text once). Remembered by the identity of
        the app and of its windows, which live as long as these holds."""
        if not app.windows:
            return None
        windows = app.compiled or app.windows
        matched = self._matched.get(id(app))
        if matched is None:
            matched = tuple(window.index for window in syncwindows.matching_windows(windows, app.target))
            self._matched[id(app)] = matched
        key = (id(windows), matched, app.manual_sync, at)
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = syncwindows.evaluate(windows, app.target, at, manual=app.manual_sync)
        return found

    def in_environment(self, environment: str, service: str | None = None) -> list[HeldApp]:
        return [app for app in self.apps
                if app.environment == environment and (service is None or service in app.services)]

    def freezes_of(self, environment: str) -> list[ChangeFreeze]:
        return [freeze for freeze in self.freezes if freeze_covers(freeze, environment)]

    def next_deploy(self, service: str, environment: str, at: datetime) -> NextDeploy | None:
        """The first instant from `at` on at which every app deploying `service` to `environment`
        may sync and no freeze holds the environment; None when no app deploys it there."""
        apps = self.in_environment(environment, service)
        if not apps:
            return None
        caveats = [f"{app.label} has no automated sync: it deploys when someone syncs it"
                   for app in apps if app.manual_sync]
        suspended = [app.label for app in apps if app.suspended]
        if suspended:
            return NextDeploy(service, environment, at, None,
                              [f"{', '.join(suspended)} suspended (spec.suspend: true), with no end in sight"], caveats)
        freezes = self.freezes_of(environment)
        when, holds = at, list[str]()
        for _ in range(MAX_STEPS):
            moved = False
            for app in apps:
                verdict = self.verdict(app, when)
                if verdict is None or verdict.can_sync:
                    continue
                if verdict.blocked_until is None:
                    return NextDeploy(service, environment, at, None, [*holds, f"{app.label}: {verdict.summary()}"],
                                      caveats)
                if verdict.blocked_until > when:
                    holds.append(f"{app.label}: {verdict.summary()}")
                    when, moved = verdict.blocked_until, True
            frozen = [f for f in freezes if f.starts_at <= when < f.ends_at]
            if frozen:
                last = max(frozen, key=lambda f: f.ends_at)
                holds.append(f"change freeze '{last.reason}' until {utc_stamp(last.ends_at)} "
                             "(upgrades and promotions wait; rollbacks do not)")
                when, moved = last.ends_at, True
            if not moved:
                return NextDeploy(service, environment, at, when, holds, caveats)
        return NextDeploy(service, environment, at, None, [*holds, "the holds keep handing over to each other"],
                          caveats)

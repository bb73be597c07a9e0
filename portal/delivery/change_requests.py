"""A change request as pages, the API and MCP name it, made into changes.

The page's URL, a form and the API's JSON name a change the same way: a kind, items
`app:service:version[:from]` (`w31` for a workload outside GitOps, `chart=<name>` for a chart
version change), a mode (`grouped`: one pull request per repository, branch and environment;
`each`: one per line) and `confirm` (the default branch chosen for an application that follows
a tag). Parsing and building live here, below the pages and the API, so both open exactly
the same pull requests (portal.delivery.change_previews previews and opens them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.http import QueryDict

from gitops.models import ATTENTION_HEALTH, GitOpsApp, Workload
from portal.delivery.change_builders import (
    MAX_CHANGES_PER_PR,
    ChangeError,
    change_for_chart,
    change_for_rollback,
    change_for_workload,
    change_forward,
    group_changes,
)
from portal.delivery.planner import KINDS, ROLLBACK, UPGRADE, Change
from portal.kernel.catalog.models import Service
from portal.kernel.links import CHART_SUBJECT, EACH, GROUPED
from portal.releases.excerpts import notes_for, share

CONFIRM = "confirm"  # the default branch chosen for an application that follows a tag
CHART_ITEM = CHART_SUBJECT  # an item's "service" that names a chart: a chart version change


def confirmed(params: QueryDict) -> bool:
    return params.get(CONFIRM) == "1"


class RequestError(ValueError):
    pass


@dataclass(frozen=True)
class Item:
    app_id: int | None  # a GitOps application, or
    service: str
    to_version: str
    from_version: str = ""
    workload_id: int | None = None  # a workload outside GitOps (gitops.platforms)

    @property
    def target(self) -> str:
        """How the URL names what the change lands in: `12` or `w31`."""
        return f"w{self.workload_id}" if self.workload_id is not None else str(self.app_id)


def parse_items(params: QueryDict) -> tuple[str, list[Item], str]:
    """(kind, items, mode) from the query string or form; RequestError when it does not read."""
    kind = params.get("kind") or UPGRADE
    if kind not in KINDS:
        raise RequestError(f"unknown kind {kind!r}")
    mode = params.get("mode") or GROUPED
    if mode not in (GROUPED, EACH):
        raise RequestError(f"unknown mode {mode!r}")
    items: list[Item] = []
    if params.get("service") or params.get("app"):
        items.append(_item(params.get("app", ""), params.get("service", ""), params.get("to", ""), params.get("from")))
    for raw in params.getlist("item"):
        parts = raw.split(":")
        if len(parts) not in (3, 4):
            raise RequestError(f"an item is app:service:version, not {raw!r}")
        items.append(_item(*parts))
    if not items:
        raise RequestError("Choose at least one service to change.")
    if len(items) > MAX_CHANGES_PER_PR:
        raise RequestError(f"At most {MAX_CHANGES_PER_PR} changes at once.")
    return kind, list(dict.fromkeys(items)), mode


def _item(app: str, service: str, to: str, from_version: str | None = None) -> Item:
    workload = app[1:] if app.startswith("w") else None
    if not (workload or app).isdigit() or not service or not to:
        raise RequestError("A change names an application (id), a service and a target version.")
    if workload is not None:
        return Item(None, service, to, from_version or "", workload_id=int(workload))
    return Item(int(app), service, to, from_version or "")


@dataclass
class Built:
    """The changes a request names, and the items left out of a request of several, with why
    (a cluster whose Git already pins the version: merged, waiting to deploy)."""

    changes: list[Change]
    left_out: list[str]


def build_changes(kind: str, items: list[Item]) -> Built:
    """The request's changes. One item that cannot become a change fails the request; of
    several, it is left out and said so, unless none can be made."""
    apps = {
        a.pk: a
        for a in GitOpsApp.objects.filter(pk__in=[i.app_id for i in items if i.app_id is not None]).select_related(
            "cluster__environment"
        )
    }
    workloads = {
        w.pk: w
        for w in Workload.objects.filter(
            pk__in=[i.workload_id for i in items if i.workload_id is not None]
        ).select_related("cluster__environment")
    }
    services = {s.name: s for s in Service.objects.filter(name__in=[i.service for i in items])}
    built = Built([], [])
    errors: list[str] = []
    for item in items:
        try:
            built.changes.append(_change_of(kind, item, len(items), apps, workloads, services))
        except ChangeError as error:
            if len(items) == 1:
                raise
            errors.append(str(error))
            where = apps.get(item.app_id) if item.app_id is not None else workloads.get(item.workload_id or 0)
            named = f"{where.name} on {where.cluster.name}" if where is not None else item.target
            built.left_out.append(f"{named}: {error}")
    if not built.changes:
        raise ChangeError("; ".join(dict.fromkeys(errors)))
    return built


def _change_of(
    kind: str,
    item: Item,
    count: int,
    apps: dict[int, GitOpsApp],
    workloads: dict[int, Workload],
    services: dict[str, Service],
) -> Change:
    if item.workload_id is not None:
        workload, service = workloads.get(item.workload_id), services.get(item.service)
        if workload is None or service is None:
            raise RequestError(f"No workload {item.workload_id} or no service {item.service!r}.")
        notes = notes_for(service, item.to_version, max_chars=share(count))
        return change_for_workload(
            kind, workload, service, item.to_version, from_version=item.from_version or None, release_notes=notes
        )
    if item.service.startswith(CHART_ITEM):
        chart_app = apps.get(item.app_id)  # type: ignore[arg-type]
        if chart_app is None:
            raise RequestError(f"No application {item.app_id}.")
        failure, since = _failure(chart_app) if kind == ROLLBACK else ("", None)
        return change_for_chart(
            kind,
            chart_app,
            item.to_version,
            from_version=item.from_version or None,
            chart=item.service.removeprefix(CHART_ITEM),
            failure=failure,
            failing_since=since,
        )
    app, service = apps.get(item.app_id), services.get(item.service)  # type: ignore[arg-type]
    if app is None or service is None:
        raise RequestError(f"No application {item.app_id} or no service {item.service!r}.")
    start = item.from_version or None
    if kind == ROLLBACK:
        failure, since = _failure(app)
        return change_for_rollback(
            app, service, item.to_version, from_version=start, failure=failure, failing_since=since
        )
    # Ticked together, the services may share one pull request: so they share its room.
    notes = notes_for(service, item.to_version, max_chars=share(count))
    return change_forward(kind, app, service, item.to_version, from_version=start, release_notes=notes)


def _failure(app: GitOpsApp) -> tuple[str, datetime | None]:
    """What a rollback's description says went wrong, and since when (nothing when it is healthy now)."""
    if app.health_status not in ATTENTION_HEALTH:
        return "", None
    failure = f"{app.name} on {app.cluster.name} is {app.health_status}"
    if app.health_message:
        failure += f" ({app.health_message[:300]})"
    return failure, app.health_since


def pull_requests_for(changes: list[Change], mode: str) -> list[tuple[Change, ...]]:
    if mode == EACH:
        return [(change,) for change in changes]
    return group_changes(changes)


def services_of(changes: Sequence[Change]) -> list[str]:
    """The catalog services `changes` act on: the ones each names, and for a chart version
    change (which names none) the services its applications deploy."""
    names = [name for change in changes for name in change.services]
    chart_apps = [app for change in changes if not change.services for app in change.apps]
    if chart_apps:
        names += Service.objects.filter(apps__in=chart_apps).values_list("name", flat=True)
    return list(dict.fromkeys(names))


def params_of(kind: str, items: Sequence[str], mode: str, confirm: bool) -> QueryDict:
    """A request's parameters as the page's form sends them, from the API's JSON body."""
    params = QueryDict(mutable=True)
    params.update({"kind": kind, "mode": mode})
    params.setlist("item", list(items))
    if confirm:
        params[CONFIRM] = "1"
    return params

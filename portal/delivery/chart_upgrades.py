"""Charts behind: applications installing a chart from a Helm or OCI repository whose pinned chart
version is older than the newest version the policy of their first service accepts, and those
following a range (nothing to change). The chart counterpart of portal.delivery.upgrades (image
tags), read from the store only (`ChartVersion` rows kept by portal.releases.charts), in a fixed
handful of queries, for the matrix, the Updates page and automatic pull requests alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Q
from django.utils import timezone

from gitops.models import GitOpsApp
from portal.delivery.change_builders import no_chart_pr_reasons
from portal.delivery.models import PullRequest
from portal.delivery.upgrades import open_upgrade_prs, service_policies
from portal.delivery.version_policy import VersionPolicy, newest_acceptable
from portal.kernel.catalog.models import Service
from portal.kernel.links import safe_http_url
from portal.releases.charts import ChartPin, ChartRef, chart_pin, may_install_a_chart, versions_of
from portal.releases.models import ChartVersion
from portal.releases.versions import jump


@dataclass
class ChartBehind:
    """An application whose pinned chart version is older than the newest version of the
    chart its service's policy accepts (`target`), or that follows a range (`follows`, no
    target: nothing to change)."""

    app: GitOpsApp
    pin: ChartPin
    target: str | None
    jump: str = ""
    no_pr: str = ""  # why no pull request can be proposed (no Git location known), else ""
    service: Service | None = None  # the app's first service (by name), whose policy judged the target
    open_pr: PullRequest | None = None  # an open pull request already proposing the target

    @property
    def environment(self) -> str:
        return self.app.cluster.environment.name

    @property
    def open_pr_link(self) -> str | None:
        """The open pull request's page, when its URL is http(s)."""
        return safe_http_url(self.open_pr.url) if self.open_pr is not None else None

    @property
    def follows(self) -> str:
        return self.pin.follows


def charts_behind(*, app_ids: list[int] | None = None, today: date | None = None) -> list[ChartBehind]:
    """Applications installing a chart from a Helm or OCI repository: those pinned behind the
    newest acceptable version (`portal.releases.charts` keeps what each repository offers), and
    those following a range, of the charts whose versions were read. The policy is that of the
    application's first service (by name), the default policy when it has none. A fixed
    handful of queries."""
    today = today or timezone.now().date()
    # Only the charts whose repository was read: a fleet without charts reads no application.
    charts = set(ChartVersion.objects.values_list("chart", flat=True).distinct())
    if not charts:
        return []
    candidates = GitOpsApp.objects.filter(Q(chart__in=charts) | (may_install_a_chart() & Q(chart="")))
    apps = candidates.select_related("cluster__environment").defer(
        "raw", "history", "conditions", "synced_revisions", "images", "warnings"
    )
    if app_ids is not None:
        apps = apps.filter(pk__in=app_ids)
    pinned = [(app, pin) for app in apps.order_by("cluster__name", "name") if (pin := chart_pin(app)) is not None]
    if not pinned:
        return []
    offered = versions_of({pin.ref for _, pin in pinned})
    first_service: dict[int, Service] = {}
    for app_id, service in (
        (link.gitopsapp_id, link.service)
        for link in GitOpsApp.services.through.objects.filter(gitopsapp_id__in=[a.pk for a, _ in pinned])
        .select_related("service")
        .order_by("service__name")
    ):
        first_service.setdefault(app_id, service)
    policies = service_policies(list({s.pk: s for s in first_service.values()}.values()))
    found: list[ChartBehind] = []
    for app, pin in pinned:
        if app.cluster.environment is None:
            continue
        if pin.is_range:
            found.append(ChartBehind(app, pin, None))
            continue
        service = first_service.get(app.pk)
        policy = policies.get(service.pk, VersionPolicy()) if service is not None else VersionPolicy()
        target = newest_acceptable(pin.version, offered.get(pin.ref, []), policy, today)
        if target and target != pin.version:
            found.append(ChartBehind(app, pin, target, jump(pin.version, target) or "patch", service=service))
    reasons = no_chart_pr_reasons([line.app for line in found if line.target])
    prs = open_upgrade_prs() if any(line.target for line in found) else []
    for line in found:
        line.no_pr = reasons.get(line.app.pk, "")
        if line.target:
            line.open_pr = _open_chart_pr(prs, line.pin.ref, line.environment, line.target)
    return found


def _open_chart_pr(prs: list[PullRequest], chart: ChartRef, environment: str, target: str) -> PullRequest | None:
    for pr in prs:
        if (pr.names_chart(chart.chart) and pr.image == chart.repository and pr.environment == environment
                and target in pr.to_version.split(",")):
            return pr
    return None

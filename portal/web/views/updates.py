"""/updates: every service behind its newest acceptable release, with Open PR and Put off on each
line, ticks to open several at once; the versions held after a rollback, with an undo; and the
change freezes admins define. Reads the store only.

The list is paged on the server, its filters (service, environment) in the query string so a
filtered view can be shared and the pager's links keep it: a new release of a service that
runs on thousands of clusters puts thousands of lines behind, and one page of them is what a
person ticks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from itertools import groupby
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_safe

from portal.delivery import holds
from portal.delivery.change_builders import MAX_CHANGES_PER_PR
from portal.delivery.chart_upgrades import ChartBehind, charts_behind
from portal.delivery.deployments import not_deployed_why
from portal.delivery.freezes import current_and_coming
from portal.delivery.holds import held_versions
from portal.delivery.models import AutoPRAttempt, ChangeFreeze
from portal.delivery.upgrades import Behind, BehindLines, put_off
from portal.kernel.accounts.roles import Role, has_role, post_only, requires_role
from portal.kernel.accounts.teams import refusal
from portal.kernel.audit.models import record
from portal.kernel.catalog.models import Environment, Service
from portal.releases import summaries
from portal.releases.models import ImageSbom, RegistryPoll, Release, ReleaseSummary
from portal.releases.vulns import SupplyChainDiff, diffs_many, summary

DEFAULT_PUT_OFF_DAYS = 14
PAGE_SIZE = 50  # lines behind per page; the counts atop say how many in all
FILTERS = ("service", "environment")


@dataclass
class UpdateRow:
    """One line of the list: a line behind as the delivery layer finds it (`line`) and what the
    page reads beside it, each from one query for the shown page."""

    line: Behind
    pr_why: str = ""  # why its merged pull request does not run yet (deployments.not_deployed_why)
    release_summary: ReleaseSummary | None = None  # generated from the release notes, when configured
    supply_chain: str = ""  # what moving to the target fixes and brings; "" when not compared
    auto_attempt: AutoPRAttempt | None = None  # the automatic job's last attempt there


@dataclass
class ChartRow:
    """One line of the chart versions table: a chart pinned behind (`line`) and the automatic
    job's last attempt of that chart there."""

    line: ChartBehind
    auto_attempt: AutoPRAttempt | None = None


class FreezeForm(forms.ModelForm):
    starts_at = forms.DateTimeField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    ends_at = forms.DateTimeField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    environments = forms.ModelMultipleChoiceField(
        queryset=Environment.objects.all(), required=False, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = ChangeFreeze
        fields = ["starts_at", "ends_at", "environments", "reason"]


def _filters(request: HttpRequest) -> tuple[dict[str, str], Service | None, str | None]:
    """The list's filters as the URL gives them (kept by the pager's links); a name that is
    not a service or an environment filters nothing rather than failing."""
    params = {key: request.GET.get(key, "").strip() for key in FILTERS}
    service = Service.objects.filter(name=params["service"]).first() if params["service"] else None
    if service is None:
        params["service"] = ""
    environment = params["environment"] if Environment.objects.filter(name=params["environment"]).exists() else ""
    params["environment"] = environment
    return params, service, environment or None


@require_safe
@requires_role(Role.VIEWER)
def updates(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    params, service, environment = _filters(request)
    found = BehindLines(service=service, environment=environment, today=now.date())
    # The pager counts the lines in SQL and reads only the shown page's (LIMIT/OFFSET); only
    # those load their applications.
    page = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    lines = found.load(lines=list(page.object_list)) if page.object_list else []
    rows, supply_chain_note = _rows(lines, now)
    chart_lines = charts_behind(today=now.date())
    charts = _attempts(rows, chart_lines)
    by_service = [(svc, list(group)) for svc, group in groupby(rows, key=lambda row: row.line.service)]
    context = {
        "by_service": by_service,
        "supply_chain_note": supply_chain_note,
        "page": page,
        "params": params,
        "query": urlencode({k: v for k, v in params.items() if v}),
        "filtered": any(params.values()),
        "line_count": len(found),
        "behind_service_count": len(found.services),
        "service_choices": Service.objects.order_by("name").values_list("name", flat=True),
        "environment_choices": Environment.objects.values_list("name", flat=True),
        "service_count": Service.objects.count(),
        "freezes": current_and_coming(now),
        "now": now,
        "can_act": has_role(request.user, Role.MEMBER),
        "is_admin": has_role(request.user, Role.ADMIN),
        "freeze_form": FreezeForm(),
        "put_off_default": (now.date() + timedelta(days=DEFAULT_PUT_OFF_DAYS)).isoformat(),
        "tomorrow": (now.date() + timedelta(days=1)).isoformat(),
        "max_ticks": MAX_CHANGES_PER_PR,
        # Chart versions pinned behind what the chart repository offers, and charts that follow a range.
        "chart_lines": charts,
        # Versions held after a rollback, with who, when, why and an undo.
        "held": held_versions(service, environment),
        # "Nothing is behind" is only true of services whose releases were read: say which were not.
        "services_with_releases": Release.objects.values("service").distinct().count(),
        "registry_errors": list(
            RegistryPoll.objects.exclude(last_error="").select_related("service").order_by("service__name")[:20]
        ),
        "notes_errors": list(
            RegistryPoll.objects.exclude(notes_error="").select_related("service").order_by("service__name")[:20]
        ),
    }
    return render(request, "web/updates.html", context)


# Why a line's supply chain could not be compared, by what the store holds of its images' SBOMs.
UNCHECKED_WHY = {
    "unread": "not read yet (the registry digest or the SBOM of a version)",
    ImageSbom.NONE: "an image publishes no SBOM",
    ImageSbom.TOO_LARGE: "an SBOM is too large to read",
    ImageSbom.MALFORMED: "an SBOM does not parse",
}


def unchecked_note(results: Sequence[SupplyChainDiff]) -> str:
    """One sentence for the page, instead of "supply chain not checked" on every line: how many of
    the shown lines could not be compared, and why, the commonest reason first. Pure."""
    why = Counter(
        UNCHECKED_WHY.get(facts.sbom, facts.sbom)
        for result in results
        if not (result.old.has_sbom and result.new.has_sbom)
        for facts in [result.old if not result.old.has_sbom else result.new]
    )
    if not why:
        return ""
    total = sum(why.values())
    reasons = "; ".join(f"{reason} ({count})" for reason, count in why.most_common())
    return f"Supply chain not checked for {total} of {len(results)} line{'s' if len(results) != 1 else ''}: {reasons}."


def _rows(lines: list[Behind], now: datetime) -> tuple[list[UpdateRow], str]:
    """The shown lines as rows: why a merged pull request does not run yet, the generated
    release-note summary (none unless configured) and the supply-chain summary, once per
    service and pair of versions, from the store only. A line that could not be compared says
    nothing; the page says once which and why (the returned note)."""
    why = not_deployed_why([line.past_pr for line in lines], now)
    generated = summaries.summaries_for((line.service.pk, line.running, line.target) for line in lines)
    diffs = diffs_many((line.service, line.running, line.target) for line in lines)
    results = [diffs[(line.service.pk, line.running, line.target)] for line in lines]
    rows = [
        UpdateRow(
            line,
            pr_why=why.get(line.past_pr.pk, "") if line.past_pr is not None else "",
            release_summary=generated.get((line.service.pk, line.running, line.target)),
            supply_chain=summary(result) if result.old.has_sbom and result.new.has_sbom else "",
        )
        for line, result in zip(lines, results, strict=True)
    ]
    return rows, unchecked_note(results)


def _attempts(rows: list[UpdateRow], chart_lines: list[ChartBehind]) -> list[ChartRow]:
    """Each shown line's last automatic pull request attempt (what it did and why), one query:
    an image line's tag attempts (set on `rows`), a chart line's attempts of its chart (the
    chart rows returned)."""
    charted = [c for c in chart_lines if c.service is not None]
    services = {row.line.service.pk for row in rows} | {c.service.pk for c in charted if c.service is not None}
    found = AutoPRAttempt.objects.latest_per_place(services)
    for row in rows:
        line = row.line
        if line.app is not None:
            row.auto_attempt = found.get(("app", line.app.pk, line.service.pk, ""))
        elif line.workload is not None:
            row.auto_attempt = found.get(("workload", line.workload.pk, line.service.pk, ""))
    return [
        ChartRow(c, found.get(("app", c.app.pk, c.service.pk, c.pin.ref.chart)) if c.service is not None else None)
        for c in chart_lines
    ]


@requires_role(Role.MEMBER)
@post_only("updates")
def put_off_version(request: HttpRequest) -> HttpResponse:
    service = get_object_or_404(Service, name=request.POST.get("service", ""))
    version = request.POST.get("version", "")
    refused = refusal(request.user, [service])
    if refused is not None:
        messages.error(request, f"Not put off: {refused}")
        return redirect("updates")
    try:
        until = date.fromisoformat(request.POST.get("until", ""))
        put_off(service, version, until, today=timezone.now().date())
    except ValueError as error:
        messages.error(request, f"Not put off: {error}")
        return redirect("updates")
    record(request.user, "policy.put_off", service.name, team=service.team, version=version, until=until.isoformat())
    messages.success(request, f"{service.name} {version} is put off until {until:%Y-%m-%d}.")
    return redirect("updates")


@requires_role(Role.MEMBER)
@post_only("updates")
def release_held_version(request: HttpRequest) -> HttpResponse:
    """Undo a hold: the version is offered again in that environment (automatic PRs included)."""
    service = get_object_or_404(Service, name=request.POST.get("service", ""))
    version, environment = request.POST.get("version", ""), request.POST.get("environment", "")
    refused = refusal(request.user, [service])
    if refused is not None:
        messages.error(request, f"Not undone: {refused}")
        return redirect("updates")
    if not holds.release(service, version, environment):
        messages.error(request, f"{service.name} {version} is not held in {environment}.")
        return redirect("updates")
    record(request.user, "policy.hold_released", service.name, team=service.team, version=version,
           environment=environment)
    messages.success(request, f"{service.name} {version} is no longer held in {environment}.")
    return redirect("updates")


@requires_role(Role.ADMIN)
@post_only("updates")
def freeze_create(request: HttpRequest) -> HttpResponse:
    form = FreezeForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {', '.join(msgs)}" for field, msgs in form.errors.items())
        messages.error(request, f"Freeze not saved: {errors}")
        return redirect("updates")
    freeze = form.save(commit=False)
    freeze.created_by = request.user
    freeze.save()
    form.save_m2m()
    environments = [e.name for e in freeze.environments.all()] or ["all"]
    record(
        request.user,
        "freeze.created",
        str(freeze)[:300],
        starts_at=freeze.starts_at.isoformat(),
        ends_at=freeze.ends_at.isoformat(),
        environments=environments,
        reason=freeze.reason,
    )
    messages.success(request, f"Change freeze saved for {', '.join(environments)}.")
    return redirect("updates")


@requires_role(Role.ADMIN)
@post_only("updates")
def freeze_end(request: HttpRequest) -> HttpResponse:
    raw_id = request.POST.get("id", "")
    freeze = get_object_or_404(ChangeFreeze, pk=int(raw_id) if raw_id.isdigit() else 0)
    now = timezone.now()
    if freeze.starts_at > now:
        freeze.delete()
        record(request.user, "freeze.deleted", freeze.reason[:300])
        messages.success(request, "The coming freeze is removed.")
    else:
        freeze.ends_at = now
        freeze.save(update_fields=["ends_at"])
        record(request.user, "freeze.ended", freeze.reason[:300], ended_at=now.isoformat())
        messages.success(request, "The freeze is ended.")
    return redirect("updates")

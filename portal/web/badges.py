"""The badges shown wherever an application appears: why it will not (or may not) deploy.

Pure: takes an app row and its cluster as stored, and the time to judge at. Also the one
place that decides a badge's CSS class for a sync, health or workload state, and what a pull
request's state badge says (`pr_state`); their markup is in templates/web/_badge.html and
_pr_state.html.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString

from gitops.derive.attention import OPERATION_RUNNING, Attention
from gitops.models import sync_held
from gitops.queries import with_ids
from gitops.windowstate import held_until, window_name
from portal.findings.discipline import GROUPED, RULES
from portal.findings.mutes import open_findings

# The words for the two attention states that are no health or sync status of their own
# (gitops.derive.attention): the matrix's flags and the badges below say them.
STUCK_PROGRESSING = "stuck progressing"
SYNC_FAILED = "sync failed"


@dataclass(frozen=True)
class Badge:
    kind: str  # window | manual | suspended | stale | warn (stuck) | bad (sync failed)
    label: str
    title: str


def _stamp(at: datetime) -> str:
    try:
        local = timezone.localtime(at)
    except OverflowError:  # too near year 1 or 9999 to shift into the viewer's zone: say it in UTC
        local = at.astimezone(UTC)
    if abs((at - timezone.now()).total_seconds()) < 6 * 86400:
        return local.strftime("%a %H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def window_badge(app: object, at: datetime) -> Badge | None:
    """A sync-window badge while the stored verdict still holds at `at`.

    The verdict is written at poll time and re-evaluated at each window edge; a
    blocked_until already in the past means the window has closed, so nothing is shown.
    """
    until = getattr(app, "sync_blocked_until", None)
    if not sync_held(getattr(app, "sync_blocked", False), until, at):
        return None
    window = getattr(app, "sync_window", None) or {}
    if window.get("kind") == "suspend":
        return None  # shown as the "suspended" badge
    if window.get("error"):
        return Badge("window", "sync window error", f"Argo CD refuses every sync: {window['error']}")
    name = window_name(window) or "sync window"
    held = held_until(until, _stamp)
    if window.get("kind", "deny") == "allow":
        title = f"no allow window is open ('{name}'): syncs wait {held}"
    else:
        title = f"deny '{name}' {held}"
    if window.get("manual_sync_allowed"):
        title += " — a manual sync is allowed"
    return Badge("window", f"sync window {held}", title)


def badges_for(app: object, cluster: object, at: datetime | None = None, *, rule: Attention | None = None
               ) -> list[Badge]:
    """The badges of an app's row; `rule`: the attention rule at `at`, when a page judging many
    apps built it once."""
    at = at or timezone.now()
    badges: list[Badge] = []
    window = window_badge(app, at)
    if window:
        badges.append(window)
    if getattr(app, "manual_sync", False):
        badges.append(Badge("manual", "manual sync", "No automated sync: it deploys only when someone syncs it."))
    if getattr(app, "suspended", False):
        badges.append(Badge("suspended", "suspended", "Flux reconciliation is suspended (spec.suspend: true)."))
    badges.extend(attention_badges(app, at, rule))
    # The cluster's gitops.ClusterPoll, selected with it (none before its first poll).
    stale_since = getattr(getattr(cluster, "poll", None), "stale_since", None)
    if stale_since:
        name = getattr(cluster, "name", "the cluster")
        title = f"{name} not polled successfully since {_stamp(stale_since)}: showing the last good data."
        badges.append(Badge("stale", "stale", title))
    return badges


def attention_badges(app: object, at: datetime, rule: Attention | None = None) -> list[Badge]:
    """"stuck progressing" and "sync failed" when the attention rule says so (gitops.derive.attention)."""
    rule = rule or Attention.at(at)
    found = []
    get = app.__dict__.get
    phase, started = get("operation_phase") or "", get("operation_started_at")
    if rule.stuck(get("health_status") or "", get("health_since"), phase, started):
        if phase == OPERATION_RUNNING and started is not None and rule.stuck_at and started <= rule.stuck_at:
            title = f"A sync operation has been running since {_stamp(started)} and has not finished."
        else:
            since = get("health_since")
            title = f"Progressing since {_stamp(since)}" if since else "Progressing"
            title += ": the rollout has not settled."
        found.append(Badge("warn", STUCK_PROGRESSING, title))
    if rule.sync_failed(phase, get("operation_finished_at")):
        message = (get("operation_message") or "").strip()
        title = "The last sync operation ended " + phase + (f": {message[:300]}" if message else ".")
        found.append(Badge("bad", SYNC_FAILED, title))
    return found


def finding_badges(app_ids: list[int]) -> dict[int, Badge]:
    """A "N findings" badge per app that has open findings, its title naming the rules (one query)."""
    rules: dict[int, list[str]] = defaultdict(list)
    # The grouped "Notifications: no rule" is an environment's, not the one app it is stored on.
    # The ids as one array (gitops.queries.with_ids): a service page names 2,100 applications.
    found = with_ids(open_findings(), app_ids, "app_id").exclude(rule=GROUPED)
    for app_id, rule in found.values_list("app_id", "rule"):
        rules[app_id].append(RULES[rule].title if rule in RULES else rule)
    return {
        app_id: Badge("finding", f"{len(titles)} finding{'s' if len(titles) != 1 else ''}",
                      "; ".join(sorted(titles)) + " (see Findings)")
        for app_id, titles in rules.items()
    }


# The CSS class of a badge for each state, decided here only: templates reach these through
# the `sync_class`, `health_class`, `workload_class` and `jump_class` filters. A badge's markup
# is one template fragment, web/_badge.html.
SYNC_CLASSES = {"Synced": "ok", "OutOfSync": "warn"}
HEALTH_CLASSES = {"Healthy": "ok", "Progressing": "warn", "Degraded": "bad", "Missing": "bad"}
# A workload's kstatus; any state but these two (InProgress, Terminating, Unknown) is on its way.
WORKLOAD_CLASSES = {"Current": "ok", "Failed": "bad"}
# How far an upgrade jumps: a major version may break what depends on it.
JUMP_CLASSES = {"major": "warn"}


def sync_class(status: str | None) -> str:
    return SYNC_CLASSES.get(status or "", "")


def health_class(status: str | None) -> str:
    return HEALTH_CLASSES.get(status or "", "")


def workload_class(status: str | None) -> str:
    return WORKLOAD_CLASSES.get(status or "", "warn")


def jump_class(jump: str | None) -> str:
    return JUMP_CLASSES.get(jump or "", "")


SEVERITY_CLASSES = {"critical": "bad", "high": "bad", "moderate": "warn", "low": "", "unknown": ""}


def severity_class(severity: str) -> str:
    """A known vulnerability's badge: critical and high are bad, moderate a warning (Security page)."""
    return SEVERITY_CLASSES.get(severity, "")


BADGE_TEMPLATE = "web/_badge.html"


def badge_html(kind: str, label: str, title: str = "") -> SafeString:
    """`<span class="badge KIND" title="TITLE">LABEL</span>`, from the template fragment
    (web/_badge.html) that the `{% badge %}` tag includes too; Django escapes every part."""
    return SafeString(render_to_string(BADGE_TEMPLATE, {"kind": kind, "label": label, "title": title}))


# --- a pull request's state: the one badge every page shows where it links a pull request --------

PR_STATE_CLASSES = {"open": "ok", "merged": "ok", "opening": "", "closed": ""}
CHECKS_CLASSES = {"pass": "ok", "running": "warn", "fail": "bad"}
OPENED_OUTSIDE = "Opened outside the portal"
PR_STATE_TEMPLATE = "web/_pr_state.html"


@dataclass(frozen=True)
class PrState:
    """What the pull request state fragment (web/_pr_state.html) draws of one pull request."""

    state: str
    label: str  # "PR #12 open", "PR being opened", "PR #12 merged · running"
    css: str
    hover: str  # "Opened outside the portal: …", else its title
    link: str  # the pull request on the forge, when its URL is http(s); else ""
    checks: str = ""  # pass | running | fail, shown for an open or merged pull request
    checks_css: str = ""
    checks_link: str = ""  # where the forge shows a failing check; else ""
    why: str = ""  # why a merged pull request's version does not run yet
    compact: bool = False  # a matrix cell: the reason is the hover of "not deployed"


def pr_state(pr: object, why: str = "", *, compact: bool = False) -> PrState:
    """A pull request as every page shows it: `PR #12 open` (linked to the forge when its URL is
    http(s)), its checks (`checks fail` linked to where the forge shows them), and, for a merge
    whose version does not run yet, `merged, not deployed — why`. Hover: "Opened outside the
    portal" for Renovate's, Dependabot's or a person's pull request, else its title. `compact`
    (a matrix cell): the reason a merge waits is the hover of "not deployed"."""
    from forges.pr_state import checks_page
    from portal.kernel.links import safe_http_url

    state = str(getattr(pr, "state", "") or "")
    number = getattr(pr, "number", None)
    title = str(getattr(pr, "title", "") or "")
    running_at = getattr(pr, "running_at", None)
    where = f"PR #{number}" if number else "PR"
    label = {"opening": "PR being opened"}.get(state, f"{where} {state}")
    if state == "merged" and running_at is not None:
        label += " · running"
    hover = f"{OPENED_OUTSIDE}: {title}" if getattr(pr, "opened_outside", False) else title
    if getattr(pr, "automatic", False):
        hover = f"Opened automatically (version policy): {title}"
    link = safe_http_url(str(getattr(pr, "url", "") or "")) or ""
    checks = str(getattr(pr, "checks", "") or "")
    checks_link = ""
    if state in ("open", "merged") and checks in CHECKS_CLASSES:
        # The failing check itself when the forge named it, else where the forge lists the checks.
        page = safe_http_url(str(getattr(pr, "checks_url", "") or "")) or (
            checks_page(str(getattr(pr, "forge_kind", "") or ""), link) if link else ""
        )
        checks_link = page if checks == "fail" and page else ""
    else:
        checks = ""
    return PrState(
        state=state, label=label, css=f"badge pr-state {PR_STATE_CLASSES.get(state, '')}".rstrip(), hover=hover,
        link=link, checks=checks, checks_css=f"badge pr-checks {CHECKS_CLASSES[checks]}" if checks else "",
        checks_link=checks_link, why=why if state == "merged" and running_at is None else "", compact=compact,
    )


def pr_state_html(pr: object, why: str = "", *, compact: bool = False) -> SafeString:
    """The pull request state fragment (web/_pr_state.html) of `pr_state(pr, why)`."""
    return SafeString(render_to_string(PR_STATE_TEMPLATE, {"s": pr_state(pr, why, compact=compact)}))

"""The assistant's tools: what an MCP client may ask the portal, strictly read-only.

Each tool reads what the REST API serves (portal.api.mcp.api_pages) and answers compactly,
summary first, one page at a time (an assistant's context is small): `gitops`,
`pull_requests`, `why_not_deployed`, `service`, `findings` and `security`. The functions here
are plain and synchronous (they take the Caller), so the HTTP endpoint, the stdio mode and the
tests share them; portal.api.mcp.server registers them with the MCP SDK.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from portal.api.mcp import api_pages
from portal.api.mcp.api_pages import Caller, ReadError
from portal.api.mcp.pr_previews import offer_verdict, preview_pull_request
from portal.delivery.leadtimes import lead_time
from portal.kernel.catalog.models import Environment
from portal.kernel.timestamps import duration_words

DEFAULT_PAGE = 20
MAX_PAGE = 100
ATTENTION = ("Degraded", "Missing")


def _page_size(value: int | None) -> int:
    return max(1, min(int(value or DEFAULT_PAGE), MAX_PAGE))


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


# --- gitops ------------------------------------------------------------------------------


def compact_app(item: dict[str, Any]) -> dict[str, Any]:
    """One /api/v1/gitops item as an assistant needs it."""
    pins = item.get("git_pins")
    pinned: dict[str, list[str]] | None = None
    if pins is not None:
        pinned = {}
        for pin in pins:
            versions = pinned.setdefault(pin["service"], [])
            if pin["version"] not in versions:
                versions.append(pin["version"])
    running = item.get("running_versions") or {}
    differs = bool(pinned) and any(sorted(v) != sorted(running.get(s, [])) for s, v in (pinned or {}).items())
    window = item.get("sync_window")
    return {
        "app": app_identity(item),
        "kind": item["kind"], "tool": item["tool"], "environment": item["environment"],
        "project": item["project"] or None,
        "sync": item["sync_status"], "sync_since": item["sync_since"], "sync_since_exact": item["sync_since_exact"],
        "health": item["health_status"], "health_since": item["health_since"],
        "health_since_exact": item["health_since_exact"],
        "health_message": (item.get("health_message") or "")[:300] or None,
        "needs_attention": item["needs_attention"],
        "sync_blocked": item["sync_blocked"], "blocked_until": item["sync_blocked_until"],
        "sync_window": None if not window else {
            key: window[key] for key in ("kind", "description", "schedule", "duration", "time_zone",
                                         "manual_sync_allowed") if window.get(key) not in ("", None)
        },
        "manual_sync": item["manual_sync"], "suspended": item["suspended"],
        "running": running, "git_pins": pinned, "git_pins_differ_from_running": differs,
        "after_change": item.get("after_change"),
        "synced_revision": item["synced_revision"] or None,
        # A custom resource's health rule says otherwise than the tool (gitops.health.rules), or
        # the tool calls healthy what reports failure itself (gitops.health.blindspot).
        "health_disagreement": item.get("health_disagreement") or None,
        "rule_health": item.get("rule_health") or None,
        "rule_message": item.get("rule_message") or None,
        "health_unchecked": item.get("health_unchecked") or None,
        "health_not_read": item.get("health_not_read") or None,
        "suggested_health_rules": item.get("suggested_health_rules") or None,
        "api_url": item.get("api_url"),
    }


def app_identity(item: dict[str, Any]) -> str:
    """cluster/namespace/name, with the API address's qualifiers (`?read_from=hub`, `?kind=`)
    where a twin shares the path (portal.api.app_address): the app's one identity, which
    why_not_deployed takes back."""
    query = urlsplit(item.get("api_url") or "").query
    return f"{item['cluster']}/{item['namespace']}/{item['name']}" + (f"?{query}" if query else "")


def gitops(caller: Caller, filters: dict[str, Any], cursor: str | None = None,
           page_size: int | None = None) -> dict[str, Any]:
    page = api_pages.gitops(caller, filters, cursor, _page_size(page_size))
    apps = [compact_app(item) for item in page.results]
    counts = {
        "apps": len(apps),
        "needing_attention": sum(a["needs_attention"] for a in apps),
        "out_of_sync": sum(a["sync"] == "OutOfSync" for a in apps),
        "degraded_or_missing": sum(a["health"] in ATTENTION for a in apps),
        "blocked": sum(a["sync_blocked"] for a in apps),
        "manual_sync": sum(a["manual_sync"] for a in apps),
        "suspended": sum(a["suspended"] for a in apps),
    }
    more = page.next_cursor
    summary = (f"{counts['apps']} apps on this page: {counts['needing_attention']} need attention, "
               f"{counts['out_of_sync']} out of sync, {counts['degraded_or_missing']} degraded or missing, "
               f"{counts['blocked']} blocked by a sync window or suspension."
               + (" More: call again with this cursor." if more else ""))
    return {"summary": summary, "counts": counts, "apps": apps, "next_cursor": more}


# --- pull requests -----------------------------------------------------------------------


def pull_requests(caller: Caller, filters: dict[str, Any], cursor: str | None = None,
                  page_size: int | None = None) -> dict[str, Any]:
    page = api_pages.pull_requests(caller, filters, cursor, _page_size(page_size))
    production = set(Environment.objects.filter(production=True).values_list("name", flat=True))
    pulls = []
    for pr in page.results:
        times = lead_time(_when(pr["opened_at"]), _when(pr["merged_at"]), _when(pr["running_at"]))
        pulls.append({
            "title": pr["title"], "url": pr["url"], "number": pr["number"], "kind": pr["kind"],
            "state": pr["state"], "checks": pr["checks"], "services": pr["services"],
            "environment": pr["environment"], "from": pr["from_version"], "to": pr["to_version"],
            "opened_at": pr["opened_at"], "merged_at": pr["merged_at"], "running_at": pr["running_at"],
            "running": pr["running_at"] is not None,
            "running_in_production": pr["running_at"] is not None and pr["environment"] in production,
            "merged_not_deployed": pr["state"] == "merged" and pr["running_at"] is None,
            "lead_time_from_proposal": duration_words(times.from_proposal) if times.from_proposal else None,
            "lead_time_from_merge": duration_words(times.from_merge) if times.from_merge else None,
            "opened_outside": pr["opened_outside"],
            "id": pr["id"],
            # Which applications, clusters and environments its edits reach (null: not known).
            "reach": pr["reach"],
            "rendered_diff": pr["rendered_diff"],
        })
    more = page.next_cursor
    by_state: dict[str, int] = {}
    for pr in pulls:
        by_state[pr["state"]] = by_state.get(pr["state"], 0) + 1
    summary = (f"{len(pulls)} pull requests on this page ("
               + (", ".join(f"{n} {state}" for state, n in sorted(by_state.items())) or "none")
               + f"); {sum(p['merged_not_deployed'] for p in pulls)} merged but not running yet."
               + (" More: call again with this cursor." if more else ""))
    return {"summary": summary, "pull_requests": pulls, "next_cursor": more}


# --- why not deployed --------------------------------------------------------------------


def _window_reason(app: dict[str, Any]) -> str:
    window = app.get("sync_window") or {}
    what = window.get("kind", "deny")
    name = f" '{window['description']}'" if window.get("description") else ""
    schedule = f" ({window['schedule']} for {window['duration']}" if window.get("schedule") else ""
    if schedule:
        schedule += f", {window['time_zone']})" if window.get("time_zone") else ")"
    # No end: the window reopens as it closes (or never closes); it holds until someone changes it.
    until = (f" until {app['blocked_until']}" if app.get("blocked_until")
             else " with no end in sight: it holds until the window is changed")
    if what == "allow":
        head = f"Outside its allow windows{name}{schedule}: syncs wait{until}"
    elif what == "error":
        head = "A matching sync window is invalid: Argo CD refuses every sync"
    else:
        head = f"A deny sync window{name}{schedule} blocks syncs{until}"
    if window.get("manual_sync_allowed"):
        head += "; a manual sync is allowed meanwhile"
    return head + "."


def reasons_for(app: dict[str, Any], merged: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Why an app does not run what Git (or a merged pull request) asks, in the order that
    matters: what blocks a sync first, then what has not happened yet, then what went wrong."""
    reasons: list[dict[str, str]] = []
    pending = app["sync"] == "OutOfSync" or app["git_pins_differ_from_running"] or bool(merged)
    if app["sync_blocked"] and (app.get("sync_window") or {}).get("kind") != "suspend":
        reasons.append({"reason": "sync_window", "detail": _window_reason(app)})
    if app["manual_sync"] and pending:
        reasons.append({"reason": "manual_sync", "detail": "No automated sync policy: it deploys only when someone "
                        "syncs it (Argo CD 'Sync')."})
    if app["suspended"]:
        reasons.append({"reason": "suspended", "detail": f"Flux reconciliation is suspended (spec.suspend: true) on "
                        f"this {app['kind']}: nothing is applied until it is resumed."})
    if app["sync"] == "OutOfSync":
        reasons.append({"reason": "not_synced_yet", "detail": f"OutOfSync {_since(app, 'sync')}: Git holds "
                        "changes not applied yet."})
    for pr in merged:
        reasons.append({"reason": "merged_not_deployed", "detail": f"{pr['title']} ({pr['url'] or 'no link'}) merged "
                        f"at {pr['merged_at']}; {pr['to']} is not running here yet."})
    if app["git_pins_differ_from_running"] and not merged:
        pins = ", ".join(f"{s} {'/'.join(v)}" for s, v in (app["git_pins"] or {}).items())
        runs = ", ".join(f"{s} {'/'.join(v)}" for s, v in app["running"].items()) or "nothing"
        reasons.append({"reason": "merged_not_deployed", "detail": f"Git pins {pins}; it runs {runs}."})
    if app["health"] in ATTENTION:
        detail = f"{app['health']} {_since(app, 'health')}"
        if app.get("health_message"):
            detail += f": {app['health_message']}"
        if app.get("after_change"):
            change = app["after_change"]
            detail += f" (after {change['service']} {change['from']} -> {change['to']} at {change['at']})"
            if change.get("rollback"):
                # The offer the service page and the alert show: the same one, with its preview.
                detail += f"; rollback PR offered -> {change['rollback']['to']}: {change['rollback']['preview_url']}"
        reasons.append({"reason": "degraded", "detail": detail + "."})
    return reasons


def why_not_deployed(caller: Caller, service: str | None = None, environment: str | None = None,
                     app: str | None = None) -> dict[str, Any]:
    if app:
        base, _, qualified = app.partition("?")
        parts = base.split("/")
        if len(parts) != 3:
            raise ValueError("app is cluster/namespace/name, e.g. prod-eu-1/argocd/payments-prod, with the "
                             "`?read_from=`/`?kind=` the gitops tool shows where apps share it")
        listed = gitops(caller, {"cluster": parts[0], "q": parts[2]}, page_size=MAX_PAGE)["apps"]
        # A bare path answers for every app at it, each under its own identity.
        apps = [a for a in listed if a["app"] == app or (not qualified and a["app"].partition("?")[0] == base)]
        if not apps:
            raise ValueError(f"no GitOps app {app}")
    elif service:
        filters = {"service": service, **({"environment": environment} if environment else {})}
        apps = gitops(caller, filters, page_size=MAX_PAGE)["apps"]
        if not apps:
            where = f" in {environment}" if environment else ""
            return {"summary": f"No GitOps app deploys {service}{where}.", "apps": []}
    else:
        raise ValueError("give a service (and an environment), or an app")
    merged_prs = pull_requests(caller, {"state": "merged", **({"environment": environment} if environment else {})},
                               page_size=MAX_PAGE)["pull_requests"]
    answers = []
    for found in apps:
        services = set(found["running"]) | set(found["git_pins"] or {})
        if service:
            services.add(service)
        merged = [pr for pr in merged_prs if pr["merged_not_deployed"] and services & set(pr["services"])
                  and pr["environment"] == found["environment"]]
        reasons = reasons_for(found, merged)
        answers.append({"app": found["app"], "kind": found["kind"], "sync": found["sync"], "health": found["health"],
                        "running": found["running"], "reasons": reasons,
                        "verdict": reasons[0]["detail"] if reasons else "Nothing holds it: it is synced and healthy."})
    held = [a for a in answers if a["reasons"]]
    summary = (f"{len(held)} of {len(answers)} apps are held: "
               + "; ".join(f"{a['app']}: {a['reasons'][0]['reason']}" for a in held[:5]) + "."
               if held else f"All {len(answers)} apps are synced and healthy; nothing holds them.")
    if not service:
        return {"summary": summary, "apps": answers}
    coming = next_deploys(caller, service, environment)
    summary += "".join(f" Next deploy to {d['environment']}: {_next_words(d)}." for d in coming)
    return {"summary": summary, "apps": answers, "next_deploy": coming}


def next_deploys(caller: Caller, service: str, environment: str | None) -> list[dict[str, Any]]:
    """When `service` can next deploy to each environment (or the one named), as /api/v1/services
    answers it (portal.delivery.deploy_holds: sync windows, freezes, suspensions)."""
    page = api_pages.services(caller, {"name": service})
    found = page.results[0]["environments"] if page.results else []
    return [{"environment": e["environment"], **e["next_deploy"]} for e in found
            if e["next_deploy"] is not None and (not environment or e["environment"] == environment)]


def _next_words(answer: dict[str, Any]) -> str:
    when = "now" if answer["now"] else answer["at"] or "no end in sight"
    return when if answer["now"] else f"{when} ({answer['reason']})"


# --- service -----------------------------------------------------------------------------


def service(caller: Caller, name: str, offers: int | None = None) -> dict[str, Any]:
    page = api_pages.services(caller, {"name": name})
    if not page.results:
        raise ValueError(f"no service named {name}")
    [found] = page.results
    shown = max(1, min(int(offers or 10), 50))
    envs = found["environments"]
    summary = (f"{name}: " + "; ".join(
        f"{e['environment']} runs {', '.join(e['versions'])}"
        + (f" (newest acceptable {e['newest_acceptable']})" if e["newest_acceptable"] else "")
        for e in envs) if envs else f"{name} runs nowhere the portal reads.")
    summary += f" Latest release {found['latest_release']}." if found["latest_release"] else ""
    summary += f" {found['offers_total']} open offers."
    security = _security(caller, name)
    if security["exposed"]:
        summary += " Known vulnerabilities: " + "; ".join(
            f"{e['environment']} {e['version']}: {e['count']} ({e['exploited']} exploited)"
            + (f"; fixed by {e['newest_acceptable']}: {e['fixed_by_newest_acceptable']}" if e["newest_acceptable"]
               else "") for e in security["exposed"]) + "."
    # Each offer says whether the caller may open it (their role and, with team scope, their teams).
    verdict = offer_verdict(api_pages.user_of(caller), name)
    return {
        "summary": summary, "latest_release": found["latest_release"],
        "environments": envs, "offers": [{**offer, **verdict} for offer in found["offers"][:shown]],
        "offers_total": found["offers_total"],
        "security": security, "portal_url": found["portal_url"],
    }


def _security(caller: Caller, name: str) -> dict[str, Any]:
    """The Security page's facts for one service (/api/v1/security), compact: per environment and
    running version, how many known vulnerabilities, how many exploited in the wild, the worst
    ids, and what the newest acceptable release fixes; the versions not checked and why."""
    report = api_pages.security(caller)
    exposed = [compact_exposure(e) for e in report["exposures"] if e["service"] == name]
    for e in exposed:
        del e["service"], e["team"]
    return {
        "exposed": exposed,
        "not_checked": [u for u in report["not_checked"] if u["service"] == name],
        "osv_checked_at": report["osv"]["last_ok_at"], "osv_error": report["osv"]["error"] or None,
    }


def compact_exposure(e: dict[str, Any]) -> dict[str, Any]:
    """One /api/v1/security exposure as an assistant needs it: counts and the worst five ids."""
    vulns = e["vulnerabilities"]
    return {
        "service": e["service"], "team": e["team"],
        "environment": e["environment"], "version": e["version"], "clusters": e["clusters"],
        "count": len(vulns), "exploited": sum(1 for v in vulns if v["exploited"]),
        "worst": [{"id": v["id"], "severity": v["severity"], "exploited": v["exploited"]} for v in vulns[:5]],
        "newest_acceptable": e["newest_acceptable"],
        # "unknown — why", never 0, when OSV never answered for the target's packages.
        "fixed_by_newest_acceptable": (len(e["fixed_by_newest_acceptable"])
                                       if e["fixed_by_newest_acceptable"] is not None
                                       else f"unknown — {e['fixed_by_newest_acceptable_unknown']}"),
    }


def _offset(cursor: str | None) -> int:
    """The findings and security answers page by position: the cursor is the next item's."""
    if not cursor:
        return 0
    if not cursor.isdigit() or len(cursor) > 8:
        raise ValueError("cursor is the next_cursor of a previous answer")
    return int(cursor)


def security(caller: Caller, filters: dict[str, Any], cursor: str | None = None,
             page_size: int | None = None) -> dict[str, Any]:
    """GET /api/v1/security (the /security page's facts and filters), compact and paged."""
    report = api_pages.security(caller, filters)
    start, size = _offset(cursor), _page_size(page_size)
    everything = report["exposures"]
    shown = [compact_exposure(e) for e in everything[start:start + size]]
    more = str(start + len(shown)) if start + len(shown) < len(everything) else None
    checked_at, error = report["osv"]["last_ok_at"], report["osv"]["error"] or None
    summary = (f"{len(everything)} running versions with known vulnerabilities "
               f"({sum(1 for e in everything if any(v['exploited'] for v in e['vulnerabilities']))} with one "
               f"exploited in the wild); {len(report['not_checked'])} versions not checked. "
               + (f"OSV last read {checked_at}." if checked_at else "OSV has not been read yet: nothing is known.")
               + (f" OSV's last error: {error}." if error else "")
               + (" More: call again with this cursor." if more else ""))
    return {
        "summary": summary, "exposures": shown, "not_checked": report["not_checked"],
        "osv": report["osv"], "kev": report["kev"], "next_cursor": more,
    }


def findings(caller: Caller, filters: dict[str, Any], cursor: str | None = None,
             page_size: int | None = None) -> dict[str, Any]:
    """GET /api/v1/findings: open GitOps discipline findings (muted ones left out), paged."""
    start, size = _offset(cursor), _page_size(page_size)
    answer = api_pages.findings(caller, {**filters, "offset": start, "limit": size})
    shown = [{
        "rule": f["rule"], "title": f["title"], "severity": f["severity"], "message": f["message"],
        "fix": f["fix"], "example": f["example"], "principle": f["principle"],
        "app": f"{f['cluster']}/{f['namespace']}/{f['name']}", "kind": f["kind"],
        "tool": f["tool"], "environment": f["environment"], "group": f["group"], "at": f["at"],
        "api_url": f["app_url"],
    } for f in answer["results"]]
    more = str(start + len(shown)) if shown and start + len(shown) < answer["count"] else None
    by_rule = ", ".join(f"{n} {rule}" for rule, n in sorted(answer["counts"].items()))
    summary = (f"{answer['count']} open findings" + (f" ({by_rule})" if by_rule else "") + "."
               + (" More: call again with this cursor." if more else ""))
    return {"summary": summary, "counts": answer["counts"], "findings": shown, "next_cursor": more}


__all__ = ["Caller", "ReadError", "findings", "gitops", "preview_pull_request", "pull_requests", "security",
           "service", "why_not_deployed"]


def _since(app: dict[str, Any], which: str) -> str:
    """"since <time>", or "at least since <time>" where the time is only the portal's first sight."""
    words = "since" if app.get(f"{which}_since_exact") else "at least since"
    return f"{words} {app[f'{which}_since']}"

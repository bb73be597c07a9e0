"""The `preview_pull_request` tool: the diff a pull request would make, and whether the caller
may open it. Read-only like every tool: it previews (reads the repository through the forge,
writes nothing) with the function the preview page uses, and judges the caller's role and
teams with the rule the page and the API use (portal.kernel.accounts.teams); opening stays
with the page and POST /api/v1/pull-requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from forges.pins.parsecache import kept_parses
from portal.api.mcp import api_pages
from portal.api.mcp.api_pages import Caller
from portal.delivery.change_previews import DeliveryPreview, preview_change
from portal.delivery.change_requests import build_changes, params_of, parse_items, pull_requests_for, services_of
from portal.delivery.reach import as_json
from portal.kernel.accounts.roles import Role, has_role
from portal.kernel.accounts.teams import refused
from portal.kernel.links import OfferItem, preview_url

MAX_DIFF_CHARS = 20_000  # per pull request: an assistant's context is small; the page shows all


def preview_pull_request(
    caller: Caller, kind: str, items: Sequence[str], mode: str = "grouped", confirm: bool = False
) -> dict[str, Any]:
    """What the change (the preview page's items) would open, pull request by pull request,
    and `may_open`/`refusal` for the caller. ValueError when the change does not read."""
    user = api_pages.user_of(caller)
    kind, parsed, mode = parse_items(params_of(kind, items, mode, confirm))
    built = build_changes(kind, parsed)
    refusal = _refusal(user, services_of(built.changes))
    with kept_parses():
        previews = [
            _compact(preview_change(group, confirm_default_branch=confirm))
            for group in pull_requests_for(built.changes, mode)
        ]
    may_open = refusal is None and any(p["can_open"] for p in previews)
    summary = f"{len(previews)} pull request(s), {sum(p['can_open'] for p in previews)} can be opened; " + (
        "you may open them." if may_open else f"you may not open them: {refusal or 'nothing to open'}"
    )
    return {
        "summary": summary,
        "may_open": may_open,
        "refusal": refusal,
        "pull_requests": previews,
        "left_out": built.left_out,
        "preview_path": preview_url(
            kind, [OfferItem(i.target, i.service, i.to_version, i.from_version) for i in parsed], mode=mode
        ),
    }


def offer_verdict(user: Any, service: str) -> dict[str, Any]:
    """`may_open` and `refusal` of an offer on `service` for `user`: the mark each offer a tool
    lists carries."""
    refusal = _refusal(user, [service])
    return {"may_open": refusal is None, "refusal": refusal}


def _refusal(user: Any, services: Sequence[str]) -> str | None:
    if not has_role(user, Role.MEMBER):
        return "Opening a pull request needs the member role."
    found = refused(user, services)
    return found.message if found is not None else None


def _compact(delivery: DeliveryPreview) -> dict[str, Any]:
    preview = delivery.preview
    diff = preview.diff if preview is not None else ""
    return {
        "can_open": delivery.can_open,
        "error": delivery.error or None,
        "repository": delivery.change.repository,
        "base_branch": delivery.change.base_branch,
        "branch": preview.branch if preview is not None else None,
        "title": preview.title if preview is not None else None,
        "files": [edit.path for edit in preview.edits] if preview is not None else [],
        "diff": diff[:MAX_DIFF_CHARS],
        "diff_truncated": len(diff) > MAX_DIFF_CHARS,
        "warnings": delivery.warnings,
        "problems": delivery.problems,
        "follows": delivery.follows or None,
        # Which applications, clusters and environments it reaches, as the PR body says it.
        "reach": as_json(delivery.reach) or None,
    }

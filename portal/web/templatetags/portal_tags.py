"""Template helpers: times in the viewer's zone, durations, revisions, badges and the page's
rollback offers. Pure formatting: nothing here queries the database or checks a role; the
views compute what the page needs (see portal/web/rollback_offers.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from portal.delivery.planner import UPGRADE
from portal.kernel.links import OfferItem, preview_url
from portal.kernel.timestamps import duration_words
from portal.web import badges
from portal.web.rollback_offers import PageOffers, ShownOffer

register = template.Library()


def _local(value: datetime) -> datetime:
    """The viewer's local time; UTC for a time too near year 1 or 9999 to shift (a row stored
    before portal.kernel.timestamps.parse_time read those as unknown)."""
    try:
        return timezone.localtime(value)
    except OverflowError:
        return value.astimezone(UTC)


@register.filter
def duration_since(value: datetime | None) -> str:
    """"14 min", "3 h", "2 days": how long a state has lasted."""
    if not value:
        return ""
    return duration_words(timezone.now() - value)


@register.simple_tag
def when(value: datetime | None) -> str:
    """A <time> saying how long ago, with the exact local time as its title."""
    if not value:
        return ""
    local = _local(value)
    delta = timezone.now() - value
    text = f"{duration_words(delta)} ago" if delta >= timedelta(0) else f"in {duration_words(-delta)}"
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', value.isoformat(), local.strftime("%a %Y-%m-%d %H:%M %Z"), text
    )


@register.simple_tag
def lasted(value: datetime | None, exact: bool) -> str:
    """How long a state has lasted: "for 6 days" when the time is the tool's own (or the portal
    watched the change), "at least since Sun 06:05" when it is only the portal's first sight of
    the state: the state may be much older, and "for 1 min" would say it is new."""
    if not value:
        return ""
    title = _local(value).strftime("%a %Y-%m-%d %H:%M %Z")
    if exact:
        return format_html('for <time datetime="{}" title="{}">{}</time>', value.isoformat(), title,
                           duration_since(value))
    return format_html(
        'at least since <time class="first-seen" datetime="{}" title="first seen by the portal: {}">{}</time>',
        value.isoformat(), title, localstamp(value),
    )


@register.filter
def localstamp(value: datetime | None) -> str:
    """"Mon 06:00" within a week, else the date: for until-when texts."""
    if not value:
        return ""
    local = _local(value)
    if abs((value - timezone.now()).total_seconds()) < 6 * 86400:
        return local.strftime("%a %H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


@register.filter
def short_rev(value: str | None) -> str:
    """Commit-like revisions shortened to 7 characters; tags and versions kept whole."""
    if not value:
        return ""
    text = str(value)
    for prefix in ("sha1:", "sha256:"):
        if prefix in text:
            head, _, digest = text.partition(prefix)
            return f"{head}{digest[:7]}"
    if len(text) == 40 and all(ch in "0123456789abcdef" for ch in text):
        return text[:7]
    return text


register.filter("sync_class", badges.sync_class)
register.filter("health_class", badges.health_class)
register.filter("workload_class", badges.workload_class)
register.filter("jump_class", badges.jump_class)
register.filter("severity_class", badges.severity_class)


@register.inclusion_tag(badges.PR_STATE_TEMPLATE)
def pr_state(pr: object, why: str = "") -> dict:
    """`{% pr_state pr why %}`: the one PR state badge (portal.web.badges.pr_state)."""
    return {"s": badges.pr_state(pr, why) if pr is not None else None}


@register.simple_tag
def badge(kind: object, label: object, title: object = "") -> SafeString:
    """`{% badge kind label title %}`: the one badge fragment (web/_badge.html), filled into its
    kept skeleton (portal.web.hotpath.badge) rather than included: a service page in 1,000
    clusters draws 600 badges, and including the fragment for each was a tenth of the page."""
    from portal.web import hotpath  # here: hotpath draws cells, whose module loads these tags

    return mark_safe(hotpath.badge(str(kind) if kind else "", str(label), str(title) if title else ""))  # noqa: S308 - escaped by hotpath.badge


@register.filter
def of_app(page: PageOffers | None, app_id: int) -> list[ShownOffer]:
    """`rollbacks|of_app:app.id`: one application's rollback offers from the view's context."""
    return page.of_app(app_id) if page else []


@register.simple_tag
def upgrade_preview_url(service: str, app_id: int | str, target: str) -> str:
    """The preview of one upgrade PR: `service` in application `app_id` (or workload `w<id>`) to version `target`."""
    return preview_url(UPGRADE, [OfferItem(app_id, service, target)])


@register.filter
def diff_class(line: str) -> str:
    """The CSS class of one line of a unified diff: file headers and hunks, additions, removals."""
    if line.startswith(("+++", "---", "@@")):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return ""

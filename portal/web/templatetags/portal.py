"""Template helpers: times in the viewer's zone, durations, revisions and safe links."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()


def _ago(delta_seconds: float) -> str:
    seconds = int(max(0, delta_seconds))
    if seconds < 60:
        return "less than a minute"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        rest = minutes % 60
        return f"{hours} h {rest} min" if rest and hours < 6 else f"{hours} h"
    return f"{hours // 24} days"


@register.filter
def duration_since(value: datetime | None) -> str:
    """"14 min", "3 h", "2 days": how long a state has lasted."""
    if not value:
        return ""
    return _ago((timezone.now() - value).total_seconds())


@register.simple_tag
def when(value: datetime | None) -> str:
    """A <time> saying how long ago, with the exact local time as its title."""
    if not value:
        return ""
    local = timezone.localtime(value)
    delta = (timezone.now() - value).total_seconds()
    text = f"{_ago(delta)} ago" if delta >= 0 else f"in {_ago(-delta)}"
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', value.isoformat(), local.strftime("%a %Y-%m-%d %H:%M %Z"), text
    )


@register.filter
def localstamp(value: datetime | None) -> str:
    """"Mon 06:00" within a week, else the date: for until-when texts."""
    if not value:
        return ""
    local = timezone.localtime(value)
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

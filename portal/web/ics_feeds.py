"""The iCalendar feeds: an environment's (or a service's) busy times, for a calendar app.

Written with the `icalendar` library (RFC 5545 folding and escaping are its job). Each deny
window occurrence, invalid window and change freeze of the deploy calendar
(portal.delivery.deploy_calendar) is one VEVENT marked busy (TRANSP:OPAQUE), with its
AppProject and window (or the freeze's reason) and what it holds in the description, and the
portal's calendar page as its URL. Allow windows and the rest are left out: a calendar app
shows busy time, and a feed of every allow window would bury the denials.

An event's UID is the lane's identity and its start, so a calendar app that fetches the feed
again updates the same events instead of adding copies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from datetime import datetime

import icalendar

from portal.delivery.deploy_calendar import Calendar, Lane

PRODID = "-//GitOps portal//deploy calendar//EN"
UID_DOMAIN = "gitops-portal"


def _description(lane: Lane, environment: str) -> str:
    lines = [f"{lane.kind_words} in {environment}: {lane.title}"]
    if lane.project:
        window = lane.window
        lines.append(f"AppProject {lane.project} on {lane.project_cluster}, syncWindows[{lane.window_index}]: "
                     f"{window.get('kind', '')} '{window.get('schedule', '')}' for {window.get('duration', '')} "
                     f"({lane.time_zone})" + (", manual sync allowed" if lane.manual_sync_allowed else ""))
    if lane.note:
        lines.append(lane.note)
    lines.append(f"Holds {len(lane.apps)} app{'s' if len(lane.apps) != 1 else ''}: "
                 + ", ".join(f"{app.cluster}/{app.name}" for app in lane.apps[:20])
                 + (" …" if len(lane.apps) > 20 else ""))
    if lane.services:
        lines.append("Services: " + ", ".join(lane.services))
    return "\n".join(lines)


def _uid(environment: str, lane: Lane, start: datetime) -> str:
    identity = f"{environment}|{lane.key}|{start.isoformat()}"
    return hashlib.sha256(identity.encode()).hexdigest()[:32] + "@" + UID_DOMAIN


def feed(name: str, calendars: Iterable[Calendar], link: Callable[[str], str], stamp: datetime) -> bytes:
    """One VCALENDAR named `name` with the busy bands of every calendar; `link(environment)` is
    the absolute address of the portal page each event links back to."""
    cal = icalendar.Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("x-wr-calname", name)
    for calendar in calendars:
        for lane in calendar.lanes:
            if not lane.busy:
                continue
            for band in lane.bands:
                event = icalendar.Event()
                event.add("uid", _uid(calendar.environment, lane, band.start))
                event.add("dtstamp", stamp)
                event.add("dtstart", band.start)
                event.add("dtend", band.end)
                event.add("summary", f"{calendar.environment}: {lane.kind_words} — {lane.title}")
                event.add("description", _description(lane, calendar.environment))
                event.add("url", link(calendar.environment))
                event.add("transp", "OPAQUE")
                event.add("categories", [lane.kind_words])
                cal.add_component(event)
    return cal.to_ical()

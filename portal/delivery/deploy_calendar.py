"""The deploy calendar: for one environment, the coming days as lanes of what holds deploys.

Each lane is one thing that holds (or lets through) deploys, with the stretches of time it does
so and the apps and services it holds: an Argo CD sync window (one per AppProject and window,
its occurrences from `gitops.syncwindows.occurrences`), the stretches outside a project's allow
windows (from `gitops.syncwindows.verdict_spans`, the badges' own rules), a change freeze, the
suspended Flux objects and the apps without automated sync (both without an end). The page
`/calendar` and the iCalendar feeds draw these lanes; neither evaluates a window itself.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gitops import syncwindows
from portal.delivery.deploy_holds import DeployHolds, HeldApp

DAYS = 14

DENY = "deny"
ALLOW = "allow"
OUTSIDE_ALLOW = "outside-allow"
INVALID = "invalid"
FREEZE = "freeze"
SUSPENDED = "suspended"
MANUAL = "manual"
# The lanes that hold a deploy: what a calendar app shows as busy.
BUSY = (DENY, INVALID, FREEZE)
KIND_WORDS = {DENY: "deny window", ALLOW: "allow window", OUTSIDE_ALLOW: "outside allow windows",
              INVALID: "invalid sync window", FREEZE: "change freeze", SUSPENDED: "suspended",
              MANUAL: "manual sync only"}


@dataclass(frozen=True)
class Band:
    """A stretch of a lane, `start` to `end` (both within the calendar's days)."""

    start: datetime
    end: datetime


@dataclass
class Lane:
    kind: str
    title: str
    bands: list[Band]
    apps: list[HeldApp]
    project: str = ""  # AppProject of a window lane
    project_cluster: str = ""  # where that AppProject was read
    window: dict = field(default_factory=dict)  # the spec.syncWindows entry, as the cluster holds it
    window_index: int | None = None
    note: str = ""  # why the lane has no bands, or what its bands leave out
    freeze_id: int | None = None

    @property
    def key(self) -> str:
        """What the lane is, the same from one day to the next: for a feed's event identities."""
        if self.freeze_id is not None:
            return f"freeze/{self.freeze_id}"
        return "/".join([self.kind, self.project_cluster, self.project, str(self.window_index or 0)])

    @property
    def services(self) -> list[str]:
        return sorted({name for app in self.apps for name in app.services})

    @property
    def time_zone(self) -> str:
        return str(self.window.get("timeZone") or "UTC") if self.window else "UTC"

    @property
    def manual_sync_allowed(self) -> bool:
        return bool(self.window.get("manualSync"))

    @property
    def open_ended(self) -> bool:
        return self.kind in (SUSPENDED, MANUAL)

    @property
    def kind_words(self) -> str:
        return KIND_WORDS[self.kind]

    @property
    def busy(self) -> bool:
        return self.kind in BUSY


@dataclass
class Calendar:
    environment: str
    start: datetime
    end: datetime
    lanes: list[Lane]
    apps: list[HeldApp]


def environment_calendar(holds: DeployHolds, environment: str, start: datetime, *, days: int = DAYS,
                         service: str | None = None) -> Calendar:
    """The lanes of `environment` from `start` for `days` days (only `service`'s apps if given)."""
    end = start + timedelta(days=days)
    apps = holds.in_environment(environment, service)
    lanes = [*_window_lanes(apps, start, end), *_outside_allow_lanes(apps, start, end)]
    for freeze in holds.freezes_of(environment):
        if freeze.starts_at < end and freeze.ends_at > start and apps:
            lanes.append(Lane(FREEZE, freeze.reason, [Band(max(freeze.starts_at, start), min(freeze.ends_at, end))],
                              apps, note="upgrades and promotions wait; rollbacks do not", freeze_id=freeze.pk))
    suspended = [app for app in apps if app.suspended]
    if suspended:
        lanes.append(Lane(SUSPENDED, "suspended (spec.suspend: true)", [Band(start, end)], suspended,
                          note="no end until someone resumes it"))
    manual = [app for app in apps if app.manual_sync]
    if manual:
        lanes.append(Lane(MANUAL, "no automated sync", [Band(start, end)], manual,
                          note="deploys only when someone syncs it"))
    lanes.sort(key=lambda lane: (lane.bands[0].start if lane.bands else end, lane.kind, lane.title))
    return Calendar(environment, start, end, lanes, apps)


def _by_project(apps: list[HeldApp]) -> dict[tuple[str, str], list[HeldApp]]:
    grouped: dict[tuple[str, str], list[HeldApp]] = defaultdict(list)
    for app in apps:
        if app.windows:
            grouped[(app.project_cluster, app.project)].append(app)
    return grouped


def _window_lanes(apps: list[HeldApp], start: datetime, end: datetime) -> list[Lane]:
    lanes = []
    for (cluster, project), members in sorted(_by_project(apps).items()):
        for index, raw in enumerate(members[0].windows or []):
            if not isinstance(raw, dict):
                continue
            held = [app for app in members if syncwindows.match_app(raw, app.target)[0]]
            window = syncwindows.compile_window(index, raw)
            if not held or window.kind not in (ALLOW, DENY):
                continue  # a window of another kind neither allows nor denies anything
            lane = Lane(window.kind, window.label, [], held, project, cluster, dict(raw), index)
            if window.error is not None:
                lane.kind, lane.bands = INVALID, [Band(start, end)]
                lane.note = f"Argo CD refuses every sync of these apps: {window.error}"
            else:
                try:
                    lane.bands = [Band(s, e) for s, e in syncwindows.occurrences(window, start, end)]
                except syncwindows.TooDense:
                    lane.note = "opens and closes too often to chart"
            lanes.append(lane)
    return lanes


def _outside_allow_lanes(apps: list[HeldApp], start: datetime, end: datetime) -> list[Lane]:
    """Where allow windows exist, the stretches none of them lets an app through, grouped by
    project and stretches: what the apps' badges say "outside allow windows" for."""
    grouped: dict[tuple[str, str, tuple[Band, ...]], list[HeldApp]] = defaultdict(list)
    for app in apps:
        if not app.windows:
            continue
        try:
            spans = syncwindows.verdict_spans(app.windows, app.target, start, end, manual=app.manual_sync)
        except syncwindows.TooDense:
            continue  # its window lane says so
        bands = tuple(Band(s.start, s.end) for s in spans if s.reason == "outside-allow")
        if bands:
            grouped[(app.project_cluster, app.project, bands)].append(app)
    return [Lane(OUTSIDE_ALLOW, "outside allow windows", list(bands), members, project, cluster,
                 note="allow windows exist and none is open")
            for (cluster, project, bands), members in sorted(grouped.items(), key=lambda item: item[0][:2])]

"""Reach: which applications, on which clusters, in which environments a planned change reaches.

A tag edited in a Kustomize base shared by six overlays changes six applications, perhaps one in
an environment nobody meant to touch. The pin read (`portal.delivery.current_pins`) already asks,
for every application, what it builds (`forges.pins.layouts.tree.tree_reads`: the files read
whole, the documents of files it shares, the pins a higher layer overrides); it keeps that here
(`keep_builds`, on `GitPinRead`), so a preview, a pull request's body, the API and MCP answer
"who else builds this line" from the store: one query for the repository's applications, one for
the pins of those reached, never a forge read.

An application is reached when its build includes a file the change edits. Its version after the
merge is the change's target for each edited line it renders (`Reads.moves`: a base's tag that
its overlay's `images:` overrides is in a file it builds but is not what it runs), and what Git
pins now for the rest. Reaching an application in another environment than the change's, or one
that runs none of the change's services, is beyond the offer's target: a warning. In a grouped
pull request, a file that carries lines of several changes is named with the lines each moves.

`reach_of` is the one answer: `change_previews.preview_change` calls it for the preview and the
body, the open job keeps `as_json` of it on the pull request for the API and MCP; a rendered diff
of the reached applications' manifests would start from the same `Reach.reached`.

The reads are as of each application's last good pin read (every 10 minutes): a file edited in
Git since then may span other lines; an application never read is named as not known.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from forges.hosts import repository_key
from forges.pins.layouts.app_reads import Reads
from gitops.models import GitOpsApp
from portal.delivery.models import GitPin, GitPinRead
from portal.delivery.planner import Change, MovedLine

# The parts of `Reads.as_stored()` that name files the build includes.
BUILT = ("whole", "documents", "charts", "chart_defaults")


@dataclass(frozen=True)
class Version:
    """What one application runs of one subject (a service, or a chart) after the merge."""

    subject: str
    before: str
    after: str

    @property
    def moves(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Reached:
    app_id: int
    app: str
    cluster: str
    environment: str
    files: tuple[str, ...]  # the edited files its build includes
    versions: tuple[Version, ...] = ()
    beyond: str = ""  # why it is beyond the change's target ("" when it is within)


@dataclass(frozen=True)
class SharedFile:
    """A file that carries lines of several changes of one grouped pull request."""

    path: str
    lines: tuple[tuple[int, str], ...]  # (line, the subject its change moves)


@dataclass(frozen=True)
class Cluster:
    name: str
    apps: tuple[Reached, ...]


@dataclass(frozen=True)
class Environment:
    name: str
    clusters: tuple[Cluster, ...]


@dataclass
class Reach:
    reached: list[Reached] = field(default_factory=list)  # by environment, cluster, application
    warnings: list[str] = field(default_factory=list)  # reaching beyond the change's target
    shared: list[SharedFile] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # the change's own applications whose builds are not kept yet

    @property
    def environments(self) -> list[Environment]:
        """`reached` grouped by environment, then cluster (both in `reached`'s order)."""
        grouped: dict[str, dict[str, list[Reached]]] = {}
        for app in self.reached:
            grouped.setdefault(app.environment, {}).setdefault(app.cluster, []).append(app)
        return [
            Environment(env, tuple(Cluster(name, tuple(apps)) for name, apps in clusters.items()))
            for env, clusters in grouped.items()
        ]


@dataclass(frozen=True)
class Candidate:
    """An application whose build is kept for the change's repository and branch."""

    app_id: int
    app: str
    cluster: str
    environment: str
    builds: Mapping[str, Any]  # `Reads.as_stored()`


@dataclass(frozen=True)
class Target:
    """What the offer meant to change: an environment, its applications, its services."""

    environment: str
    apps: frozenset[int]
    services: frozenset[str]


def target_of(changes: Sequence[Change]) -> Target:
    return Target(
        environment=changes[0].environment if changes else "",
        apps=frozenset(a for c in changes for a in c.apps),
        services=frozenset(s for c in changes for s in c.services),
    )


def keep_builds(builds: Mapping[int, Mapping[str, Any]], repository: str) -> None:
    """Keep what each application (id -> `Reads.as_stored()`) builds in `repository` (its
    `repository_key`) where it changed: one query to compare, one bulk update for those that differ."""
    repository = repository[:500]
    changed = []
    for row in GitPinRead.objects.filter(app_id__in=list(builds)).only("id", "app_id", "builds", "repository"):
        if row.builds != builds[row.app_id] or row.repository != repository:
            row.builds, row.repository = dict(builds[row.app_id]), repository
            changed.append(row)
    GitPinRead.objects.bulk_update(changed, ["builds", "repository"], batch_size=500)


def candidates(repository: str, branch: str) -> list[Candidate]:
    """The applications whose kept builds are of `repository` (any spelling) at `branch` (one query)."""
    rows = (
        GitPinRead.objects.filter(repository=repository_key(repository), branch=branch, builds__isnull=False)
        .order_by("app__cluster__environment__order", "app__cluster__name", "app__name", "app_id")
        .values_list("app_id", "app__name", "app__cluster__name", "app__cluster__environment__name", "builds")
    )
    return [Candidate(pk, name, cluster, env or "", builds) for pk, name, cluster, env, builds in rows]


def reached_by(moved: Sequence[MovedLine], found: Iterable[Candidate]) -> list[tuple[Candidate, Reads]]:
    """The candidates whose build includes a file of `moved`, with their reads. Pure: a candidate
    that builds none of the files is passed over without decoding its reads."""
    paths = {line.path for line in moved}
    hits = []
    for candidate in found:
        kept = candidate.builds
        if any(path in paths for key in BUILT for path in kept.get(key) or ()):
            hits.append((candidate, Reads.from_stored(candidate.builds)))
    return hits


Pins = Iterable[tuple[str, str, str, int]]  # what Git pins in an application: (service, version, path, line)


def versions_after(reads: Reads, moved: Sequence[MovedLine], pins: Pins) -> list[Version]:
    """What an application runs after the merge: each moved line it renders at its new version,
    then each pin it has (service, version, path, line) that no such line moves, as it is."""
    found: dict[tuple[str, str, str], Version] = {}
    held = {(line.path, line.line) for line in moved if reads.moves(line.path, line.line)}
    for line in moved:
        if (line.path, line.line) in held:
            found.setdefault((line.subject, line.from_version, line.to_version),
                             Version(line.subject, line.from_version, line.to_version))
    moved_subjects = {version.subject for version in found.values()}
    for service, version, path, line_number in pins:
        if (path, line_number) not in held and service not in moved_subjects:
            found.setdefault((service, version, version), Version(service, version, version))
    return list(found.values())


def beyond_target(candidate: Candidate, services: Iterable[str], target: Target) -> str:
    """Why reaching this application goes beyond what the offer meant ("" when it does not)."""
    if candidate.app_id in target.apps:
        return ""
    if target.environment and candidate.environment != target.environment:
        return f"another environment ({candidate.environment or 'none'}, not {target.environment})"
    if target.services and not target.services.intersection(services):
        return f"another service ({', '.join(sorted(set(services))) or 'none known'})"
    return ""


def shared_files(moved: Sequence[MovedLine]) -> list[SharedFile]:
    """The files in which lines of more than one subject move (a grouped pull request's changes)."""
    by_path: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in moved:
        by_path[line.path].append((line.line, line.subject))
    return [
        SharedFile(path, tuple(sorted(set(lines))))
        for path, lines in sorted(by_path.items())
        if len({subject for _, subject in lines}) > 1
    ]


def reach_of(changes: Sequence[Change], moved: Sequence[MovedLine], repository: str, branch: str) -> Reach:
    """The reach of the planned lines `moved` of `changes` into `repository` at `branch`, from the
    kept builds (two queries however many applications the repository serves)."""
    target = target_of(changes)
    found = candidates(repository, branch)
    hits = reached_by(moved, found)
    pins: dict[int, list[tuple[str, str, str, int]]] = defaultdict(list)
    rows = GitPin.objects.filter(app_id__in=[c.app_id for c, _ in hits]).order_by("service__name", "path", "line")
    for app_id, service, version, path, line in rows.values_list("app_id", "service__name", "version", "path", "line"):
        pins[app_id].append((service, version, path, line))
    paths = {line.path for line in moved}
    reach = Reach(shared=shared_files(moved) if len(changes) > 1 else [])
    for candidate, reads in hits:
        services = {service for service, *_ in pins[candidate.app_id]}
        beyond = beyond_target(candidate, services, target)
        files = tuple(sorted(path for path in paths if reads.builds(path)))
        versions = tuple(versions_after(reads, moved, pins[candidate.app_id]))
        reach.reached.append(Reached(candidate.app_id, candidate.app, candidate.cluster, candidate.environment,
                                     files, versions, beyond))
        if beyond:
            reach.warnings.append(
                f"This change also reaches {candidate.app} on {candidate.cluster}, {beyond}: "
                f"it builds {', '.join(files)}."
            )
    kept = {c.app_id for c in found}
    reach.unread = _unread([a for c in changes for a in c.apps if a not in kept])
    return reach


def _unread(app_ids: Sequence[int]) -> list[str]:
    rows = GitOpsApp.objects.filter(pk__in=list(app_ids)).order_by("name").values_list("name", "cluster__name")
    return [f"{name} on {cluster}" for name, cluster in rows]


def describe(reach: Reach) -> list[str]:
    """The reach as the pull request's description says it (Markdown lines, untrusted text in code spans)."""
    lines = ["", "**Reach** (what the portal last read each application builds):"]
    if not reach.reached:
        lines.append("- no application whose build the portal has read includes an edited file")
    for env in reach.environments:
        for cluster in env.clusters:
            for app in cluster.apps:
                lines.append(f"- `{env.name or '-'}` / `{cluster.name}` / `{app.app}`: {_versions(app.versions)}"
                             + (f" — **beyond the target**: {app.beyond}" if app.beyond else ""))
    for shared in reach.shared:
        lines.append(f"- `{shared.path}` is shared: " + ", ".join(f"line {n} {s}" for n, s in shared.lines))
    if reach.unread:
        lines.append(f"- not read yet, so not known: {', '.join(reach.unread)}")
    return lines


def _versions(versions: Sequence[Version]) -> str:
    if not versions:
        return "builds an edited file; no line it renders moves"
    return ", ".join(f"{v.subject} `{v.before}` → `{v.after}`" if v.moves else f"{v.subject} stays `{v.after}`"
                     for v in versions)


def as_json(reach: Reach | None) -> dict[str, Any]:
    """The reach as the pull request row keeps it and the API serves it ({} when none was found)."""
    if reach is None:
        return {}
    return {
        "environments": [
            {
                "name": env.name,
                "clusters": [
                    {
                        "name": cluster.name,
                        "applications": [
                            {
                                "name": app.app,
                                "files": list(app.files),
                                "versions": [{"subject": v.subject, "before": v.before, "after": v.after}
                                             for v in app.versions],
                                "beyond_target": app.beyond,
                            }
                            for app in cluster.apps
                        ],
                    }
                    for cluster in env.clusters
                ],
            }
            for env in reach.environments
        ],
        "warnings": list(reach.warnings),
        "shared_files": [{"path": s.path, "lines": [{"line": n, "subject": sub} for n, sub in s.lines]}
                         for s in reach.shared],
        "not_read": list(reach.unread),
    }

"""Git pins: which version Git declares for each service, per application.

Pins are read per repository and revision, never per application: one task reads the tree
of a repository at the revision its applications follow, once, reads each file that an
application builds once (however many applications build it), finds the image pins
(`forges.pins.scan`) in what each application builds and stores one `GitPin` per place that
pins a known service's image. A hundred applications in one repository are one task and one
tree read. Pages then answer "why did my change not go out?": Git pins 1.7.0, runs 1.6.0.

What an application builds is `forges.pins.layouts.tree.tree_reads`, by the readers that place its
edits (`tree_edits`), not every file under its path: in a Kustomization path `./apps` holding
one HelmRelease per service, each HelmRelease's pins are its own documents' and its
`valuesFrom` files', not its neighbours'; a kustomize overlay's are what `kustomize build`
renders (a base's tag that the overlay's `images:` overrides is not one, and an entry that
points the image at a mirror is the service's pin under either name); a Helm app's are the
tags its value layers render (`Reads.pins`: not a chart default an environment overrides).

Due-ness is per repository and revision: one falls due when its least recently read
application was read 10 minutes ago (`GitPinRead.last_read_at`), and then every application
under it is read, so they all stay on one schedule and the repository is read once per 10
minutes however its applications appeared. An application that just appeared (never read)
makes its repository due a minute after its last read (`NEW_APP_WAIT`): a new service shows its
pins within a minute or two, and a fleet being swept for the first time, its clusters' apps
appearing minute by minute, costs a repository a read a minute at most, only while it lasts;
one that appears while its repository's read waits in the queue is read with it (`batch_apps`).
A read writes only what changed: most find the pins the last one stored.
Applications with no known Git location keep a due-ness of their own. A batch already queued
again (a claim, `portal.kernel.claims`). Nothing is queued for a repository no configured
forge token can read: its applications carry the reason once ("no token for github.com …:
set PORTAL_GITOPS_TOKEN") on their `GitPinRead`, written without a log line. A failed read
is recorded on every application of the batch and keeps the pins already stored.

Where an application's pins are is `gitops.git_locations.pin_source`, not its own repository
columns: a Flux HelmRelease's columns name its Helm chart repository and chart version, its
pins are in the Git repository, revision and path of the Kustomization that applied it; an
Argo CD chart with `$values` files has them in its `ref` source. Most applications' pins are
in their own primary Git source (`in_own_columns`), read from four columns; only the others'
rows are loaded to ask `pin_source`. An application with no known Git location carries
`pin_source`'s reason on its `GitPinRead`, as one no token can read does.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from forges.forge import Forge, ForgeError, NotConfigured
from forges.hosts import forge_for, parse, repository_key
from forges.pins import Pin, scan
from forges.pins.layouts.app_reads import Reads
from forges.pins.layouts.tree import tree_reads
from forges.pins.parsecache import shared_parses
from gitops.git_locations import (
    BRANCH,
    DEFAULT,
    PinSource,
    in_own_columns,
    pin_source,
    pin_sources,
    ref_name,
    revision_kind,
)
from gitops.models import GitOpsApp
from gitops.queries import with_ids
from gitops.rows import ARGO
from portal.delivery import version_matrix
from portal.delivery.models import GitPin, GitPinRead
from portal.delivery.plainsecrets import plain_secret_files
from portal.delivery.reach import keep_builds
from portal.kernel.catalog.images import normalise_name
from portal.kernel.catalog.models import Service, service_image_index

log = logging.getLogger(__name__)

READ_INTERVAL = timedelta(minutes=10)
NEW_APP_WAIT = timedelta(minutes=1)
ERROR_MAX_CHARS = 1000
ROW_CHUNK = 2000  # rows a streamed read holds at once


@dataclass
class PinReadReport:
    app: str
    ok: bool
    pins: list[dict] = field(default_factory=list)
    error: str = ""


@dataclass(frozen=True)
class PinBatch:
    """The due applications of one repository at one followed revision: one read."""

    repository: str  # as the first application's pin source names it (what `forge_for` is given)
    revision: str  # as followed: "HEAD", "main", "refs/heads/release-9", "v1.4.0"
    app_ids: tuple[int, ...]
    unknown: str = ""  # no Git location is known for these applications, and why (repository "")

    @property
    def key(self) -> str:
        return batch_key(self.repository, self.revision)


def batch_key(repository: str, revision: str) -> str:
    """One repository and revision however its URL is written (`.git` or not, any case of
    owner and name, clone or web URL): what batches and claims are keyed by."""
    where = repository_key(repository)
    kind = revision_kind(revision)
    # `HEAD` and nothing are the default branch; `refs/heads/main` is the branch `main`.
    followed = "HEAD" if kind == DEFAULT else ref_name(revision) if kind == BRANCH else revision.strip()
    return f"{where}@{followed}"


def readable_apps() -> QuerySet[GitOpsApp]:
    """Applications whose pins may be in Git: a repository and a path of their own, or a
    HelmRelease or a chart whose pin source is elsewhere (`pin_source` says where)."""
    return GitOpsApp.objects.filter((~Q(repo_url="") & ~Q(path="")) | Q(kind="HelmRelease") | ~Q(chart=""))


def pin_place(app: GitOpsApp) -> PinSource:
    """Where `app`'s pins are read: its pin source, with the folder of the pins ("" is refused:
    a whole repository is not read for one application)."""
    return _placed(app, pin_source(app))


def pin_places(apps: Iterable[GitOpsApp]) -> dict[int, PinSource]:
    """`pin_place` of many applications (app id -> place), their pin sources asked together
    (`gitops.git_locations.pin_sources`: a number of queries that does not grow with the batch)."""
    batch = list(apps)
    sources = pin_sources(batch)
    return {app.pk: _placed(app, sources[app.pk]) for app in batch}


def _placed(app: GitOpsApp, source: PinSource) -> PinSource:
    if source.found and not _clean_path(source.path):
        return PinSource(unknown=f"{app.name} has its pins at the root of {source.repository}: not read")
    return source


def due_batches(now: datetime | None = None, interval: timedelta = READ_INTERVAL) -> list[PinBatch]:
    """The repositories and revisions due a read (see the module's docstring), each with every
    application whose pins are there (one query over the readable applications, plus
    `pin_source`'s few for those whose pins are not in their own columns). Due applications with
    no known Git location come as batches with `unknown` set, one per reason.

    The readable applications are streamed (a server-side cursor on PostgreSQL) and only their
    ids and last reads are kept: at 100,000 applications, holding the rows took the background
    worker's process from 160 to 250 MB, which it kept (2026-12-07)."""
    now = now or timezone.now()
    cutoff, newcomers_after = now - interval, now - NEW_APP_WAIT
    rows = (
        readable_apps()
        .order_by("id")
        .values_list("id", "tool", "kind", "chart", "path", "repo_url", "target_revision", "git_pin_read__last_read_at")
        .iterator(chunk_size=ROW_CHUNK)
    )
    grouped: dict[str, list[int]] = defaultdict(list)  # batch key -> its applications
    spelled: dict[str, tuple[str, str]] = {}  # batch key -> its first application's (repository, revision)
    reads: dict[str, list[datetime | None]] = defaultdict(list)  # batch key -> each app's last read
    keys: dict[tuple[str, str], str] = {}  # thousands of applications share a handful of spellings
    elsewhere: dict[int, datetime | None] = {}
    for app_id, tool, kind, chart, path, repository, revision, read_at in rows:
        if not in_own_columns(tool, kind, chart, path):
            elsewhere[app_id] = read_at
            continue
        key = keys.get((repository, revision))
        if key is None:
            key = keys[(repository, revision)] = batch_key(repository, revision)
        spelled.setdefault(key, (repository, revision))
        grouped[key].append(app_id)
        reads[key].append(read_at)
    unknown: dict[str, list[int]] = defaultdict(list)
    others = list(GitOpsApp.objects.filter(pk__in=list(elsewhere)).select_related("cluster").order_by("id"))
    places = pin_places(others)
    for app in others:
        source = places[app.pk]
        read_at = elsewhere[app.pk]
        if not source.found:
            if read_at is None or read_at <= cutoff:
                unknown[source.unknown[:ERROR_MAX_CHARS]].append(app.pk)
            continue
        key = batch_key(source.repository, source.revision)
        spelled.setdefault(key, (source.repository, source.revision))
        grouped[key].append(app.pk)
        reads[key].append(read_at)
    batches = [
        PinBatch(repository=spelled[key][0], revision=spelled[key][1], app_ids=tuple(app_ids))
        for key, app_ids in grouped.items()
        if _repository_due(reads[key], cutoff, newcomers_after)
    ]
    return batches + [PinBatch("", "", tuple(ids), unknown=reason) for reason, ids in unknown.items()]


def _repository_due(reads: list[datetime | None], cutoff: datetime, newcomers_after: datetime) -> bool:
    """A repository's applications' last reads: due when the oldest is older than `cutoff`, or
    one was never read and the newest read is older than `newcomers_after`."""
    done = [read_at for read_at in reads if read_at is not None]
    if not done:
        return True
    if min(done) <= cutoff:
        return True
    return len(done) < len(reads) and max(done) <= newcomers_after


def batch_apps(repository: str, revision: str, app_ids: Iterable[int]) -> list[GitOpsApp]:
    """The applications of `app_ids` whose pins are still in `repository` at `revision` (they
    may have moved since the batch was queued), and every never-read application whose pins
    are in its own columns there too: one that appeared while the batch waited in the queue is
    read with it rather than making its repository due again a minute later (one whose pins are
    elsewhere waits for that minute). Loads only the columns a read uses, except for an
    application whose pins are elsewhere than its own columns."""
    wanted = batch_key(repository, revision)
    # `namespace` too: `_objects` names each object by it (deferred, it was a query per app).
    columns = ("id", "cluster_id", "name", "namespace", "tool", "kind", "chart", "repo_url", "path", "target_revision")
    rows = list(readable_apps().filter(pk__in=list(app_ids)).order_by("id").only(*columns))
    newcomers = readable_apps().filter(Q(git_pin_read__isnull=True) | Q(git_pin_read__last_read_at__isnull=True))
    ref = parse(repository)
    if ref is not None:  # every spelling of the repository's URL holds its name, in some case
        newcomers = newcomers.filter(repo_url__icontains=ref.name)
    keys: dict[tuple[str, str], str] = {}  # a fleet's first read sees thousands of apps, in few spellings
    known = {app.pk for app in rows}
    for app in newcomers.exclude(pk__in=known).order_by("id").only(*columns):
        spelling = (app.repo_url, app.target_revision)
        if spelling not in keys:
            keys[spelling] = batch_key(*spelling)
        if in_own_columns(app.tool, app.kind, app.chart, app.path) and keys[spelling] == wanted:
            rows.append(app)
    rows.sort(key=lambda app: app.pk)
    elsewhere = [app.pk for app in rows if not in_own_columns(app.tool, app.kind, app.chart, app.path)]
    loaded = {app.pk: app for app in GitOpsApp.objects.filter(pk__in=elsewhere).select_related("cluster")}
    apps = [loaded.get(app.pk, app) for app in rows]
    places = pin_places(apps)
    found = []
    for app in apps:
        place = places[app.pk]
        if place.found:
            spelling = (place.repository, place.revision)
            if spelling not in keys:
                keys[spelling] = batch_key(*spelling)
            if keys[spelling] == wanted:
                found.append(app)
    return found


def unreadable_reason(repository: str) -> str:
    """Why no configured forge can read `repository` ("" when one can). Builds a client only:
    no request is made, so the fan-out can ask this of every repository every minute."""
    try:
        forge_for(repository)
    except NotConfigured as error:
        return str(error)[:ERROR_MAX_CHARS]
    return ""


def record_unreadable(app_ids: Sequence[int], reason: str, now: datetime | None = None) -> int:
    """Store `reason` on the applications' pin state, as a read that could not start (their
    pins stay); the next look is in READ_INTERVAL. Returns how many applications newly say it."""
    now = now or timezone.now()
    newly = 0
    # A fleet's first sweep makes every application of a repository due at once (100,000 in a
    # few batches): a chunk at a time, the process holds ROW_CHUNK rows, not the whole fleet's.
    for first in range(0, len(app_ids), ROW_CHUNK):
        chunk = list(app_ids[first : first + ROW_CHUNK])
        _ensure_status_rows(chunk)
        statuses = GitPinRead.objects.filter(app_id__in=chunk)
        newly += statuses.exclude(last_error=reason).count()
        statuses.update(last_read_at=now, last_error=reason)
    return newly


def read_pins(
    apps: Sequence[GitOpsApp], *, forge: Forge | None = None, now: datetime | None = None
) -> dict[int, PinReadReport]:
    """Read and store the pins of `apps`, whose pin sources are all one repository at one
    revision, with one tree read; a report per application id. Never raises for a forge or
    parse failure; an application with no known Git location is reported with the reason."""
    now = now or timezone.now()
    if not apps:
        return {}
    _ensure_status_rows([app.pk for app in apps])
    places = pin_places(apps)
    reports: dict[int, PinReadReport] = {}
    lost = [app for app in apps if not places[app.pk].found]
    for app in lost:
        record_unreadable([app.pk], places[app.pk].unknown[:ERROR_MAX_CHARS], now)
        reports[app.pk] = PinReadReport(app=app.name, ok=False, error=places[app.pk].unknown[:ERROR_MAX_CHARS])
    apps = [app for app in apps if places[app.pk].found]
    if not apps:
        return reports
    first = places[apps[0].pk]
    branch = (first.revision or "").strip() or "HEAD"
    objects = _objects(apps)
    with shared_parses():  # a hundred applications of one service read its few files: parsed once
        return reports | _read_and_store(apps, places, objects, first, branch, forge, now)


def _read_and_store(
    apps: Sequence[GitOpsApp],
    places: dict[int, PinSource],
    objects: dict[int, dict[str, Any]],
    first: PinSource,
    branch: str,
    forge: Forge | None,
    now: datetime,
) -> dict[int, PinReadReport]:
    try:
        forge = forge or forge_for(first.repository)
        branch = followed_branch(forge, first.revision)
        # One tree read; each file is read the first time an application's build asks for it.
        _entries, tree = forge.tree_files(branch)
        reads = {
            app.pk: tree_reads(
                tree, objects[app.pk], path=_clean_path(places[app.pk].path), repository=places[app.pk].repository
            )
            for app in apps
        }
        files = {path: tree[path] for app in apps for path in reads[app.pk].paths}
    except NotConfigured as error:
        message = str(error)[:ERROR_MAX_CHARS]
        record_unreadable([app.pk for app in apps], message, now)
        return {app.pk: PinReadReport(app=app.name, ok=False, error=message) for app in apps}
    except (ForgeError, RuntimeError, OSError) as error:
        message = (str(error) or type(error).__name__)[:ERROR_MAX_CHARS]
        # One line per repository and revision, however many applications it serves.
        log.warning(
            "reading git pins of %s at %s failed (%d applications): %s", first.repository, branch, len(apps), message
        )
        GitPinRead.objects.filter(app_id__in=[app.pk for app in apps]).update(
            branch=branch[:253], last_read_at=now, last_error=message
        )
        return {app.pk: PinReadReport(app=app.name, ok=False, error=message) for app in apps}
    return _store(apps, files, branch, now, reads, repository_key(first.repository))


def read_app_pins(app: GitOpsApp, *, forge: Forge | None = None, now: datetime | None = None) -> PinReadReport:
    """Read one application's pins (a batch of one, for a person's "read now")."""
    return read_pins([app], forge=forge, now=now)[app.pk]


def followed_branch(forge: Forge, revision: str) -> str:
    """The branch (or tag) to read at: the repository's default branch for `HEAD` or nothing."""
    if revision_kind(revision) == DEFAULT:
        return forge.default_branch()
    return ref_name(revision)


def _clean_path(path: str) -> str:
    path = (path or "").strip().strip("/").removeprefix("./")
    return "" if path in ("", ".") else path


def _objects(apps: Sequence[GitOpsApp]) -> dict[int, dict[str, Any]]:
    """Each application's object as its tool holds it (one query), for `tree_reads`. A row
    stored without its sources or path (read from columns only) gets them from its columns,
    as `pin_source` reads it."""
    # Only the parts a layout reads: an Argo CD Application's status (its history, its
    # resources) is most of its object, and decoding it for a thousand apps was most of a read.
    parts = {
        pk: (metadata, spec)
        for pk, metadata, spec in GitOpsApp.objects.filter(pk__in=[app.pk for app in apps]).values_list(
            "pk", "raw__metadata", "raw__spec"
        )
    }
    found: dict[int, dict[str, Any]] = {}
    for app in apps:
        stored_metadata, stored_spec = parts.get(app.pk, (None, None))
        metadata = {
            "name": app.name,
            "namespace": app.namespace,
            **(stored_metadata if isinstance(stored_metadata, dict) else {}),
        }
        spec = dict(stored_spec if isinstance(stored_spec, dict) else {})
        if app.tool == ARGO and not (spec.get("source") or spec.get("sources")):
            spec["source"] = {"repoURL": app.repo_url, "path": app.path, "targetRevision": app.target_revision}
            if app.chart:
                spec["source"] = {**spec["source"], "chart": app.chart, "path": None}
        elif app.kind == "Kustomization" and "path" not in spec:
            spec["path"] = app.path
        found[app.pk] = {"kind": app.kind, "metadata": metadata, "spec": spec}
    return found


def _store(
    apps: Sequence[GitOpsApp], files: dict[str, str], branch: str, now: datetime, reads: dict[int, Reads], repo: str
) -> dict[int, PinReadReport]:
    """Store what the read found. Most reads of a repository find what the last one did: only
    the applications whose pins (or plain Secrets) differ from the stored ones are written, and
    the matrix's read model refreshed for their clusters alone; every application's read
    status says it was read. A pin row keeps the time it was first read as it is (`read_at`);
    `GitPinRead.last_ok_at` says when it was last confirmed."""
    index = service_image_index(Service.objects.all())
    ids = dict(Service.objects.values_list("name", "id"))
    names = {pk: name for name, pk in ids.items()}
    app_ids = [app.pk for app in apps]
    rows_by_app: dict[int, list[GitPin]] = {}
    secrets: dict[int, list[str]] = {}
    for app in apps:
        read = reads[app.pk]
        own = {path: files[path] for path in read.paths if path in files}
        # A plain Secret among the files the app builds (portal.findings: raw-secret): its path, never its text.
        secrets[app.pk] = [path for path in plain_secret_files(own) if path in read.whole]
        rows_by_app[app.pk] = [
            GitPin(app=app, service_id=ids[service], version=pin.version, path=pin.path, line=pin.line, read_at=now)
            for service, pin in service_pins(own, read, index)
        ]
    _store_plain_secrets(secrets)
    keep_builds({app.pk: reads[app.pk].as_stored() for app in apps}, repo)
    stored: dict[int, list[tuple[int, str, str, int]]] = defaultdict(list)
    for row in GitPin.objects.filter(app_id__in=app_ids).values_list("app_id", "service_id", "version", "path", "line"):
        stored[row[0]].append(row[1:])
    by_cluster: dict[int, list[GitOpsApp]] = defaultdict(list)
    for app in apps:
        now_pins = sorted((r.service_id, r.version, r.path, r.line) for r in rows_by_app[app.pk])
        if now_pins != sorted(stored.get(app.pk, [])):
            by_cluster[app.cluster_id].append(app)
    for cluster_id, cluster_apps in by_cluster.items():
        changed_ids = [app.pk for app in cluster_apps]
        rows = [row for app in cluster_apps for row in rows_by_app[app.pk]]
        with transaction.atomic():
            before = {service_id for app_id in changed_ids for service_id, *_ in stored.get(app_id, [])}
            GitPin.objects.filter(app_id__in=changed_ids).delete()
            GitPin.objects.bulk_create(rows)
            version_matrix.refresh(cluster_id, before | {row.service_id for row in rows})
    GitPinRead.objects.filter(app_id__in=app_ids).update(
        branch=branch[:253], last_read_at=now, last_ok_at=now, last_error=""
    )
    return {
        app.pk: PinReadReport(
            app=app.name,
            ok=True,
            pins=[
                {"service": names[r.service_id], "version": r.version, "path": r.path, "line": r.line}
                for r in rows_by_app[app.pk]
            ],
        )
        for app in apps
    }


def service_pins(files: dict[str, str], read: Reads, index: dict[str, str]) -> list[tuple[str, Pin]]:
    """The pins an application renders (`read`: what `tree_reads` says it builds, less what
    its build overrides), each with the service it pins: (service name, pin). `index` is
    `service_image_index` (normalised image name -> service). A kustomize entry that renames
    the service's image (`name: ghcr.io/acme/api`, `newName: <mirror>/api`) pins the service
    under either name, an alias for the mirror or not; a base's `:latest` it overrides is not
    held, so it is not one of the service's pins, nor is a chart's values.yaml tag that an
    environment's values file overrides (whose `image.tag` is the pin, repository or not)."""
    found = []
    for pin in read.pins(scan(files).pins):
        service = index.get(normalise_name(pin.image))
        if service is None and pin.renamed_from:
            service = index.get(normalise_name(pin.renamed_from))
        if service is not None:
            found.append((service, pin))
    return found


def _store_plain_secrets(secrets: dict[int, list[str]]) -> None:
    """Keep the plain Secrets each application builds where they changed (rare: a query)."""
    stored = dict(GitPinRead.objects.filter(app_id__in=list(secrets)).values_list("app_id", "plain_secrets"))
    changed = {app_id: paths for app_id, paths in secrets.items() if stored.get(app_id) != paths}
    GitPinRead.objects.filter(app_id__in=[pk for pk, paths in changed.items() if not paths]).update(plain_secrets=[])
    for app_id, paths in changed.items():
        if paths:
            GitPinRead.objects.filter(app_id=app_id).update(plain_secrets=paths)


def _ensure_status_rows(app_ids: Iterable[int]) -> None:
    wanted = set(app_ids)
    have = set(GitPinRead.objects.filter(app_id__in=wanted).values_list("app_id", flat=True))
    GitPinRead.objects.bulk_create([GitPinRead(app_id=pk) for pk in sorted(wanted - have)], ignore_conflicts=True)


# --- reading the store (pages and the API) ---------------------------------------------


def git_pins(app: GitOpsApp | int) -> list[dict]:
    """What Git pins under one application: [{service, version, path, line}] (one query)."""
    app_id = app if isinstance(app, int) else app.pk
    return git_pins_by_app([app_id]).get(app_id, [])


def git_pins_by_app(app_ids: Iterable[int]) -> dict[int, list[dict]]:
    """`git_pins` for many applications in one query: app id -> pins (absent when none stored)."""
    found: dict[int, list[dict]] = defaultdict(list)
    rows = (
        GitPin.objects.filter(app_id__in=list(app_ids))
        .order_by("app_id", "service__name", "path", "line")
        .values_list("app_id", "service__name", "version", "path", "line")
    )
    for app_id, service, version, path, line in rows:
        found[app_id].append({"service": service, "version": version, "path": path, "line": line})
    return dict(found)


def pinned_versions(app_ids: Iterable[int], service: Service | None = None) -> dict[tuple[int, str], list[str]]:
    """(app id, service name) -> the distinct versions Git pins, sorted (one query)."""
    query = with_ids(GitPin.objects.all(), app_ids, "app_id")
    if service is not None:
        query = query.filter(service=service)
    found: dict[tuple[int, str], set[str]] = defaultdict(set)
    for app_id, name, version in query.values_list("app_id", "service__name", "version"):
        found[(app_id, name)].add(version)
    return {key: sorted(versions) for key, versions in found.items()}


def pin_summary(pinned: list[str], running: list[str]) -> str:
    """ "Git pins 1.7.0, runs 1.6.0" when they differ; "" when they agree or nothing is known."""
    if not pinned:
        return ""
    pins = ", ".join(pinned)
    if sorted(set(running)) == sorted(set(pinned)):
        return ""
    if not running:
        return f"Git pins {pins}"
    return f"Git pins {pins}, runs {', '.join(sorted(set(running)))}"


def pins_at_commit(apps: Sequence[GitOpsApp], forge: Forge, commit: str) -> dict[int, dict[str, list[str]]]:
    """What Git pinned for each of `apps` at `commit` (service -> the versions, sorted), found as
    `read_pins` finds them (the same reads and scan), stored nowhere. The apps' pins must be in
    their own columns (`gitops.git_locations.in_own_columns`) of the repository `forge` reads: a
    GitOps tool's history names commits of that source. Forge errors propagate."""
    objects = _objects(apps)
    _entries, tree = forge.tree_files(commit)
    index = service_image_index(Service.objects.all())
    found: dict[int, dict[str, list[str]]] = {}
    with shared_parses():
        for app in apps:
            read = tree_reads(tree, objects[app.pk], path=_clean_path(app.path), repository=app.repo_url)
            own = {path: tree[path] for path in read.paths if path in tree}
            versions: dict[str, set[str]] = defaultdict(set)
            for pin in scan(own).pins:
                if read.holds(pin.path, pin.line) and (service := index.get(normalise_name(pin.image))) is not None:
                    versions[service].add(pin.version)
            found[app.pk] = {service: sorted(v) for service, v in sorted(versions.items())}
    return found

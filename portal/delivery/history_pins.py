"""What Git pinned at the commits a GitOps tool's own history names: the version a rollback
returns to, known whether or not the portal was polling when the version changed.

Argo CD appends to an Application's `status.history[]` one entry per successful sync: the commit
of its Git source (`revision`, or `revisions[i]` of a multi-source one) and `deployedAt`.
kustomize-controller (Flux 2.7) keeps a Kustomization's `status.history[]`: the artifact revision
(`main@sha1:<commit>`) and `firstReconciled`, when that revision was first applied (its
`lastReconciled` moves at every reconciliation). Neither says which image version a commit
deployed: that is what Git pinned at the commit, read through the forge at the commit
(`Forge.tree_files(<commit>)`, `portal.delivery.current_pins.pins_at_commit`, the reads and scan of
the current pins).

Cached, and read in the background: a commit never changes, so what it pinned under a path is
read once and kept in `PinsAtRevision`, keyed by (repository, commit, path). The worker's
rollback pass (`read_missing`, run by `portal.delivery.deployments.announce_rollbacks` before it
announces) reads the missing ones, only for the applications a rollback could be offered to
(failing past the grace period) and only the commits their trouble can be blamed on. Pages, the
API, MCP and alerts look rows up (`stored`): nobody waits on a forge for it. A failed read keeps
its reason and is tried again after RETRY.

Only applications whose pins are in their own Git source (`gitops.git_locations.in_own_columns`: a
Flux Kustomization, an Argo CD Application with a Git path) are read so: the history of a
HelmRelease or of a chart Application names chart versions (the chart rollback reads those).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from forges.forge import Forge, ForgeError, NotConfigured
from forges.hosts import forge_for
from gitops.git_locations import in_own_columns
from gitops.models import GitOpsApp
from gitops.rawobjects import as_dict, as_list, as_str
from gitops.revisions import argocd_commit, flux_commit
from gitops.rows import ARGO
from portal.delivery.current_pins import pins_at_commit
from portal.delivery.models import PinsAtRevision
from portal.kernel.timestamps import parse_time

log = logging.getLogger(__name__)

RETRY = timedelta(hours=1)  # a failed read (a token that may not read, a forge down) is tried again after
ERROR_MAX_CHARS = 500

Key = tuple[str, str, str]  # (repository, commit, path)


@dataclass(frozen=True)
class Deployed:
    """A commit the tool's history says it deployed, and when it first did."""

    commit: str
    at: datetime


@dataclass(frozen=True)
class HistoryFacts:
    """What an application's history says, with where its pins are."""

    app_id: int
    repository: str
    path: str
    deployed: list[Deployed]  # oldest first

    def key(self, commit: str) -> Key:
        return pins_key(self.repository, commit, self.path)


def pins_key(repository: str, commit: str, path: str) -> Key:
    return repository.strip(), commit, path.strip().strip("/").removeprefix("./")


def deployed_commits(tool: str, history: Sequence[Mapping[str, object]], source_index: int = 0) -> list[Deployed]:
    """The commits a stored history (oldest first, as `gitops.collectors` keeps it) shows
    deployed, oldest first, each run of one commit once with its first deployment. Pure.

    An Argo CD entry's commit is its `revision` (or `revisions[source_index]`) and its time its
    `deployed_at`; a Flux Kustomization entry's the commit of its artifact revision, first
    applied at `first_at` (its `firstReconciled`). Entries naming no commit (a chart version,
    an OCI digest) or no time are left out."""
    found: list[Deployed] = []
    for entry in history:
        if tool == ARGO:
            revisions = entry.get("revisions")
            if isinstance(revisions, list) and len(revisions) > 1:
                revision = str(revisions[source_index] or "") if len(revisions) > source_index else ""
            else:
                revision = str(entry.get("revision") or "")
            commit = argocd_commit(revision) if revision else None
            at = parse_time(entry.get("deployed_at"))
        else:
            revision = str(entry.get("revision") or "")
            commit = flux_commit(revision) if revision else None
            at = parse_time(entry.get("first_at")) or parse_time(entry.get("deployed_at"))
        if not commit or at is None:
            continue
        if found and found[-1].commit == commit:
            continue  # Flux keeps one entry per (digest, status): one commit, first applied once
        found.append(Deployed(commit, at))
    return found


def needed(deployed: Sequence[Deployed], failing_since: datetime, reach: timedelta) -> list[Deployed]:
    """The deployments whose pins judge trouble that began at `failing_since`: every one
    deployed after `failing_since - reach` (later ones too: a change after the trouble began
    means the trouble is not its), and the one before them, what the first of them replaced. Pure."""
    # A row stored before parse_time read Go's zero time as unknown may still say 0001-01-01.
    floor = datetime.min.replace(tzinfo=failing_since.tzinfo)
    since = failing_since - reach if failing_since - floor > reach else floor
    first = next((i for i, d in enumerate(deployed) if d.at > since), len(deployed))
    return list(deployed[max(first - 1, 0):])


def history_facts(app_ids: Iterable[int], reach: timedelta, failing_since: Mapping[int, datetime]
                  ) -> dict[int, HistoryFacts]:
    """app id -> its history facts (only the deployments `needed` for its trouble), for the
    apps whose pins are in their own Git source. One query: the history column of these apps,
    streamed (a server-side cursor on PostgreSQL), as only the facts are kept: the parsed
    histories of 4,000 failing apps at once took the background worker 60 MB (2026-12-07)."""
    rows = GitOpsApp.objects.filter(pk__in=list(app_ids)).exclude(Q(repo_url="") | Q(path="")).values_list(
        "id", "tool", "kind", "chart", "repo_url", "path", "sources", "history").iterator(chunk_size=200)
    found: dict[int, HistoryFacts] = {}
    for app_id, tool, kind, chart, repo_url, path, sources, history in rows:
        if not in_own_columns(tool, kind, chart, path) or app_id not in failing_since:
            continue
        deployed = deployed_commits(tool, as_list(history), _source_index(sources, repo_url, path))
        found[app_id] = HistoryFacts(app_id, repo_url, path, needed(deployed, failing_since[app_id], reach))
    return found


def _source_index(sources: Any, repo_url: str, path: str) -> int:
    """Which of a multi-source Application's sources holds its pins (its history's revisions
    are in the order of its sources)."""
    for index, source in enumerate(as_dict(s) for s in as_list(sources)):
        if as_str(source.get("repoURL")) == repo_url and as_str(source.get("path")) == path:
            return index
    return 0


def stored(keys: Iterable[Key]) -> dict[Key, dict[str, list[str]]]:
    """(repository, commit, path) -> what Git pinned there, for the keys read without error.
    One query."""
    wanted = set(keys)
    rows = PinsAtRevision.objects.filter(
        repository__in={k[0] for k in wanted}, revision__in={k[1] for k in wanted}, error=""
    ).values_list("repository", "revision", "path", "pins")
    return {(r, c, p): pins for r, c, p, pins in rows if (r, c, p) in wanted}


# Commits whose apps `read_missing` holds at once.
COMMIT_CHUNK = 200


def read_missing(failing: Mapping[int, datetime], now: datetime, reach: timedelta, forge: Forge | None = None) -> int:
    """Read what Git pinned at the commits the histories of the `failing` apps (app id -> failing
    since) name, where it is not stored yet (or its last read failed more than RETRY ago); how
    many were read. Never raises for a forge failure: the row keeps the reason."""
    facts = history_facts(failing, reach, failing)
    wanted: dict[Key, list[int]] = defaultdict(list)
    for fact in facts.values():
        for deployed in fact.deployed:
            wanted[fact.key(deployed.commit)].append(fact.app_id)
    if not wanted:
        return 0
    known = {
        (r, c, p): (error, read_at)
        for r, c, p, error, read_at in PinsAtRevision.objects.filter(
            repository__in={k[0] for k in wanted}, revision__in={k[1] for k in wanted}
        ).values_list("repository", "revision", "path", "error", "read_at")
    }
    missing = {k: ids for k, ids in wanted.items()
               if k not in known or (known[k][0] and now - known[k][1] >= RETRY)}
    by_commit: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)  # (repository, commit) -> path -> an app
    for (repository, commit, path), ids in missing.items():
        by_commit[repository, commit][path] = ids[0]
    commits = sorted(by_commit.items())
    read = 0
    # A fleet's first sweep finds thousands of failing apps with their histories unread, and a
    # whole app row (its object, its history) is tens of KB: the apps are loaded a chunk of
    # commits at a time. All at once, 4,000 of them took a worker process from 158 to 336 MB.
    for first in range(0, len(commits), COMMIT_CHUNK):
        chunk = commits[first : first + COMMIT_CHUNK]
        apps = GitOpsApp.objects.in_bulk({i for _, paths in chunk for i in paths.values()})
        for (repository, commit), paths in chunk:
            read += _read_commit(repository, commit, paths, apps, forge, now)
    return read


def _read_commit(repository: str, commit: str, paths: Mapping[str, int], apps: Mapping[int, GitOpsApp],
                 forge: Forge | None, now: datetime) -> int:
    """What Git pinned at one commit under `paths` (path -> an app that builds it), stored."""
    error, pins = "", {}
    try:
        client = forge or forge_for(repository)
        # One tree read per commit, whatever the number of paths under it.
        pins = pins_at_commit([apps[i] for i in paths.values()], client, commit)
    except NotConfigured as problem:
        error = str(problem)
    except (ForgeError, RuntimeError, OSError) as problem:
        error = str(problem) or type(problem).__name__
        log.warning("reading git pins of %s at %s failed: %s", repository, commit[:12], error[:ERROR_MAX_CHARS])
    for path, app_id in paths.items():
        PinsAtRevision.objects.update_or_create(
            repository=repository, revision=commit, path=path,
            defaults={"pins": pins.get(app_id, {}), "read_at": now, "error": error[:ERROR_MAX_CHARS]},
        )
    return len(paths)

"""Read side for the matrix (and the counts atop the overview): a fixed handful of queries,
whatever the fleet size.

Everything here reads the store only; nothing reaches a cluster or a forge.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from gitops.derive.attention import OPERATION_RUNNING, Attention
from gitops.models import HELD_Q, GitOpsApp, blocked_q
from gitops.queries import attention_rows, stamp
from portal.delivery.current_pins import pin_summary
from portal.delivery.models import VersionLine
from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.web.badges import STUCK_PROGRESSING, SYNC_FAILED

TOOL_LABEL = {"argo": "Argo", "flux": "Flux"}


@dataclass(slots=True)
class Flag:
    """A state that has lasted past the grace period: "Argo: degraded" on prod-eu-1 since …"""

    label: str
    since: datetime | None
    cluster: str
    app: str
    severity: str  # bad | warn
    # False where `since` is only the portal's first sight of the state ("at least since").
    exact: bool = True


@dataclass(slots=True)
class CellLine:
    """One line of a matrix cell: a set of versions on one or more clusters. Clusters that run
    the same versions with nothing wrong share a line, so an environment of ten healthy
    clusters is one line, not ten; clusters with the same versions and the same problems
    share another, whose flags keep each cluster's app and since."""

    versions: list[str]
    clusters: list[str] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)  # what Git pins for it there, when read
    cluster_ids: list[int] = field(default_factory=list)

    @property
    def pins(self) -> str:
        """"Git pins 1.7.0, runs 1.6.0": why a change in Git has not gone out."""
        return pin_summary(self.pinned, self.versions)


# A cell shows up to OPEN_LINES lines as they are, unless they span more than FOLD_CLUSTERS
# clusters: then (an environment of many clusters running several versions) it folds, its
# first problems in sight and the rest behind a disclosure that loads them (the matrix's
# cell partial). A cell of one line stays that line: "1.4.2 · 167 clusters" is short.
OPEN_LINES = 3
FOLD_CLUSTERS = 12
SHOWN_PROBLEM_LINES = 2


@dataclass
class Cell:
    environment: Environment
    lines: list[CellLine] = field(default_factory=list)
    rendered: str = ""  # its HTML, set by portal.web.hotpath.render_matrix

    @property
    def attention(self) -> bool:
        return any(line.flags for line in self.lines)

    def fold(self) -> tuple[list[CellLine], list[CellLine]]:
        """(the lines in sight, the lines behind the disclosure). Problems come first in a
        cell, so the lines in sight are its first problems; a cell of few lines shows all."""
        lines = self.lines
        if len(lines) <= 1 or (len(lines) <= OPEN_LINES and sum(len(line.clusters) for line in lines) <= FOLD_CLUSTERS):
            return lines, []
        shown = 0
        while shown < SHOWN_PROBLEM_LINES and self.lines[shown].flags:
            shown += 1
        return self.lines[:shown], self.lines[shown:]


@dataclass
class ServiceRow:
    service: Service
    cells: list[Cell]


def attention_flags(at: datetime | None = None, service_ids: list[int] | None = None
                    ) -> dict[tuple[int, int], list[Flag]]:
    """(service id, cluster id) -> flags of the apps deploying it that need attention, in
    the order of cluster and app names: one query (`gitops.queries.attention_rows`), which
    says which half of the attention rule holds, so nothing here judges a state again."""
    found = attention_rows(Attention.at(at or timezone.now()), service_ids=service_ids)
    labels: dict[tuple[str, str], str] = {}

    def label_of(tool: str, state: str) -> str:
        label = labels.get((tool, state))
        if label is None:
            label = labels[(tool, state)] = f"{TOOL_LABEL.get(tool, tool)}: {state}"
        return label

    flags: dict[tuple[int, int], list[Flag]] = defaultdict(list)
    for (service_id, cluster_id, cluster, tool, name, sync_at, health, health_at, started_at, finished_at, phase,
         bad, drifted, is_stuck, is_failed, disagrees, disagreement_at, disagreement, sync_exact, health_exact
         ) in found:
        these = flags[(service_id, cluster_id)]
        if bad:
            these.append(Flag(label_of(tool, health.lower()), stamp(health_at), cluster, name, "bad",
                              bool(health_exact)))
        if is_failed:
            these.append(Flag(label_of(tool, SYNC_FAILED), stamp(finished_at), cluster, name, "bad"))
        if drifted:
            these.append(Flag(label_of(tool, "out of sync"), stamp(sync_at), cluster, name, "warn", bool(sync_exact)))
        if is_stuck:
            running = phase == OPERATION_RUNNING and started_at is not None
            these.append(Flag(label_of(tool, STUCK_PROGRESSING), stamp(started_at if running else health_at),
                              cluster, name, "warn", running or bool(health_exact)))
        if disagrees:
            # The tool calls it fine, a health rule does not (gitops.health.rules): the sentence says why.
            label = f"{TOOL_LABEL.get(tool, tool)}: health disagreement ({disagreement[:160]})"
            these.append(Flag(label, stamp(disagreement_at), cluster, name, "bad"))
    return flags


def _version_lines(service_ids: list[int] | None) -> list[tuple[int, int, str, str, str, str]]:
    """What runs, as lines already grouped when it was stored (`VersionLine`): per service
    and environment, the enabled clusters that run the same versions with the same pins.
    Reading them costs a row per line, whatever the number of applications."""
    lines = VersionLine.objects.all()
    if service_ids is not None:
        lines = lines.filter(service_id__in=service_ids)
    return list(lines.values_list("service_id", "environment_id", "versions", "pinned", "cluster_ids",
                                  "cluster_names"))


def _first_cluster(line: CellLine) -> str:
    return line.clusters[0]


def service_rows(services: list[Service] | None = None, at: datetime | None = None) -> tuple[
    list[Environment], list[ServiceRow]
]:
    """Services × environments, each cell the lines described on `CellLine`.

    Quiet clusters come grouped into lines as they were stored (`VersionLine`), so the work
    here follows the number of lines and of problems, not of applications."""
    environments = list(Environment.objects.all())
    clusters = list(Cluster.objects.filter(enabled=True).values_list("id", "name", "environment_id"))
    names = {cluster_id: name for cluster_id, name, _ in clusters}
    selected = [s.id for s in services] if services is not None else None
    if services is None:
        # Rows show a service's name and team; its image aliases (JSON) are not read.
        services = list(Service.objects.only("id", "name", "team"))
    flags = attention_flags(at, selected)  # of the services asked about only (a page of the matrix)
    env_index = {env.id: index for index, env in enumerate(environments)}
    env_of = {cluster_id: env_index.get(env_id) for cluster_id, _, env_id in clusters}

    lines: dict[tuple[int, int], list[CellLine]] = defaultdict(list)
    flagged_services = {service_id for service_id, _ in flags}
    # (service id, cluster id) -> what a cluster with a problem runs, for the line made below.
    flagged_runs: dict[tuple[int, int], tuple[str, str]] = {}
    for service_id, env_id, versions_text, pinned_text, ids_text, names_text in _version_lines(selected):
        index = env_index.get(env_id)
        if index is None:
            continue
        if service_id in flagged_services:
            # A cluster with a problem is kept out of the quiet lines, to say where and since when.
            runs = (versions_text, pinned_text)
            ids, clusters = [], []
            for cluster_id in map(int, ids_text.split(",")):
                if (service_id, cluster_id) in flags:
                    flagged_runs[(service_id, cluster_id)] = runs
                elif cluster_id in names:
                    ids.append(cluster_id)
                    clusters.append(names[cluster_id])
            if not ids:
                continue
        else:
            ids, clusters = list(map(int, ids_text.split(","))), names_text.split(",")
        cell = lines[(service_id, index)]
        pinned = pinned_text.split(",") if pinned_text else []
        cell.append(CellLine(versions_text.split(","), clusters, [], pinned, ids))
        if len(cell) > 1:
            cell.sort(key=_first_cluster)

    # What is wrong comes first in its cell. Clusters with the same versions and the same
    # problems share a line (a bad release degraded on every prod cluster reads "3 clusters ·
    # Argo: degraded"; the title has each one's app and since). Flags come ordered by cluster
    # name, so lines and their clusters are in that order too. A problem where nothing runs
    # (a Missing app) still gets its line.
    problems: dict[tuple[int, int], list[CellLine]] = defaultdict(list)
    alike: dict[tuple, CellLine] = {}
    nothing = ("", "")
    for pair, found in flags.items():
        service_id, cluster_id = pair
        index = env_of.get(cluster_id)
        if index is None:
            continue
        runs = flagged_runs.get(pair, nothing)
        labels = found[0].label if len(found) == 1 else tuple(sorted({f.label for f in found}))
        key = (service_id, index, runs, labels)
        line = alike.get(key)
        if line is None:
            versions_text, pinned_text = runs
            line = alike[key] = CellLine(versions_text.split(",") if versions_text else [], [], [],
                                         pinned_text.split(",") if pinned_text else [], [])
            problems[(service_id, index)].append(line)
        line.clusters.append(names[cluster_id])
        line.cluster_ids.append(cluster_id)
        line.flags.extend(found)
    for cell_key, first in problems.items():
        lines[cell_key] = first + lines.get(cell_key, [])

    rows = []
    for service in services:
        cells = [Cell(env, lines.get((service.id, index), [])) for index, env in enumerate(environments)]
        rows.append(ServiceRow(service, cells))
    return environments, rows


def fleet_counts(at: datetime | None = None) -> dict[str, int]:
    """The numbers at the top of the overview: how many apps (from an index), then one pass
    over only the apps that can need attention or are held (the partial indexes of
    `Attention.candidates_q` and `HELD_Q`), plus one query for clusters."""
    at = at or timezone.now()
    rule = Attention.at(at)
    counts = GitOpsApp.objects.filter(Attention.candidates_q() | HELD_Q).aggregate(
        attention=Count("id", filter=rule.q()),  # GitOpsApp.objects.needing_attention(at).count()
        degraded=Count("id", filter=rule.unhealthy_q()),
        out_of_sync=Count("id", filter=rule.out_of_sync_q()),
        blocked=Count("id", filter=blocked_q(at)),
        suspended=Count("id", filter=Q(suspended=True)),
    )
    counts["apps"] = GitOpsApp.objects.count()
    counts["stale_clusters"] = Cluster.objects.filter(enabled=True, poll__stale_since__isnull=False).count()
    return counts

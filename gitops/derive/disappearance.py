"""The mass-disappearance guard (pure): a list that suddenly lost (nearly) every app is held once.

An API server under a broken aggregation layer, a webhook or a half-installed CRD can answer
a list of Applications (or Kustomizations, HelmReleases) with an empty or nearly empty list
while everything those apps deployed still runs. Taken at its word, one such answer deletes
every app, writes a "gone" state change per app (a notification each) and throws away every
"since when". A real teardown looks different: the workloads the apps deployed go too, and
it is still there a minute later.

So a kind whose list shrank to 10 % or less of what the store holds (at least `MIN_APPS` apps
before) is *held* for one poll: its stored apps are kept as they are, untouched, and the
cluster says why. The next poll either brings them back (nothing was lost, nothing notified)
or confirms the removal, which is then written as usual. The hold is skipped at once when
the evidence says the removal is real: every vanished app had workloads recorded in this
cluster and none of them is listed any more. Without that evidence (workloads not listed, or
the apps' workloads run in another cluster) the guard holds: a wrong hold costs one poll
interval of delay, a wrong removal costs the history and a burst of notifications.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from gitops.rows import Snapshot, app_key
from gitops.store.read import ClusterState

# App kinds the guard watches, as the collectors name them, with the words the cluster shows.
APP_KINDS = {"Application": "Applications", "Kustomization": "Flux Kustomizations", "HelmRelease": "Flux HelmReleases"}
MIN_APPS = 3  # losing one or two apps is ordinary churn, never held
SHRINK = 0.1  # at most this fraction of the stored apps left: suspicious
HOLD_PREFIX = "held:"  # key of a hold in ClusterPoll.unavailable, so the next poll knows it confirms


@dataclass(frozen=True)
class Hold:
    kind: str
    before: int
    now: int

    @property
    def key(self) -> str:
        return HOLD_PREFIX + self.kind

    @property
    def message(self) -> str:
        what = APP_KINDS[self.kind]
        if self.now == 0:
            shape = "came back empty"
        else:
            shape = f"came back with {self.now} of {self.before}"
        return f"{what} list {shape}; keeping the last good data until the next poll confirms it"


def held_keys(unavailable: dict[str, str] | None) -> set[str]:
    """The kinds the previous poll held (from the cluster's stored `unavailable`)."""
    return {key[len(HOLD_PREFIX):] for key in (unavailable or {}) if key.startswith(HOLD_PREFIX)}


def holds(state: ClusterState, snapshot: Snapshot, held_before: Collection[str]) -> list[Hold]:
    """The app kinds of this poll to hold back, unless the previous poll already held them."""
    found = []
    listed_now: dict[str, set[str]] = {}
    for row in snapshot.apps:
        listed_now.setdefault(row.kind, set()).add(app_key(row.tool, row.kind, row.namespace, row.name))
    for kind in APP_KINDS:
        if kind not in state.listed_kinds or kind in held_before:
            continue
        stored = {key: app for key, app in state.apps.items() if app.kind == kind}
        now = listed_now.get(kind, set())
        if len(stored) < MIN_APPS or len(now) > SHRINK * len(stored):
            continue
        vanished_ids = {app.id for key, app in stored.items() if key not in now}
        if _teardown_evident(state, snapshot, vanished_ids):
            continue
        found.append(Hold(kind=kind, before=len(stored), now=len(now)))
    return found


def _teardown_evident(state: ClusterState, snapshot: Snapshot, vanished_ids: set[int]) -> bool:
    """Every vanished app had workloads here, and this poll listed their kinds without them."""
    if not state.workload_kinds or not vanished_ids:
        return False
    theirs: dict[int, list[tuple[str, str, str]]] = {}
    for key, workload in state.workloads.items():
        if workload.app_id in vanished_ids:
            theirs.setdefault(workload.app_id, []).append(key)
    if set(theirs) != vanished_ids:
        return False  # some app's workloads are not recorded here: no evidence either way
    still_listed = {(w.kind, w.namespace, w.name) for w in snapshot.workloads}
    return not any(key in still_listed for keys in theirs.values() for key in keys)

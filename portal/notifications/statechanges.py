"""Gitops episodes from StateChange rows, each row consumed exactly once.

The store writes a StateChange row whenever an app's sync, health, presence or health
disagreement changes. A minute's pass claims the rows nobody has consumed yet (`processed`
is null: a partial index keeps that a handful of rows, however long the history) and moves
each app's `Trouble` forward with them:

- a row that takes an app out of "in sync, healthy and agreed" makes its trouble, dated by
  the row's time — the episode's "since when";
- rows while it is in trouble only update the state the trouble knows (Degraded ->
  Progressing -> Degraded, or OutOfSync -> Synced while still Degraded, stays one episode:
  people hear about it once);
- a row that brings it back to in sync, healthy and agreed removes the trouble.

A health disagreement ("Flux says healthy, but DecisionModel support-router reports
RolledBack: …", gitops.health.blindspot and the health rules) is a `disagreement` row like
the others rather than something this pass reads off the stored app: events travel down as
rows (docs/architecture.md), so the pass keeps reading only what is new instead of every
app's column each minute, a disagreement is dated by the poll that saw it, and a poll that
turns an app Degraded while its rule disagrees is one episode, not two.

A row is claimed as soon as it exists, before its grace period may have passed: the
claim records the trouble, and the episode opens on the first pass at which the trouble
has lasted past the grace period while its state needs attention (the one rule,
`GitOpsApp.needs_attention`, applied to the state dated from the trouble's start). An open
gitops episode that no trouble points at is over (its app recovered, is gone, or began a
newer episode) and is closed by the same pass.

Several workers may run the pass at once. A batch is claimed with SELECT … FOR UPDATE and
stamped with a compare-and-set UPDATE … WHERE processed IS NULL in the same short
transaction that applies it, so on PostgreSQL a second worker waits for the first's batch
and then skips its rows, and on SQLite the IMMEDIATE transaction (settings) serialises the
writers; a batch whose stamp would not cover every row it read is rolled back. Opening an
episode is idempotent (`emit`: unique key, unique deliveries), so two workers opening the
same one make one episode and one delivery per rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

from django.db import transaction
from django.utils import timezone

from gitops.models import GitOpsApp, StateChange, grace_cutoff
from portal.delivery.current_pins import pinned_versions
from portal.notifications.episode_steps import episode_ended
from portal.notifications.events import EventKind, add_deliveries, emit, enabled_rules
from portal.notifications.gitops_events import build_event, episode_key, is_resolved
from portal.notifications.models import Delivery, Episode, Rule, Trouble

# Rows claimed per transaction: a first pass over a long history runs in several short ones.
BATCH = 2000
# The state a row is applied to when the app has no trouble: in sync, healthy, no disagreement.
RESOLVED = ("Synced", "Healthy", "")
# The StateChange fields that make or end a trouble.
TROUBLE_FIELDS = ("sync", "health", "disagreement")
# What a StateChange row keeps of a value: an app's disagreement is compared with its rows at that length.
KEPT = StateChange._meta.get_field("new").max_length


@dataclass
class _State:
    sync: str
    health: str
    since: datetime
    episode_id: int | None = None
    disagreement: str = ""


class _ClaimLost(Exception):
    """Another worker stamped part of the batch first: roll this one back."""


def emit_gitops_events(at: datetime | None = None) -> list[Episode]:
    """One pass as of `at` (`gitops_pass`); returns the episodes it opened."""
    opened: list[Episode] = []
    gitops_pass(at, opened.append)
    return opened


def gitops_pass(at: datetime | None = None, opened: Callable[[Episode], object] | None = None) -> int:
    """One pass as of `at`: consume new StateChange rows, open due episodes (each told to
    `opened`), close ended ones; how many were opened. The beat task keeps none of them: a
    fleet's first pass opens thousands, and held together they took its worker 130 MB
    (2026-12-07)."""
    at = at or timezone.now()
    after = 0
    while True:
        claimed, after = consume_batch(at, after)
        if claimed < BATCH:
            break
    rules = enabled_rules()
    count = open_due_episodes(at, rules, opened)
    close_ended_episodes(at)
    add_deliveries_for_new_rules(at, rules)
    return count


def consume_batch(at: datetime, after: int = 0) -> tuple[int, int]:
    """Claim up to BATCH unconsumed rows (those that happened by `at`, with ids above `after`)
    and apply them; how many, and the last id claimed.

    `after` lets one pass walk a long backlog forward instead of stepping again over the
    index entries of the rows it has just stamped (dead until PostgreSQL vacuums them).
    """
    try:
        with transaction.atomic():
            rows = list(
                StateChange.objects.select_for_update()
                .filter(processed__isnull=True, at__lte=at, id__gt=after)
                .order_by("id")
                .values_list("id", "app_id", "field", "old", "new", "at")[:BATCH]
            )
            if not rows:
                return 0, after
            ids = [row[0] for row in rows]
            if StateChange.objects.filter(id__in=ids, processed__isnull=True).update(processed=at) != len(ids):
                raise _ClaimLost
            _apply(rows)
    except _ClaimLost:
        return 0, after
    return len(rows), ids[-1]


def _apply(rows: list[tuple]) -> None:
    by_app: dict[int, list[tuple]] = defaultdict(list)
    for row in rows:
        if row[1] is not None and row[2] in (*TROUBLE_FIELDS, "presence"):
            by_app[row[1]].append(row)
    if not by_app:
        return
    troubles = {t.app_id: t for t in Trouble.objects.filter(app_id__in=list(by_app))}
    appeared = [app_id for app_id, changes in by_app.items() if any(c[2] == "presence" for c in changes)]
    current = {
        app_id: (sync, health, disagreement[:KEPT])
        for app_id, sync, health, disagreement in GitOpsApp.objects.filter(id__in=appeared).values_list(
            "id", "sync_status", "health_status", "health_disagreement"
        )
    }
    final: dict[int, _State | None] = {}
    for app_id, changes in by_app.items():
        changes.sort(key=lambda c: (c[5], c[0]))
        known = troubles.get(app_id)
        state = (
            _State(known.sync_status, known.health_status, known.since, known.episode_id, known.disagreement)
            if known
            else None
        )
        # The changes of one poll share their time: they are applied together, so OutOfSync ->
        # Synced written with Healthy -> Degraded is no recovery in between.
        for when, group in groupby(changes, key=lambda c: c[5]):
            state = _step(state, list(group), when, current.get(app_id), changes)
        final[app_id] = state
    _save(final, troubles)


def _step(
    state: _State | None,
    group: list[tuple],
    when: datetime,
    current: tuple[str, str, str] | None,
    changes: list[tuple],
) -> _State | None:
    """The trouble after one poll's changes: made, updated or over."""
    seen = dict(zip(TROUBLE_FIELDS, (state.sync, state.health, state.disagreement) if state else RESOLVED, strict=True))
    for change in group:
        field, new = change[2], change[4]
        if field == "presence" and new == "present":
            seen = _state_when_seen(current, changes[changes.index(change) + 1 :])
        elif field in seen:
            seen[field] = new
    sync, health, disagreement = (seen[field] for field in TROUBLE_FIELDS)
    if is_resolved(sync, health, disagreement):
        return None
    if state is None:
        return _State(sync, health, when, disagreement=disagreement)
    state.sync, state.health, state.disagreement = sync, health, disagreement
    return state


def _state_when_seen(current: tuple[str, str, str] | None, later: list[tuple]) -> dict[str, str]:
    """The state an app was first seen in: its state now, undone by the changes after it."""
    seen = dict(zip(TROUBLE_FIELDS, current or RESOLVED, strict=True))
    for field in TROUBLE_FIELDS:
        first = next((c for c in later if c[2] == field), None)
        if first is not None:
            seen[field] = first[3]
    return seen


def _save(final: dict[int, _State | None], troubles: dict[int, Trouble]) -> None:
    gone = [troubles[app_id].pk for app_id, state in final.items() if state is None and app_id in troubles]
    Trouble.objects.filter(pk__in=gone).delete()
    new: list[Trouble] = []
    changed: list[Trouble] = []
    for app_id, state in final.items():
        if state is None:
            continue
        trouble = troubles.get(app_id) or Trouble(app_id=app_id)
        trouble.sync_status, trouble.health_status = state.sync, state.health
        trouble.since, trouble.episode_id = state.since, state.episode_id
        trouble.disagreement = state.disagreement
        (changed if trouble.pk is not None else new).append(trouble)
    Trouble.objects.bulk_create(new)
    Trouble.objects.bulk_update(changed, ["sync_status", "health_status", "disagreement", "since", "episode"])


# Apps worded per round: a fleet's first minutes past the grace period may hold thousands of
# due troubles at once, and an app row with its services is what an alert is worded from.
EPISODE_CHUNK = 200
# What a trouble is judged and opened from.
_JUDGED = ("id", "app_id", "since", "sync_status", "health_status", "disagreement")
# What no alert's wording reads: Argo CD's whole object and its status lists are most of a row.
_UNWORDED = ("raw", "history", "conditions", "images", "warnings", "health_rules")


def due_troubles(at: datetime) -> list[int]:
    """The ids of the troubles without an episode that have lasted past the grace period in an
    attention state, read as a stream: only the ids are kept (`open_due_episodes` loads the
    troubles and their apps a chunk at a time)."""
    waiting = Trouble.objects.filter(episode__isnull=True, since__lte=grace_cutoff(at)).order_by("id")
    return [t.pk for t in waiting.only(*_JUDGED).iterator(chunk_size=2000) if _needs_attention(t, at)]


def _apps_of(troubles: list[Trouble]) -> dict[int, GitOpsApp]:
    """The troubles' apps, as alerts are worded from them (app id -> app)."""
    apps = (
        GitOpsApp.objects.select_related("cluster", "cluster__environment")
        .prefetch_related("services")
        .defer(*_UNWORDED)
        .with_rule_words()  # the suggested health rule an alert of a disagreement links
    )
    return apps.in_bulk([t.app_id for t in troubles])


def _needs_attention(trouble: Trouble, at: datetime) -> bool:
    # The app's state as the rows tell it, dated from the trouble's start, judged by the one rule.
    state = GitOpsApp(
        sync_status=trouble.sync_status,
        health_status=trouble.health_status,
        sync_since=trouble.since,
        health_since=trouble.since,
        health_disagreement=trouble.disagreement,
        health_disagreement_since=trouble.since,
    )
    return state.needs_attention(at)


def open_due_episodes(at: datetime, rules: list[Rule], opened: Callable[[Episode], object] | None = None) -> int:
    """Open an episode for each due trouble, `EPISODE_CHUNK` at a time; each is told to `opened`."""
    count = 0
    due = due_troubles(at)
    for first in range(0, len(due), EPISODE_CHUNK):
        # Held for this chunk only: the troubles and apps of the next replace them. One given an
        # episode meanwhile (another worker) is left out; the update below checks the rest.
        waiting = Trouble.objects.filter(pk__in=due[first : first + EPISODE_CHUNK], episode__isnull=True)
        chunk = list(waiting.order_by("id").only(*_JUDGED))
        apps = _apps_of(chunk)
        pinned = pinned_versions([pk for pk, app in apps.items() if app.sync_status == "OutOfSync"])
        for trouble in chunk:
            app = apps[trouble.app_id]
            existing = Episode.objects.filter(key=episode_key(app, trouble.since)).first()
            # An episode already recorded keeps its first words; only a new one is described afresh.
            event = existing.event if existing is not None else build_event(app, trouble.since, at, pinned=pinned)
            episode = emit(event, at=at, app_id=app.id, rules=rules)
            # Compare-and-set on the start: a trouble replaced meanwhile keeps its own episode.
            Trouble.objects.filter(pk=trouble.pk, since=trouble.since, episode__isnull=True).update(episode=episode)
            count += 1
            if opened is not None:
                opened(episode)
    return count


def close_ended_episodes(at: datetime) -> int:
    """Close the open gitops episodes no trouble points at: recovered, gone, or superseded; a
    channel that edits its message of one is told it is over (episode_steps)."""
    current = Trouble.objects.filter(episode__isnull=False).values("episode_id")
    ending = list(
        Episode.objects.filter(kind=EventKind.APP_ATTENTION, ended_at__isnull=True)
        .exclude(id__in=current)
        .only("id", "key", "app_id")
    )
    if not ending:
        return 0
    # Compare-and-set: of two workers closing the same episode, one tells its end.
    closed = [e for e in ending if Episode.objects.filter(pk=e.pk, ended_at__isnull=True).update(ended_at=at)]
    episode_ended(closed, at)
    return len(closed)


def add_deliveries_for_new_rules(at: datetime, rules: Iterable[Rule]) -> None:
    """A rule made (or enabled) during an episode gets its delivery for it, once."""
    candidates = [rule for rule in rules if EventKind.APP_ATTENTION in rule.kinds]
    if not candidates:
        return
    episodes = list(Episode.objects.filter(kind=EventKind.APP_ATTENTION, ended_at__isnull=True).only("id", "payload"))
    have: dict[int, set[int]] = defaultdict(set)
    for episode_id, rule_id in Delivery.objects.filter(episode__in=[e.id for e in episodes]).values_list(
        "episode_id", "rule_id"
    ):
        have[episode_id].add(rule_id)
    for episode in episodes:
        add_deliveries(episode, [r for r in candidates if r.id not in have[episode.id]], at)

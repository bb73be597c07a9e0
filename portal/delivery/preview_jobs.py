"""Pull request previews computed on the forge queue, so no page waits on a forge read.

A preview reads the change's repository (branch head, tree, files: 1-3.7 s in the demo). The
page asks `previews_for(spec)`: a result kept from the last `KEEP_SECONDS` (5 minutes) is
shown at once; otherwise one task `delivery.preview_pull_requests` is queued per spec (its row,
state `queued`, is the claim: ten clicks make one job) and the page shows what is being read and
polls until the result is there. With eager Celery (tests) the task runs inside `.delay()`, so
the page finds the result at once by the same path production takes.

Where the result and the claim live: a database row (PreviewResult), because the web and the forge worker are
different processes and the `default` cache is per process unless CACHE_URL is set (the embedded
run); the database is the one store both always see (and under pytest-xdist each test process
has its own, where the broker's claim folder is shared). The previews are kept as JSON (pydantic over
the dataclasses), so the page renders them with the same templates as before, with its own
request's form, team refusal and csrf token; nothing user-specific is stored (a preview depends
only on the spec). A result in which a repository could not be read is shown once, then read
again; a result older than the keep time is computed again. Opening previews afresh before it
writes (portal.delivery.forge_jobs), so a preview shown a little late never makes a wrong PR.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.http import QueryDict
from django.utils import timezone
from pydantic import TypeAdapter, ValidationError

from forges.pins.parsecache import kept_parses
from gitops.git_locations import DEFAULT, revision_kind
from portal.delivery import tasks
from portal.delivery.change_previews import DeliveryPreview, preview_change
from portal.delivery.change_requests import RequestError, build_changes, confirmed, parse_items, pull_requests_for
from portal.delivery.models import GitPinRead, PreviewResult
from portal.delivery.planner import Change

log = logging.getLogger(__name__)

PREVIEWS = TypeAdapter(list[DeliveryPreview])
# A result is shown for this long: a few minutes, as long as a person looks at one preview; opening
# previews afresh anyway (portal.delivery.forge_jobs), so a late one never makes a wrong PR.
KEEP_SECONDS = 300.0
# A queued preview stays claimed this long: a worker that died holding it is replaced after it.
CLAIM_SECONDS = 120.0


@dataclass(frozen=True)
class Outcome:
    """What the page shows for a spec: the previews, the task's error, or neither yet (reading)."""

    previews: list[DeliveryPreview] | None = None
    error: str = ""

    @property
    def ready(self) -> bool:
        return self.previews is not None or bool(self.error)


def spec_key(spec: str) -> str:
    return hashlib.sha256(spec.encode()).hexdigest()


def previews_for(spec: str, *, again: bool = True) -> Outcome:
    """The page's answer now: a kept result, or the task queued (once per spec) and, with eager
    Celery, its result; never a forge read in the caller. `again`: a kept failure or read error
    is read anew (the page asked afresh); the polling view passes False to show it once."""
    row = PreviewResult.objects.filter(key=spec_key(spec)).first()
    if row is not None and _shown(row, again) and not _pins_read_since(spec, row):
        return _outcome(row)
    if row is None or row.state != PreviewResult.QUEUED or _older(row, CLAIM_SECONDS):
        queue(spec, row)
    row = PreviewResult.objects.filter(key=spec_key(spec)).first()
    return _outcome(row) if row is not None and row.state != PreviewResult.QUEUED else Outcome()


def queue(spec: str, row: PreviewResult | None) -> bool:
    """Queue the task unless another request did already: the row is the claim, taken by the one
    insert the unique key lets through, or by the one update that finds it as it was read. A
    claim older than CLAIM_SECONDS (its worker died, its message was lost) is taken again."""
    now = timezone.now()
    if row is None:
        try:
            with transaction.atomic():
                PreviewResult.objects.create(key=spec_key(spec), state=PreviewResult.QUEUED, computed_at=now)
        except IntegrityError:
            return False
    else:
        taken = PreviewResult.objects.filter(pk=row.pk, state=row.state, computed_at=row.computed_at).update(
            state=PreviewResult.QUEUED, computed_at=now, previews=[], error="", read_error=False
        )
        if not taken:
            return False
    tasks.preview_pull_requests.delay(spec)
    return True


def compute(spec: str) -> None:
    """The task's work: preview every pull request of the spec and store the result."""
    key = spec_key(spec)
    params = QueryDict(spec)
    try:
        kind, items, mode = parse_items(params)
        built = build_changes(kind, items)
        with kept_parses():  # the files of a commit previewed before are not parsed again either
            previews = [
                preview_change(group, confirm_default_branch=confirmed(params))
                for group in pull_requests_for(built.changes, mode)
            ]
    except Exception as error:  # the page shows it instead of polling for ever
        log.warning("preview %s failed: %s", key[:12], error, exc_info=True)
        _store(key, state=PreviewResult.FAILED, error=f"The preview failed: {error}"[:2000])
        return
    _store(key, previews=PREVIEWS.dump_python(previews, mode="json"), read_error=any(p.error for p in previews))


def reading(groups: list[tuple[Change, ...]]) -> list[str]:
    """What the progress block says is being read, one line per repository and branch."""
    lines = []
    for group in groups:
        first = group[0]
        branch = "its default branch" if revision_kind(first.base_branch) == DEFAULT else first.base_branch
        lines.append(f"Reading {first.repository} at {branch}…")
    return list(dict.fromkeys(lines))


def _older(row: PreviewResult, seconds: float) -> bool:
    return row.computed_at < timezone.now() - timedelta(seconds=seconds)


def _shown(row: PreviewResult, again: bool) -> bool:
    """A kept result the page shows as it is (else it is computed anew)."""
    if row.state == PreviewResult.QUEUED or _older(row, KEEP_SECONDS):
        return False
    return not again or (row.state == PreviewResult.DONE and not row.read_error)


def _pins_read_since(spec: str, row: PreviewResult) -> bool:
    """The Git pins of the spec's applications were read after the result was computed. A change
    starts from what Git pins and reaches the apps whose builds were read: a preview computed
    before (a fresh start, before the first pin read) proposed from the running version, so for
    an app Argo CD has not synced to Git's pin it said "nothing would change" for five minutes.
    One query."""
    try:
        _, items, _ = parse_items(QueryDict(spec))
    except RequestError:
        return False
    apps = [item.app_id for item in items if item.app_id is not None]
    return bool(apps) and GitPinRead.objects.filter(app_id__in=apps, last_ok_at__gt=row.computed_at).exists()


def _outcome(row: PreviewResult) -> Outcome:
    if row.state == PreviewResult.FAILED:
        return Outcome(error=row.error)
    try:
        return Outcome(previews=PREVIEWS.validate_python(row.previews))
    except ValidationError:  # kept by an older version of the portal: shown as a failure once, then read again
        return Outcome(error="The kept preview could not be read; ask for it again.")


def _store(key: str, **values: object) -> None:
    now = timezone.now()
    PreviewResult.objects.update_or_create(
        key=key,
        defaults={
            "computed_at": now,
            "state": PreviewResult.DONE,
            "previews": [],
            "error": "",
            "read_error": False,
            **values,
        },
    )
    # Results past twice their keep time are nobody's any more: the table stays a few rows.
    stale = now - timedelta(seconds=2 * max(KEEP_SECONDS, CLAIM_SECONDS))
    PreviewResult.objects.filter(computed_at__lt=stale).delete()

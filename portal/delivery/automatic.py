"""Automatic pull requests, as each service's version policy asks (every 30 minutes).

`auto_pr: {"dev": "minor", "staging": "patch"}` means: for an application in dev whose
newest acceptable release is at most a minor jump away, open the upgrade PR without a
person (signed as automatic in the description; the audit log's actor is "system").
Production stays a decision unless a policy names it.

Held, and tried again at the next run: a change freeze covering the environment, and a
sync window that blocks the application (merging could not deploy it anyway). Not
opened: an open PR already proposes the version, or Git already pins it. A PR that
cannot be opened (no file pins the running tag, the forge refused) is recorded in
`AutoPRAttempt` and tried again the next day, not every 30 minutes.

Chart versions too (`chart_upgrades.charts_behind`): an application pinning a chart behind the newest
version its first service's policy accepts gets the chart upgrade PR (only the version line
changes) under the same level, holds and records (`_consider`, one path for both); its
attempt is recorded as `chart=<name>:<version>`, so it never collides with an image tag.

A workload outside GitOps (a Nomad job, a Compose or Swarm service, an ECS service whose
portal.git.* labels name the file) follows the same rules, but for sync windows: no GitOps
tool holds it, so none applies; without the labels the attempt fails and is recorded, as
for an application with no known Git location.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from django.db.models import F
from django.utils import timezone

from forges.forge import Forge
from gitops.models import GitOpsApp, Workload
from portal.delivery.change_builders import (
    ChangeError,
    change_for_chart_upgrade,
    change_for_upgrade,
    change_for_workload,
)
from portal.delivery.change_previews import open_change, window_blocks
from portal.delivery.chart_upgrades import ChartBehind, charts_behind
from portal.delivery.freezes import freezes_in_effect
from portal.delivery.models import AutoPRAttempt, ServicePolicy
from portal.delivery.planner import UPGRADE, Change
from portal.delivery.pull_requests import IN_PROGRESS, LINKED, NOTHING_TO_OPEN, OPENED, REFUSED
from portal.delivery.upgrades import Behind, behind
from portal.delivery.version_policy import PolicyError
from portal.kernel.catalog.models import Service
from portal.kernel.timestamps import utc_stamp

log = logging.getLogger(__name__)

RETRY_AFTER = timedelta(days=1)


@dataclass
class AutoReport:
    opened: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # "checkout 1.7.0 in checkout-dev: change freeze ..."
    failed: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # failed before; retried after `retry_after`
    beyond_policy: list[str] = field(default_factory=list)


def run(
    *,
    now: Callable[[], datetime] = timezone.now,
    forge_factory: Callable[[str], Forge] | None = None,
) -> AutoReport:
    """Open every automatic pull request the policies ask for now. Never raises for one failure."""
    at = now()
    report = AutoReport()
    charts: list[ChartBehind] | None = None  # read once, the first time a policy asks for automatic PRs
    for row in ServicePolicy.objects.exclude(auto_pr={}).select_related("service").order_by("service__name"):
        try:
            policy = row.as_policy()
        except PolicyError as error:
            log.warning("automatic PRs of %s skipped: %s", row.service.name, error)
            continue
        if charts is None:
            charts = [line for line in charts_behind(today=at.date()) if line.target]
        for environment, level in sorted(policy.auto_pr.items()):
            if level == "none":
                continue
            wanted: list[_Wanted] = [_image(line) for line in
                                     behind(service=row.service, environment=environment, today=at.date())]
            wanted += [_chart(line) for line in charts
                       if line.service == row.service and line.environment == environment]
            for want in wanted:
                if not policy.auto_pr_allowed(environment, want.jump):
                    report.beyond_policy.append(f"{want.label}: a {want.jump} jump, the policy allows {level}")
                    continue
                _consider(want, at, now, forge_factory, report)
    return report


@dataclass(frozen=True)
class _Wanted:
    """One automatic PR a policy may ask for: an image tag (`Behind`) or a chart version (`ChartBehind`)."""

    app: GitOpsApp | None  # None for a workload outside GitOps (`workload`)
    workload: Workload | None
    environment: str
    service: Service
    target: str
    jump: str
    label: str  # "checkout 1.7.0 in checkout-dev (dev-eu-1)"
    attempt_key: str  # AutoPRAttempt.to_version
    done: bool  # an open PR already proposes the target, or Git already pins it
    change: Callable[[], Change]


def _image(line: Behind) -> _Wanted:
    change: Callable[[], Change]
    if line.app is not None:
        change = partial(change_for_upgrade, line.app, line.service, line.target)
    else:
        assert line.workload is not None
        change = partial(change_for_workload, UPGRADE, line.workload, line.service, line.target,
                         from_version=line.running)
    return _Wanted(
        line.app, line.workload, line.environment, line.service, line.target, line.jump,
        f"{line.service.name} {line.target} in {line.name} ({line.cluster.name})",
        line.target, line.open_pr is not None or line.pinned_at_target, change,
    )


def _chart(line: ChartBehind) -> _Wanted:
    assert line.target is not None and line.service is not None
    chart = line.pin.ref.chart
    return _Wanted(
        line.app, None, line.environment, line.service, line.target, line.jump,
        f"the {chart} chart {line.target} in {line.app.name} ({line.app.cluster.name})",
        f"chart={chart}:{line.target}", line.open_pr is not None,
        partial(change_for_chart_upgrade, line.app, line.target),
    )


def _consider(
    line: _Wanted,
    at: datetime,
    now: Callable[[], datetime],
    forge_factory: Callable[[str], Forge] | None,
    report: AutoReport,
) -> None:
    label = line.label
    if line.done:
        return
    place = {"app": line.app} if line.app is not None else {"app": None, "workload": line.workload}
    attempt = AutoPRAttempt.objects.filter(**place, service=line.service, to_version=line.attempt_key).first()
    if attempt is not None and attempt.outcome == AutoPRAttempt.Outcome.OPENED:
        return  # opened before and since closed or merged: not reopened automatically
    waiting = attempt is not None and attempt.retry_after is not None and attempt.retry_after > at
    hold = _hold(line, at)
    if hold is not None:
        outcome, why = hold
        report.held.append(f"{label}: {why}")
        if not waiting:  # a failure waiting for its retry stays what the pages say
            _record(line, place, attempt, outcome, why, at, tried=False)
        return
    if waiting:
        assert attempt is not None and attempt.retry_after is not None
        report.waiting.append(f"{label}: retried after {utc_stamp(attempt.retry_after)}")
        return
    try:
        change = line.change()
        forge = forge_factory(change.repository) if forge_factory else None
        result = open_change(change, None, automatic=True, forge=forge, now=now)
        ok, message = result.ok, result.message
        outcome = _outcome(result.status, message)
    except ChangeError as error:
        ok, message, outcome = False, str(error), AutoPRAttempt.Outcome.NO_PIN
    _record(line, place, attempt, outcome, message, at, tried=True)
    (report.opened if ok else report.failed).append(f"{label}: {message}")


def _hold(line: _Wanted, at: datetime) -> tuple[str, str] | None:
    """What holds the attempt now, and why in words (None: nothing)."""
    freezes = freezes_in_effect(line.environment, at)
    if freezes:
        return AutoPRAttempt.Outcome.FREEZE, f"change freeze until {utc_stamp(freezes[0].ends_at)}"
    if line.app is not None and window_blocks(line.app, at):
        return AutoPRAttempt.Outcome.WINDOW, f"a sync window blocks {line.app.name}"
    return None


def _outcome(status: str, message: str) -> str:
    """An open's status in the words the pages show (a refusal for want of a pin is said so)."""
    if status in (OPENED, LINKED, IN_PROGRESS):
        return AutoPRAttempt.Outcome.OPENED
    if status == REFUSED:
        return AutoPRAttempt.Outcome.NO_PIN if message.startswith(NOTHING_TO_OPEN) else AutoPRAttempt.Outcome.REFUSED
    return AutoPRAttempt.Outcome.FAILED


def _record(
    line: _Wanted, place: dict, attempt: AutoPRAttempt | None, outcome: str, message: str, at: datetime, *, tried: bool
) -> None:
    """The attempt's row: created, or its last result replaced (`attempts` counts real tries, not holds)."""
    retry_after = at + RETRY_AFTER if tried and outcome != AutoPRAttempt.Outcome.OPENED else None
    fields = {"outcome": outcome, "message": message[:2000], "attempted_at": at, "retry_after": retry_after,
              "environment": line.environment[:63]}
    if attempt is None:
        AutoPRAttempt.objects.create(**place, service=line.service, to_version=line.attempt_key,
                                     attempts=1 if tried else 0, **fields)
    else:
        counted = {"attempts": F("attempts") + 1} if tried else {}
        AutoPRAttempt.objects.filter(pk=attempt.pk).update(**fields, **counted)

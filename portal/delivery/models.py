"""Each service's version policy, Git pins, change freezes, the portal's pull requests, automatic PR
attempts and the matrix's read model."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from portal.delivery.version_policy import ACCEPT_CHOICES, PolicyError, VersionPolicy
from portal.kernel.catalog.models import Service


class ServicePolicy(models.Model):
    """One service's version policy, as admins edit it; `as_policy()` is what the pure code takes.

    The columns hold the policy's parts; `document()` / `from_document()` are the one JSON
    form of it (portal.delivery.version_policy: `pr_reviewers`, `pr_labels`, `auto_pr`, ...) that the
    service page, the Django admin, the fleet file and the API all show and take."""

    service = models.OneToOneField(Service, on_delete=models.CASCADE, related_name="version_policy")
    accept = models.CharField(
        max_length=8,
        choices=[(c, c) for c in ACCEPT_CHOICES],
        default="any",
        help_text="largest jump accepted: any/major, minor, patch",
    )
    range = models.CharField(max_length=200, blank=True, help_text='semver range, e.g. ">=1.4 <2" or "^1.2"')
    allow_tags = models.JSONField(default=list, blank=True, help_text="regular expressions; a tag must contain one")
    ignore_tags = models.JSONField(
        default=list, blank=True, help_text="regular expressions; a tag containing one is skipped"
    )
    ignore_prereleases = models.BooleanField(default=True)
    auto_pr = models.JSONField(
        default=dict,
        blank=True,
        help_text='environment -> largest automatic jump: {"dev": "minor", "staging": "patch"}',
    )
    reviewers = models.JSONField(default=list, blank=True, help_text="pr_reviewers: logins and @org/team")
    labels = models.JSONField(default=list, blank=True, help_text="pr_labels")
    put_off = models.JSONField(
        default=list, blank=True,
        help_text='[{"version": "2.0.0", "until": "2025-07-01"}]: skipped until that day; with "environment" '
                  '(and "by", "at", "why", "source"): held there after a rollback, until undone',
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "service policies"

    def __str__(self) -> str:
        return f"version policy of {self.service}"

    def document(self) -> dict[str, Any]:
        """The policy as stored, in the JSON form (not validated: a stored policy that no longer
        applies is still shown as it is, so it can be fixed)."""
        allow = self.allow_tags
        return {
            "accept": self.accept,
            "range": self.range,
            "allow_tags": [allow] if isinstance(allow, str) and allow else list(allow or []),
            "ignore_tags": list(self.ignore_tags or []),
            "ignore_prereleases": self.ignore_prereleases,
            "auto_pr": dict(self.auto_pr or {}),
            "pr_reviewers": list(self.reviewers or []),
            "pr_labels": list(self.labels or []),
            "put_off": list(self.put_off or []),
        }

    def as_policy(self) -> VersionPolicy:
        return VersionPolicy.from_dict(self.document())

    def set_policy(self, policy: VersionPolicy) -> None:
        """Take every part of `policy` (already validated) into the columns."""
        data = policy.to_dict()
        self.accept, self.range, self.ignore_prereleases = data["accept"], data["range"], data["ignore_prereleases"]
        self.allow_tags, self.ignore_tags = data["allow_tags"], data["ignore_tags"]
        self.auto_pr, self.reviewers, self.labels = data["auto_pr"], data["pr_reviewers"], data["pr_labels"]
        self.put_off = data["put_off"]

    def clean(self) -> None:
        try:
            self.as_policy()
        except PolicyError as exc:
            raise ValidationError(str(exc))

    @classmethod
    def document_of(cls, service: Service) -> dict[str, Any]:
        """The service's policy document, or the default policy's; reads `service.version_policy`,
        so a list of services selects it along (select_related("version_policy"))."""
        try:
            return service.version_policy.document()
        except cls.DoesNotExist:
            return VersionPolicy().to_dict()

    @classmethod
    def for_service(cls, service: Service) -> VersionPolicy:
        """The service's policy, or the default one when none was set."""
        row = cls.objects.filter(service=service).first()
        return row.as_policy() if row else VersionPolicy()


class GitPin(models.Model):
    """Which version Git pins for a service under one application's path, at the followed branch."""

    app = models.ForeignKey("gitops.GitOpsApp", on_delete=models.CASCADE, related_name="git_pins")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="git_pins")
    version = models.CharField(max_length=200, help_text="the tag, or the digest when pinned by digest only")
    path = models.CharField(max_length=500)
    line = models.PositiveIntegerField()
    read_at = models.DateTimeField()

    class Meta:
        ordering = ["app", "service", "path", "line"]
        indexes = [models.Index(fields=["service", "app"])]

    def __str__(self) -> str:
        return f"{self.service_id} pinned at {self.version} in {self.path}:{self.line}"


class GitPinRead(models.Model):
    """How reading one application's files last went. A failed read keeps the pins already stored."""

    app = models.OneToOneField("gitops.GitOpsApp", on_delete=models.CASCADE, related_name="git_pin_read")
    branch = models.CharField(max_length=253, blank=True)
    last_read_at = models.DateTimeField(null=True, blank=True)
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # The paths of the plain Secrets among the files the application builds, as of the last good
    # read ([] none; null: not read since this was kept); portal.findings judges them (raw-secret).
    plain_secrets = models.JSONField(null=True, blank=True)
    # What the application builds, as of the last good read (portal.delivery.reach reads it to
    # say which applications a change reaches without reading the forge again): the repository
    # its pins are in (`current_pins.repository_key`), and its `Reads` as JSON (null: not read
    # since this was kept).
    repository = models.CharField(max_length=500, blank=True, db_index=True)
    builds = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"git pins of {self.app_id}"


class ChangeFreezeQuerySet(models.QuerySet["ChangeFreeze"]):
    def in_effect(self, at: datetime, environment: str | None = None) -> ChangeFreezeQuerySet:
        """Freezes active at `at`; for `environment`, those naming it or naming no environment."""
        active = self.filter(starts_at__lte=at, ends_at__gt=at)
        if environment is None:
            return active
        return active.filter(
            models.Q(environments__name=environment) | models.Q(environments__isnull=True)
        ).distinct()


class ChangeFreeze(models.Model):
    """A period in which no upgrade or promotion should go out (rollbacks are never held)."""

    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    environments = models.ManyToManyField(
        "catalog.Environment", blank=True, related_name="+", help_text="none selected: every environment"
    )
    reason = models.CharField(max_length=300)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ChangeFreezeQuerySet.as_manager()

    class Meta:
        ordering = ["-starts_at", "-id"]

    def __str__(self) -> str:
        return f"freeze {self.starts_at:%Y-%m-%d %H:%M}–{self.ends_at:%Y-%m-%d %H:%M}: {self.reason}"

    def clean(self) -> None:
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValidationError("A freeze must end after it starts.")


class PullRequest(models.Model):
    """A pull request the portal opened (or found already open) for a version change, and what
    became of it: its forge state and checks (`portal.delivery.tracking`), and when its version
    ran everywhere it targets (`running_at`, `portal.delivery.deployments`)."""

    class Kind(models.TextChoices):
        UPGRADE = "upgrade"
        PROMOTION = "promotion"
        ROLLBACK = "rollback"

    class State(models.TextChoices):
        # `opening` is the claim a worker holds between "decided to open" and "the forge
        # answered"; the unique (repository, branch) row is what stops a second worker.
        OPENING = "opening"
        OPEN = "open"
        MERGED = "merged"
        CLOSED = "closed"
        # The job opening it gave up (the forge refused or failed, or it was refused before any
        # write): `progress` says why; a new open takes the row back, as after a close.
        FAILED = "failed"

    class Checks(models.TextChoices):
        PASS = "pass"
        RUNNING = "running"
        FAIL = "fail"
        NONE = "none"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    services = models.JSONField(default=list, help_text="service names")
    environment = models.CharField(max_length=63, blank=True)
    clusters = models.JSONField(default=list, blank=True, help_text="cluster names")
    repository = models.CharField(max_length=500, help_text="the repository's web URL")
    forge_kind = models.CharField(max_length=16)
    number = models.PositiveIntegerField(null=True, blank=True)
    url = models.URLField(max_length=500, blank=True)
    title = models.CharField(max_length=300)
    branch = models.CharField(max_length=255)
    base_branch = models.CharField(max_length=255)
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPENING, db_index=True)
    checks = models.CharField(max_length=16, choices=Checks.choices, default=Checks.NONE)
    # While checks fail: the web page of one failing check (a check run, a status's details, a
    # pipeline), as the forge gave it; pages link it only when it is http(s).
    checks_url = models.URLField(max_length=500, blank=True)
    # Set once, the first time checks are seen failing; the notification side reads it.
    checks_failed_notified_at = models.DateTimeField(null=True, blank=True)
    opened_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    automatic = models.BooleanField(default=False)
    opened_at = models.DateTimeField(null=True, blank=True)
    merged_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # When the new version was first seen running everywhere the PR targets.
    running_at = models.DateTimeField(null=True, blank=True)
    opened_outside = models.BooleanField(default=False, help_text="opened by Renovate, Dependabot or a person")
    from_version = models.CharField(max_length=128, blank=True)
    to_version = models.CharField(max_length=128, blank=True)
    image = models.CharField(max_length=300, blank=True)
    last_error = models.TextField(blank=True)
    tracked_at = models.DateTimeField(null=True, blank=True)
    # The job that opens it (portal.delivery.forge_jobs), while `opening` and after: what it
    # does now, in words for the page; which run of the job may work on it (a message carrying
    # another run is stale and dropped); until when the running one holds it (past that, the
    # reconciler resumes or resolves it); until when it waits on a rate limit; what it opens.
    step = models.CharField(max_length=32, blank=True)
    progress = models.CharField(max_length=500, blank=True)
    run = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    waiting_until = models.DateTimeField(null=True, blank=True)
    waited = models.FloatField(default=0.0, help_text="seconds waited on rate limits so far")
    job = models.JSONField(default=dict, blank=True, help_text="the changes, as the job re-previews them")
    # The applications, clusters and environments the change reaches, as the preview it was opened
    # from found them (portal.delivery.reach.as_json); {} for one opened before this was kept.
    reach = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "forges_pullrequest"  # moved from forges; the table kept its name
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "branch"], name="forges_pullrequest_unique_branch"),
        ]

    def __str__(self) -> str:
        where = f"#{self.number}" if self.number else self.branch
        return f"{self.repository} {where}: {self.title}"

    def names_chart(self, chart: str) -> bool:
        """Whether this is a chart version change of `chart`: a chart change names no service,
        and the planner's titles name the chart ("Update the notifications chart to 0.4.0 in
        prod", "Roll back the notifications chart to 0.3.1 in prod")."""
        return not self.services and f"the {chart} chart" in self.title


class AutoPRAttemptQuerySet(models.QuerySet["AutoPRAttempt"]):
    def latest_per_place(self, service_ids: Iterable[int]) -> dict[tuple[str, int, int, str], AutoPRAttempt]:
        """The newest attempt of each ("app", app id) or ("workload", workload id), service id and
        chart ("" for the image's tag) of these services: what the automatic job last did there,
        whatever the version."""
        found: dict[tuple[str, int, int, str], AutoPRAttempt] = {}
        for row in self.filter(service_id__in=list(service_ids)).order_by("attempted_at", "pk"):
            place = ("app", row.app_id) if row.app_id is not None else ("workload", row.workload_id)
            found[(*place, row.service_id, row.chart)] = row  # type: ignore[index]
        return found

    def latest_per_environment(self, service: Service) -> dict[str, AutoPRAttempt]:
        """The newest attempt in each environment for one service (its page's policy section)."""
        found: dict[str, AutoPRAttempt] = {}
        for row in self.filter(service=service).exclude(environment="").order_by("attempted_at", "pk"):
            found[row.environment] = row
        return found


class AutoPRAttempt(models.Model):
    """The last automatic pull request tried for one service, application (or workload outside
    GitOps) and version, and how it went: opened, or not and why. A hold (a freeze, a sync
    window) is tried again at the next run; what failed, the next day (`retry_after`)."""

    class Outcome(models.TextChoices):
        OPENED = "opened"
        REFUSED = "refused"  # the forge or the portal would not open it (demo mode, a tag followed)
        NO_PIN = "no_pin"  # no file pins the version, or no Git location is known
        WINDOW = "window"  # held by a sync window
        FREEZE = "freeze"  # held by a change freeze
        FAILED = "failed"  # the forge could not be read or written

    # Outcomes that will be tried again at the next run, not the next day.
    HELD = (Outcome.WINDOW, Outcome.FREEZE)
    # Each outcome as the pages say it.
    SAID = {Outcome.OPENED: "opened", Outcome.REFUSED: "refused", Outcome.NO_PIN: "no pin",
            Outcome.WINDOW: "held by a sync window", Outcome.FREEZE: "held by a change freeze",
            Outcome.FAILED: "failed"}

    app = models.ForeignKey("gitops.GitOpsApp", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # A workload no GitOps tool deploys (gitops.platforms), when `app` is None.
    workload = models.ForeignKey("gitops.Workload", null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="+")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="+")
    # Where the policy asked for it, as named then (the service page shows the last per environment).
    environment = models.CharField(max_length=63, blank=True)
    to_version = models.CharField(max_length=200)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    message = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=1)
    attempted_at = models.DateTimeField()
    retry_after = models.DateTimeField(null=True, blank=True, help_text="a failed attempt is tried again from then")

    objects = AutoPRAttemptQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "service", "to_version"], name="delivery_autopr_unique"),
            models.UniqueConstraint(fields=["workload", "service", "to_version"], condition=models.Q(app=None),
                                    name="delivery_autopr_workload_unique"),
            models.CheckConstraint(condition=models.Q(app__isnull=False) | models.Q(workload__isnull=False),
                                   name="delivery_autopr_app_or_workload"),
        ]

    def __str__(self) -> str:
        return f"automatic PR {self.service_id} → {self.to_version} on {self.app_id}: {self.outcome}"

    @property
    def held(self) -> bool:
        return self.outcome in self.HELD

    @property
    def said(self) -> str:
        return self.SAID.get(self.outcome, self.outcome)

    @property
    def chart(self) -> str:
        """The chart whose version the attempt moved ("" when it moved the image's tag)."""
        if self.to_version.startswith("chart="):
            return self.to_version.removeprefix("chart=").rpartition(":")[0]
        return ""

    @property
    def what(self) -> str:
        """What was to be opened, in words: `1.7.0`, or `the notifications chart 0.4.0`."""
        if self.chart:
            return f"the {self.chart} chart {self.to_version.rpartition(':')[2]}"
        return self.to_version


class Placement(models.Model):
    """What one cluster runs of one service, and what Git pins for it there: a row per
    (service, cluster) where the service runs, derived from RunningVersion and GitPin by
    `portal.delivery.version_matrix.refresh` whenever either is written. The matrix groups
    these narrow rows into cell lines instead of aggregating every container and every pin
    while a person waits."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="+")
    cluster = models.ForeignKey("catalog.Cluster", on_delete=models.CASCADE, related_name="+")
    versions = models.TextField(help_text="the distinct running versions, sorted, comma-separated")
    pinned = models.TextField(blank=True, help_text="the distinct versions Git pins there, same form")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["service", "cluster"], name="uniq_placement")]
        indexes = [models.Index(fields=["cluster", "service"])]

    def __str__(self) -> str:
        return f"{self.service_id}@{self.cluster_id}: {self.versions}"


class VersionLine(models.Model):
    """The enabled clusters of one environment that run the same versions of one service
    with the same Git pins: a matrix cell's line before problems are split out of it.
    Derived from `Placement` by `portal.delivery.version_matrix` whenever one changes, and
    when a cluster is renamed, moved, enabled, disabled or removed."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="+")
    environment = models.ForeignKey("catalog.Environment", on_delete=models.CASCADE, related_name="+")
    versions = models.TextField()
    pinned = models.TextField(blank=True)
    cluster_ids = models.TextField(help_text="comma-separated, in the order of cluster_names")
    cluster_names = models.TextField(help_text="comma-separated, sorted")

    class Meta:
        indexes = [models.Index(fields=["environment", "service"])]

    def __str__(self) -> str:
        return f"{self.service_id} in {self.environment_id}: {self.versions} on {self.cluster_names}"


class PinsAtRevision(models.Model):
    """The versions Git pinned under one path of a repository at one commit: what a rollback
    returns to when a GitOps tool's own history names the commit that ran before. A commit never
    changes, so a row read once holds for good; a failed read keeps its reason and is retried
    (`portal.delivery.history_pins`). Written by the worker, read by pages: a page never reads a
    forge for it."""

    repository = models.CharField(max_length=500)
    revision = models.CharField(max_length=64, help_text="the full commit SHA")
    path = models.CharField(max_length=500)
    pins = models.JSONField(default=dict, blank=True, help_text="service name -> the versions pinned, sorted")
    read_at = models.DateTimeField()
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["repository", "revision", "path"], name="uniq_pins_at_revision"),
        ]

    def __str__(self) -> str:
        return f"{self.repository}@{self.revision[:12]}:{self.path}"


class DeliveryEvent(models.Model):
    """A fact delivery's tracking found that the layers above act on (notifications), as a row:
    a merged PR still not deployed, a portal PR whose checks fail, a rollback on offer, a rollback
    PR opened or merged.

    One row per episode (`key`, as `portal.delivery.announcements` names it): a tracking run that
    finds the fact again marks it unconsumed again (`processed` null), so a rule made while it
    holds still hears of it; the consumer claims each such row once, and what it makes of a key
    twice adds nothing (portal.notifications.delivery_events)."""

    # Plain strings (not TextChoices) so that type checkers see `str` without a Django plugin.
    MERGED_NOT_DEPLOYED = "merged_not_deployed"
    PR_CHECKS_FAILED = "pr_checks_failed"
    ROLLBACK_OFFERED = "rollback_offered"
    # The steps of a rollback pull request, which the notifications add to the episode of the
    # application it rolls back (one message updated in place where a channel can edit).
    ROLLBACK_PR_OPENED = "rollback_pr_opened"
    ROLLBACK_PR_MERGED = "rollback_pr_merged"
    KINDS = [
        (MERGED_NOT_DEPLOYED, "Merged but not deployed"),
        (PR_CHECKS_FAILED, "Checks failing on a portal pull request"),
        (ROLLBACK_OFFERED, "Rollback offered"),
        (ROLLBACK_PR_OPENED, "Rollback pull request opened"),
        (ROLLBACK_PR_MERGED, "Rollback pull request merged"),
    ]

    kind = models.CharField(max_length=40, choices=KINDS)
    key = models.CharField(max_length=700, unique=True)
    pull_request = models.ForeignKey(
        PullRequest, null=True, blank=True, on_delete=models.CASCADE, related_name="delivery_events"
    )
    app = models.ForeignKey("gitops.GitOpsApp", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    facts = models.JSONField(default=dict, blank=True)  # what it is worded from besides the PR (announcements)
    seen_at = models.DateTimeField()  # the last tracking run that found it
    processed = models.DateTimeField(null=True, blank=True)  # claimed by the consumer; null: not yet

    class Meta:
        indexes = [
            # The consumer looks for unconsumed rows only: a handful, however many episodes were kept.
            models.Index(fields=["id"], condition=models.Q(processed__isnull=True), name="deliveryevent_unprocessed"),
        ]

    def __str__(self) -> str:
        return self.key


class PreviewResult(models.Model):
    """The previews of one change request (portal.delivery.preview_jobs), as the forge worker
    computed them: kept in the database because the web and the worker are different processes
    and the `default` cache is per process unless CACHE_URL is set."""

    QUEUED, DONE, FAILED = "queued", "done", "failed"
    STATES = [(QUEUED, "Queued"), (DONE, "Done"), (FAILED, "Failed")]

    key = models.CharField(max_length=64, unique=True)  # sha256 of the request's spec
    state = models.CharField(max_length=10, choices=STATES, default=DONE)
    previews = models.JSONField(default=list, blank=True)  # list[DeliveryPreview] as JSON
    error = models.TextField(blank=True)  # why the task failed (state `failed`)
    read_error = models.BooleanField(default=False)  # a repository could not be read: shown once, read again
    computed_at = models.DateTimeField(db_index=True)  # or queued at (state `queued`: the claim's age)

    def __str__(self) -> str:
        return self.key


class RenderedDiff(models.Model):
    """What an open pull request changes in its applications' rendered manifests, at one head of
    its branch (portal.delivery.rendered_previews), and the one forge comment that says so."""

    pull_request = models.OneToOneField(PullRequest, on_delete=models.CASCADE, related_name="rendered")
    head = models.CharField(max_length=64)  # the branch's commit the diff was rendered at
    apps = models.JSONField(default=list, blank=True)  # list[rendered_diff.AppDiff] as JSON
    # Every object of both renders, per app, for the portal's full-output page (never the comment).
    outputs = models.JSONField(default=list, blank=True)
    computed_at = models.DateTimeField()
    comment_id = models.CharField(max_length=64, blank=True)  # the forge's id of the comment kept up to date
    commented_head = models.CharField(max_length=64, blank=True)  # the head the comment last told
    comment_error = models.TextField(blank=True)  # why the comment could not be written, at the last try

    def __str__(self) -> str:
        return f"rendered diff of {self.pull_request_id} at {self.head[:12]}"

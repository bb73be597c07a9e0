"""What upstream offers: the version tags seen in each service's registry (with their release
notes) and how reading that registry last went."""

from __future__ import annotations

from django.db import models

from portal.catalog.models import Service


class ReleaseQuerySet(models.QuerySet["Release"]):
    def for_service(self, service: Service) -> ReleaseQuerySet:
        return self.filter(service=service)

    def tags(self) -> list[str]:
        return list(self.values_list("tag", flat=True))


class Release(models.Model):
    """A version tag seen in a service's registry. Only tags that read as versions are kept."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="releases")
    tag = models.CharField(max_length=128)
    version = models.CharField(max_length=128, help_text="the tag without `v` or suffix: 1.5.0-rc.1")
    prerelease = models.BooleanField(default=False)
    seen_at = models.DateTimeField(help_text="when the portal first saw the tag")
    created_at = models.DateTimeField(null=True, blank=True, help_text="the image config's build time, when known")
    digest = models.CharField(max_length=100, blank=True, help_text="manifest digest when first seen")
    # Filled from the forge release of the same version (see portal.releases.notes):
    # notes_url None means "not known yet"; a known release may have empty notes.
    notes_url = models.URLField(max_length=500, null=True, blank=True)
    notes = models.TextField(blank=True, default="", help_text="the forge release's notes (Markdown), shortened")

    objects = ReleaseQuerySet.as_manager()

    class Meta:
        ordering = ["service", "-seen_at", "tag"]
        db_table = "delivery_release"  # moved from portal.delivery; the table kept its name
        constraints = [models.UniqueConstraint(fields=["service", "tag"], name="delivery_release_unique_tag")]
        indexes = [models.Index(fields=["service", "seen_at"])]

    def __str__(self) -> str:
        return f"{self.service}:{self.tag}"


class RegistryPoll(models.Model):
    """How reading a service's registry last went. A failed poll keeps the releases already seen."""

    service = models.OneToOneField(Service, on_delete=models.CASCADE, related_name="registry_poll")
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    tags_seen = models.PositiveIntegerField(default=0, help_text="tags listed by the last good poll")
    # Release notes come from the service's source repository in the same task, after the tags.
    notes_read_at = models.DateTimeField(null=True, blank=True, help_text="last good read of the forge's releases")
    notes_error = models.TextField(blank=True)
    notes_error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "delivery_registrypoll"  # moved from portal.delivery; the table kept its name

    def __str__(self) -> str:
        return f"registry poll of {self.service}"

    @property
    def failing(self) -> bool:
        return bool(self.last_error)


class ChartVersion(models.Model):
    """A version of a Helm chart seen in its repository: an HTTP Helm repository's index.yaml
    or an OCI registry's tags (portal.releases.charts). Only versions that read as semver."""

    repository = models.CharField(max_length=500, help_text="the chart repository URL as apps name it")
    chart = models.CharField(max_length=253)
    version = models.CharField(max_length=128)
    prerelease = models.BooleanField(default=False)
    seen_at = models.DateTimeField(help_text="when the portal first saw the version")

    class Meta:
        ordering = ["repository", "chart", "-seen_at", "version"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "chart", "version"], name="releases_chartversion_unique")
        ]

    def __str__(self) -> str:
        return f"{self.chart} {self.version} ({self.repository})"


class ChartPoll(models.Model):
    """How reading one chart's versions last went. A failed read keeps the versions already seen."""

    repository = models.CharField(max_length=500)
    chart = models.CharField(max_length=253)
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    versions_seen = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["repository", "chart"], name="releases_chartpoll_unique")]

    def __str__(self) -> str:
        return f"chart poll of {self.chart} ({self.repository})"


class ReleaseSummary(models.Model):
    """A language model's summary of the release notes of one upgrade (service, from -> to),
    written by portal.releases.summaries: generated text, always shown as such, beside (never
    instead of) the quoted notes. Asked at most once a day; a failure is kept until the next."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="release_summaries")
    from_version = models.CharField(max_length=128)
    to_version = models.CharField(max_length=128)
    text = models.TextField(blank=True, help_text="the generated summary (Markdown); empty until one succeeded")
    model = models.CharField(max_length=200, blank=True, help_text="the model that wrote it")
    generated_at = models.DateTimeField(null=True, blank=True)
    asked_on = models.DateField(null=True, blank=True, help_text="the day it was last asked for (once a day)")
    error = models.TextField(blank=True, help_text="why the last request failed; retried the next day")
    error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["service", "from_version", "to_version"],
                                               name="releases_summary_unique_upgrade")]

    def __str__(self) -> str:
        return f"summary of {self.service} {self.from_version} -> {self.to_version}"

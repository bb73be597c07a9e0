"""What upstream offers: the version tags seen in each service's registry (with their release
notes) and how reading that registry last went."""

from __future__ import annotations

from django.db import models

from portal.kernel.catalog.models import Service


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


# --- supply chain (portal.releases.sboms, osv, kev) -------------------------------------


class ImageSbom(models.Model):
    """What the registry holds as the SBOM of one image digest, read once: a digest never
    changes, so neither does its answer. Only the packages' purl, name, version, licence and
    purl type are kept, never the document. A registry that could not be reached leaves no
    row (the next pass tries again); "none", "too-large" and "malformed" are answers."""

    FOUND, NONE, TOO_LARGE, MALFORMED = "found", "none", "too-large", "malformed"
    STATUSES = [(FOUND, "found"), (NONE, "no SBOM"), (TOO_LARGE, "too large"), (MALFORMED, "malformed")]

    digest = models.CharField(max_length=100, help_text="the digest the tag points at (an index or an image)")
    platform = models.CharField(max_length=40, blank=True, help_text="os/arch chosen in an index; empty for one image")
    platform_assumed = models.BooleanField(default=False, help_text="the cluster's platform is unknown: linux/amd64")
    image_digest = models.CharField(max_length=100, blank=True, help_text="the platform image's manifest digest")
    status = models.CharField(max_length=12, choices=STATUSES)
    source = models.CharField(max_length=20, blank=True, help_text="attestation, referrers, referrers-tag, cosign-…")
    format = models.CharField(max_length=30, blank=True)
    reason = models.TextField(blank=True)
    packages = models.JSONField(default=list, blank=True, help_text="[[purl, name, version, licence, type], …]")
    package_count = models.PositiveIntegerField(default=0)
    read_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["digest", "platform"], name="releases_imagesbom_unique")]

    def __str__(self) -> str:
        return f"SBOM of {self.digest[:19]} ({self.status})"


class PackageCheck(models.Model):
    """OSV's answer for one package version (a versioned purl): the vulnerability ids, until
    `expires_at`; after that the next pass asks again."""

    purl = models.CharField(max_length=500, unique=True)
    vuln_ids = models.JSONField(default=list, blank=True)
    checked_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.purl


class Vulnerability(models.Model):
    """One OSV record, as far as the portal shows it."""

    osv_id = models.CharField(max_length=100, unique=True)
    aliases = models.JSONField(default=list, blank=True)
    summary = models.CharField(max_length=300, blank=True)
    severity = models.CharField(max_length=10, default="unknown", help_text="critical, high, moderate, low, unknown")
    fixed = models.JSONField(default=dict, blank=True, help_text="package name -> fixed versions")
    modified = models.CharField(max_length=40, blank=True)
    fetched_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.osv_id


class KnownExploited(models.Model):
    """One entry of CISA's Known Exploited Vulnerabilities catalogue."""

    cve_id = models.CharField(max_length=30, unique=True)
    name = models.CharField(max_length=300, blank=True)
    date_added = models.DateField(null=True, blank=True)
    ransomware = models.CharField(max_length=20, blank=True)

    def __str__(self) -> str:
        return self.cve_id


class FeedStatus(models.Model):
    """How reading OSV or the KEV catalogue last went: what "not checked since …" is made of."""

    name = models.CharField(max_length=10, unique=True)  # "osv", "kev"
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name


class OfflineAdvisory(models.Model):
    """One OSV record from an imported export (portal.releases.osv_offline), kept whole: the
    offline lookup answers from it as api.osv.dev would."""

    osv_id = models.CharField(max_length=100, unique=True)
    modified = models.CharField(max_length=40, blank=True)
    withdrawn = models.BooleanField(default=False, help_text="OSV withdrew it: it matches nothing")
    record = models.JSONField()
    imported_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.osv_id


class OfflinePackage(models.Model):
    """A package an imported advisory names, to find the advisories of a package version fast."""

    ecosystem = models.CharField(max_length=40, help_text="OSV's ecosystem without a release: Debian, not Debian:12")
    name = models.CharField(max_length=300)
    advisory = models.ForeignKey(OfflineAdvisory, on_delete=models.CASCADE, related_name="packages")

    class Meta:
        indexes = [models.Index(fields=["ecosystem", "name"])]

    def __str__(self) -> str:
        return f"{self.ecosystem}/{self.name}"

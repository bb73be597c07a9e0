"""The catalog: environments, the clusters in them, and the services we run."""

from __future__ import annotations

from django.db import models

from portal.catalog.images import normalise_name


class Environment(models.Model):
    name = models.SlugField(max_length=63, unique=True)
    order = models.PositiveIntegerField(default=0, help_text="dev < staging < prod: lower comes first")
    production = models.BooleanField(default=False)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.name


class Cluster(models.Model):
    class Connection(models.TextChoices):
        KUBECONFIG = "kubeconfig", "kubeconfig context"
        IN_CLUSTER = "in_cluster", "in-cluster service account"
        API = "api", "API URL + token"
        MANIFESTS = "manifests", "folder of manifests"

    name = models.SlugField(max_length=63, unique=True)
    environment = models.ForeignKey(Environment, on_delete=models.PROTECT, related_name="clusters")
    connection = models.CharField(max_length=16, choices=Connection.choices, default=Connection.KUBECONFIG)
    kubeconfig_path = models.CharField(max_length=500, blank=True, help_text="empty: $KUBECONFIG or ~/.kube/config")
    kubeconfig_context = models.CharField(max_length=200, blank=True)
    api_url = models.URLField(max_length=500, blank=True)
    # Secrets come only from the environment: the cluster names the variable, never the value.
    token_env = models.CharField(
        max_length=200, blank=True, help_text="name of the environment variable that holds the bearer token"
    )
    ca_data = models.TextField(blank=True, help_text="PEM of the API server's CA (public)")
    ca_file = models.CharField(max_length=500, blank=True)
    verify_tls = models.BooleanField(default=True)
    manifests_path = models.CharField(max_length=500, blank=True, help_text="folder of YAML/JSON snapshots")
    enabled = models.BooleanField(default=True)

    # Poll status, written by gitops.tasks.poll_cluster.
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    stale_since = models.DateTimeField(null=True, blank=True)
    last_poll_seconds = models.FloatField(null=True, blank=True)
    # capability -> why it is unavailable ("no permission to list appprojects").
    unavailable = models.JSONField(default=dict, blank=True)
    poll_lock_until = models.DateTimeField(null=True, blank=True)
    poll_lock_token = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["environment__order", "name"]

    def __str__(self) -> str:
        return self.name


class Service(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    image_repository = models.CharField(max_length=300, help_text="e.g. ghcr.io/acme/checkout")
    image_aliases = models.JSONField(default=list, blank=True, help_text="other names of the same image (mirrors)")
    team = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    source_repository = models.CharField(
        max_length=500,
        blank=True,
        help_text="the service's code repository, e.g. https://github.com/acme/checkout: its GitHub, "
        "GitLab or Gitea releases give the release notes; empty: no release notes",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def image_names(self) -> set[str]:
        """Every normalised image name that counts as this service."""
        names = {normalise_name(self.image_repository)}
        names.update(normalise_name(alias) for alias in self.image_aliases or [] if alias)
        return names


def service_image_index(services: list[Service] | models.QuerySet[Service]) -> dict[str, str]:
    """Normalised image name -> service name, for mapping running images to services."""
    index: dict[str, str] = {}
    for service in services:
        for name in service.image_names():
            index.setdefault(name, service.name)
    return index

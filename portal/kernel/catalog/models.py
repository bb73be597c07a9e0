"""The catalog: environments, the clusters in them, the Argo CD instances that deploy to
them, and the services we run.

A cluster is either added by an admin (it has an environment) or *discovered*: an Argo CD
instance deploys to it and no catalog cluster matched the destination. A discovered
cluster has no environment yet and is never polled; its apps are shown under
"unregistered destination" until an admin adds it (gitops.derive.topology does the matching).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from portal.kernel.catalog.images import normalise_name


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
        # A destination whose apps an Argo CD instance on another cluster reports.
        NONE = "none", "not read (its apps come from an Argo CD instance)"
        # Applications and AppProjects from the Argo CD API server (`api_url`, read-only
        # token in `token_env`); see gitops.sources.argocd_api.
        ARGOCD_API = "argocd_api", "Argo CD API URL + read-only token"
        # Read inside the cluster by `manage.py agent`, which pushes each snapshot to the portal
        # (POST /api/v1/agents/<cluster>/snapshots with an AgentToken); never polled from here.
        AGENT = "agent", "pushed by an in-cluster agent"
        # Places services run without Kubernetes (gitops.platforms): no GitOps tool, images
        # pinned in Git as their portal.git.* labels say.
        NOMAD = "nomad", "Nomad API (api_url + ACL token)"
        DOCKER = "docker", "Docker Engine (endpoint: unix:// socket or tcp://)"
        ECS = "ecs", "Amazon ECS (endpoint: region/cluster; AWS credentials chain)"

    name = models.SlugField(max_length=63, unique=True)
    # None only while the cluster is discovered (an Argo CD destination no admin has added).
    environment = models.ForeignKey(
        Environment, on_delete=models.PROTECT, related_name="clusters", null=True, blank=True
    )
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
    # Docker: unix:///var/run/docker.sock or tcp://host:2376; ECS: eu-west-1/prod-cluster.
    platform_endpoint = models.CharField(max_length=500, blank=True,
                                         help_text="Docker host or ECS region/cluster (Nomad uses api_url)")
    enabled = models.BooleanField(default=True)
    # How Argo CD instances name this cluster as a destination, besides `name` and `api_url`:
    # their cluster Secrets' `name` values and `server` URLs ("prod-eu", "https://10.0.0.1:6443").
    argocd_aliases = models.JSONField(
        default=list, blank=True, help_text="Argo CD cluster names or server URLs that mean this cluster"
    )
    # Found as an Argo CD destination that matched no cluster: no environment, not polled.
    discovered = models.BooleanField(default=False)

    # How its polls went is gitops' (gitops.ClusterPoll, `cluster.poll`), not the catalog's.

    class Meta:
        ordering = ["environment__order", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.environment_id is None and not self.discovered:
            raise ValidationError({"environment": "Only a discovered destination may be in no environment yet."})

    @property
    def destination_label(self) -> str:
        """How Argo CD names a discovered cluster: "prod-eu (https://10.0.0.1:6443)"."""
        names = [a for a in self.argocd_aliases or [] if isinstance(a, str) and "://" not in a]
        server = next((a for a in self.argocd_aliases or [] if isinstance(a, str) and "://" in a), self.api_url)
        name = names[0] if names else ""
        return f"{name} ({server})" if name and server else (name or server or self.name)


class ArgoCDInstance(models.Model):
    """One Argo CD installation: where the portal reads it, and where its UI is.

    Its Applications are read from `cluster` (the Kubernetes API of the cluster it runs on,
    which is also what its `in-cluster` destination means) or from its own API (`api_url`,
    with a read-only token named by `token_env`). `ui_url` is the base of deep links; empty
    falls back to settings.PORTAL_ARGOCD_URL.
    """

    class AgentMapping(models.TextChoices):
        NONE = "", "no argocd-agent"
        NAMESPACE = "namespace", "argocd-agent principal: one namespace per agent"
        DESTINATION = "destination", "argocd-agent principal: destination name is the agent"

    name = models.SlugField(max_length=63, unique=True)
    cluster = models.ForeignKey(
        Cluster, null=True, blank=True, on_delete=models.SET_NULL, related_name="argocd_instances",
        help_text="the cluster Argo CD runs on (its in-cluster destination), read through its Kubernetes API",
    )
    namespace = models.CharField(max_length=253, default="argocd", help_text="Argo CD's control-plane namespace")
    api_url = models.URLField(max_length=500, blank=True, help_text="Argo CD API server, e.g. https://argocd.example.com")
    token_env = models.CharField(
        max_length=200, blank=True, help_text="name of the environment variable that holds a read-only API token"
    )
    verify_tls = models.BooleanField(default=True)
    ui_url = models.URLField(max_length=500, blank=True, help_text="Argo CD UI for links; empty: PORTAL_ARGOCD_URL")
    agent_mapping = models.CharField(max_length=16, choices=AgentMapping.choices, blank=True, default="")

    class Meta:
        ordering = ["name"]
        verbose_name = "Argo CD instance"

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


class IgnoredImage(models.Model):
    """A running image an admin said is not a service: service discovery stops listing it."""

    # Normalised name (`ghcr.io/acme/sidecar`), as `normalise_name` writes it.
    repository = models.CharField(max_length=300, unique=True)
    ignored_by = models.CharField(max_length=150, blank=True)
    ignored_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["repository"]

    def __str__(self) -> str:
        return self.repository


class AgentToken(models.Model):
    """The credential of one cluster's agent: it may push snapshots of that cluster, nothing else.

    Only the SHA-256 of the token is kept (the token is 32 random bytes, so a fast hash is
    enough: there is nothing to guess); it is shown once, when an admin creates it. `prefix`
    names it on pages. `last_sequence` is the newest snapshot stored with it: an older or
    replayed snapshot is refused.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="agent_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_sequence = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["cluster__name", "-created_at"]

    def __str__(self) -> str:
        return f"{self.cluster.name} agent {self.prefix}…"


class CatalogRevision(models.Model):
    """How many times the catalog's services and clusters have been saved or deleted: one row,
    moved by portal.kernel.catalog.revision on every save and delete of a Service or a Cluster, in the
    writer's transaction. A poll compares it, not every catalog row, to learn whether what its
    objects mean may have changed (gitops.polling): read per poll, the rows themselves grow
    with the fleet (500 clusters and 200 services read 500 times a minute).

    Saves and deletes move it through signals (portal.kernel.catalog.revision says what a
    writer that bypasses them must do)."""

    revision = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"catalog revision {self.revision}"

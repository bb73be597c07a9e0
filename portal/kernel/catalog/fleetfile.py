"""Load a fleet description (environments, clusters, services) from YAML into the catalog.

The demo fleet in examples/fleet.yaml uses it; so can anyone who keeps their catalog in
Git. Loading is idempotent: rows are matched by name and updated. Apps above the catalog read
their own keys of a service's entry through `service_loaded` (the catalog imports none of
them): portal.delivery takes `policy:`, the service's version policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from django.db import transaction
from django.dispatch import Signal

from portal.kernel.catalog.models import Cluster, Environment, Service


@dataclass
class LoadedFleet:
    environments: int
    clusters: int
    services: int


class FleetFileError(ValueError):
    pass


# Sent for each service of the file, inside the load's transaction: `service=` (the row),
# `item=` (its mapping in the file). A receiver raising ValueError refuses the whole file.
service_loaded = Signal()


def load_fleet(path: Path) -> LoadedFleet:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise FleetFileError(f"{path}: {exc}") from None
    base = path.parent.resolve()
    with transaction.atomic():
        envs = {}
        for item in data.get("environments") or []:
            env, _ = Environment.objects.update_or_create(
                name=item["name"],
                defaults={"order": int(item.get("order", 0)), "production": bool(item.get("production", False))},
            )
            envs[env.name] = env
        clusters = 0
        for item in data.get("clusters") or []:
            env_name = item.get("environment")
            if env_name not in envs:
                raise FleetFileError(f"cluster {item.get('name')!r}: unknown environment {env_name!r}")
            defaults = {"environment": envs[env_name], "enabled": bool(item.get("enabled", True)),
                        "argocd_aliases": _aliases(item)}
            if item.get("connection") == Cluster.Connection.NONE:
                # Not read: an Argo CD instance elsewhere reports its apps; `api_url` is the
                # server its cluster Secret names (how its Applications are matched to it).
                defaults.update(connection=Cluster.Connection.NONE, api_url=item.get("api_url", ""))
            elif item.get("manifests"):
                defaults.update(connection=Cluster.Connection.MANIFESTS,
                                manifests_path=str((base / item["manifests"]).resolve()))
            elif item.get("api_url"):
                defaults.update(connection=Cluster.Connection.API, api_url=item["api_url"],
                                token_env=item.get("token_env", ""), ca_file=item.get("ca_file", ""))
            elif item.get("in_cluster"):
                defaults.update(connection=Cluster.Connection.IN_CLUSTER)
            else:
                defaults.update(connection=Cluster.Connection.KUBECONFIG,
                                kubeconfig_path=item.get("kubeconfig", ""), kubeconfig_context=item.get("context", ""))
            Cluster.objects.update_or_create(name=item["name"], defaults=defaults)
            clusters += 1
        services = 0
        for item in data.get("services") or []:
            service, _ = Service.objects.update_or_create(
                name=item["name"],
                defaults={"image_repository": item["image"], "image_aliases": list(item.get("aliases") or []),
                          "team": item.get("team", ""), "description": item.get("description", ""),
                          "source_repository": _source(item)},
            )
            try:
                service_loaded.send(sender=load_fleet, service=service, item=item)
            except ValueError as exc:
                raise FleetFileError(f"service {item['name']!r}: {exc}") from None
            services += 1
    return LoadedFleet(len(envs), clusters, services)


def _source(item: dict) -> str:
    """The service's code repository (`source:`), where its release notes are read; may be absent."""
    source = item.get("source") or ""
    if not isinstance(source, str):
        raise FleetFileError(f"service {item.get('name')!r}: source must be a repository URL, not {source!r}")
    return source.strip()


def _aliases(item: dict) -> list[str]:
    """`argocd_aliases:` the Argo CD cluster names or server URLs that mean this cluster."""
    aliases = item.get("argocd_aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise FleetFileError(f"cluster {item.get('name')!r}: argocd_aliases must be a list of names or URLs")
    return [a.strip() for a in aliases]

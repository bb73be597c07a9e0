"""Service discovery: running images that no service claims, and adding them in bulk.

Nobody types 300 image names. After a poll, every image that runs somewhere (in a workload
the portal reads, or in an Argo CD app's `status.summary.images` for a cluster it does not
read) is known; those whose normalised name matches no service and no ignored image are
listed here, grouped by repository, with where they run and a suggested service:

- **name**: the `app.kubernetes.io/name` label of the apps running it, when that label
  names this image alone; else the image's last path segment (`ghcr.io/acme/checkout` ->
  `checkout`);
- **team**: the apps' `app.kubernetes.io/part-of` label, else their Argo CD project (other
  than `default`).

Labels are read from the GitOps objects (Application, Kustomization, HelmRelease): the store
keeps no workload labels. Matching is the poll's: the normalised image name
(`portal.kernel.imagerefs`), so an app listed under an image is the app that service will claim.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from gitops.models import GitOpsApp, Workload
from portal.kernel.audit.models import record
from portal.kernel.catalog.models import IgnoredImage, Service, service_image_index
from portal.kernel.imagerefs import normalise_name, parse_image

NAME_LABEL = "app.kubernetes.io/name"
PART_OF_LABEL = "app.kubernetes.io/part-of"
DEFAULT_PROJECT = "default"
SERVICE_NAME_MAX = Service._meta.get_field("name").max_length or 100
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


@dataclass(frozen=True)
class AppRef:
    """An app that runs an image: where (its destination cluster) and what it is called."""

    id: int
    cluster: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.cluster}/{self.namespace}/{self.name}"


@dataclass
class UnclaimedImage:
    repository: str  # normalised image name: registry/path
    versions: list[str] = field(default_factory=list)
    apps: list[AppRef] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)
    suggested_name: str = ""
    suggested_team: str = ""
    ignored: bool = False

    @property
    def app_count(self) -> int:
        return len(self.apps)

    @property
    def cluster_count(self) -> int:
        return len(self.clusters)


@dataclass
class _Seen:
    versions: set[str] = field(default_factory=set)
    app_ids: set[int] = field(default_factory=set)
    clusters: set[str] = field(default_factory=set)


def last_segment_name(repository: str) -> str:
    """`ghcr.io/acme/checkout` -> `checkout`, as a service name (a slug)."""
    return slugify(repository.rsplit("/", 1)[-1])[:SERVICE_NAME_MAX]


def _most_common(values: Iterable[str]) -> str:
    counted = Counter(v for v in values if v)
    if not counted:
        return ""
    # Most apps first; ties broken by name, so the suggestion does not change between loads.
    return min(counted.items(), key=lambda pair: (-pair[1], pair[0]))[0]


def suggest(
    repository: str, labels: Sequence[dict[str, Any]], projects: Sequence[str]
) -> tuple[str, str]:
    """(name, team) for a service of `repository`, from its apps' labels and Argo CD projects."""
    name = slugify(_most_common(str(lbl.get(NAME_LABEL) or "") for lbl in labels))[:SERVICE_NAME_MAX]
    team = _most_common(str(lbl.get(PART_OF_LABEL) or "") for lbl in labels)
    if not team:
        team = _most_common(p for p in projects if p != DEFAULT_PROJECT)
    return name or last_segment_name(repository), team[:100]


def unclaimed_images(*, include_ignored: bool = False) -> list[UnclaimedImage]:
    """Every running image no service claims, busiest first (four queries, whatever the fleet)."""
    claimed = set(service_image_index(Service.objects.all()))
    ignored = set(IgnoredImage.objects.values_list("repository", flat=True))
    seen: dict[str, _Seen] = defaultdict(_Seen)
    apps: dict[int, dict[str, Any]] = {}

    def note(reference: str, cluster: str, app_id: int | None, version: str = "") -> None:
        parsed = parse_image(reference)
        if parsed is None or parsed.name in claimed:
            return
        entry = seen[parsed.name]
        entry.clusters.add(cluster)
        if version or parsed.version:
            entry.versions.add(version or parsed.version)
        if app_id is not None:
            entry.app_ids.add(app_id)

    for app in GitOpsApp.objects.values(
        "id", "cluster__name", "namespace", "name", "project", "images", "raw__metadata__labels"
    ):
        apps[app["id"]] = app
        for image in app["images"] or []:
            note(str(image), app["cluster__name"], app["id"])
    for workload in Workload.objects.values("cluster__name", "app_id", "containers"):
        for container in workload["containers"] or []:
            if not isinstance(container, dict) or not container.get("repository"):
                continue
            name = f"{container.get('registry') or ''}/{container['repository']}".lstrip("/")
            version = str(container.get("tag") or container.get("digest") or "")
            note(name + (f":{version}" if container.get("tag") else ""), workload["cluster__name"],
                 workload["app_id"], version)

    found: list[UnclaimedImage] = []
    for repository, entry in seen.items():
        is_ignored = repository in ignored
        if is_ignored and not include_ignored:
            continue
        runs = [apps[i] for i in entry.app_ids if i in apps]
        labels = [lbl for lbl in (a["raw__metadata__labels"] for a in runs) if isinstance(lbl, dict)]
        name, team = suggest(repository, labels, [a["project"] for a in runs])
        found.append(UnclaimedImage(
            repository=repository,
            versions=sorted(entry.versions),
            apps=sorted((AppRef(a["id"], a["cluster__name"], a["namespace"], a["name"]) for a in runs),
                        key=lambda r: (r.cluster, r.namespace, r.name)),
            clusters=sorted(entry.clusters),
            suggested_name=name,
            suggested_team=team,
            ignored=is_ignored,
        ))
    _settle_name_clashes(found)
    found.sort(key=lambda u: (-u.app_count, -u.cluster_count, u.repository))
    return found


def _settle_name_clashes(found: list[UnclaimedImage]) -> None:
    """One name per suggestion: a label shared by several images (one app running a service
    and its sidecar), or a name a service already has, falls back to the image's last
    segment."""
    taken = set(Service.objects.values_list("name", flat=True))
    counts = Counter(u.suggested_name for u in found)
    for image in found:
        if counts[image.suggested_name] > 1 or image.suggested_name in taken:
            image.suggested_name = last_segment_name(image.repository)


# ------------------------------------------------------------------------------ writes


@dataclass(frozen=True)
class NewService:
    repository: str
    name: str
    team: str = ""


@dataclass
class Added:
    services: list[Service] = field(default_factory=list)
    claimed: dict[str, list[AppRef]] = field(default_factory=dict)  # service name -> apps it claims now
    errors: list[str] = field(default_factory=list)


def add_services(chosen: Sequence[NewService], actor: Any) -> Added:
    """Services for unclaimed images, each claiming the apps that run its image, at once.

    All or nothing: one invalid choice (a name that is no slug or already taken, an image
    that is claimed by now) adds none, and says why. The apps are linked now; their running
    versions follow with the next poll of their cluster.
    """
    out = Added()
    current = {u.repository: u for u in unclaimed_images(include_ignored=True)}
    existing = set(Service.objects.values_list("name", flat=True))
    names: set[str] = set()
    for choice in chosen:
        repository = normalise_name(choice.repository)
        if repository not in current:
            out.errors.append(f"{repository}: no unclaimed image runs under that name")
        if not choice.name or not _SLUG.match(choice.name) or len(choice.name) > SERVICE_NAME_MAX:
            out.errors.append(f"{repository}: {choice.name!r} is not a service name (letters, digits, - and _)")
        elif choice.name in existing:
            out.errors.append(f"{repository}: a service named {choice.name!r} exists already")
        elif choice.name in names:
            out.errors.append(f"{repository}: {choice.name!r} is chosen for another image too")
        names.add(choice.name)
    if out.errors or not chosen:
        return out
    with transaction.atomic():
        for choice in chosen:
            image = current[normalise_name(choice.repository)]
            service = Service.objects.create(name=choice.name, image_repository=image.repository,
                                             team=choice.team.strip()[:100])
            through = GitOpsApp.services.through
            through.objects.bulk_create(
                [through(gitopsapp_id=app.id, service_id=service.id) for app in image.apps], ignore_conflicts=True
            )
            IgnoredImage.objects.filter(repository=image.repository).delete()
            record(actor, "service.added_from_discovery", service.name, image=image.repository,
                   team=service.team, apps=[str(a) for a in image.apps])
            out.services.append(service)
            out.claimed[service.name] = image.apps
    return out


def ignore_images(repositories: Iterable[str], actor: Any) -> list[str]:
    """Stop listing these images; returns the ones newly ignored."""
    done = []
    with transaction.atomic():
        for repository in sorted({normalise_name(r) for r in repositories if r}):
            by = actor.get_username() if getattr(actor, "is_authenticated", False) else "system"
            _, created = IgnoredImage.objects.get_or_create(repository=repository, defaults={"ignored_by": by})
            if created:
                record(actor, "image.ignored", repository)
                done.append(repository)
    return done


def unignore_images(repositories: Iterable[str], actor: Any) -> list[str]:
    """List these images again."""
    done = []
    with transaction.atomic():
        for repository in sorted({normalise_name(r) for r in repositories if r}):
            deleted, _ = IgnoredImage.objects.filter(repository=repository).delete()
            if deleted:
                record(actor, "image.unignored", repository)
                done.append(repository)
    return done

"""Helm chart versions upstream: what a chart repository offers, for chart upgrades.

A HelmRelease's `spec.chart.spec.version` and an Argo CD Helm source's `targetRevision` pin a
chart version; a newer version the service's policy accepts is an upgrade of its own (the
pull request changes only that version, `forges.pins.chart_edits`). This module reads the
versions and stores them as `ChartVersion` rows, polled with the registry work
(`portal.releases.registry_reads.poll_charts`, on the registry queue) and never in a request:

- an HTTP(S) Helm repository: its `index.yaml` (Helm's chart repository guide, "The Index
  File": `apiVersion: v1`, `entries: {<chart>: [{version, appVersion, urls, digest, created}]}`,
  `generated`), through `requests` with the one retry policy (`forges.retry`), bounded in size;
- an OCI registry (`oci://ghcr.io/org/charts`, or Argo CD's scheme-less `ghcr.io/org/charts`):
  the tags of `<path>/<chart>` through `portal.releases.oci.RegistryClient` (the registry
  credentials and plain-HTTP hosts of the image registries). Helm writes a version's `+` as
  `_` in a tag (OCI tags cannot hold `+`); it is read back as `+`.

Which charts: the distinct (repository, chart) pairs the stored applications install
(their `sources` or, for a row without them, the primary columns). Only versions that read
as versions are kept. A failed read keeps what was seen and records why (`ChartPoll`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import requests
import yaml
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from forges.forge import ForgeError
from forges.retry import RetryingSession, RetryPolicy
from gitops.git_locations import DEFAULT, RANGE, revision_kind
from gitops.models import GitOpsApp
from gitops.models import may_install_a_chart as may_install_a_chart  # defined beside its index
from gitops.rawobjects import as_dict, as_list, as_str
from portal.kernel.redaction import redact
from portal.releases.models import ChartPoll, ChartVersion
from portal.releases.oci import RegistryClient, RegistryError
from portal.releases.versions import parse_tag

log = logging.getLogger(__name__)

INDEX_MAX_BYTES = 64 * 1024 * 1024  # the largest public index.yaml files are a few tens of MB
MAX_VERSIONS = 5000  # of one chart, newest kept when more are listed
ERROR_MAX_CHARS = 1000
OCI = "oci://"


class ChartReadError(Exception):
    """The chart repository could not be read (the message is safe to show)."""


@dataclass(frozen=True)
class ChartRef:
    """A chart as applications install it: the repository URL as they spell it, and its name."""

    repository: str
    chart: str

    @property
    def oci(self) -> bool:
        return is_oci(self.repository)


@dataclass(frozen=True)
class ChartPin:
    """The chart an application installs and the version it asks for, as written there."""

    ref: ChartRef
    version: str  # "0.3.1"; or a range ("1.2.*", ">=1.0.0", "*"), which is not a pin

    @property
    def is_range(self) -> bool:
        """A semver range (or nothing, which Flux reads as `*`): the newest match is installed."""
        return revision_kind(self.version) in (RANGE, DEFAULT)

    @property
    def follows(self) -> str:
        """"follows 1.2.*" for a range ("" for a pinned version): there is nothing to change."""
        return f"follows {self.version.strip() or '*'}" if self.is_range else ""


def chart_pin(app: GitOpsApp) -> ChartPin | None:
    """The chart `app` installs from a Helm or OCI repository, with the version it pins (its
    stored sources, else its primary columns); None when it installs none."""
    sources = [as_dict(s) for s in as_list(app.sources)] or [
        {"repo_url": app.repo_url, "chart": app.chart, "target_revision": app.target_revision}
    ]
    for source in sources:
        repository, chart = as_str(source.get("repo_url")).strip().rstrip("/"), as_str(source.get("chart"))
        if repository and chart and not _from_git(repository):
            return ChartPin(ChartRef(repository, chart), as_str(source.get("target_revision")).strip())
    return None


@dataclass
class ChartReport:
    chart: ChartRef
    ok: bool
    new_versions: list[str] = field(default_factory=list)
    error: str = ""


def is_oci(repository: str) -> bool:
    """An OCI registry (`oci://…`, or Argo CD's scheme-less `ghcr.io/org/charts`), not an HTTP index."""
    text = repository.strip().lower()
    return text.startswith(OCI) or "://" not in text


def oci_repository(ref: ChartRef) -> str:
    """`ghcr.io/org/charts/podinfo` for the chart `podinfo` in `oci://ghcr.io/org/charts` (a
    Flux OCIRepository's URL names the chart itself: `oci://ghcr.io/org/charts/podinfo`)."""
    path = ref.repository.strip().removeprefix(OCI).removeprefix("OCI://").rstrip("/")
    return path if path.rsplit("/", 1)[-1] == ref.chart else f"{path}/{ref.chart}"


def index_versions(
    repository: str, chart: str, *, session: requests.Session | None = None, timeout: float | None = None
) -> list[str]:
    """The versions of `chart` listed in the Helm repository's index.yaml (as written there)."""
    return versions_in_index(read_index(repository, session=session, timeout=timeout), chart, repository)


def read_index(repository: str, *, session: requests.Session | None = None, timeout: float | None = None) -> object:
    """The Helm repository's index.yaml, parsed; bounded in size."""
    url = repository.strip().rstrip("/") + "/index.yaml"
    client = session or RetryingSession(RetryPolicy(max_attempts=3, max_wait=60.0))
    wait = timeout if timeout is not None else settings.PORTAL_REGISTRY_TIMEOUT
    try:
        response = client.get(url, timeout=wait, stream=True, headers={"Accept": "application/yaml, */*"})
    except (requests.RequestException, ForgeError) as error:
        raise ChartReadError(f"{_where(repository)}: no answer ({type(error).__name__})") from None
    with response:
        if response.status_code != 200:
            raise ChartReadError(f"{_where(repository)}: index.yaml answered HTTP {response.status_code}")
        body = _bounded(response, repository)
    try:
        # The C safe loader when built (an index of 20 MB reads in seconds, not a minute): safe either way.
        return yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError:
        raise ChartReadError(f"{_where(repository)}: index.yaml is not YAML") from None


def versions_in_index(index: object, chart: str, repository: str = "") -> list[str]:
    """The versions of `chart` an index.yaml document (already parsed) lists, as written there."""
    entries = as_dict(as_dict(index).get("entries"))
    if not entries and not isinstance(as_dict(index).get("entries"), Mapping):
        raise ChartReadError(f"{_where(repository)}: index.yaml has no entries (not a Helm repository index)")
    versions = [as_str(as_dict(entry).get("version")) for entry in as_list(entries.get(chart))]
    return [v for v in versions if v]


def oci_versions(ref: ChartRef, environ: Mapping[str, str] | None = None, **kwargs: Any) -> list[str]:
    """The versions of an OCI chart: its tags, `_` read back as `+`."""
    client, repository = RegistryClient.for_image(oci_repository(ref), environ, **kwargs)
    try:
        tags = client.tags(repository)
    except RegistryError as error:
        raise ChartReadError(redact(str(error))) from None
    return [tag.replace("_", "+") for tag in tags]


def chart_versions(ref: ChartRef, *, environ: Mapping[str, str] | None = None,
                   session: requests.Session | None = None) -> list[str]:
    """What the chart's repository offers, from its index.yaml or its OCI tags."""
    if ref.oci:
        return oci_versions(ref, environ)
    return index_versions(ref.repository, ref.chart, session=session)


def used_charts() -> list[ChartRef]:
    """The charts stored applications install from a Helm or OCI repository (not from Git)."""
    found: dict[tuple[str, str], ChartRef] = {}
    rows = GitOpsApp.objects.filter(may_install_a_chart()).values_list("repo_url", "chart", "sources")
    for repo_url, chart, sources in rows:
        pairs = [(as_str(s.get("repo_url")), as_str(s.get("chart"))) for s in map(as_dict, as_list(sources))]
        for repository, name in [p for p in pairs if p[1]] or [(repo_url, chart)]:
            if repository and name and not _from_git(repository):
                key = (repository.strip().rstrip("/"), name)
                found.setdefault(key, ChartRef(*key))
    return sorted(found.values(), key=lambda r: (r.repository, r.chart))


def poll_chart(ref: ChartRef, *, now: datetime | None = None, environ: Mapping[str, str] | None = None,
               session: requests.Session | None = None) -> ChartReport:
    """Read one chart's versions and store those not seen before; a failure keeps them all."""
    now = now or timezone.now()
    status, _ = ChartPoll.objects.get_or_create(repository=ref.repository, chart=ref.chart)
    try:
        listed = chart_versions(ref, environ=environ, session=session)
    except ChartReadError as error:
        message = redact(str(error))[:ERROR_MAX_CHARS]
        log.warning("chart poll of %s in %s failed: %s", ref.chart, _where(ref.repository), message)
        ChartPoll.objects.filter(pk=status.pk).update(last_poll_at=now, last_error=message)
        return ChartReport(ref, ok=False, error=message)
    return record_versions(ref, listed, now=now)


def record_versions(ref: ChartRef, listed: list[str], *, now: datetime) -> ChartReport:
    """Store the versions a read of the chart's repository listed (those not seen before, that
    read as versions, the newest `MAX_VERSIONS`) and record the read as a good poll."""
    status, _ = ChartPoll.objects.get_or_create(repository=ref.repository, chart=ref.chart)
    stored = ChartVersion.objects.filter(repository=ref.repository, chart=ref.chart)
    known = set(stored.values_list("version", flat=True))
    parsed = [v for v in (parse_tag(t) for t in dict.fromkeys(listed) if t not in known) if v is not None]
    parsed.sort(key=lambda v: v.key, reverse=True)
    rows = [
        ChartVersion(repository=ref.repository, chart=ref.chart, version=v.tag[:128], prerelease=v.is_prerelease,
                     seen_at=now)
        for v in parsed[:MAX_VERSIONS]
    ]
    with transaction.atomic():
        ChartVersion.objects.bulk_create(rows, ignore_conflicts=True)
        ChartPoll.objects.filter(pk=status.pk).update(
            last_poll_at=now, last_ok_at=now, last_error="", versions_seen=len(listed)
        )
    return ChartReport(ref, ok=True, new_versions=[r.version for r in rows])


def versions_of(refs: Iterable[ChartRef]) -> dict[ChartRef, list[str]]:
    """The stored versions of each chart (one query)."""
    wanted = {(r.repository.strip().rstrip("/"), r.chart): r for r in refs}
    found: dict[ChartRef, list[str]] = {ref: [] for ref in wanted.values()}
    if not wanted:
        return found
    rows = ChartVersion.objects.filter(
        repository__in={k[0] for k in wanted}, chart__in={k[1] for k in wanted}
    ).values_list("repository", "chart", "version")
    for repository, chart, version in rows:
        ref = wanted.get((repository, chart))
        if ref is not None:
            found[ref].append(version)
    return found


def _from_git(repository: str) -> bool:
    # A chart kept in a Git repository changes with the repository, not by version.
    text = repository.strip().lower()
    return text.endswith(".git") or text.startswith(("git@", "ssh://"))


def _bounded(response: requests.Response, repository: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=1 << 16):
        size += len(chunk)
        if size > INDEX_MAX_BYTES:
            raise ChartReadError(f"{_where(repository)}: index.yaml is larger than {INDEX_MAX_BYTES >> 20} MB")
        chunks.append(chunk)
    return b"".join(chunks)


def _where(repository: str) -> str:
    # The repository as shown: without credentials a URL might carry.
    text = repository.strip()
    scheme, sep, rest = text.partition("://")
    return f"{scheme}{sep}{rest.rsplit('@', 1)[-1]}" if sep else text.rsplit("@", 1)[-1]

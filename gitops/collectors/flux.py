"""Flux Kustomizations and HelmReleases as rows, judged against their sources.

Flux has no "sync status" of its own. We derive one the way kustomize-controller
decides whether a dependency is up to date: the revision the source offers now is
compared, for equality only, with the revision the object last applied. Revisions are
names of content (Git SHAs, OCI digests, chart versions); they have no order, so
"different" is all we ever say, never "newer".

- Kustomization: source `status.artifact.revision` vs `status.lastAppliedRevision`.
- HelmRelease with `spec.chart` (HelmRepository, GitRepository or Bucket): the HelmChart
  helm-controller made for the release offers a chart version (its artifact revision);
  it is compared with the chart version of the latest release in `status.history`
  (v2, the highest release version), or `status.lastAppliedRevision` (v2beta1, which has no history).
- HelmRelease with `chartRef` to an OCIRepository: the chart version carries only a
  12-hex digest suffix and the tag may be spelled differently from the chart version,
  so the OCI manifest digest is compared instead: the source revision's digest vs the
  release's `ociDigest` (or, without it, the `+<digest12>` suffix of its chart version).
- HelmRelease with `chartRef` to a HelmChart: as for `spec.chart`.

A source we cannot see, or an object that never applied anything, is Unknown. Only the
chart is compared for a HelmRelease: a values change that fails to apply shows in its
health (Ready=False), not as OutOfSync.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gitops.health import flux_health
from gitops.rawobjects import (
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    conditions,
    dig,
    metadata,
    trimmed,
)
from gitops.rows import FLUX, HEALTHY, OUT_OF_SYNC, SYNCED, UNKNOWN, AppRow, ResourceKey, SourceSpec
from portal.kernel.timestamps import parse_time, rfc3339

SOURCE_KINDS = ("GitRepository", "OCIRepository", "HelmRepository", "HelmChart", "Bucket")

SourceKey = tuple[str, str, str]  # (kind, namespace, name)
Sources = Mapping[SourceKey, Mapping[str, Any]]

_SHA1_HEX = 40
_SHA256_HEX = 64
_CHART_DIGEST_SUFFIX = 12  # helm-controller appends "+" and the first 12 hex of the OCI digest


def index_sources(objects_by_kind: Mapping[str, list[Any]]) -> dict[SourceKey, dict[str, Any]]:
    """Source objects keyed by (kind, namespace, name); objects without a name are left out."""
    index: dict[SourceKey, dict[str, Any]] = {}
    for kind in SOURCE_KINDS:
        for obj in as_list(objects_by_kind.get(kind)):
            name = as_str(dig(obj, "metadata", "name"))
            if name:
                index[(kind, as_str(dig(obj, "metadata", "namespace")), name)] = with_kind(obj, kind)
    return index


def with_kind(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The object with `kind` set: list items from the API omit it, and health rules need it."""
    if as_str(obj.get("kind")) == kind:
        return dict(obj)
    return {**obj, "kind": kind}


def normalise_revision(revision: str) -> str:
    """A revision in the RFC-0005 form `<pointer>@<algo>:<hex>`; legacy `main/<sha>` converted.

    Sources reconciled before Flux 0.40 wrote `<pointer>/<hex>` (and a bare hex for
    Buckets); an object may still carry such a value next to a new-style one.
    """
    text = revision.strip()
    if not text or ":" in text:
        return text
    pointer, _, digest = text.rpartition("/")
    if len(digest) == _SHA1_HEX:
        algo = "sha1"
    elif len(digest) == _SHA256_HEX:
        algo = "sha256"
    else:
        return text
    if not all(ch in "0123456789abcdefABCDEF" for ch in digest):
        return text
    if pointer in ("", "HEAD"):
        return f"{algo}:{digest}"
    return f"{pointer}@{algo}:{digest}"


def compare_revisions(offered: str, applied: str) -> str:
    """Synced when equal, OutOfSync when different, Unknown when either is missing."""
    if not offered or not applied:
        return UNKNOWN
    return SYNCED if normalise_revision(offered) == normalise_revision(applied) else OUT_OF_SYNC


def kustomization_row(obj: Mapping[str, Any], sources: Sources) -> AppRow:
    obj = with_kind(obj, "Kustomization")
    namespace, name, uid = metadata(obj)
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    row = _base_row(obj, "Kustomization", namespace, name, uid)
    row.destination_namespace = as_str(spec.get("targetNamespace"))
    row.destination_name = as_str(dig(spec, "kubeConfig", "secretRef", "name"))

    ref = as_dict(spec.get("sourceRef"))
    key = _ref_key(ref, namespace, default_kind="")
    source = sources.get(key) if key[0] else None
    row.sources = [
        SourceSpec(
            repo_url=_source_url(source),
            path=as_str(spec.get("path")),
            target_revision=_source_target(source),
            ref=_ref_text(key, namespace),
        )
    ]
    _read_source_readiness(row, [(key, source)])

    row.synced_revision = as_str(status.get("lastAppliedRevision"))
    row.synced_revisions = [row.synced_revision] if row.synced_revision else []
    row.attempted_revision = as_str(status.get("lastAttemptedRevision"))
    row.source_revision = _artifact_revision(source)
    row.sync_status = compare_revisions(row.source_revision, row.synced_revision)

    row.history = _kustomization_history(as_list(status.get("history")))
    if row.history:
        row.reconciled_at = parse_time(row.history[-1]["deployed_at"])
    row.sync_since = _sync_since(row, source, "first_at")
    row.resources = inventory(status.get("inventory"))
    return row


def helmrelease_row(obj: Mapping[str, Any], sources: Sources) -> AppRow:
    obj = with_kind(obj, "HelmRelease")
    namespace, name, uid = metadata(obj)
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    row = _base_row(obj, "HelmRelease", namespace, name, uid)
    row.destination_namespace = as_str(spec.get("targetNamespace")) or namespace
    row.destination_name = as_str(dig(spec, "kubeConfig", "secretRef", "name"))

    row.history = _release_history(as_list(status.get("history")))
    latest = row.history[-1] if row.history else {}
    # v2 records what it released in the history; v2beta1 only in lastAppliedRevision.
    applied_version = as_str(latest.get("revision")) or as_str(status.get("lastAppliedRevision"))
    row.synced_revision = applied_version
    row.synced_revisions = [applied_version] if applied_version else []
    row.attempted_revision = as_str(status.get("lastAttemptedRevision"))
    if latest:
        row.reconciled_at = parse_time(latest.get("deployed_at"))

    chart_spec = as_dict(dig(spec, "chart", "spec"))
    chart_ref = as_dict(spec.get("chartRef"))
    # The source object whose artifact revision the sync status compares.
    offering: Mapping[str, Any] | None = None
    if chart_spec:
        offering = _chart_template(row, chart_spec, status, sources, applied_version)
    elif chart_ref:
        offering = _chart_ref(row, chart_ref, sources, applied_version, latest)
    else:
        row.warnings.append("no spec.chart or spec.chartRef")
    # Helm carries a release's firstDeployed over to its upgrades: each release version's own
    # time is its lastDeployed.
    row.sync_since = _sync_since(row, offering, "deployed_at")
    row.resources = inventory(status.get("inventory"))
    return row


def _sync_since(row: AppRow, source: Mapping[str, Any] | None, reached: str) -> datetime | None:
    """When the sync status derived above began, as Flux records it; None where it records nothing.

    Synced: when the applied revision was first applied (`_first_applied`). OutOfSync: the
    source's artifact `lastUpdateTime`, when it began offering the revision not yet applied; an
    artifact older than that first apply dates nothing about the difference (a source read at
    another moment than its object), and the portal's own sight dates it then. A controller older
    than the history (kustomize-controller < 1.7) records no time for a revision: None.
    """
    applied = _first_applied(row, reached)
    if row.sync_status == OUT_OF_SYNC:
        offered = parse_time(dig(source, "status", "artifact", "lastUpdateTime"))
        if offered is None or (applied is not None and offered < applied):
            return None
        return offered
    return applied if row.sync_status == SYNCED else None


def _first_applied(row: AppRow, reached: str) -> datetime | None:
    """When the applied revision was first applied: the oldest entry of the newest run of history
    entries holding it. The history keeps one entry per digest and result, so a failed and then a
    successful apply of one revision are two entries, and it moves an entry's revision on when a
    new commit renders the same objects; entries of a newer revision that failed to apply may
    follow the run."""
    applied = normalise_revision(row.synced_revision)
    if not applied:
        return None
    times: list[datetime | None] = []
    for entry in reversed(row.history):
        if normalise_revision(as_str(entry.get("revision"))) == applied:
            times.append(parse_time(entry.get(reached)))
        elif times:
            break
    known = [t for t in times if t is not None]
    return min(known) if known else None


def _base_row(obj: Mapping[str, Any], kind: str, namespace: str, name: str, uid: str) -> AppRow:
    spec = as_dict(obj.get("spec"))
    row = AppRow(tool=FLUX, kind=kind, namespace=namespace, name=name, uid=uid)
    row.suspended = as_bool(spec.get("suspend"))
    # Flux applies on its own unless suspended; there is no manual-sync mode to report.
    row.automated = not row.suspended
    row.interval = as_str(spec.get("interval"))
    health = flux_health(obj)
    row.health_status = health.health
    row.ready_reason = health.reason
    row.health_message = health.message
    row.health_since = parse_time(health.since)
    row.conditions = conditions(obj)
    row.generation = as_int(dig(obj, "metadata", "generation"))
    row.observed_generation = as_int(dig(obj, "status", "observedGeneration"))
    row.raw = trimmed(obj)
    return row


def _chart_template(
    row: AppRow,
    chart_spec: Mapping[str, Any],
    status: Mapping[str, Any],
    sources: Sources,
    applied_version: str,
) -> Mapping[str, Any] | None:
    ref = as_dict(chart_spec.get("sourceRef"))
    key = _ref_key(ref, row.namespace, default_kind="HelmRepository")
    repository = sources.get(key)
    chart_key = _helmchart_key(status, key[1], row.namespace, row.name)
    helmchart = sources.get(chart_key)
    row.sources = [_chart_source(key, repository, as_str(chart_spec.get("chart")), chart_spec, row.namespace)]
    _read_source_readiness(row, [(key, repository), (chart_key, helmchart)])
    row.source_revision = _artifact_revision(helmchart)
    row.sync_status = compare_revisions(row.source_revision, applied_version)
    return helmchart


def _chart_ref(
    row: AppRow,
    chart_ref: Mapping[str, Any],
    sources: Sources,
    applied_version: str,
    latest: Mapping[str, Any],
) -> Mapping[str, Any] | None:
    key = _ref_key(chart_ref, row.namespace, default_kind="")
    source = sources.get(key) if key[0] else None
    if key[0] == "OCIRepository":
        chart_name = as_str(latest.get("chart")) or _last_path_segment(_source_url(source))
        row.sources = [
            SourceSpec(
                repo_url=_source_url(source),
                chart=chart_name,
                target_revision=_source_target(source),
                ref=_ref_text(key, row.namespace),
            )
        ]
        _read_source_readiness(row, [(key, source)])
        row.source_revision = _artifact_revision(source)
        row.sync_status = _compare_oci_chart(row.source_revision, latest, applied_version)
        return source
    if key[0] == "HelmChart":
        inner = as_dict(dig(source, "spec", "sourceRef"))
        # A HelmChart's own sourceRef is always in its namespace.
        inner_key = _ref_key(inner, key[1], default_kind="HelmRepository", allow_namespace=False)
        repository = sources.get(inner_key)
        chart_spec = as_dict(dig(source, "spec"))
        row.sources = [_chart_source(inner_key, repository, as_str(chart_spec.get("chart")), chart_spec, key[1])]
        _read_source_readiness(row, [(inner_key, repository), (key, source)])
        row.source_revision = _artifact_revision(source)
        row.sync_status = compare_revisions(row.source_revision, applied_version)
        return source
    row.sources = [SourceSpec(repo_url="", ref=_ref_text(key, row.namespace))]
    _read_source_readiness(row, [(key, source)])
    row.sync_status = UNKNOWN
    return None


def _chart_source(
    key: SourceKey,
    repository: Mapping[str, Any] | None,
    chart: str,
    chart_spec: Mapping[str, Any],
    namespace: str,
) -> SourceSpec:
    if key[0] in ("GitRepository", "Bucket"):
        # The chart is a path inside the repository, and `version` is ignored there.
        return SourceSpec(
            repo_url=_source_url(repository),
            path=chart,
            target_revision=_source_target(repository),
            ref=_ref_text(key, namespace),
        )
    return SourceSpec(
        repo_url=_source_url(repository),
        chart=chart,
        # The CRD defaults an empty version to "*" (any, newest).
        target_revision=as_str(chart_spec.get("version")) or "*",
        ref=_ref_text(key, namespace),
    )


def _compare_oci_chart(source_revision: str, latest: Mapping[str, Any], applied_version: str) -> str:
    if not source_revision or not applied_version:
        return UNKNOWN
    _, _, offered_digest = source_revision.rpartition("@")
    if ":" not in offered_digest:
        return UNKNOWN
    applied_digest = as_str(latest.get("oci_digest"))
    if applied_digest:
        return SYNCED if applied_digest == offered_digest else OUT_OF_SYNC
    _, plus, suffix = applied_version.rpartition("+")
    if plus and len(suffix) == _CHART_DIGEST_SUFFIX:
        offered_hex = offered_digest.partition(":")[2]
        return SYNCED if offered_hex[:_CHART_DIGEST_SUFFIX] == suffix else OUT_OF_SYNC
    # Digest tracking is off (DisableChartDigestTracking): nothing comparable is recorded.
    return UNKNOWN


def _helmchart_key(status: Mapping[str, Any], source_namespace: str, namespace: str, name: str) -> SourceKey:
    # helm-controller names the chart `<hr namespace>-<hr name>` in the source's namespace
    # and reports it as "<namespace>/<name>" once created.
    reported = as_str(status.get("helmChart"))
    chart_ns, slash, chart_name = reported.partition("/")
    if slash and chart_ns and chart_name:
        return ("HelmChart", chart_ns, chart_name)
    return ("HelmChart", source_namespace, f"{namespace}-{name}")


def _ref_key(ref: Mapping[str, Any], namespace: str, default_kind: str, allow_namespace: bool = True) -> SourceKey:
    ref_ns = as_str(ref.get("namespace")) if allow_namespace else ""
    return (as_str(ref.get("kind")) or default_kind, ref_ns or namespace, as_str(ref.get("name")))


def _ref_text(key: SourceKey, namespace: str) -> str:
    """`Kind/name`, or `Kind/namespace/name` across namespaces, as Flux prints a sourceRef."""
    kind, ref_ns, name = key
    if not kind and not name:
        return ""
    return f"{kind}/{name}" if ref_ns == namespace else f"{kind}/{ref_ns}/{name}"


def _source_url(source: Mapping[str, Any] | None) -> str:
    spec = as_dict(dig(source, "spec"))
    url = as_str(spec.get("url"))
    if url:
        return url
    endpoint, bucket = as_str(spec.get("endpoint")), as_str(spec.get("bucketName"))
    if endpoint or bucket:
        return f"{endpoint}/{bucket}" if endpoint and bucket else endpoint or bucket
    return ""


def _source_target(source: Mapping[str, Any] | None) -> str:
    """The reference a source follows, with Flux's precedence among the ref fields."""
    if source is None:
        return ""
    kind = as_str(source.get("kind"))
    ref = as_dict(dig(source, "spec", "ref"))
    if kind == "GitRepository":
        for field in ("commit", "name", "semver", "tag", "branch"):
            if as_str(ref.get(field)):
                return as_str(ref.get(field))
        return "master"  # source-controller's default when no ref is given
    if kind == "OCIRepository":
        for field in ("digest", "semver", "tag"):
            if as_str(ref.get(field)):
                return as_str(ref.get(field))
        return "latest"
    if kind == "HelmChart":
        return as_str(dig(source, "spec", "version")) or "*"
    return ""


def _artifact_revision(source: Mapping[str, Any] | None) -> str:
    return as_str(dig(source, "status", "artifact", "revision"))


def _read_source_readiness(row: AppRow, chain: list[tuple[SourceKey, Mapping[str, Any] | None]]) -> None:
    """Ready when every source object in the chain is; None when one cannot be seen or judged."""
    for key, source in chain:
        kind, namespace, name = key
        label = f"{kind}/{namespace}/{name}"
        if source is None:
            row.source_ready = None
            if kind and name:
                row.source_message = f"source {label} not found"
            else:
                row.source_message = "source reference has no kind or name"
            row.warnings.append(row.source_message)
            return
        health = flux_health(source)
        if health.health != HEALTHY:
            # No Ready condition at all says nothing either way; anything else is not ready.
            row.source_ready = None if health.health == UNKNOWN else False
            row.source_message = f"{label}: {health.message or health.health}"
            return
    row.source_ready = True
    row.source_message = ""


def _last_path_segment(url: str) -> str:
    return url.rstrip("/").rpartition("/")[2] if "/" in url else ""


def _kustomization_history(entries: list[Any]) -> list[dict[str, Any]]:
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        meta = as_dict(entry.get("metadata"))
        out.append(
            {
                "revision": as_str(meta.get("revision")),
                "origin_revision": as_str(meta.get("originRevision")),
                "deployed_at": rfc3339(parse_time(entry.get("lastReconciled"))),
                "first_at": rfc3339(parse_time(entry.get("firstReconciled"))),
                "status": as_str(entry.get("lastReconciledStatus")),
                "digest": as_str(entry.get("digest")),
                "reconciliations": as_int(entry.get("totalReconciliations")),
            }
        )
    # kustomize-controller writes the most recent first; rows keep the latest last.
    out.reverse()
    return out


def _release_history(entries: list[Any]) -> list[dict[str, Any]]:
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        out.append(
            {
                "revision": as_str(entry.get("chartVersion")),
                "chart": as_str(entry.get("chartName")),
                "app_version": as_str(entry.get("appVersion")),
                "release_version": as_int(entry.get("version")),
                "status": as_str(entry.get("status")),
                "deployed_at": rfc3339(parse_time(entry.get("lastDeployed"))),
                "first_at": rfc3339(parse_time(entry.get("firstDeployed"))),
                "config_digest": as_str(entry.get("configDigest")),
                "digest": as_str(entry.get("digest")),
                "oci_digest": as_str(entry.get("ociDigest")),
            }
        )
    # The controller writes the most recent first, but its Latest() sorts by release
    # version anyway, so sort too rather than trust the order; rows keep the latest last.
    out.sort(key=lambda e: e["release_version"] if e["release_version"] is not None else -1)
    return out


def inventory(value: Any) -> list[ResourceKey]:
    """Objects a Kustomization/HelmRelease applied, from `status.inventory`.

    Reads the CRD shape (`entries[{id: "<ns>_<name>_<group>_<kind>", v}]`) and the flat
    list some APIs (flux-operator's) return instead (`[{apiVersion, kind, name, namespace}]`).
    """
    out = []
    if isinstance(value, Mapping):
        for entry in as_list(value.get("entries")):
            parsed = _parse_inventory_id(as_str(dig(entry, "id")))
            if parsed is not None:
                out.append(parsed)
    else:
        for entry in as_list(value):
            if not isinstance(entry, Mapping) or not as_str(entry.get("kind")) or not as_str(entry.get("name")):
                continue
            api_version = as_str(entry.get("apiVersion"))
            group = api_version.rpartition("/")[0] if "/" in api_version else ""
            out.append(
                ResourceKey(
                    group=group,
                    kind=as_str(entry.get("kind")),
                    namespace=as_str(entry.get("namespace")),
                    name=as_str(entry.get("name")),
                )
            )
    return out


def _parse_inventory_id(text: str) -> ResourceKey | None:
    # The namespace ends at the first "_", the kind follows the last one and the group
    # the one before; names may hold "_" themselves, and ":" is stored as "__".
    namespace, sep, rest = text.partition("_")
    if not sep:
        return None
    rest, sep, kind = rest.rpartition("_")
    if not sep or not kind:
        return None
    name, sep, group = rest.rpartition("_")
    if not sep or not name:
        return None
    return ResourceKey(group=group, kind=kind, namespace=namespace, name=name.replace("__", ":"))

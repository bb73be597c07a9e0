"""Finding an image's SBOMs in its registry, with the registry client's own credentials.

An image version is a manifest digest; when that digest is a multi-platform index, the image
is the one for the platform the cluster runs (linux/amd64 when the portal does not know it,
and the result says so). Where an SBOM can be, in the order they are tried:

1. BuildKit attestations: the index lists, next to each image, an attestation manifest
   (`vnd.docker.reference.type: attestation-manifest`, `vnd.docker.reference.digest` = the
   image) whose layers are in-toto statements; the one with an SPDX predicate is the SBOM.
2. OCI 1.1 referrers of the image (and of the index): `GET /v2/<name>/referrers/<digest>`,
   and for registries without that API (distribution v2.8 answers 404) the referrers tag
   schema, an index tagged `sha256-<hex>`. A referrer is an SBOM by its artifact type
   (SPDX or CycloneDX JSON, or an in-toto statement of one).
3. cosign attachments: `sha256-<hex>.att` (DSSE envelopes around in-toto statements with an
   SPDX or CycloneDX predicate) and `sha256-<hex>.sbom` (the document itself).

Signatures (cosign's, a DSSE envelope's) are not verified: the SBOM informs a reviewer, it gates
nothing. The first SBOM found is the image's; an image with none says so ("no SBOM attached"), a
document over 50 MB is "SBOM too large" (refused by its declared size, never downloaded),
a document that does not parse is "malformed" with the parser's reason. A registry that
cannot be reached raises RegistryError: that is not an answer about the image, and the
caller tries again later.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from portal.releases.oci import BlobTooLarge, Manifest, RegistryClient, RegistryError
from portal.releases.sbom import MAX_SBOM_BYTES, Package, SbomError, parse_sbom, predicate_is_sbom

DEFAULT_PLATFORM = "linux/amd64"

FOUND, NONE, TOO_LARGE, MALFORMED = "found", "none", "too-large", "malformed"

SBOM_MEDIA_TYPES = (
    "application/spdx+json",
    "text/spdx+json",
    "application/vnd.cyclonedx+json",
    "application/vnd.in-toto+json",
    "application/vnd.dsse.envelope.v1+json",
    "application/vnd.syft+json",
)
_REFERENCE_TYPE = "vnd.docker.reference.type"
_REFERENCE_DIGEST = "vnd.docker.reference.digest"
_PREDICATE_ANNOTATION = "in-toto.io/predicate-type"
_MAX_REFERRERS = 50  # a referrers list is small; a hostile one must not cost a thousand reads


@dataclass
class SbomResult:
    status: str  # FOUND, NONE, TOO_LARGE, MALFORMED
    image_digest: str  # the platform image's manifest digest
    platform: str
    platform_assumed: bool  # the cluster's platform is not known: DEFAULT_PLATFORM was read
    source: str = ""  # "attestation", "referrers", "referrers-tag", "cosign-att", "cosign-sbom"
    format: str = ""
    reason: str = ""
    packages: tuple[Package, ...] = ()
    requests: int = 0
    tried: list[str] = field(default_factory=list)


def read_sbom(client: RegistryClient, repository: str, reference: str, platform: str | None = None) -> SbomResult:
    """The SBOM of the image `reference` (a tag or digest) names, for `platform` ("os/arch")."""
    counter = _Counter(client)
    top = counter.manifest(repository, reference)
    if top is None:
        raise RegistryError(f"{client.host}: {repository}@{reference} not found", status=404)
    wanted = platform or DEFAULT_PLATFORM
    top_digest = top.digest or (reference if reference.startswith("sha256:") else "")
    image_digest, candidates = top_digest, []
    if top.is_index:
        image_digest = _pick(top.body.get("manifests") or [], wanted)
        if not image_digest:
            return SbomResult(
                NONE,
                top_digest,
                wanted,
                platform is None,
                reason=f"the index has no {wanted} image",
                requests=counter.count,
            )
        candidates += _attestations(top.body.get("manifests") or [], image_digest)
    # A single-platform image is what it is: only an index asks which platform.
    result = SbomResult(NONE, image_digest, wanted if top.is_index else "", platform is None and top.is_index)
    for kind, find in (
        ("attestation", lambda: candidates),
        ("referrers", lambda: _referrer_layers(counter, repository, [image_digest, top_digest], result)),
        ("cosign", lambda: _cosign_layers(counter, repository, [image_digest, top_digest])),
    ):
        for source, layer in find():
            outcome = _read_layer(counter, repository, source, layer)
            if outcome is not None:
                outcome.image_digest, outcome.platform = result.image_digest, result.platform
                outcome.platform_assumed = result.platform_assumed
                outcome.requests = counter.count
                outcome.tried = result.tried + [kind]
                return outcome
        result.tried.append(kind)
    result.reason = "no SBOM attached (looked for BuildKit attestations, OCI referrers and cosign attachments)"
    result.requests = counter.count
    return result


class _Counter:
    """The client, counting the requests a read costs (for the bench and the tests)."""

    def __init__(self, client: RegistryClient) -> None:
        self.client = client
        self.count = 0

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        self.count += 1
        return self.client.manifest(repository, reference)

    def referrers(self, repository: str, digest: str) -> dict | None:
        self.count += 1
        return self.client.referrers(repository, digest)

    def blob(self, repository: str, digest: str, limit: int) -> bytes:
        self.count += 1
        return self.client.blob(repository, digest, limit)


def _pick(manifests: list, wanted: str) -> str:
    os_name, _, arch = wanted.partition("/")
    arch, _, variant = arch.partition("/")
    for entry in manifests:
        if not isinstance(entry, dict) or not entry.get("digest"):
            continue
        if (entry.get("annotations") or {}).get(_REFERENCE_TYPE):
            continue  # an attestation manifest, not an image
        found = entry.get("platform") or {}
        if (
            found.get("os") == os_name
            and found.get("architecture") == arch
            and (not variant or found.get("variant") == variant)
        ):
            return str(entry["digest"])
    return ""


def _attestations(manifests: list, image_digest: str) -> list[tuple[str, dict]]:
    """The BuildKit attestation manifests of `image_digest`, as ("attestation", descriptor-to-open)."""
    return [
        ("attestation-manifest", entry)
        for entry in manifests
        if isinstance(entry, dict)
        and (entry.get("annotations") or {}).get(_REFERENCE_TYPE) == "attestation-manifest"
        and (entry.get("annotations") or {}).get(_REFERENCE_DIGEST) == image_digest
    ]


def _referrer_layers(counter: _Counter, repository: str, digests: list[str], result: SbomResult):
    seen: set[str] = set()
    for digest in dict.fromkeys(d for d in digests if d):
        index = counter.referrers(repository, digest)
        source = "referrers"
        if index is None:
            # No referrers API: the referrers tag schema, an index tagged sha256-<hex>.
            tagged = counter.manifest(repository, _tag_of(digest))
            index, source = (tagged.body if tagged is not None else None), "referrers-tag"
        for entry in ((index or {}).get("manifests") or [])[:_MAX_REFERRERS]:
            if not isinstance(entry, dict) or entry.get("digest") in seen:
                continue
            seen.add(str(entry.get("digest")))
            kind = str(entry.get("artifactType") or "")
            predicate = str((entry.get("annotations") or {}).get(_PREDICATE_ANNOTATION, ""))
            if kind in SBOM_MEDIA_TYPES or predicate_is_sbom(predicate):
                yield source, {"manifest": entry}


def _cosign_layers(counter: _Counter, repository: str, digests: list[str]):
    for digest in dict.fromkeys(d for d in digests if d):
        for suffix, source in ((".att", "cosign-att"), (".sbom", "cosign-sbom")):
            manifest = counter.manifest(repository, _tag_of(digest) + suffix)
            if manifest is not None:
                for layer in (manifest.body.get("layers") or [])[:_MAX_REFERRERS]:
                    yield source, layer


def _tag_of(digest: str) -> str:
    return digest.replace(":", "-", 1)


def _read_layer(counter: _Counter, repository: str, source: str, descriptor: dict) -> SbomResult | None:
    """The SBOM a descriptor leads to, or None when it leads to something else (a provenance
    attestation, a signature). A referrer or attestation manifest is opened for its layers."""
    if "manifest" in descriptor or source == "attestation-manifest":
        entry = descriptor.get("manifest", descriptor)
        manifest = counter.manifest(repository, str(entry.get("digest")))
        if manifest is None:
            return None
        kind = "attestation" if source == "attestation-manifest" else source
        layers = (manifest.body.get("layers") or manifest.body.get("blobs") or [])[:_MAX_REFERRERS]
        for layer in layers:
            found = _read_layer(counter, repository, kind, layer)
            if found is not None:
                return found
        return None
    if not isinstance(descriptor, dict) or not descriptor.get("digest"):
        return None
    media_type = str(descriptor.get("mediaType", ""))
    predicate = str((descriptor.get("annotations") or {}).get(_PREDICATE_ANNOTATION, ""))
    if media_type not in SBOM_MEDIA_TYPES or (predicate and not predicate_is_sbom(predicate)):
        return None
    size = descriptor.get("size")
    if isinstance(size, int) and size > MAX_SBOM_BYTES:
        return _too_large(source, size)
    try:
        data = counter.blob(repository, str(descriptor["digest"]), MAX_SBOM_BYTES)
    except BlobTooLarge as exc:
        return _too_large(source, exc.size)
    try:
        parsed = parse_sbom(data)
    except SbomError as exc:
        if "not an SBOM" in str(exc):
            return None  # e.g. a cosign .att holding a SLSA provenance statement
        return SbomResult(MALFORMED, "", "", False, source=source, reason=f"malformed SBOM: {exc}")
    return SbomResult(FOUND, "", "", False, source=source, format=parsed.format, packages=parsed.packages)


def _too_large(source: str, size: int) -> SbomResult:
    mb = MAX_SBOM_BYTES // (1024 * 1024)
    return SbomResult(
        TOO_LARGE,
        "",
        "",
        False,
        source=source,
        reason=f"SBOM too large ({size / (1024 * 1024):.0f} MB; the limit is {mb} MB)",
    )

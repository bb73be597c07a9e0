"""One version of a Helm chart as its repository serves it: the packaged archive (`.tgz`), for a
renderer to load. Fetched the way Helm fetches it, through the same clients as the versions
(`portal.releases.charts`):

- an HTTP(S) Helm repository: the version's entry in index.yaml names its archive (`urls`, relative
  to the repository or absolute, Helm's "The Index File"); the archive is read bounded in size;
- an OCI registry: the tag of the version (`+` written as `_`) names a manifest whose layer of
  media type `application/vnd.cncf.helm.chart.content.v1.tar+gzip` is the archive (Helm's
  "Use OCI-based registries"), read as a blob through `portal.releases.oci.RegistryClient`.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urljoin

import requests
from django.conf import settings

from forges.forge import ForgeError
from forges.retry import RetryingSession, RetryPolicy
from gitops.rawobjects import as_dict, as_list, as_str
from portal.kernel.redaction import redact
from portal.releases.charts import ChartReadError, ChartRef, oci_repository, read_index
from portal.releases.oci import RegistryClient, RegistryError

HELM_CHART_CONTENT = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ARCHIVE_MAX_BYTES = 16 * 1024 * 1024  # charts are kilobytes; the largest public ones a few MB


def chart_archive(
    ref: ChartRef, version: str, *, environ: Mapping[str, str] | None = None, session: requests.Session | None = None
) -> bytes:
    """The packaged chart at `version`; ChartReadError when the repository has no such version or
    cannot be read (the message is safe to show)."""
    if ref.oci:
        return _oci_archive(ref, version, environ)
    return _index_archive(ref, version, session)


def _oci_archive(ref: ChartRef, version: str, environ: Mapping[str, str] | None) -> bytes:
    client, repository = RegistryClient.for_image(oci_repository(ref), environ)
    try:
        manifest = client.manifest(repository, version.replace("+", "_"), accept=(OCI_MANIFEST,))
        if manifest is None:
            raise ChartReadError(f"{repository}: no chart version {version}")
        layer = next((as_dict(item) for item in as_list(manifest.body.get("layers"))
                      if as_str(as_dict(item).get("mediaType")) == HELM_CHART_CONTENT), None)
        if layer is None:
            raise ChartReadError(f"{repository}:{version} is not a Helm chart (no chart content layer)")
        return client.blob(repository, as_str(layer.get("digest")), ARCHIVE_MAX_BYTES)
    except RegistryError as error:
        raise ChartReadError(redact(str(error))) from None


def _index_archive(ref: ChartRef, version: str, session: requests.Session | None) -> bytes:
    client = session or RetryingSession(RetryPolicy(max_attempts=3, max_wait=60.0))
    index = read_index(ref.repository, session=client)
    entries = as_list(as_dict(as_dict(index).get("entries")).get(ref.chart))
    entry = next((as_dict(e) for e in entries if as_str(as_dict(e).get("version")) == version), None)
    urls = [as_str(u) for u in as_list(entry.get("urls"))] if entry else []
    if not urls or not urls[0]:
        raise ChartReadError(f"{ref.chart} {version} is not in the repository's index.yaml")
    url = urljoin(ref.repository.strip().rstrip("/") + "/", urls[0])
    try:
        response = client.get(url, timeout=settings.PORTAL_REGISTRY_TIMEOUT, stream=True)
    except (requests.RequestException, ForgeError) as error:
        raise ChartReadError(f"{ref.chart} {version}: the archive could not be read ({type(error).__name__})") from None
    with response:
        if response.status_code != 200:
            raise ChartReadError(f"{ref.chart} {version}: the archive answered HTTP {response.status_code}")
        chunks, size = [], 0
        for chunk in response.iter_content(chunk_size=1 << 16):
            size += len(chunk)
            if size > ARCHIVE_MAX_BYTES:
                raise ChartReadError(f"{ref.chart} {version}: the archive is larger than {ARCHIVE_MAX_BYTES >> 20} MB")
            chunks.append(chunk)
    return b"".join(chunks)

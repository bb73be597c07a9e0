"""Chart versions upstream (portal.releases.charts): an HTTP Helm repository's index.yaml served
by a local HTTP server, and a Helm chart pushed as an OCI artifact to the real registry
(tests/fakes/oci_registry.py); stored as ChartVersion rows, failures kept apart.

The index below has the shape Helm's chart repository guide gives for index.yaml ("The Index
File": apiVersion v1, `entries` by chart name, each a list of chart versions with urls, digest
and created, and `generated`), with the podinfo entries as stefanprodan.github.io/podinfo
publishes them (name, version, appVersion, kubeVersion, description, home, sources, urls).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from forges.retry import RetryingSession, RetryPolicy
from portal.releases.charts import (
    ChartPin,
    ChartReadError,
    ChartRef,
    chart_pin,
    index_versions,
    oci_repository,
    oci_versions,
    poll_chart,
    used_charts,
)
from portal.releases.models import ChartPoll, ChartVersion
from portal.releases.registry_reads import poll_charts
from tests.fixtures.seed import seed_app

pytest.register_assert_rewrite("tests.fakes.oci_registry")

from tests.fakes.oci_registry import Registry, push_blob, push_manifest  # noqa: E402

pytest_plugins = ["tests.fakes.oci_registry"]

INDEX = """apiVersion: v1
entries:
  podinfo:
  - apiVersion: v2
    appVersion: 6.7.1
    created: "2024-11-12T09:11:48.143255771Z"
    description: Podinfo Helm chart for Kubernetes
    digest: 2b8a1c62d3b7a06e7b95f1ef2b3aa2b84c0f4cbbbf15c73de6be39d8b2d1a6f9
    home: https://github.com/stefanprodan/podinfo
    kubeVersion: '>=1.23.0-0'
    maintainers:
    - email: stefanprodan@users.noreply.github.com
      name: stefanprodan
    name: podinfo
    sources:
    - https://github.com/stefanprodan/podinfo
    urls:
    - https://stefanprodan.github.io/podinfo/podinfo-6.7.1.tgz
    version: 6.7.1
  - apiVersion: v2
    appVersion: 6.7.0
    created: "2024-06-25T10:27:16.470536227Z"
    description: Podinfo Helm chart for Kubernetes
    digest: 0e8f5f6c0a8e1c2bd0b2b7f4f6a1e3c4d5b6a7980f1e2d3c4b5a69788796a5b4
    home: https://github.com/stefanprodan/podinfo
    name: podinfo
    urls:
    - https://stefanprodan.github.io/podinfo/podinfo-6.7.0.tgz
    version: 6.7.0
  - apiVersion: v2
    appVersion: 6.8.0-rc.1
    created: "2024-12-01T08:00:00Z"
    name: podinfo
    urls:
    - https://stefanprodan.github.io/podinfo/podinfo-6.8.0-rc.1.tgz
    version: 6.8.0-rc.1
  redis:
  - apiVersion: v2
    name: redis
    urls:
    - https://stefanprodan.github.io/podinfo/redis-1.0.0.tgz
    version: 1.0.0
generated: "2024-12-01T08:00:01.118152838Z"
"""


class ChartRepo:
    """A local Helm repository over HTTP; `body` and `status` say what /index.yaml answers."""

    def __init__(self) -> None:
        self.body, self.status, self.requests = INDEX.encode(), 200, []
        repo = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                repo.requests.append(self.path)
                status, body = (repo.status, repo.body) if self.path == "/charts/index.yaml" else (404, b"")
                self.send_response(status)
                self.send_header("Content-Type", "application/x-yaml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/charts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chart_repo() -> Iterator[ChartRepo]:
    repo = ChartRepo()
    yield repo
    repo.close()


def test_the_versions_of_one_chart_are_read_from_index_yaml(chart_repo):
    assert index_versions(chart_repo.url, "podinfo") == ["6.7.1", "6.7.0", "6.8.0-rc.1"]
    assert index_versions(chart_repo.url + "/", "redis") == ["1.0.0"]
    assert index_versions(chart_repo.url, "absent") == []
    assert chart_repo.requests == ["/charts/index.yaml"] * 3


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [(404, b"", "HTTP 404"), (200, b"entries: [unclosed", "not YAML"), (200, b"<html>login</html>", "no entries")],
)
def test_a_repository_that_is_not_a_helm_index_says_so(chart_repo, status, body, message):
    chart_repo.status, chart_repo.body = status, body
    with pytest.raises(ChartReadError, match=message):
        index_versions(chart_repo.url, "podinfo")


@pytest.mark.django_db
def test_polling_stores_new_versions_once_and_keeps_them_when_the_repository_fails(chart_repo):
    ref = ChartRef(chart_repo.url, "podinfo")
    first = poll_chart(ref)
    assert first.ok and sorted(first.new_versions) == ["6.7.0", "6.7.1", "6.8.0-rc.1"]
    assert ChartVersion.objects.get(version="6.8.0-rc.1").prerelease
    assert poll_chart(ref).new_versions == []

    chart_repo.status = 503  # a read: retried with the one policy (forges.retry), then reported
    sleeps: list[float] = []
    session = RetryingSession(RetryPolicy(max_attempts=3, sleeper=sleeps.append))
    chart_repo.requests.clear()
    failed = poll_chart(ref, session=session)
    assert not failed.ok and "HTTP 503" in failed.error
    assert len(chart_repo.requests) == 3 and len(sleeps) == 2
    assert ChartVersion.objects.filter(chart="podinfo").count() == 3
    status = ChartPoll.objects.get(repository=chart_repo.url, chart="podinfo")
    assert status.last_error == failed.error and status.versions_seen == 3


@pytest.mark.django_db
def test_the_charts_apps_install_are_polled_and_a_git_chart_is_not(catalog, chart_repo):
    seed_app(catalog.prod_eu, "podinfo", tool="flux", kind="HelmRelease", repo_url=chart_repo.url, path="",
             chart="podinfo", target_revision="6.7.0",
             sources=[{"repo_url": chart_repo.url, "chart": "podinfo", "target_revision": "6.7.0", "path": ""}])
    seed_app(catalog.prod_eu, "in-git", repo_url="https://github.com/acme/charts.git", path="charts/api",
             chart="api", target_revision="HEAD")
    assert used_charts() == [ChartRef(chart_repo.url, "podinfo")]

    [report] = poll_charts()
    assert report.ok and len(report.new_versions) == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("revision", "follows"), [("6.7.0", ""), ("1.2.*", "follows 1.2.*"), (">=1.0.0", "follows >=1.0.0"),
                              ("*", "follows *"), ("", "follows *")]
)
def test_a_range_is_not_a_pin(catalog, revision, follows):
    app = seed_app(catalog.prod_eu, "web", repo_url="https://charts.bitnami.com/bitnami/", path="", chart="nginx",
                   target_revision=revision)
    pin = chart_pin(app)
    assert pin == ChartPin(ChartRef("https://charts.bitnami.com/bitnami", "nginx"), revision)
    assert pin.follows == follows and pin.is_range == bool(follows)


# --- OCI: a chart pushed as Helm pushes it, to the real registry ----------------------

HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_CONTENT = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def push_chart(registry: Registry, repository: str, version: str) -> None:
    config = json.dumps({"apiVersion": "v2", "name": repository.rsplit("/", 1)[-1], "version": version}).encode()
    content = f"chart {repository} {version}".encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": HELM_CONFIG, "digest": push_blob(registry.url, repository, config),
                   "size": len(config)},
        "layers": [{"mediaType": HELM_CONTENT, "digest": push_blob(registry.url, repository, content),
                    "size": len(content)}],
    }
    # Helm writes `+` (build metadata) as `_`: OCI tags cannot hold a `+`.
    push_manifest(registry.url, repository, version.replace("+", "_"), manifest)


@pytest.fixture(scope="module")
def oci_chart(open_registry: Registry) -> Registry:
    for version in ("6.14.0", "6.14.1", "6.15.0-rc.1", "6.15.0+build.7"):
        push_chart(open_registry, "stefanprodan/charts/podinfo", version)
    return open_registry


def test_oci_chart_versions_are_the_tags_of_the_chart_repository(oci_chart):
    environ = {"PORTAL_REGISTRY_PLAIN_HTTP": oci_chart.host}
    # Flux's OCIRepository names the chart itself; Argo CD names the folder and the chart.
    for ref in (ChartRef(f"oci://{oci_chart.host}/stefanprodan/charts/podinfo", "podinfo"),
                ChartRef(f"{oci_chart.host}/stefanprodan/charts", "podinfo")):
        assert oci_repository(ref) == f"{oci_chart.host}/stefanprodan/charts/podinfo"
        assert sorted(oci_versions(ref, environ)) == ["6.14.0", "6.14.1", "6.15.0+build.7", "6.15.0-rc.1"]


def test_a_missing_oci_chart_says_so(oci_chart):
    ref = ChartRef(f"oci://{oci_chart.host}/stefanprodan/charts", "absent")
    with pytest.raises(ChartReadError, match="absent"):
        oci_versions(ref, {"PORTAL_REGISTRY_PLAIN_HTTP": oci_chart.host})


@pytest.mark.django_db
def test_oci_chart_versions_are_polled_into_rows(oci_chart, settings):
    settings.PORTAL_REGISTRY_PLAIN_HTTP = [oci_chart.host]
    ref = ChartRef(f"oci://{oci_chart.host}/stefanprodan/charts/podinfo", "podinfo")
    report = poll_chart(ref)
    assert report.ok, report.error
    assert set(ChartVersion.objects.filter(chart="podinfo").values_list("version", flat=True)) >= {
        "6.14.0", "6.14.1", "6.15.0-rc.1"}

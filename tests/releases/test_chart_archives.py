"""One chart version's archive, as Helm fetches it: from an HTTP repository by its index.yaml entry
(a local HTTP server), or from an OCI registry by the version's tag (the real registry)."""

from __future__ import annotations

import io
import json
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from portal.releases.chart_archives import HELM_CHART_CONTENT, chart_archive
from portal.releases.charts import ChartReadError, ChartRef

pytest.register_assert_rewrite("tests.fakes.oci_registry")

from tests.fakes.oci_registry import Registry, push_blob, push_manifest  # noqa: E402

pytest_plugins = ["tests.fakes.oci_registry"]


def archive(version: str) -> bytes:
    """A chart archive as `helm package` lays it out: `<name>/Chart.yaml` and the rest, gzipped tar."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        chart = f"apiVersion: v2\nname: web\nversion: {version}\n".encode()
        info = tarfile.TarInfo("web/Chart.yaml")
        info.size = len(chart)
        tar.addfile(info, io.BytesIO(chart))
    return data.getvalue()


WEB_1_4_0 = archive("1.4.0")  # made once: gzip writes the time into its header
INDEX = """apiVersion: v1
entries:
  web:
  - apiVersion: v2
    name: web
    version: 1.4.0
    urls:
    - web-1.4.0.tgz
  - apiVersion: v2
    name: web
    version: 1.3.0
    urls:
    - https://elsewhere.invalid/web-1.3.0.tgz
generated: "2026-11-30T09:00:00Z"
"""


class ChartRepo:
    """/charts/index.yaml and the archives it names relative to the repository."""

    def __init__(self) -> None:
        self.files = {"/charts/index.yaml": INDEX.encode(), "/charts/web-1.4.0.tgz": WEB_1_4_0}
        self.requests: list[str] = []
        repo = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                repo.requests.append(self.path)
                body = repo.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/charts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def chart_repo() -> Iterator[ChartRepo]:
    repo = ChartRepo()
    yield repo
    repo.server.shutdown()
    repo.server.server_close()


def test_an_http_repository_serves_the_archive_its_index_names(chart_repo: ChartRepo) -> None:
    assert chart_archive(ChartRef(chart_repo.url, "web"), "1.4.0") == WEB_1_4_0
    assert chart_repo.requests == ["/charts/index.yaml", "/charts/web-1.4.0.tgz"]


def test_a_version_the_index_does_not_list_is_said(chart_repo: ChartRepo) -> None:
    with pytest.raises(ChartReadError, match="web 2.0.0 is not in the repository's index.yaml"):
        chart_archive(ChartRef(chart_repo.url, "web"), "2.0.0")


def test_an_oci_chart_is_its_content_layer(open_registry: Registry) -> None:
    content = archive("0.9.0+build.3")
    config = json.dumps({"apiVersion": "v2", "name": "web", "version": "0.9.0+build.3"}).encode()
    repository = "acme/oci-charts/web"
    push_manifest(open_registry.url, repository, "0.9.0_build.3", {
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cncf.helm.config.v1+json",
                   "digest": push_blob(open_registry.url, repository, config), "size": len(config)},
        "layers": [{"mediaType": HELM_CHART_CONTENT, "digest": push_blob(open_registry.url, repository, content),
                    "size": len(content)}],
    })
    ref = ChartRef(f"oci://{open_registry.host}/acme/oci-charts", "web")
    environ = {"PORTAL_REGISTRY_PLAIN_HTTP": open_registry.host}

    assert chart_archive(ref, "0.9.0+build.3", environ=environ) == content
    with pytest.raises(ChartReadError, match="no chart version 1.0.0"):
        chart_archive(ref, "1.0.0", environ=environ)

"""Objects nested absurdly deep: each one is skipped by name, the rest of the cluster is
stored, and a poll that fails for any reason marks its cluster stale (issue 19).

The decoders recurse once per level, so without a bound a single hostile object raised
RecursionError out of the poll, and /clusters kept saying "ok"."""

from __future__ import annotations

import copy
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.test import Client

from gitops import kinds
from gitops.kinds import KindSpec
from gitops.models import AppProject, GitOpsApp
from gitops.polling import poll
from gitops.rawobjects import MAX_DEPTH, TooDeep, json_safe
from gitops.sources.base import ListResult
from gitops.sources.manifests import ManifestSource
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "clusters" / "prod-eu-1"
TOKEN_ENV = "PORTAL_TEST_DEPTH_TOKEN"
TOKEN = "depth-test-token-0123456789"
APPLICATIONS = next(k for k in kinds.KINDS if k.kind == "Application")


def nested_json(levels: int, leaf: str = '"x"') -> str:
    """`levels` objects inside each other, as text (json.dumps itself would recurse)."""
    return '{"a":' * levels + leaf + "}" * levels


def nested_dict(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "x"}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def demo_documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEMO / "argocd" / name).read_text()) if d]


def application(name: str) -> dict[str, Any]:
    """payments-prod of the demo fleet, renamed: an Application as Argo CD writes it."""
    demo = demo_documents("applications.yaml")
    app = copy.deepcopy(next(d for d in demo if d["metadata"]["name"] == "payments-prod"))
    app["metadata"]["name"] = name
    app["metadata"]["uid"] = f"uid-{name}"
    return app


def app_project(name: str) -> dict[str, Any]:
    project = copy.deepcopy(demo_documents("appprojects.yaml")[0])
    project["metadata"]["name"] = name
    project["metadata"]["uid"] = f"uid-{name}"
    return project


def with_deep_values(app: dict[str, Any], levels: int) -> str:
    """The Application as JSON text, its spec.source.helm.valuesObject `levels` deep."""
    app = copy.deepcopy(app)
    app["spec"]["source"]["helm"] = {"valuesObject": "@DEEP@"}
    return json.dumps(app).replace('"@DEEP@"', nested_json(levels))


@pytest.fixture
def manifest_cluster(db, tmp_path: Path) -> Cluster:
    """prod-eu-1 of the demo fleet, read from a copy of its manifest folder."""
    load_fleet(ROOT / "examples" / "fleet.yaml")
    folder = tmp_path / "prod-eu-1"
    shutil.copytree(DEMO, folder)
    Cluster.objects.filter(name="prod-eu-1").update(connection=Cluster.Connection.MANIFESTS,
                                                    manifests_path=str(folder))
    return Cluster.objects.get(name="prod-eu-1")


def folder_of(cluster: Cluster) -> Path:
    return Path(cluster.manifests_path)


def assert_demo_stored(cluster: Cluster) -> None:
    names = set(GitOpsApp.objects.filter(cluster=cluster).values_list("name", flat=True))
    assert {"payments-prod", "checkout-prod"} <= names


# ------------------------------------------------------------------ manifest folders


def test_json_manifest_with_a_key_1200_levels_deep_skips_that_object_only(manifest_cluster):
    folder = folder_of(manifest_cluster)
    deep = with_deep_values(application("hostile-values"), 1200)
    kept = json.dumps(application("beside-the-hostile-one"))
    (folder / "argocd" / "extra.json").write_text(
        '{"apiVersion":"v1","kind":"List","items":[' + deep + "," + kept + "]}"
    )

    report = poll(manifest_cluster)

    assert report.ok, report.error
    names = set(GitOpsApp.objects.filter(cluster=manifest_cluster).values_list("name", flat=True))
    assert "beside-the-hostile-one" in names and "hostile-values" not in names
    assert_demo_stored(manifest_cluster)
    assert any(
        "argocd/extra.json" in w and "Application argocd/hostile-values" in w and f"deeper than {MAX_DEPTH}" in w
        for w in report.warnings
    ), report.warnings
    manifest_cluster.refresh_from_db()
    assert manifest_cluster.poll.last_error == "" and manifest_cluster.poll.stale_since is None
    # Counted on the cluster, and named where people look.
    assert manifest_cluster.poll.poll_warning_count == len(report.warnings) >= 1
    assert any("Application argocd/hostile-values" in w for w in manifest_cluster.poll.poll_warnings)
    admin = get_user_model().objects.create_user("watcher")
    grant(admin, Role.VIEWER)
    client = Client()
    client.force_login(admin)
    page = client.get("/clusters").content.decode()
    count = manifest_cluster.poll.poll_warning_count
    assert f"{count} object{'s' if count != 1 else ''} skipped or partly read" in page
    assert "Application argocd/hostile-values" in page


def test_yaml_manifest_nested_too_deep_skips_the_file_by_name(manifest_cluster):
    folder = folder_of(manifest_cluster)
    project = yaml.safe_dump(app_project("hostile-project"))
    # Block style, one level per line, 700 levels under `data`.
    deep = "".join("  " * (i + 1) + "a:\n" for i in range(700)) + "  " * 701 + "leaf: x\n"
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hostile\n  namespace: argocd\ndata:\n" + deep
    (folder / "argocd" / "hostile.yaml").write_text(project + "---\n" + config_map)

    report = poll(manifest_cluster)

    assert report.ok, report.error
    assert_demo_stored(manifest_cluster)
    assert not AppProject.objects.filter(cluster=manifest_cluster, name="hostile-project").exists()
    assert any("skipped argocd/hostile.yaml: document 2 nested deeper than" in w for w in report.warnings), \
        report.warnings


def test_yaml_aliases_cannot_stack_depth_past_the_limit(tmp_path: Path):
    levels = 150  # each anchor alone is within the limit; nested through aliases it is not
    lines = ["a0: &a0 " + "[" * levels + "]" * levels]
    lines += [f"a{i}: &a{i} " + "[" * levels + f"*a{i - 1}" + "]" * levels for i in range(1, 8)]
    (tmp_path / "aliases.yaml").write_text("\n".join(lines) + "\n")
    (tmp_path / "app.json").write_text(json.dumps(application("plain")))

    result = ManifestSource(tmp_path).list_objects(APPLICATIONS)

    assert [o["metadata"]["name"] for o in result.items] == ["plain"]
    assert any("aliases.yaml" in w and "deeper than" in w for w in result.warnings), result.warnings


def test_objects_at_the_limit_are_kept(tmp_path: Path):
    app = application("deep-but-fine")
    # The object itself, spec, source, helm, valuesObject: 5 levels above the values.
    text = with_deep_values(app, MAX_DEPTH - 5)
    (tmp_path / "app.json").write_text(text)

    result = ManifestSource(tmp_path).list_objects(APPLICATIONS)

    assert [o["metadata"]["name"] for o in result.items] == ["deep-but-fine"]
    assert result.warnings == []


# ----------------------------------------------------------- an API server's list pages


class _ListServer:
    """Answers the Argo CD Applications list with a fixed body, everything else 404: a
    page the emulator cannot build, since json.dumps recurses on the hostile object."""

    def __init__(self, applications_body: bytes) -> None:
        body = applications_body

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.split("?")[0] == "/apis/argoproj.io/v1alpha1/applications":
                    code, payload = 200, body
                else:
                    code, payload = 404, json.dumps({
                        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": "the server could not find the requested resource",
                        "reason": "NotFound", "details": {}, "code": 404,
                    }).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def hostile_api(db, monkeypatch) -> Iterator[Cluster]:
    deep = with_deep_values(application("hostile-values"), 2000)
    kept = json.dumps(application("beside-the-hostile-one"))
    body = ('{"apiVersion":"argoproj.io/v1alpha1","kind":"ApplicationList","metadata":{"resourceVersion":"56907811"},'
            '"items":[' + deep + "," + kept + "]}").encode()
    server = _ListServer(body)
    server.thread.start()
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    load_fleet(ROOT / "examples" / "fleet.yaml")
    Cluster.objects.filter(name="prod-eu-1").update(connection=Cluster.Connection.API, api_url=server.url,
                                                    token_env=TOKEN_ENV)
    try:
        yield Cluster.objects.get(name="prod-eu-1")
    finally:
        server.server.shutdown()
        server.server.server_close()


def test_api_page_with_values_2000_levels_deep_skips_that_application_only(hostile_api):
    report = poll(hostile_api)

    assert report.ok, report.error
    names = set(GitOpsApp.objects.filter(cluster=hostile_api).values_list("name", flat=True))
    assert names == {"beside-the-hostile-one"}
    assert any("list applications" in w and "Application argocd/hostile-values" in w for w in report.warnings), \
        report.warnings


# ------------------------------------------------------------ objects given to a poll


class _Objects:
    """A ClusterSource over objects in memory (as the benchmarks and other tools feed a poll)."""

    name = "in-memory"

    def __init__(self, by_kind: dict[str, list[dict[str, Any]]], error: Exception | None = None) -> None:
        self.by_kind = by_kind
        self.error = error

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        if self.error is not None:
            raise self.error
        return ListResult(items=list(self.by_kind.get(kind.kind, [])), version=kind.versions[0])


def test_app_project_nested_600_levels_is_skipped_by_name(manifest_cluster):
    hostile = app_project("hostile-project")
    hostile["spec"]["extra"] = nested_dict(600)
    source = _Objects({"AppProject": [hostile, app_project("plain-project")],
                       "Application": [application("payments-prod")]})

    report = poll(manifest_cluster, source=source)

    assert report.ok, report.error
    names = set(AppProject.objects.filter(cluster=manifest_cluster).values_list("name", flat=True))
    assert names == {"plain-project"}
    assert any(w.startswith("AppProject argocd/hostile-project: skipped") for w in report.warnings), report.warnings


def test_json_safe_refuses_to_recurse_past_the_limit():
    assert json_safe(nested_dict(MAX_DEPTH)) == nested_dict(MAX_DEPTH)
    with pytest.raises(TooDeep):
        json_safe(nested_dict(MAX_DEPTH + 1))
    with pytest.raises(TooDeep):
        json_safe(nested_dict(5000))


def test_a_poll_that_fails_for_any_reason_marks_the_cluster_stale_and_keeps_its_data(manifest_cluster):
    assert poll(manifest_cluster).ok

    report = poll(manifest_cluster, source=_Objects({}, error=RuntimeError("connection pool is closed")))

    assert not report.ok
    assert report.error == "poll failed: RuntimeError: connection pool is closed"
    manifest_cluster.refresh_from_db()
    assert manifest_cluster.poll.last_error == report.error
    assert manifest_cluster.poll.stale_since is not None
    assert manifest_cluster.poll.poll_lock_until is None  # the lock is released for the next poll
    assert_demo_stored(manifest_cluster)


def test_a_failed_poll_shows_no_credential_of_its_cluster(manifest_cluster, monkeypatch):
    # An unexpected error whose text carries the cluster's token (a client library echoing its
    # request) is stored and shown on /clusters without it.
    monkeypatch.setenv("PROD_EU_TOKEN", "s3cr3t-cluster-token")
    Cluster.objects.filter(pk=manifest_cluster.pk).update(token_env="PROD_EU_TOKEN")
    manifest_cluster.refresh_from_db()
    error = RuntimeError("request failed: Authorization: Bearer s3cr3t-cluster-token; retry s3cr3t-cluster-token")

    report = poll(manifest_cluster, source=_Objects({}, error=error))

    assert not report.ok
    assert "s3cr3t-cluster-token" not in report.error
    manifest_cluster.refresh_from_db()
    assert "s3cr3t-cluster-token" not in manifest_cluster.poll.last_error
    assert manifest_cluster.poll.last_error.startswith("poll failed: RuntimeError: request failed")

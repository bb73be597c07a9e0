"""An open pull request's rendered diff, end to end: an Argo CD (its API fake) renders the app at the
branch's head and at its target, tracking compares them, the follow page shows the object diff, and
the one comment on the pull request (each forge fake) says it and is edited when the branch moves."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from gitops.models import GitOpsApp
from gitops.polling import poll
from portal.delivery.forge_jobs import CHANGES
from portal.delivery.models import PullRequest, RenderedDiff
from portal.delivery.rendered_comments import MARKER
from portal.delivery.rendered_diff import NO_RENDERER
from portal.delivery.tracking import refresh, refresh_open
from portal.kernel.catalog.models import Cluster, Environment
from tests.fakes.argocd_api import ArgoCDAPIFake
from tests.fakes.forges.harness import BRANCH, KINDS, Harness, serving

TOKEN_ENV = "PORTAL_TEST_ARGOCD_TOKEN"
APP = "checkout-prod"
IMAGE_PATH = "spec.template.spec.containers[checkout].image"


def deployment(tag: str, replicas: int | None = 2) -> dict[str, Any]:
    """The Deployment as Argo CD's repo server renders it from the overlay: kustomize's output with
    the app's tracking label, no status, no server fields."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "checkout"}},
        "template": {
            "metadata": {"labels": {"app": "checkout"}},
            "spec": {"containers": [
                {"name": "checkout", "image": f"ghcr.io/acme/checkout:{tag}",
                 "ports": [{"containerPort": 8080, "name": "http"}],
                 "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "REGION", "value": "eu-west-1"}],
                 "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
            ]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"labels": {"app": "checkout", "app.kubernetes.io/instance": APP}, "name": "checkout",
                         "namespace": "checkout"},
            "spec": spec}


def service(protocol: bool) -> dict[str, Any]:
    port: dict[str, Any] = {"name": "http", "port": 80, "targetPort": "http"}
    if protocol:
        port["protocol"] = "TCP"  # the API's default, written out on one side only
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"labels": {"app.kubernetes.io/instance": APP}, "name": "checkout"},
            "spec": {"ports": [port], "selector": {"app": "checkout"}}}


def config_map(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"labels": {"app.kubernetes.io/instance": APP}, "name": "checkout-env",
                         "namespace": "checkout"},
            "data": data}


def application(repository: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": APP, "namespace": "argocd", "uid": "3b0c1d4e-5f60-4718-9a2b-3c4d5e6f7081",
                     "resourceVersion": "41", "generation": 3},
        "spec": {"project": "default",
                 "source": {"repoURL": repository, "path": "apps/checkout/overlays/prod", "targetRevision": "main"},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": "checkout"}},
        "status": {"sync": {"status": "Synced", "revision": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"},
                   "health": {"status": "Healthy"},
                   "summary": {"images": ["ghcr.io/acme/checkout:1.6.0"]}},
    }


@pytest.fixture
def argocd() -> Iterator[ArgoCDAPIFake]:
    with ArgoCDAPIFake() as fake:
        yield fake


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    with serving(request.param, monkeypatch) as harness:
        yield harness


def push(harness: Harness, path: str, text: str) -> str:
    """One commit on the pull request's branch (made from main the first time); the new head."""
    model = harness.model
    parent = model.branches.get(BRANCH, model.branches["main"])
    files = dict(model.commits[parent].files)
    files[path] = ("100644", model.put_blob(text.encode()))
    model.branches[BRANCH] = model.commit(files, [parent], f"edit {path}")
    return model.branches[BRANCH]


@pytest.fixture
def opened(db, argocd: ArgoCDAPIFake, forge: Harness, monkeypatch: pytest.MonkeyPatch) -> PullRequest:
    """The hub's Argo CD read through its API, the app polled into the store, and an open pull
    request on the forge whose job names that app."""
    monkeypatch.setenv(TOKEN_ENV, argocd.token)
    prod = Environment.objects.create(name="prod", order=3, production=True)
    hub = Cluster.objects.create(name="hub", environment=prod, connection=Cluster.Connection.ARGOCD_API,
                                 api_url=argocd.url, token_env=TOKEN_ENV)
    argocd.add_cluster("in-cluster", "https://kubernetes.default.svc")
    argocd.add_application(application(forge.repository))
    assert poll(hub).ok
    app = GitOpsApp.objects.get(name=APP)
    argocd.set_manifests("argocd", APP, "main", [deployment("1.6.0"), service(protocol=False),
                                                 config_map({"LOG_LEVEL": "info"})])
    head = push(forge, "apps/checkout/overlays/prod/kustomization.yaml", "images:\n  - newTag: 1.7.0\n")
    argocd.set_manifests("argocd", APP, head, [config_map({"LOG_LEVEL": "info"}), service(protocol=True),
                                               deployment("1.7.0")])
    pull = forge.model.add_pull("Upgrade checkout to 1.7.0 in prod", BRANCH)
    changes = CHANGES.dump_python((forge.change(apps=(app.pk,)),), mode="json")
    return PullRequest.objects.create(
        kind="upgrade", services=["checkout"], environment="prod", repository=forge.repository,
        forge_kind=forge.kind, number=pull.number, title=pull.title, branch=BRANCH, base_branch="main",
        state=PullRequest.State.OPEN, job={"changes": changes},
    )


def comment_requests(forge: Harness) -> list[tuple[str, str, int]]:
    return [entry for entry in forge.server.log if re.search(r"/(comments|notes)(/\d+)?$", entry[1])]


def test_the_page_and_the_comment_show_the_object_diff_and_a_push_edits_the_same_comment(
    opened: PullRequest, forge: Harness, argocd: ArgoCDAPIFake, client, users
) -> None:
    refresh(opened, forge.new_forge())

    first_head = forge.model.branches[BRANCH]
    [comment] = forge.model.comments_on(opened.number)
    assert comment.body.startswith(MARKER)
    assert f"`{IMAGE_PATH}`: `ghcr.io/acme/checkout:1.6.0` → `ghcr.io/acme/checkout:1.7.0`" in comment.body
    # The Service's explicit protocol: TCP is the API's default; the objects' order is not a change.
    assert "1 object changed, 2 objects unchanged" in comment.body
    assert f"/pr/{opened.pk}/rendered" in comment.body
    asked = argocd.requests_to(f"/api/v1/applications/{APP}/manifests")
    assert [r.param("revision") for r in asked] == [None, first_head]
    assert all(r.param("appNamespace") == "argocd" and r.param("project") == "default" for r in asked)

    client.force_login(users["viewer"])
    page = client.get(f"/pr/opened?id={opened.pk}").content.decode()
    assert IMAGE_PATH in page and "ghcr.io/acme/checkout:1.7.0" in page
    assert 'class="unchanged-count">2<' in page
    full = client.get(f"/pr/{opened.pk}/rendered").content.decode()
    assert "image: ghcr.io/acme/checkout:1.6.0" in full and "image: ghcr.io/acme/checkout:1.7.0" in full

    second_head = push(forge, "apps/checkout/overlays/prod/kustomization.yaml", "replicas:\n  - count: 3\n")
    argocd.set_manifests("argocd", APP, second_head, [deployment("1.7.0", replicas=3), service(protocol=True),
                                                      config_map({"LOG_LEVEL": "debug"})])
    report = refresh_open(forge_for=lambda repository: forge.new_forge())

    assert report.refreshed == 1
    [edited] = forge.model.comments_on(opened.number)
    assert edited.id == comment.id
    assert "`spec.replicas`: `2` → `3`" in edited.body
    assert "`data.LOG_LEVEL`: `info` → `debug`" in edited.body
    assert second_head[:12] in edited.body and first_head[:12] not in edited.body
    writes = [(method, status) for method, _path, status in comment_requests(forge) if method != "GET"]
    assert writes == [("POST", 201), ({"gitlab": "PUT"}.get(forge.kind, "PATCH"), 200)]
    stored = RenderedDiff.objects.get(pull_request=opened)
    assert (stored.head, stored.commented_head, stored.comment_id) == (second_head, second_head, str(comment.id))

    # The same head again: nothing rendered, nothing written.
    before = len(argocd.requests), len(comment_requests(forge))
    refresh(PullRequest.objects.get(pk=opened.pk), forge.new_forge())
    assert (len(argocd.requests), len(comment_requests(forge))) == before


@pytest.mark.parametrize("forge", ["github"], indirect=True)
def test_a_comment_someone_deleted_is_written_again(opened: PullRequest, forge: Harness) -> None:
    refresh(opened, forge.new_forge())
    forge.model.comments.clear()
    push(forge, "README.md", "moved\n")  # Argo CD cannot render this head: the app's error is said

    refresh(PullRequest.objects.get(pk=opened.pk), forge.new_forge())

    [comment] = forge.model.comments_on(opened.number)
    assert "not rendered: `hub: manifests of argocd/checkout-prod: error generating manifests" in comment.body


@pytest.mark.parametrize("forge", ["gitea"], indirect=True)
def test_an_app_argocd_does_not_render_for_the_portal_says_so(opened: PullRequest, forge: Harness) -> None:
    app = GitOpsApp.objects.get(name=APP)
    app.read_from.connection = Cluster.Connection.MANIFESTS
    app.read_from.save()

    refresh(opened, forge.new_forge())

    [comment] = forge.model.comments_on(opened.number)
    assert f"on `hub`: {NO_RENDERER}." in comment.body


def test_untrusted_names_stay_inside_code_spans() -> None:
    from portal.delivery.rendered_comments import code

    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    assert code("<img src=x onerror=alert(1)>\n@everyone") == "`<img src=x onerror=alert(1)> @everyone`"


def test_a_forge_that_refuses_the_comment_is_tried_again(opened: PullRequest, forge: Harness) -> None:
    from tests.fakes.forges.base import Fault

    forge.server.faults.append(Fault("POST", r"/(comments|notes)$", 403, body={"message": "Forbidden"}))
    refresh(opened, forge.new_forge())
    stored = RenderedDiff.objects.get(pull_request=opened)
    assert stored.comment_error and not stored.commented_head and not forge.model.comments

    refresh(PullRequest.objects.get(pk=opened.pk), forge.new_forge())

    assert len(forge.model.comments_on(opened.number)) == 1
    stored.refresh_from_db()
    assert stored.commented_head == stored.head and not stored.comment_error


@pytest.mark.parametrize("forge", ["gitlab"], indirect=True)
def test_a_multi_source_app_renders_its_values_source_at_the_head(
    opened: PullRequest, forge: Harness, argocd: ArgoCDAPIFake
) -> None:
    multi = application("https://charts.example.com")
    multi["metadata"]["name"] = "web-prod"
    del multi["spec"]["source"]
    multi["spec"]["sources"] = [
        {"repoURL": "https://charts.example.com", "chart": "web", "targetRevision": "1.4.0",
         "helm": {"valueFiles": ["$values/apps/web/values-prod.yaml"]}},
        {"repoURL": forge.repository.removesuffix(".git"), "targetRevision": "main", "ref": "values"},
    ]
    argocd.add_application(multi)
    assert poll(Cluster.objects.get(name="hub")).ok
    app = GitOpsApp.objects.get(name="web-prod")
    head = forge.model.branches[BRANCH]
    argocd.set_manifests("argocd", "web-prod", "1.4.0,main", [deployment("1.0.0")])
    argocd.set_manifests("argocd", "web-prod", f"1.4.0,{head}", [deployment("1.0.0", replicas=4)])
    opened.job = {"changes": [{**opened.job["changes"][0], "apps": [app.pk]}]}
    opened.save()

    refresh(opened, forge.new_forge())

    [asked_before, asked_after] = argocd.requests_to("/api/v1/applications/web-prod/manifests")
    assert asked_before.param("sourcePositions") is None
    assert (asked_after.param("sourcePositions"), asked_after.param("revisions")) == ("2", head)
    [comment] = forge.model.comments_on(opened.number)
    assert "`spec.replicas`: `2` → `4`" in comment.body


@pytest.mark.parametrize("forge", ["github"], indirect=True)
def test_a_failing_render_never_stops_tracking(opened: PullRequest, forge: Harness, monkeypatch) -> None:
    from portal.delivery import tracking

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("a renderer bug")

    monkeypatch.setattr(tracking, "follow", broken)
    report = refresh_open(forge_for=lambda repository: forge.new_forge())

    assert (report.refreshed, report.errors) == (1, 0)
    opened.refresh_from_db()
    assert opened.tracked_at is not None and opened.checks == "none"


def test_an_opened_pull_request_is_tracked_at_once_not_at_the_next_run(monkeypatch) -> None:
    """The opening job's task queues the new pull request's first tracking (its rendered diff and
    comment) a few seconds later; a refused or stale run queues nothing."""
    from portal.delivery import forge_jobs, tasks
    from portal.delivery.pull_requests import OPENED, REFUSED, OpenResult

    queued: list[tuple[tuple[int, ...], int]] = []
    monkeypatch.setattr(tasks.track_pull_request, "apply_async",
                        lambda args, countdown: queued.append((args, countdown)))
    for status in (OPENED, REFUSED):
        monkeypatch.setattr(forge_jobs, "run", lambda pk, run, status=status: OpenResult(status, ""))
        tasks.open_pull_request(41, 1)
    monkeypatch.setattr(forge_jobs, "run", lambda pk, run: None)
    tasks.open_pull_request(42, 1)
    assert queued == [((41,), tasks.FIRST_TRACKING_SECONDS)]


@pytest.mark.parametrize("forge", ["github"], indirect=True)
def test_tracking_one_pull_request_leaves_the_others(opened: PullRequest, forge: Harness) -> None:
    other = PullRequest.objects.create(
        kind="upgrade", services=["cart"], environment="prod", repository=forge.repository, forge_kind=forge.kind,
        number=opened.number, title="another", branch="other", base_branch="main", state=PullRequest.State.OPEN)
    report = refresh_open(forge_for=lambda repository: forge.new_forge(), only=[opened.pk])
    assert report.refreshed == 1
    assert PullRequest.objects.get(pk=opened.pk).tracked_at is not None
    assert PullRequest.objects.get(pk=other.pk).tracked_at is None

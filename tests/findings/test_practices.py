"""portal.findings.practices: each rule read from specs and workloads, positive and negative,
on real objects (tests/data/real-objects) through the same collectors a poll runs; a changed
copy where no real object shows the case (each says which field it changes). Then the
derivation stores them, the page, API and MCP say their severity and example, and a mute holds."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gitops.collectors import application_row, kustomization_row, workload_row
from gitops.derive.app_changes import plain
from gitops.models import Finding, GitOpsApp, StateChange, Workload
from portal.findings import derivation, mutes
from portal.findings import practices as p
from portal.findings.discipline import FindingContext
from portal.findings.rulebook import RULES, SEVERITIES
from portal.kernel.catalog.models import Cluster, Environment
from tests.fixtures.real_objects import load_real

CTX = FindingContext()


def argo(rel: str, index: int = 0, change: Any = None) -> GitOpsApp:
    """An Argo CD Application from the real-objects corpus, as a poll stores it."""
    raw = copy.deepcopy(load_real(f"argocd/{rel}")[index])
    if change:
        change(raw)
    row = application_row(raw)
    return GitOpsApp(pk=7, tool="argo", kind="Application", namespace=row.namespace, name=row.name, raw=raw,
                     images=row.images, sync_status=row.sync_status, operation_phase=row.operation_phase,
                     first_seen=datetime(2026, 11, 1, tzinfo=UTC))


def flux(rel: str, change: Any = None) -> GitOpsApp:
    raw = copy.deepcopy(load_real(f"flux/{rel}")[0])
    if change:
        change(raw)
    row = kustomization_row(raw, {})
    return GitOpsApp(pk=8, tool="flux", kind="Kustomization", namespace=row.namespace, name=row.name, raw=raw,
                     suspended=row.suspended, sync_status=row.sync_status,
                     first_seen=datetime(2026, 11, 1, tzinfo=UTC))


def workload(rel: str, change: Any = None) -> Workload:
    """A workload from the corpus as the poll stores it (gitops.derive.workload_changes)."""
    obj = copy.deepcopy(load_real(f"workloads/{rel}")[0])
    if change:
        change(obj)
    row = workload_row(obj)
    assert row is not None
    return Workload(kind=row.kind, namespace=row.namespace, name=row.name,
                    containers=[plain(c) for c in row.containers], spec_facts=row.spec_facts)


def test_every_rule_says_why_what_and_how_much():
    for rule in RULES.values():
        assert rule.title and rule.principle and rule.fix and rule.example.strip()
        assert rule.severity in SEVERITIES


# (a) ---------------------------------------------------------------------------------


def test_automated_sync_without_prune():
    # argo-cd's metrics fakeApp3: automated with prune: false.
    found = p.argo_prune_off(argo("argo-cd__metrics_test-fakeApp1-4.yaml", 2))
    assert found is not None and "prune: false" in found.message
    # fakeApp2: automated with prune: true; diff-cache: retry only, no automated at all.
    assert p.argo_prune_off(argo("argo-cd__metrics_test-fakeApp1-4.yaml", 1)) is None
    assert p.argo_prune_off(argo("argo-cd__diff-cache.yaml")) is None

    def prune_absent(raw: dict) -> None:
        del raw["spec"]["syncPolicy"]["automated"]["prune"]

    found = p.argo_prune_off(argo("argo-cd__metrics_test-fakeApp1-4.yaml", 1, prune_absent))
    assert found is not None and "default: false" in found.message

    def switched_off(raw: dict) -> None:  # Argo CD 3.x: automated.enabled: false
        raw["spec"]["syncPolicy"]["automated"]["enabled"] = False

    assert p.argo_prune_off(argo("argo-cd__metrics_test-fakeApp1-4.yaml", 2, switched_off)) is None


# (b) ---------------------------------------------------------------------------------


def test_kustomization_without_prune():
    karmada = "karmada__Kustomization-interpretstatus-test.yaml"
    assert p.flux_prune_off(flux(karmada)) is None  # prune: true

    def no_prune(raw: dict) -> None:
        raw["spec"]["prune"] = False

    found = p.flux_prune_off(flux(karmada, no_prune))
    assert found is not None and found.rule == "flux-prune-off" and "sample" in found.message


# (c) ---------------------------------------------------------------------------------


def test_latest_or_untagged_images_in_summary_and_workloads():
    # The OpenShift demo reports .../springboot-demo:latest in status.summary.images.
    found = p.mutable_image_tag(argo("argocd-demo__README-springboot-demo.yaml"), [])
    assert found is not None and "springboot-demo:latest" in found.message
    # gitops-backend's application3 runs nginx-unprivileged:latest.
    assert p.mutable_image_tag(argo("gitops-backend__application3.yaml"), []) is not None
    # Roadie's API response names tagged images only.
    clean = argo("roadie-backstage-plugins__applications-test-app.json")
    assert p.mutable_image_tag(clean, []) is None
    # A workload with an untagged image (the podinfo Deployment, its tag dropped) is found too.

    def untagged(obj: dict) -> None:
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/stefanprodan/podinfo"

    found = p.mutable_image_tag(clean, [workload("weave-gitops__deployment-healthy.yaml", untagged)])
    assert found is not None and "ghcr.io/stefanprodan/podinfo" in found.message
    assert p.mutable_image_tag(clean, [workload("weave-gitops__deployment-healthy.yaml")]) is None

    def pinned_by_digest(obj: dict) -> None:
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:latest@sha256:" + "a" * 64

    assert p.mutable_image_tag(clean, [workload("weave-gitops__deployment-healthy.yaml", pinned_by_digest)]) is None


# (d) ---------------------------------------------------------------------------------


def test_containers_without_a_memory_limit():
    app = flux("karmada__Kustomization-interpretstatus-test.yaml")
    guestbook = workload("argo-cd__deployment-degraded.yaml")  # resources: {}
    canary = workload("argo-rollouts__canary-rollout.yaml")  # requests only
    found = p.no_resource_limits(app, [guestbook, canary], production=True)
    assert found is not None
    assert "Deployment guestbook-ui container guestbook-ui (no limits)" in found.message
    assert "Rollout canary-demo" in found.message
    assert p.no_resource_limits(app, [guestbook], production=False) is None
    podinfo = workload("weave-gitops__deployment-healthy.yaml")  # limits cpu and memory
    assert p.no_resource_limits(app, [podinfo], production=True) is None

    def cpu_only(obj: dict) -> None:
        del obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]

    found = p.no_resource_limits(app, [workload("weave-gitops__deployment-healthy.yaml", cpu_only)], production=True)
    assert found is not None and "(limits: cpu)" in found.message
    unread = Workload(kind="Deployment", namespace="a", name="b", containers=[{"container": "c", "image": "x:1"}])
    assert p.no_resource_limits(app, [unread], production=True) is None  # stored before limits were read


# (e) ---------------------------------------------------------------------------------


def test_production_kustomization_left_suspended_says_since_when():
    suspended = flux("karmada__Kustomization-interpretstatus-test.yaml")  # suspend: true
    assert suspended.suspended
    found = p.left_suspended(suspended, CTX, production=True)
    assert found is not None and "at least since 2026-11-01 00:00 UTC" in found.message
    since = FindingContext(suspended_since={8: (datetime(2026, 11, 20, 9, 30, tzinfo=UTC), True)})
    found = p.left_suspended(suspended, since, production=True)
    assert found is not None and "suspended since 2026-11-20 09:30 UTC" in found.message
    assert p.left_suspended(suspended, CTX, production=False) is None

    def resumed(raw: dict) -> None:
        raw["spec"]["suspend"] = False

    assert p.left_suspended(flux("karmada__Kustomization-interpretstatus-test.yaml", resumed), CTX,
                            production=True) is None


# (f) ---------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [
    {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec"]},
    {"group": "apps", "kind": "Deployment", "jqPathExpressions": [".spec"]},
    {"kind": "ConfigMap", "jsonPointers": ["/data", "/spec/"]},
])
def test_ignore_differences_over_a_whole_spec(entry):
    def ignoring(raw: dict) -> None:
        raw["spec"]["ignoreDifferences"] = [entry]

    found = p.ignore_whole_spec(argo("argo-cd__live-child-application.yaml", change=ignoring))
    assert found is not None and entry["kind"] in found.message


@pytest.mark.parametrize("entry", [
    {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]},
    {"group": "apps", "kind": "Deployment", "name": "guestbook", "jsonPointers": ["/spec"]},  # one object
    {"group": "apps", "kind": "Deployment", "jqPathExpressions": [".spec.template.spec.containers[].image"]},
])
def test_ignore_differences_of_single_fields_is_fine(entry):
    def ignoring(raw: dict) -> None:
        raw["spec"]["ignoreDifferences"] = [entry]

    assert p.ignore_whole_spec(argo("argo-cd__live-child-application.yaml", change=ignoring)) is None
    assert p.ignore_whole_spec(argo("argo-cd__live-child-application.yaml")) is None


# (g) ---------------------------------------------------------------------------------


def test_app_of_apps_root_that_deploys_cluster_rbac():
    # gitops-backend's application deploys a ClusterRole and a ClusterRoleBinding, but no
    # Application: not a root.
    rbac_app = argo("gitops-backend__application.yaml")
    assert p.app_of_apps_cluster_rbac(rbac_app) is None

    def a_root(raw: dict) -> None:
        raw["status"]["resources"].append({"group": "argoproj.io", "version": "v1alpha1", "kind": "Application",
                                           "namespace": "test-namespace", "name": "taxi", "status": "Synced"})

    found = p.app_of_apps_cluster_rbac(argo("gitops-backend__application.yaml", change=a_root))
    assert found is not None and "ClusterRole" in found.message and "ClusterRoleBinding" in found.message


# (h) ---------------------------------------------------------------------------------


def test_objects_flux_applies_changed_by_kubectl_apply():
    app = flux("karmada__Kustomization-interpretstatus-test.yaml")
    assert p.applied_by_hand(app, [workload("weave-gitops__deployment-healthy.yaml")]) is None

    def kubectl_applied(obj: dict) -> None:
        obj["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = "{}"

    found = p.applied_by_hand(app, [workload("weave-gitops__deployment-healthy.yaml", kubectl_applied)])
    assert found is not None and "Deployment default/podinfo" in found.message
    # Argo CD's client-side apply wrote the annotation on its guestbook: proves nothing there.
    guestbook = workload("argo-cd__deployment-degraded.yaml")
    assert guestbook.spec_facts["last_applied"] is True
    assert p.applied_by_hand(argo("gitops-backend__application.yaml"), [guestbook]) is None


# (i) ---------------------------------------------------------------------------------


def test_out_of_sync_beyond_an_image_change():
    # gitops-backend's application: its Secret dev/testsecret OutOfSync (no image in a Secret),
    # the app itself said Synced in the source: made OutOfSync as its resource is.
    def out_of_sync(raw: dict) -> None:
        raw["status"]["sync"]["status"] = "OutOfSync"

    found = p.drift_not_image(argo("gitops-backend__application.yaml", change=out_of_sync))
    assert found is not None and found.message.endswith("OutOfSync in Secret dev/testsecret")
    assert p.drift_not_image(argo("gitops-backend__application.yaml")) is None  # Synced
    # fakeAppOperationRunning: OutOfSync while a sync runs.
    assert p.drift_not_image(argo("argo-cd__metrics_test-fakeAppOperationRunning.yaml")) is None

    def only_the_deployment(raw: dict) -> None:
        raw["status"]["sync"]["status"] = "OutOfSync"
        for resource in raw["status"]["resources"]:
            resource["status"] = "OutOfSync" if resource["kind"] == "Deployment" else "Synced"

    assert p.drift_not_image(argo("gitops-backend__application.yaml", change=only_the_deployment)) is None


# (j) ---------------------------------------------------------------------------------


def test_rollout_without_analysis_or_abort():
    app = argo("gitops-backend__application.yaml")
    canary = workload("argo-rollouts__canary-rollout.yaml")  # setWeight/pause steps only
    found = p.rollout_unguarded(app, [canary])
    assert found is not None and "Rollout jesse-test/canary-demo" in found.message
    assert p.rollout_unguarded(app, [workload("argo-rollouts__bluegreen-rollout.yaml")]) is not None

    def aborts(obj: dict) -> None:
        obj["spec"]["progressDeadlineAbort"] = True

    assert p.rollout_unguarded(app, [workload("argo-rollouts__canary-rollout.yaml", aborts)]) is None
    assert p.rollout_unguarded(app, [workload("weave-gitops__deployment-healthy.yaml")]) is None


# --- stored, shown, muted ------------------------------------------------------------------


@pytest.fixture
def prod_fleet(db):
    prod = Environment.objects.create(name="prod", order=3, production=True)
    cluster = Cluster.objects.create(name="prod-1", environment=prod, connection=Cluster.Connection.MANIFESTS)
    source = flux("karmada__Kustomization-interpretstatus-test.yaml")
    app = GitOpsApp.objects.create(cluster=cluster, read_from=cluster, tool="flux", kind="Kustomization",
                                   namespace=source.namespace, name=source.name, raw=source.raw, suspended=True,
                                   flux_alerts=["flux-system/on-call"])
    stored = workload("argo-rollouts__canary-rollout.yaml")
    stored.cluster, stored.app = cluster, app
    stored.save()
    return cluster, app


def test_derivation_stores_them_with_the_suspension_time_and_a_mute_holds(prod_fleet, admin_user):
    cluster, app = prod_fleet
    suspended_at = datetime.now(UTC) - timedelta(days=3)
    StateChange.objects.create(cluster=cluster, app=app, object_key="flux/Kustomization/x/sample",
                               field="suspended", old="False", new="True", at=suspended_at)
    derivation.derive_findings(cluster.pk)
    rules = set(Finding.objects.filter(app=app).values_list("rule", flat=True))
    assert {"left-suspended", "rollout-unguarded", "no-resource-limits"} <= rules
    assert "mutable-image-tag" not in rules  # canary-demo runs a tagged (if missing) image
    message = Finding.objects.get(app=app, rule="left-suspended").message
    assert f"since {suspended_at:%Y-%m-%d %H:%M} UTC" in message and "at least" not in message
    mutes.mute(app, "rollout-unguarded", "canary checked by hand during the migration", admin_user)
    assert derivation.derive_findings(cluster.pk) == 0  # nothing new said
    assert "rollout-unguarded" not in set(mutes.open_findings().values_list("rule", flat=True))


def test_page_and_api_show_severity_and_example(prod_fleet, client, admin_user):
    """(The MCP tool says what the API says: tests/assistant/test_mcp_http.py.)"""
    cluster, _ = prod_fleet
    derivation.derive_findings(cluster.pk)
    client.force_login(admin_user)
    page = client.get("/findings?rule=rollout-unguarded").content.decode()
    assert "progressDeadlineAbort: true" in page and "medium" in page
    body = client.get("/api/v1/findings?rule=left-suspended").json()
    (result,) = body["results"]
    assert result["severity"] == "high" and "suspend: false" in result["example"]

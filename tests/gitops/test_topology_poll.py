"""A hub Argo CD polled end to end (the official client over HTTP against the Kubernetes API
emulator, collectors, store): every Application is filed under its destination cluster,
versions come from status.summary.images where the portal does not read the destination
and from its workloads where it does, and the pages and the API show each app there."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from gitops import kinds
from gitops.models import AppProject, GitOpsApp, RunningVersion, Workload
from gitops.polling import poll
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service
from tests.fakes.kube_emulator import KubeEmulator
from tests.gitops.test_cluster_secrets import cluster_secret

pytestmark = pytest.mark.django_db
TOKEN_ENV = "PORTAL_TEST_HUB_TOKEN"
PROD_SERVER = "https://prod-eu.k8s.example:6443"
UNKNOWN_SERVER = "https://10.9.9.9:6443"


def application(name: str, destination: dict, *, namespace: str = "argocd", images: tuple[str, ...] = (),
                resources: tuple[dict, ...] = (), health: str = "Healthy", project: str = "shop") -> dict:
    """An Application as Argo CD's controller writes it (status.summary.images, status.resources)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {
            "project": project,
            "source": {"repoURL": "https://github.com/acme/deploy.git", "path": f"apps/{name}",
                       "targetRevision": "main"},
            "destination": {**destination, "namespace": "shop"},
        },
        "status": {
            "sync": {"status": "Synced", "revision": "a" * 40},
            "health": {"status": health},
            "summary": {"images": list(images)},
            "resources": list(resources),
            "reconciledAt": "2026-11-30T10:00:00Z",
        },
    }


def deployment(name: str, image: str, replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-dep-{name}", "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"spec": {"containers": [{"name": name, "image": image}]}}},
        "status": {"observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas,
                   "updatedReplicas": replicas, "availableReplicas": replicas},
    }


CHECKOUT_DEPLOYMENT = {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop",
                       "name": "checkout", "status": "Synced"}
HUB_APPS = [
    # By server: prod-eu-1 is not read by the portal; Argo CD's summary is all there is.
    application("checkout-prod", {"server": PROD_SERVER + "/"}, images=("ghcr.io/acme/checkout:1.4.0",)),
    # By name: staging-1 is read by the portal, whose workloads refine the summary.
    application("checkout-staging", {"name": "staging"}, images=("ghcr.io/acme/checkout:1.5.0-rc1",),
                resources=(CHECKOUT_DEPLOYMENT,)),
    # In-cluster: the hub itself.
    application("platform-tools", {"server": "https://kubernetes.default.svc"}, images=("ghcr.io/acme/tools:2.0",)),
    # Matches no catalog cluster.
    application("checkout-dev", {"server": UNKNOWN_SERVER}, images=("ghcr.io/acme/checkout:1.6.0",),
                health="Degraded"),
    # argocd-agent principal: the namespace is the agent.
    application("checkout-edge", {"server": "https://kubernetes.default.svc"}, namespace="edge-1",
                images=("ghcr.io/acme/checkout:1.3.9",)),
]
SHOP_PROJECT = {
    "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
    "metadata": {"name": "shop", "namespace": "argocd"},
    "spec": {"destinations": [{"server": "*", "namespace": "*"}], "sourceRepos": ["*"],
             "syncWindows": [{"kind": "deny", "schedule": "* * * * *", "duration": "1h",
                              "applications": ["checkout-prod"]}]},
}


# Argo CD's cluster Secret for the staging destination, as the Kubernetes API returns it
# (credentials in `config`; tests/gitops/test_cluster_secrets.py checks they go nowhere).
STAGING_SECRET = cluster_secret("staging", "https://10.0.0.7:6443")


def serve(emulator: KubeEmulator, objects: list[dict]) -> None:
    emulator.add_all(objects)
    for spec in kinds.KINDS:
        emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)


@pytest.fixture
def hub_fleet(kube_emulator, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    serve(kube_emulator, [*HUB_APPS, SHOP_PROJECT, STAGING_SECRET])
    prod = Environment.objects.create(name="prod", order=3, production=True)
    staging = Environment.objects.create(name="staging", order=2)
    mgmt = Environment.objects.create(name="mgmt", order=9)
    hub = Cluster.objects.create(name="hub", environment=mgmt, connection=Cluster.Connection.API,
                                 api_url=kube_emulator.url, token_env=TOKEN_ENV)
    ArgoCDInstance.objects.create(name="hub-argocd", cluster=hub, ui_url="https://argocd.hub.example",
                                  agent_mapping=ArgoCDInstance.AgentMapping.NAMESPACE)
    Cluster.objects.create(name="prod-eu-1", environment=prod, connection=Cluster.Connection.NONE,
                           api_url=PROD_SERVER)
    with KubeEmulator() as staging_api:
        monkeypatch.setenv("PORTAL_TEST_STAGING_TOKEN", staging_api.token)
        serve(staging_api, [deployment("checkout", "ghcr.io/acme/checkout:1.5.0-rc1@sha256:" + "b" * 64, 3)])
        Cluster.objects.create(name="staging-1", environment=staging, connection=Cluster.Connection.API,
                               api_url=staging_api.url, token_env="PORTAL_TEST_STAGING_TOKEN",
                               argocd_aliases=["staging"])
        Cluster.objects.create(name="edge", environment=prod, connection=Cluster.Connection.NONE,
                               argocd_aliases=["edge-1"])
        Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
        yield {"hub": hub, "staging_api": staging_api}


def poll_named(name: str):
    report = poll(Cluster.objects.select_related("environment").get(name=name))
    assert report.ok, report.error
    return report


def test_a_hub_files_each_application_under_its_destination(hub_fleet):
    poll_named("hub")
    where = {a.name: (a.cluster.name, a.read_from.name, a.argocd_instance.name if a.argocd_instance else None)
             for a in GitOpsApp.objects.select_related("cluster", "read_from", "argocd_instance")}
    assert where["checkout-prod"] == ("prod-eu-1", "hub", "hub-argocd")
    assert where["checkout-staging"] == ("staging-1", "hub", "hub-argocd")
    assert where["platform-tools"] == ("hub", "hub", "hub-argocd")
    assert where["checkout-edge"] == ("edge", "hub", "hub-argocd")
    # The unregistered destination is a discovered cluster, never the hub.
    discovered = Cluster.objects.get(discovered=True)
    assert where["checkout-dev"] == (discovered.name, "hub", "hub-argocd")
    assert discovered.environment is None and not discovered.enabled
    assert discovered.api_url == UNKNOWN_SERVER and discovered.connection == Cluster.Connection.NONE
    # The AppProject (sync windows) lives on the hub and still judges hub-managed apps.
    assert AppProject.objects.filter(cluster__name="hub", name="shop").exists()
    assert GitOpsApp.objects.get(name="checkout-prod").sync_blocked
    assert not GitOpsApp.objects.get(name="checkout-staging").sync_blocked


def test_versions_as_argo_cd_reports_them_where_the_destination_is_not_read(hub_fleet):
    poll_named("hub")
    prod = GitOpsApp.objects.get(name="checkout-prod")
    assert prod.running == {"checkout": ["1.4.0"]}
    assert list(prod.services.values_list("name", flat=True)) == ["checkout"]
    rows = list(RunningVersion.objects.filter(app=prod).values_list("cluster__name", "workload", "version"))
    assert rows == [("prod-eu-1", None, "1.4.0")]
    # A discovered destination runs no service until an admin adds it with an environment.
    dev = GitOpsApp.objects.get(name="checkout-dev")
    assert dev.running == {} and not dev.services.exists()
    assert not RunningVersion.objects.filter(app=dev).exists()
    # A second poll with nothing new writes no version again; a new image replaces the old one.
    poll_named("hub")
    assert RunningVersion.objects.filter(app=prod).count() == 1


def test_the_read_destination_workloads_refine_the_hub_app(hub_fleet):
    poll_named("hub")
    staging = GitOpsApp.objects.get(name="checkout-staging")
    assert staging.running == {"checkout": ["1.5.0-rc1"]}
    assert not RunningVersion.objects.filter(app=staging, workload__isnull=True).exists()
    poll_named("staging-1")
    workload = Workload.objects.get(cluster__name="staging-1", name="checkout")
    assert workload.app_id == staging.id and workload.replicas_ready == 3
    versions = list(RunningVersion.objects.filter(app=staging).values_list("cluster__name", "workload__name",
                                                                            "version"))
    assert versions == [("staging-1", "checkout", "1.5.0-rc1")]
    # Polling the destination again keeps the link (nothing rewritten), polling the hub again too.
    poll_named("staging-1")
    poll_named("hub")
    assert Workload.objects.get(pk=workload.pk).app_id == staging.id


def test_a_destination_sees_what_its_hub_changed_at_its_next_poll(hub_fleet, kube_emulator):
    # The destination's own objects do not change, but what they mean may when the hub's app
    # changes (its resources are what links the workloads): the destination's next poll is a
    # full one (gitops.derive.unchanged), not "nothing changed".
    poll_named("hub")
    poll_named("staging-1")
    staging = GitOpsApp.objects.get(name="checkout-staging")
    assert Workload.objects.get(cluster__name="staging-1", name="checkout").app_id == staging.id
    assert poll_named("staging-1").unchanged

    app = copy.deepcopy(next(a for a in HUB_APPS if a["metadata"]["name"] == "checkout-staging"))
    app["status"]["resources"] = []
    kube_emulator.add(app)
    poll_named("hub")
    again = poll_named("staging-1")

    assert not again.unchanged and again.stored is not None
    assert poll_named("staging-1").unchanged  # and then, with nothing new, it is


def test_an_argocd_agent_app_read_on_its_agent_cluster_counts_once(hub_fleet, monkeypatch):
    with KubeEmulator() as edge_api:
        monkeypatch.setenv("PORTAL_TEST_EDGE_TOKEN", edge_api.token)
        # The agent's own copy: in its argocd namespace, destination rewritten to in-cluster.
        serve(edge_api, [application("checkout-edge", {"name": "in-cluster"}, images=("ghcr.io/acme/checkout:1.3.9",))])
        Cluster.objects.filter(name="edge").update(connection=Cluster.Connection.API, api_url=edge_api.url,
                                                   token_env="PORTAL_TEST_EDGE_TOKEN")
        poll_named("hub")
        poll_named("edge")
    copies = list(GitOpsApp.objects.filter(name="checkout-edge").values_list("cluster__name", "read_from__name",
                                                                             "namespace"))
    assert copies == [("edge", "edge", "argocd")]


def test_pages_and_api_show_each_app_under_its_destination(hub_fleet, client, users):
    poll_named("hub")
    client.force_login(users["viewer"])
    page = client.get(reverse("gitops")).content.decode()
    assert "unregistered destination" in page
    body = client.get("/api/v1/gitops").json()
    items = {i["name"]: i for i in body["results"]}
    assert (items["checkout-prod"]["cluster"], items["checkout-prod"]["environment"]) == ("prod-eu-1", "prod")
    assert items["checkout-prod"]["argocd_instance"] == "hub-argocd"
    assert (items["checkout-staging"]["cluster"], items["checkout-staging"]["environment"]) == ("staging-1",
                                                                                                "staging")
    assert items["checkout-dev"]["environment"] is None
    service = client.get(reverse("service", args=["checkout"])).content.decode()
    assert "versions as Argo CD reports them" in service
    assert "https://argocd.hub.example/applications/argocd/checkout-prod" in service
    poll_named("staging-1")
    matrix = client.get(reverse("matrix")).content.decode()
    assert "1.4.0" in matrix and "1.5.0-rc1" in matrix
    assert timezone.now() - timedelta(minutes=5) < GitOpsApp.objects.get(name="checkout-prod").updated_at


def test_a_degraded_app_on_an_unregistered_destination_breaks_no_page_nor_notification(hub_fleet, client, users):
    from portal.notifications.statechanges import emit_gitops_events

    poll(Cluster.objects.get(name="hub"), at=timezone.now() - timedelta(days=1))
    dev = GitOpsApp.objects.get(name="checkout-dev")
    assert dev.cluster.discovered and dev.needs_attention()
    client.force_login(users["member"])
    for page in ("overview", "gitops", "matrix", "clusters", "updates", "delivery"):
        assert client.get(reverse(page)).status_code == 200, page
    opened = emit_gitops_events()
    event = next(e.event for e in opened if e.app_id == dev.id)
    assert (event.cluster, event.environment) == (dev.cluster.name, "")
    assert ("Environment", "unregistered destination") in event.facts
    # Its link goes to the Argo CD instance that manages it.
    assert "https://argocd.hub.example/applications/argocd/checkout-dev" in {link.url for link in event.links}


def test_the_minute_task_judges_a_hub_app_by_the_hub_project(hub_fleet):
    from gitops.tasks import refresh_sync_windows

    poll_named("hub")
    app = GitOpsApp.objects.get(name="checkout-prod")
    assert app.cluster.name == "prod-eu-1" and app.sync_blocked
    # The window's edge passes: the minute task re-judges the app with the hub's AppProject.
    GitOpsApp.objects.filter(pk=app.pk).update(sync_blocked=False, sync_window={},
                                               window_next_edge=timezone.now() - timedelta(seconds=1))
    assert refresh_sync_windows() == 1
    app.refresh_from_db()
    assert app.sync_blocked and app.sync_window["kind"] == "deny"


def test_two_hubs_deploying_same_named_apps_to_one_destination_keep_both(hub_fleet, monkeypatch):
    with KubeEmulator() as other_api:
        monkeypatch.setenv("PORTAL_TEST_OTHER_TOKEN", other_api.token)
        serve(other_api, [application("checkout-prod", {"server": PROD_SERVER},
                                      images=("ghcr.io/acme/checkout:1.4.1",))])
        Cluster.objects.create(name="hub-2", environment=Environment.objects.get(name="prod"),
                               connection=Cluster.Connection.API, api_url=other_api.url,
                               token_env="PORTAL_TEST_OTHER_TOKEN")
        poll_named("hub")
        poll_named("hub-2")
        # A poll replaces only its own rows: the first hub's copy is still there after the second's.
        poll_named("hub")
    rows = sorted(GitOpsApp.objects.filter(name="checkout-prod").values_list("read_from__name", "cluster__name",
                                                                             "running"))
    assert rows == [("hub", "prod-eu-1", {"checkout": ["1.4.0"]}), ("hub-2", "prod-eu-1", {"checkout": ["1.4.1"]})]
    assert sorted(RunningVersion.objects.filter(cluster__name="prod-eu-1").values_list("version", flat=True)) == [
        "1.4.0", "1.4.1"]


def test_an_app_moved_to_another_destination_takes_its_versions_along(hub_fleet, kube_emulator):
    from portal.delivery.models import Placement

    poll_named("hub")
    assert list(Placement.objects.filter(cluster__name="prod-eu-1").values_list("versions", flat=True)) == ["1.4.0"]
    moved = application("checkout-prod", {"server": "https://kubernetes.default.svc"},
                        images=("ghcr.io/acme/checkout:1.4.0",))
    moved["metadata"]["resourceVersion"] = "2"
    kube_emulator.add(moved)
    poll_named("hub")
    app = GitOpsApp.objects.get(name="checkout-prod")
    assert app.cluster.name == "hub"
    assert not RunningVersion.objects.filter(app=app, workload__isnull=True).exists()
    # The destination it left no longer shows the version (its placement was refreshed too).
    assert not Placement.objects.filter(cluster__name="prod-eu-1").exists()


def test_a_destination_argo_cd_refuses_stays_with_its_instance_saying_why(hub_fleet, kube_emulator):
    kube_emulator.add(application("broken", {"server": PROD_SERVER, "name": "prod-eu"}))
    poll_named("hub")
    app = GitOpsApp.objects.get(name="broken")
    assert app.cluster.name == "hub"
    assert "destination: application destination can't have both name and server defined" in app.warnings


def test_the_api_pages_by_environment_through_apps_of_an_unregistered_destination(hub_fleet, client, users):
    poll_named("hub")
    client.force_login(users["viewer"])
    names, url = [], "/api/v1/gitops?sort=environment&page_size=1"
    while url:
        body = client.get(url).json()
        names.extend(item["name"] for item in body["results"])
        url = body.get("next")
    assert len(names) == GitOpsApp.objects.count() == len(set(names))
    assert names[-1] == "checkout-dev"  # no environment yet: after every environment's apps


def test_a_hub_app_reporting_a_new_image_places_it_at_once_though_only_it_was_collected(hub_fleet, kube_emulator):
    """A partial poll (only the changed app collected) that moves what Argo CD reports running on a
    destination the portal does not read says so (gitops.signals' running_moved): the
    destination's placement shows the new version at once."""
    from portal.delivery.models import Placement

    for stamped in (copy.deepcopy(SHOP_PROJECT), copy.deepcopy(STAGING_SECRET)):  # as the API server stamps them
        stamped["metadata"]["resourceVersion"] = "1"
        kube_emulator.add(stamped)
    poll_named("hub")
    poll_named("hub")  # the first discovered the unknown destination: this one builds on a settled catalog
    checkout = Service.objects.get(name="checkout")
    assert Placement.objects.get(cluster__name="prod-eu-1", service=checkout).versions == "1.4.0"
    app = copy.deepcopy(next(a for a in HUB_APPS if a["metadata"]["name"] == "checkout-prod"))
    app["metadata"]["resourceVersion"] = "2"
    app["status"]["summary"]["images"] = ["ghcr.io/acme/checkout:1.4.1"]
    kube_emulator.add(app)

    report = poll_named("hub")

    assert report.collected == 1
    assert Placement.objects.get(cluster__name="prod-eu-1", service=checkout).versions == "1.4.1"

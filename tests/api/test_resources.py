"""GET /api/v1/projects, /api/v1/workloads and /api/v1/services: their facts, filters,
cursor pages and a number of queries that does not grow with the page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops.models import AppProject, Workload
from gitops.polling import poll
from portal.api.project_views import window_state
from portal.kernel.accounts import tokens
from portal.kernel.catalog.models import Cluster
from portal.releases.models import Release
from tests.fixtures.real_objects import REAL_OBJECTS, load_real
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client, users):
    _, plain = tokens.issue(users["viewer"], "tests")

    def get(url: str, params: dict | None = None, status: int = 200):
        response = client.get(url, params or {}, HTTP_AUTHORIZATION=f"Bearer {plain}")
        assert response.status_code == status, response.content
        return response.json()

    return get


@pytest.fixture
def corpus(catalog):
    for name, folder in (("argo-corpus", "argocd"), ("workload-corpus", "workloads")):
        cluster = Cluster.objects.create(name=name, environment=catalog.dev, connection=Cluster.Connection.MANIFESTS,
                                         manifests_path=str(REAL_OBJECTS / folder))
        assert poll(cluster).ok


def every_page(api, url: str, params: dict) -> list[dict]:
    found, page = [], api(url, params)
    found += page["results"]
    while page["next"]:
        page = api(page["next"])
        found += page["results"]
    return found


# --- projects ---------------------------------------------------------------------------


def test_projects_carry_their_windows_as_argo_cd_wrote_them(corpus, api):
    projects = {p["name"]: p for p in api("/api/v1/projects")["results"]}
    assert set(projects) == {"default", "my-project", "bar", "foo"}
    [bar] = projects["bar"]["sync_windows"]  # argocd-training appproj_bar.yml
    assert (bar["kind"], bar["schedule"], bar["duration"], bar["time_zone"], bar["manual_sync"]) == (
        "allow", "0 * * * *", "10m", "UTC", False)
    assert projects["foo"]["sync_windows"] == [] and projects["foo"]["blocks_now"] is False
    windows = projects["my-project"]["sync_windows"]  # docs/operator-manual/project.yaml
    assert [(w["kind"], w["schedule"], w["duration"]) for w in windows] == [
        ("allow", "10 1 * * *", "1h"), ("allow", "0 9 * * *", "8h"), ("deny", "0 22 * * *", "1h"),
        ("allow", "0 23 * * *", "1h")]
    assert windows[0]["applications"] == ["*-prod"] and windows[0]["manual_sync"] is True
    destinations = projects["my-project"]["destinations"]
    assert {"server": "https://kubernetes.default.svc", "name": "in-cluster", "namespace": "guestbook"} in destinations
    # The state is judged now: an hourly 10-minute allow window is active in the first ten minutes.
    now = timezone.now()
    if 1 <= now.minute <= 8:  # away from the edges, where the request and this test could disagree
        assert bar["active"] is True and bar["blocks_now"] is False
    elif 11 <= now.minute <= 58:
        assert bar["active"] is False and bar["blocks_now"] is True


def test_a_windows_state_until_when_and_next(db):
    [project] = load_real("argocd/argocd-training__appproj_bar.yaml")
    [raw] = project["spec"]["syncWindows"]
    inside = window_state(raw, datetime(2026, 3, 4, 10, 4, tzinfo=UTC))
    assert (inside["active"], inside["blocks_now"]) == (True, False)
    assert inside["active_until"] == datetime(2026, 3, 4, 10, 10, tzinfo=UTC)
    assert inside["next_active_at"] == datetime(2026, 3, 4, 11, 0, tzinfo=UTC)
    outside = window_state(raw, datetime(2026, 3, 4, 10, 30, tzinfo=UTC))
    assert (outside["active"], outside["blocks_now"], outside["active_until"]) == (False, True, None)
    assert outside["next_active_at"] == datetime(2026, 3, 4, 11, 0, tzinfo=UTC)
    deny = window_state({"kind": "deny", "schedule": "0 22 * * *", "duration": "1h", "timeZone": "Europe/Amsterdam",
                         "namespaces": ["default"]}, datetime(2026, 1, 10, 21, 30, tzinfo=UTC))
    assert (deny["active"], deny["blocks_now"]) == (True, True)
    assert deny["active_until"] == datetime(2026, 1, 10, 22, 0, tzinfo=UTC)  # 23:00 in Amsterdam (CET)
    broken = window_state({"kind": "deny", "schedule": "not cron", "duration": "1h"}, datetime.now(UTC))
    assert broken["blocks_now"] is True and broken["active"] is None and broken["error"]


def test_projects_filter_by_cluster_and_name(corpus, catalog, api):
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="payments",
                              sync_windows=[{"kind": "deny", "schedule": "* * * * *", "duration": "1h",
                                             "applications": ["*"]}])
    [payments] = api("/api/v1/projects", {"cluster": "prod-eu-1"})["results"]
    assert payments["name"] == "payments" and payments["blocks_now"] is True
    assert payments["sync_windows"][0]["active"] is True
    assert [p["name"] for p in api("/api/v1/projects", {"name": "bar"})["results"]] == ["bar"]
    api("/api/v1/projects", {"nope": "1"}, status=400)


# --- workloads --------------------------------------------------------------------------


def test_workloads_name_their_app_or_that_they_run_outside_gitops(corpus, catalog, api):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.4.2")
    everything = every_page(api, "/api/v1/workloads", {"page_size": 3})
    # Six distinct objects (several corpus files hold the same Deployment in other states) and the seeded one.
    assert len(everything) == Workload.objects.count() == 7
    by_name = {(w["cluster"], w["name"]): w for w in everything}
    podinfo = by_name[("workload-corpus", "podinfo")]  # weave-gitops deployment-healthy.yaml
    assert podinfo["containers"] == [{"name": "podinfod", "image": "ghcr.io/stefanprodan/podinfo:6.3.5",
                                      "init": False}]
    assert (podinfo["replicas_desired"], podinfo["replicas_ready"]) == (2, 2)
    assert podinfo["app"] is None and podinfo["outside_gitops"] is True
    mine = by_name[("prod-eu-1", "checkout-prod")]
    assert mine["app"] == {"tool": "argo", "kind": "Application", "namespace": "argocd", "name": "checkout-prod"}
    assert mine["outside_gitops"] is False and mine["environment"] == "prod"
    outside = api("/api/v1/workloads", {"outside_gitops": "true", "page_size": 200})["results"]
    assert len(outside) == 6 and all(w["app"] is None for w in outside)
    assert [w["name"] for w in api("/api/v1/workloads", {"outside_gitops": "false"})["results"]] == ["checkout-prod"]
    assert [w["name"] for w in api("/api/v1/workloads", {"service": "checkout"})["results"]] == ["checkout-prod"]
    rollouts = api("/api/v1/workloads", {"kind": "Rollout"})["results"]
    assert {w["name"] for w in rollouts} == {"canary-demo", "bluegreen-demo"}


def test_a_page_of_workloads_costs_the_same_queries_as_a_page_of_one(corpus, api):
    api("/api/v1/workloads")
    with CaptureQueriesContext(connection) as small:
        api("/api/v1/workloads", {"page_size": 1})
    with CaptureQueriesContext(connection) as large:
        api("/api/v1/workloads", {"page_size": 200})
    assert len(large) == len(small)


# --- services ---------------------------------------------------------------------------


def _released(service, *tags):
    for tag in tags:
        Release.objects.create(service=service, tag=tag, version=tag.lstrip("v"), seen_at=timezone.now())


def test_services_versions_per_environment_newest_acceptable_and_offers(catalog, api):
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.5.0")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.4.2")
    seed_app(catalog.prod_us, "checkout-prod-us", service=catalog.checkout, version="1.4.2")
    _released(catalog.checkout, "1.4.2", "1.4.3", "1.5.0")
    services = {s["name"]: s for s in api("/api/v1/services")["results"]}
    checkout = services["checkout"]
    assert checkout["latest_release"] == "1.5.0"
    envs = {e["environment"]: e for e in checkout["environments"]}
    assert list(envs) == ["dev", "prod"]
    assert envs["dev"]["versions"] == ["1.5.0"] and envs["dev"]["newest_acceptable"] is None
    assert envs["prod"]["versions"] == ["1.4.2"]
    assert [(c["cluster"], c["versions"], c["apps"]) for c in envs["prod"]["clusters"]] == [
        ("prod-eu-1", ["1.4.2"], ["argocd/checkout-prod"]), ("prod-us-1", ["1.4.2"], ["argocd/checkout-prod-us"])]
    # The default policy accepts any jump: 1.5.0 is the newest acceptable from 1.4.2.
    assert envs["prod"]["newest_acceptable"] == "1.5.0"
    upgrades = [o for o in checkout["offers"] if o["kind"] == "upgrade"]
    assert {(o["cluster"], o["from_version"], o["to_version"]) for o in upgrades} == {
        ("prod-eu-1", "1.4.2", "1.5.0"), ("prod-us-1", "1.4.2", "1.5.0")}
    assert all(o["preview_url"].startswith("http://testserver/pr/preview?kind=upgrade") for o in upgrades)
    assert services["payments"]["environments"] == [] and services["payments"]["offers"] == []
    assert [s["name"] for s in api("/api/v1/services", {"environment": "prod"})["results"]] == ["checkout"]


def test_a_page_of_services_costs_the_same_queries_whatever_its_size(catalog, api):
    for index in range(6):
        service = catalog.checkout if index % 2 else catalog.payments
        seed_app(catalog.prod_eu, f"app-{index}", service=service, version=f"1.0.{index}",
                 since=timedelta(hours=index + 1))
    api("/api/v1/services")
    with CaptureQueriesContext(connection) as small:
        api("/api/v1/services", {"page_size": 1})
    with CaptureQueriesContext(connection) as large:
        api("/api/v1/services", {"page_size": 200})
    assert len(large) == len(small)

"""The Clusters page lists destinations a hub Argo CD deploys to that match no catalog
cluster, with their app counts; an admin adds one to an environment in one click (POST,
audited), and the hub's next poll files its apps and versions there."""

from __future__ import annotations

import pytest
from django.urls import reverse

from gitops.models import GitOpsApp, RunningVersion
from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog.models import Cluster
from tests.gitops.test_topology_poll import hub_fleet, poll_named  # noqa: F401 - the fixture

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hub_fleet")]


def discovered_rows(html: str) -> list[str]:
    import re

    return re.findall(r'<tr data-discovered="([^"]+)"', html)


def test_discovered_destinations_are_listed_with_app_counts_and_a_suggested_environment(client, users):
    poll_named("hub")
    Cluster.objects.create(name="eu-prod-9", discovered=True, enabled=False, connection=Cluster.Connection.NONE,
                           argocd_aliases=["eu-prod-9"])
    client.force_login(users["admin"])
    html = client.get(reverse("clusters")).content.decode()
    found = Cluster.objects.get(discovered=True, api_url="https://10.9.9.9:6443")
    assert sorted(discovered_rows(html)) == sorted([found.name, "eu-prod-9"])
    assert "unregistered destination https://10.9.9.9:6443" in html
    row = html[html.index('data-discovered="eu-prod-9"'):]
    assert '<option value="prod" selected>' in row[: row.index("</tr>")]
    # Discovered clusters are no environment's: the environments' tables do not list them.
    assert html.count(f"<strong>{found.name}</strong>") == 1


def test_only_an_admin_adds_a_discovered_cluster_and_it_is_audited(client, users):
    poll_named("hub")
    found = Cluster.objects.get(discovered=True)
    url = reverse("cluster-add", args=[found.name])
    client.force_login(users["member"])
    assert client.post(url, {"environment": "prod"}).status_code == 403
    client.force_login(users["admin"])
    assert client.get(url).status_code == 405
    assert client.post(url, {"environment": "prod"}).status_code == 302
    found.refresh_from_db()
    assert (found.environment.name, found.discovered, found.enabled) == ("prod", False, True)
    assert found.connection == Cluster.Connection.NONE  # connection details stay optional
    assert AuditLog.objects.filter(action="cluster.added", target=found.name).exists()
    # The hub's next poll gives its app the services and versions Argo CD reports.
    poll_named("hub")
    app = GitOpsApp.objects.get(name="checkout-dev")
    assert app.cluster_id == found.id and app.running == {"checkout": ["1.6.0"]}
    assert list(RunningVersion.objects.filter(app=app).values_list("cluster_id", "version")) == [(found.id, "1.6.0")]
    matrix = client.get(reverse("matrix")).content.decode()
    assert f'<span class="muted">{found.name}</span>' in matrix


def test_adding_needs_an_environment_that_exists(client, users):
    poll_named("hub")
    found = Cluster.objects.get(discovered=True)
    client.force_login(users["admin"])
    client.post(reverse("cluster-add", args=[found.name]), {"environment": "nowhere"})
    found.refresh_from_db()
    assert found.discovered and found.environment is None


def test_only_a_discovered_cluster_may_have_no_environment():
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        Cluster(name="typed-by-hand", connection=Cluster.Connection.NONE).full_clean()
    Cluster(name="found", discovered=True, enabled=False, connection=Cluster.Connection.NONE).full_clean()

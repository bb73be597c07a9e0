"""The tools' own times reach every place that says "since": an Argo CD app Degraded for days
and an OutOfSync one, both before the portal's first poll, polled from the demo's prod-eu-1 over
the API emulator, then read on /gitops, the service page, /api/v1/gitops, MCP's wording and the
alert the portal sends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from django.urls import reverse
from django.utils import timezone

from gitops import kinds
from gitops.models import GitOpsApp
from gitops.polling import poll
from portal.api.mcp.tools import compact_app, reasons_for
from portal.kernel.accounts import tokens
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster
from portal.kernel.timestamps import utc_stamp
from portal.notifications.models import Episode
from portal.notifications.statechanges import emit_gitops_events
from portal.web.cells import CellViews

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_KUBE_TOKEN"
# Before any poll of the test: the portal never saw it turn.
DEGRADED_AT = (datetime.now(UTC) - timedelta(days=6, hours=1)).replace(microsecond=0)


def demo_objects() -> list[dict]:
    objects = []
    for path in sorted((ROOT / "examples" / "clusters" / "prod-eu-1").rglob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


@pytest.fixture
def polled(kube_emulator, monkeypatch) -> datetime:
    """prod-eu-1 polled once, with checkout-prod Degraded since DEGRADED_AT as Argo CD says."""
    load_fleet(ROOT / "examples" / "fleet.yaml")
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    objects = demo_objects()
    checkout = next(o for o in objects if o.get("kind") == "Application" and o["metadata"]["name"] == "checkout-prod")
    checkout["status"]["health"] = {"status": "Degraded", "message": "Deployment checkout: 0 of 3 ready",
                                    "lastTransitionTime": DEGRADED_AT.strftime("%Y-%m-%dT%H:%M:%SZ")}
    kube_emulator.add_all(objects)
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    # Polled half an hour ago: past the grace period, so the states are flagged on the matrix.
    start = timezone.now() - timedelta(minutes=30)
    assert poll(Cluster.objects.get(name="prod-eu-1"), at=start).ok
    return start


def tool_time() -> datetime:
    return DEGRADED_AT


def row_of(html: str, app: str) -> str:
    start = html.index(f'data-app="{app}"')
    return html[start:html.index("</tr>", start)]


def test_gitops_page_says_the_tools_time_and_at_least_since_where_it_has_none(client, users, polled):
    client.force_login(users["viewer"])
    html = client.get(reverse("gitops")).content.decode()
    checkout = row_of(html, "checkout-prod")
    assert f'datetime="{tool_time().isoformat()}"' in checkout
    assert ">6 days</time>" in checkout  # not "for 1 min"
    assert "at least since" not in checkout.split("Degraded")[1]
    payments = row_of(html, "payments-prod")
    # OutOfSync has no Argo CD time: the first sight, said as such; its health has one.
    assert 'at least since <time class="first-seen"' in payments
    assert f'datetime="{polled.isoformat()}"' in payments


def test_service_page_panel_says_the_tools_time(client, users, polled):
    client.force_login(users["viewer"])
    html = client.get(reverse("service-panels", args=["checkout"])).content.decode()
    assert f'datetime="{tool_time().isoformat()}"' in html
    assert ">6 days</time>" in html


def test_api_and_mcp_give_the_tools_time_and_say_which_is_exact(client, users, polled):
    _, plain = tokens.issue(users["viewer"], "tests")
    response = client.get("/api/v1/gitops", {"cluster": "prod-eu-1"}, HTTP_AUTHORIZATION=f"Bearer {plain}")
    assert response.status_code == 200, response.content
    items = {i["name"]: i for i in response.json()["results"]}
    checkout, payments = items["checkout-prod"], items["payments-prod"]
    assert datetime.fromisoformat(checkout["health_since"]) == tool_time()
    assert checkout["health_since_exact"] is True
    assert datetime.fromisoformat(checkout["sync_since"]) == datetime(2026, 11, 20, 11, 22, 5, tzinfo=UTC)
    assert checkout["sync_since_exact"] is True
    assert datetime.fromisoformat(payments["sync_since"]) == polled
    assert payments["sync_since_exact"] is False

    reasons = {r["reason"]: r["detail"] for r in reasons_for(compact_app(payments), [])}
    assert reasons["not_synced_yet"].startswith(f"OutOfSync at least since {payments['sync_since']}")
    degraded = reasons_for(compact_app(checkout), [])[-1]
    assert degraded["detail"].startswith(f"Degraded since {checkout['health_since']}")


def test_matrix_and_overview_flags_say_the_tools_time(client, users, polled):
    client.force_login(users["viewer"])
    matrix = client.get(reverse("matrix")).content.decode()
    assert f"Argo: degraded since {CellViews().stamp(tool_time())}" in matrix
    # search-prod is OutOfSync and Argo CD dates none: the first sight, said as such.
    assert f"Argo: out of sync at least since {CellViews().stamp(polled)} (search-prod)" in matrix
    overview = client.get(reverse("overview")).content.decode()
    tile = overview[overview.index('data-service="checkout"'):]
    tile = tile[:tile.index("</article>")]
    assert "· for 6 days" in tile  # the tool's time, not the poll's
    assert "at least since" in overview  # the OutOfSync apps Argo CD dates nothing for


def test_the_alert_is_dated_by_the_tool_not_by_the_first_poll(polled):
    emit_gitops_events(polled + timedelta(minutes=30))
    app = GitOpsApp.objects.get(name="checkout-prod")
    episode = Episode.objects.get(app=app)
    facts = {f["label"]: f["value"] for f in episode.payload["facts"]}
    assert facts["Since"] == utc_stamp(tool_time())
    assert datetime.fromisoformat(episode.payload["started_at"]) == tool_time()
    # The episode's key is still the portal's sight: the same on every pass and worker.
    assert episode.key.endswith(polled.astimezone(UTC).isoformat())

"""Clusters page: an admin creates an agent token for an agent cluster (shown once, kept as a
hash, audited) and revokes it; members and viewers do neither."""

from __future__ import annotations

import hashlib
import re

import pytest
from django.urls import reverse

from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog import agents
from portal.kernel.catalog.models import AgentToken, Cluster, Environment

pytestmark = pytest.mark.django_db


@pytest.fixture
def edge(db):
    prod = Environment.objects.create(name="prod", order=3, production=True)
    return Cluster.objects.create(name="edge-1", environment=prod, connection=Cluster.Connection.AGENT)


def test_an_admin_creates_a_token_shown_once_and_stored_only_as_its_hash(client, users, edge):
    client.force_login(users["admin"])
    page = client.post(reverse("cluster-agent-token", args=["edge-1"]))
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    token = re.search(r"<pre class=\"mono\" data-agent-token>(gpa_[^<]+)</pre>", page.content.decode()).group(1)
    row = AgentToken.objects.get()
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest() and token not in str(row.__dict__)
    assert "python manage.py agent --cluster edge-1 --portal http" in page.content.decode()
    assert agents.active(token) == row
    audit = AuditLog.objects.get(action="agent_token.created")
    assert audit.target == "edge-1" and token not in str(audit.details)
    listing = client.get(reverse("clusters")).content.decode()
    assert row.prefix in listing and token not in listing and "never used" in listing
    assert "Poll now" not in listing  # an agent cluster is never polled from the portal


def test_an_admin_revokes_a_token_and_it_stops_working(client, users, edge):
    row, token = agents.issue(edge, "ada")
    client.force_login(users["admin"])
    client.post(reverse("cluster-agent-token-revoke", args=["edge-1", row.id]))
    assert agents.active(token) is None
    assert AuditLog.objects.filter(action="agent_token.revoked", target="edge-1").exists()


def test_a_token_only_for_agent_clusters(client, users, edge):
    Cluster.objects.filter(pk=edge.pk).update(connection=Cluster.Connection.API)
    client.force_login(users["admin"])
    client.post(reverse("cluster-agent-token", args=["edge-1"]))
    assert not AgentToken.objects.exists()


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_create_no_token(client, users, edge, role):
    client.force_login(users[role])
    assert client.post(reverse("cluster-agent-token", args=["edge-1"])).status_code == 403
    assert not AgentToken.objects.exists()

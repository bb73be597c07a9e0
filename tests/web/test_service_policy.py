"""The version policy on the service page (portal.web.views.service, portal.delivery.policy_editing):
admins edit it with a live check and a preview of what it picks per environment; members and
viewers read it; every change is audited; the Django admin and the fleet file take the same JSON."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.delivery import policy_editing
from portal.delivery.models import ServicePolicy
from portal.kernel.audit.models import AuditLog
from portal.releases.models import Release
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

TAGS = ("1.6.0", "1.6.1", "1.7.0", "1.8.0-rc.1", "2.0.0")


@pytest.fixture
def fleet(catalog):
    now = timezone.now()
    for tag in TAGS:
        Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=now)
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    return catalog


def form_data(**overrides):
    data = {"accept": "any", "range": "", "allow_tags": "", "ignore_tags": "", "pr_reviewers": "", "pr_labels": "",
            "auto_pr__dev": "none", "auto_pr__staging": "none", "auto_pr__prod": "none"}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def login(client, users, role):
    client.force_login(users[role])
    return client


def test_an_admin_checks_previews_and_saves_a_policy(client, users, fleet):
    login(client, users, "admin")
    url = reverse("service", kwargs={"name": "checkout"})
    page = client.get(url).content.decode()
    assert 'id="policy-edit"' in page and "Save policy" in page
    # Saved policy (the default): 2.0.0 is the newest acceptable everywhere it runs.
    assert 'data-environment="dev" data-runs="1.6.0"' in page

    data = form_data(range=">=1.6 <2", auto_pr__dev="minor", pr_reviewers="alice, @acme-shop/platform",
                     pr_labels="dependencies")
    check = client.post(reverse("service-policy-check", kwargs={"name": "checkout"}), data, HTTP_HX_REQUEST="true")
    body = check.content.decode()
    assert check.status_code == 200 and "not saved yet" in body
    assert '<td class="mono newest">1.7.0</td>' in body and "automatic by policy" in body
    assert not ServicePolicy.objects.exists()  # a check saves nothing

    bad = client.post(reverse("service-policy-check", kwargs={"name": "checkout"}), form_data(range=">=1.6 <two"))
    assert "&#x27;&lt;two&#x27; in range" in bad.content.decode()

    saved = client.post(reverse("service-policy", kwargs={"name": "checkout"}), data)
    assert saved.status_code == 302 and saved["Location"].endswith("?policy=saved#policy")
    row = ServicePolicy.objects.get(service=fleet.checkout)
    assert row.document()["pr_reviewers"] == ["alice", "@acme-shop/platform"]
    assert row.auto_pr == {"dev": "minor"} and row.range == ">=1.6 <2" and row.labels == ["dependencies"]
    audit = AuditLog.objects.get(action=policy_editing.AUDIT_ACTION)
    assert audit.actor == users["admin"] and audit.details["via"] == "service page"
    assert audit.details["before"] is None and audit.details["after"]["auto_pr"] == {"dev": "minor"}
    assert set(audit.details["changed"]) >= {"range", "auto_pr", "pr_reviewers", "pr_labels"}

    # Saving the same again writes no second audit row; a change writes one with before and after.
    client.post(reverse("service-policy", kwargs={"name": "checkout"}), data)
    assert AuditLog.objects.filter(action=policy_editing.AUDIT_ACTION).count() == 1
    client.post(reverse("service-policy", kwargs={"name": "checkout"}), {**data, "pr_labels": "deps"})
    last = AuditLog.objects.filter(action=policy_editing.AUDIT_ACTION).first()
    assert last.details["changed"] == ["pr_labels"] and last.details["before"]["pr_labels"] == ["dependencies"]


def test_a_refused_save_keeps_what_was_typed_and_stores_nothing(client, users, fleet):
    login(client, users, "admin")
    response = client.post(reverse("service-policy", kwargs={"name": "checkout"}),
                           form_data(pr_reviewers="team:platform", range="^1.6"))
    assert response.status_code == 400
    body = response.content.decode()
    assert "neither a login nor a team as @org/team" in body and 'value="^1.6"' in body
    assert not ServicePolicy.objects.exists() and not AuditLog.objects.exists()
    unknown = client.post(reverse("service-policy", kwargs={"name": "checkout"}), form_data(auto_pr__qa="minor"))
    assert unknown.status_code == 302  # a field for no environment is not read
    with pytest.raises(Exception, match="no environment called 'qa'"):
        policy_editing.check({"auto_pr": {"qa": "minor"}})


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_read_the_policy_without_a_form(client, users, fleet, role):
    policy = policy_editing.check({"range": "^1.6", "pr_reviewers": ["alice"], "auto_pr": {"dev": "patch"}})
    policy_editing.save(fleet.checkout, policy, None, via="test")
    login(client, users, role)
    page = client.get(reverse("service", kwargs={"name": "checkout"})).content.decode()
    assert "Version policy" in page and "alice" in page and "dev: patch" in page
    assert 'id="policy-edit"' not in page and "Save policy" not in page
    assert '<td class="mono newest">1.7.0</td>' in page  # ^1.6 stops below 2.0.0
    for name in ("service-policy", "service-policy-check"):
        assert client.post(reverse(name, kwargs={"name": "checkout"}), form_data()).status_code == 403


def test_the_page_shows_the_json_document(client, users, fleet):
    ServicePolicy.objects.create(service=fleet.checkout, reviewers=["bob"], labels=["x"], allow_tags="^1\\.")
    login(client, users, "viewer")
    page = client.get(reverse("service", kwargs={"name": "checkout"})).content.decode()
    assert "&quot;pr_reviewers&quot;: [" in page and "&quot;allow_tags&quot;" in page
    assert json.loads(json.dumps(ServicePolicy.objects.get().document()))["allow_tags"] == ["^1\\."]


def test_the_django_admin_edits_the_same_json_checked_and_audited(client, users, fleet):
    from django.contrib.auth import get_user_model

    root = get_user_model().objects.create_superuser("root", password="pw-root")
    client.force_login(root)
    add = reverse("admin:delivery_servicepolicy_add")
    assert 'name="policy"' in client.get(add).content.decode()
    refused = client.post(add, {"service": fleet.checkout.pk, "policy": json.dumps({"pr_reviewers": ["a b"]})})
    assert refused.status_code == 200 and "neither a login nor a team" in refused.content.decode()
    doc = {"range": "^1.6", "pr_reviewers": ["alice", "@acme-shop/platform"], "pr_labels": ["deps"],
           "auto_pr": {"staging": "patch"}}
    done = client.post(add, {"service": fleet.checkout.pk, "policy": json.dumps(doc)})
    assert done.status_code == 302, done.content.decode()[:2000]
    row = ServicePolicy.objects.get(service=fleet.checkout)
    assert row.document()["pr_reviewers"] == ["alice", "@acme-shop/platform"] and row.auto_pr == {"staging": "patch"}
    audit = AuditLog.objects.get(action=policy_editing.AUDIT_ACTION)
    assert audit.details["via"] == "admin" and audit.actor == root
    change = client.get(reverse("admin:delivery_servicepolicy_change", args=[row.pk])).content.decode()
    assert "&quot;pr_labels&quot;: [&quot;deps&quot;]" in change
    # The older names still load.
    client.post(reverse("admin:delivery_servicepolicy_change", args=[row.pk]),
                {"policy": json.dumps({"reviewers": ["bob"], "labels": ["x"]})})
    row.refresh_from_db()
    assert row.reviewers == ["bob"] and row.labels == ["x"]


def test_the_fleet_file_sets_a_policy_with_the_same_keys(tmp_path, db):
    from portal.kernel.catalog.fleetfile import FleetFileError, load_fleet
    from portal.kernel.catalog.models import Service

    fleet = tmp_path / "fleet.yaml"
    text = """
environments:
  - {name: dev, order: 1}
  - {name: prod, order: 2, production: true}
services:
  - name: checkout
    image: ghcr.io/acme-shop/checkout
    team: checkout
    policy:
      accept: minor
      range: ">=1.4 <2"
      ignore_tags: ['-debug$']
      auto_pr: {dev: minor}
      pr_reviewers: [alice, "@acme-shop/platform"]
      pr_labels: [dependencies]
  - name: payments
    image: ghcr.io/acme-shop/payments
    team: payments
"""
    fleet.write_text(text)
    load_fleet(fleet)
    checkout = Service.objects.get(name="checkout")
    doc = ServicePolicy.document_of(checkout)
    assert doc["pr_reviewers"] == ["alice", "@acme-shop/platform"] and doc["auto_pr"] == {"dev": "minor"}
    assert doc["ignore_tags"] == ["-debug$"] and doc["accept"] == "minor"
    assert not ServicePolicy.objects.filter(service__name="payments").exists()
    assert AuditLog.objects.get(action=policy_editing.AUDIT_ACTION).details["via"] == "fleet file"
    load_fleet(fleet)  # idempotent: nothing changed, nothing audited again
    assert AuditLog.objects.filter(action=policy_editing.AUDIT_ACTION).count() == 1

    fleet.write_text(text.replace("auto_pr: {dev: minor}", "auto_pr: {qa: minor}"))
    with pytest.raises(FleetFileError, match="service 'checkout': auto_pr names no environment called 'qa'"):
        load_fleet(fleet)
    assert ServicePolicy.document_of(checkout)["auto_pr"] == {"dev": "minor"}  # the file was refused whole


def test_the_api_field_shows_the_document(fleet):
    from rest_framework import serializers

    from portal.api.serializers.api_fields import VersionPolicyField

    class ServiceSerializer(serializers.Serializer):
        name = serializers.CharField()
        policy = VersionPolicyField()

    assert ServiceSerializer(fleet.checkout).data["policy"]["pr_reviewers"] == []
    checked = policy_editing.check({"pr_reviewers": ["alice"], "auto_pr": {"dev": "patch"}})
    policy_editing.save(fleet.checkout, checked, None, "t")
    fleet.checkout.refresh_from_db()
    data = ServiceSerializer(type(fleet.checkout).objects.select_related("version_policy").get(name="checkout")).data
    assert data["policy"]["pr_reviewers"] == ["alice"] and data["policy"]["auto_pr"] == {"dev": "patch"}
    assert ServiceSerializer().fields["policy"].read_only


def test_a_policy_url_opened_with_get_changes_nothing(client, users, fleet):
    login(client, users, "admin")
    for name in ("service-policy", "service-policy-check"):
        response = client.get(reverse(name, kwargs={"name": "checkout"}))
        assert response.status_code == 302 and response["Location"] == "/services/checkout#policy"
    assert not ServicePolicy.objects.exists()

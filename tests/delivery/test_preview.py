"""The PR preview page and opening it, against the GitHub fake over real HTTP: the exact diff,
branch, title, description and warnings; viewers see no button and get 403; members open once."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.delivery.change_builders import change_for_rollback, change_for_upgrade
from portal.delivery.change_previews import open_change, preview_change
from portal.delivery.models import ChangeFreeze, PullRequest
from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog.models import Service
from tests.fakes.forges.harness import FILES, serving
from tests.fixtures.seed import seed_app, seed_pin

# Opening through the page queues a job; here it runs in the request (these tests are not about the job).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

PROD = "apps/checkout/overlays/prod"
BRANCH = "portal/checkout-1.7.0-prod"


@pytest.fixture
def github(monkeypatch):
    files = dict(FILES)
    files[f"{PROD}/payments.yaml"] = "image:\n  repository: ghcr.io/acme/payments\n  tag: 3.0.0\n"
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.fixture
def app(catalog, github):
    return seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                    repo_url=github.repository, path=PROD)


def preview_url(app, to="1.7.0", service="checkout", kind="upgrade") -> str:
    return reverse("pr-preview") + "?" + urlencode({"kind": kind, "service": service, "app": app.pk, "to": to})


def test_the_preview_shows_files_changed_lines_branch_title_and_description(client, users, app, github):
    client.force_login(users["viewer"])
    response = client.get(preview_url(app))
    html = response.content.decode()

    assert response.status_code == 200
    assert "Update checkout to 1.7.0 in prod" in html
    assert BRANCH in html and "Into branch" in html
    assert f"{PROD}/kustomization.yaml" in html and f"{PROD}/values.yaml" in html
    assert '-    newTag: &quot;1.6.0&quot; # bumped by the portal' in html
    assert '+    newTag: &quot;1.7.0&quot; # bumped by the portal' in html
    assert "line 7" in html and "line 4" in html
    assert "**What**: update `ghcr.io/acme/checkout` from `1.6.0` to `1.7.0`" in html
    assert f"Pinned by digest, left for a person: {PROD}/migrations.yaml line 8" in html
    # A viewer sees the preview and no button; the preview wrote nothing.
    assert "Open pull request" not in html and "needs the member role" in html
    assert {method for method, _path, _status in github.server.log} == {"GET"}


def test_a_viewer_gets_403_on_open_and_nothing_is_written(client, users, app, github):
    client.force_login(users["viewer"])
    response = client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:checkout:1.7.0"})
    assert response.status_code == 403
    assert github.model.pulls == [] and not PullRequest.objects.exists()


def test_a_member_opens_the_pull_request_once(client, users, app, github):
    client.force_login(users["member"])
    assert "Open pull request" in client.get(preview_url(app)).content.decode()

    response = client.post(reverse("pr-open"), {"kind": "upgrade", "mode": "grouped",
                                                "item": f"{app.pk}:checkout:1.7.0"})

    row = PullRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("pr-opened") + f"?id={row.pk}"
    assert row.state == "open" and row.branch == BRANCH and row.opened_by == users["member"]
    assert not row.automatic and row.services == ["checkout"] and row.to_version == "1.7.0"
    [pull] = github.model.pulls
    assert pull.title == "Update checkout to 1.7.0 in prod" and pull.head == BRANCH
    assert github.model.files_at(BRANCH)[f"{PROD}/values.yaml"].count("tag: 1.7.0") == 1
    audit = AuditLog.objects.get(action="pull_request.opened")
    assert audit.actor_name == "member" and audit.details["to_version"] == "1.7.0"

    page = client.get(response["Location"]).content.decode()
    assert f"#{pull.number} Update checkout to 1.7.0 in prod" in page and row.url in page

    # A second click links the same pull request instead of opening another.
    client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:checkout:1.7.0"})
    assert len(github.model.pulls) == 1 and PullRequest.objects.count() == 1


def test_the_preview_starts_from_what_git_pins(app, catalog, github):
    seed_pin(app, catalog.checkout, "1.6.0", path=f"{PROD}/values.yaml", line=4)
    app.running = {"checkout": ["1.5.0"]}
    app.save()
    change = change_for_upgrade(app, catalog.checkout, "1.7.0")
    assert change.from_version == "1.6.0"
    assert preview_change(change).can_open


def test_a_freeze_warns_first_and_the_pull_request_says_so(client, users, app, catalog, github):
    now = timezone.now()
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(days=1),
                                         reason="quarter close")
    freeze.environments.add(catalog.prod)
    client.force_login(users["member"])
    html = client.get(preview_url(app)).content.decode()
    assert "A change freeze is in effect until" in html and "quarter close" in html

    client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:checkout:1.7.0"})
    [pull] = github.model.pulls
    assert "**Note**: A change freeze is in effect" in pull.body and "quarter close" in pull.body
    assert "opened by hand during the freeze" in pull.body


def test_a_freeze_of_another_environment_says_nothing(app, catalog):
    now = timezone.now()
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(days=1),
                                         reason="dev rebuild")
    freeze.environments.add(catalog.dev)
    assert preview_change(change_for_upgrade(app, catalog.checkout, "1.7.0")).warnings == [
        f"Pinned by digest, left for a person: {PROD}/migrations.yaml line 8"
    ]


def test_a_rollback_carries_no_freeze_note(app, catalog, github):
    now = timezone.now()
    ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(days=1), reason="freeze")
    change = change_for_rollback(app, catalog.checkout, "1.5.0", from_version="1.6.0", failure="crash loop",
                                 failing_since=now - timedelta(minutes=30))
    delivery = preview_change(change)
    assert not any("freeze" in w for w in delivery.warnings)
    assert "freeze" not in delivery.preview.description
    assert "crash loop" in delivery.preview.description


def test_sync_window_and_manual_sync_warnings(client, users, app, github):
    app.sync_blocked = True
    app.sync_blocked_until = timezone.now() + timedelta(hours=3)
    app.manual_sync = True
    app.save()
    client.force_login(users["member"])
    html = client.get(preview_url(app)).content.decode()
    assert "A sync window holds checkout-prod on prod-eu-1 until" in html
    assert "synced by hand: merging does not deploy it" in html

    client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:checkout:1.7.0"})
    [pull] = github.model.pulls
    assert "merging does not deploy it" in pull.body


def test_ticked_services_make_one_pull_request_per_repository_branch_and_environment(
    client, users, app, catalog, github
):
    payments = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0",
                        repo_url=github.repository, path=PROD)
    client.force_login(users["member"])
    items = [f"{app.pk}:checkout:1.7.0", f"{payments.pk}:payments:3.1.0"]
    url = reverse("pr-preview") + "?" + urlencode([("kind", "upgrade"), ("mode", "grouped")]
                                                   + [("item", i) for i in items])
    html = client.get(url).content.decode()
    assert "Update checkout to 1.7.0, payments to 3.1.0 in prod" in html
    assert html.count('class="panel preview"') == 1

    client.post(reverse("pr-open"), {"kind": "upgrade", "mode": "grouped", "item": items})
    [pull] = github.model.pulls
    assert "- checkout (`ghcr.io/acme/checkout`): `1.6.0` → `1.7.0`" in pull.body
    assert "- payments (`ghcr.io/acme/payments`): `3.0.0` → `3.1.0`" in pull.body
    files = github.model.files_at(pull.head)
    assert "tag: 3.1.0" in files[f"{PROD}/payments.yaml"] and "tag: 1.7.0" in files[f"{PROD}/values.yaml"]
    row = PullRequest.objects.get()
    assert row.services == ["checkout", "payments"] and row.to_version == "1.7.0,3.1.0"


def test_ticked_services_one_pull_request_each(client, users, app, catalog, github):
    payments = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0",
                        repo_url=github.repository, path=PROD)
    client.force_login(users["member"])
    client.post(reverse("pr-open"), {"kind": "upgrade", "mode": "each",
                                     "item": [f"{app.pk}:checkout:1.7.0", f"{payments.pk}:payments:3.1.0"]})
    assert sorted(p.title for p in github.model.pulls) == [
        "Update checkout to 1.7.0 in prod", "Update payments to 3.1.0 in prod"]
    assert PullRequest.objects.count() == 2


def test_a_change_no_file_pins_cannot_be_opened(client, users, app, github):
    client.force_login(users["member"])
    app.running = {"checkout": ["1.2.0"]}
    app.save()
    html = client.get(preview_url(app)).content.decode()
    assert "is pinned at 1.6.0, not at 1.2.0" in html and "Nothing here can be opened" in html


def test_a_bad_request_is_400(client, users, app):
    client.force_login(users["viewer"])
    assert client.get(reverse("pr-preview") + "?kind=upgrade&service=checkout&app=x&to=1").status_code == 400
    assert client.get(reverse("pr-preview") + "?kind=merge&service=checkout&app=1&to=1").status_code == 400
    assert client.get(preview_url(app, service="nope")).status_code == 400


def test_opening_as_system_signs_nobody(app, catalog, github):
    result = open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), None, automatic=True)
    assert result.ok, result.message
    assert AuditLog.objects.get(action="pull_request.opened").actor_name == "system"
    assert "**Automatic**" in github.model.pulls[0].body


def test_demo_mode_disables_the_button_with_a_message(client, users, catalog, settings, tmp_path: Path):
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    shop = Service.objects.create(name="shop-checkout", image_repository="ghcr.io/acme-shop/checkout")
    app = seed_app(catalog.dev_cluster, "checkout-dev", service=shop, version="3.4.0",
                   repo_url="https://github.com/acme-shop/gitops.git", path="apps/checkout/overlays/dev")
    client.force_login(users["member"])
    html = client.get(preview_url(app, to="3.5.0", service="shop-checkout")).content.decode()
    assert '+    newTag: &quot;3.5.0&quot;' in html
    assert "disabled" in html and "The demo portal does not open pull requests" in html

    client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:shop-checkout:3.5.0"})
    assert not PullRequest.objects.exists()
    assert AuditLog.objects.get().action == "pull_request.refused"


def test_a_suspended_flux_object_is_said_suspended_not_held_by_a_window(app, catalog):
    # As the Flux collector stores a Kustomization with spec.suspend: true (gitops.windowstate).
    app.tool, app.kind, app.suspended = "flux", "Kustomization", True
    app.sync_blocked, app.sync_blocked_until, app.sync_window = True, None, {"kind": "suspend"}
    app.save()
    delivery = preview_change(change_for_upgrade(app, catalog.checkout, "1.7.0"))
    assert "checkout-prod on prod-eu-1 is suspended, deploys once resumed: merging will not deploy it yet." in (
        delivery.warnings)
    assert not any("sync window" in w for w in delivery.warnings)
    assert "suspended, deploys once resumed" in delivery.preview.description

"""Each kind of alert, built from the store by the real builders and rendered through Slack,
Teams, e-mail and ntfy (sent to local receivers), carries its action links; following each of
the portal's links with the Django test client opens the right page (the rollback's preview
for "Rollback PR → X", the service page, Delivery). The "Send test" samples are worded the same
way, so they carry the same buttons."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from email.header import decode_header, make_header
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core import mail
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from gitops.models import GitOpsApp, VersionChange
from portal.delivery.deployments import Progress, Waiting
from portal.delivery.models import PullRequest
from portal.delivery.rollbacks import offers_for_apps
from portal.kernel.timestamps import utc_stamp
from portal.notifications import delivery_events
from portal.notifications.channels import Email, Ntfy, Slack, Teams
from portal.notifications.gitops_events import build_event
from portal.notifications.models import Channel
from portal.notifications.samples import MADE_UP, SAMPLE_NAMES, sample
from portal.notifications.senders import sample_event, send_test
from portal.notifications.statechanges import emit_gitops_events
from portal.settingvalues import base_url_of_address
from tests.fakes.forges.harness import FILES, PROD, serving
from tests.fakes.receivers import HttpReceiver
from tests.fixtures.seed import seed_app, seed_pin
from tests.notifications.store_rows import write_store_rows

pytestmark = pytest.mark.django_db
BASE = "https://portal.example.com"
ARGOCD = "https://argocd.example.com"


@pytest.fixture
def github(monkeypatch):
    # Git pins 1.7.0 in prod: what runs there after the upgrade the rollback undoes.
    files = {path: text.replace("1.6.0", "1.7.0") if path.startswith(PROD) else text for path, text in FILES.items()}
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.fixture
def receiver():
    with HttpReceiver() as server:
        yield server


@pytest.fixture(autouse=True)
def urls():
    with override_settings(PORTAL_BASE_URL=BASE, PORTAL_ARGOCD_URL=ARGOCD,
                           EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"):
        yield


def _degraded(catalog, github):
    now = timezone.now()
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.7.0", health="Degraded",
                   since=timedelta(minutes=20), repo_url=github.repository, path=PROD,
                   health_message="Deployment checkout exceeded its progress deadline")
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.prod, cluster=catalog.prod_eu, app=app,
                                 from_version="1.6.0", to_version="1.7.0", at=now - timedelta(minutes=40))
    return build_event(app, app.health_since, now), ("Rollback PR → 1.6.0", "Open in portal")


def _out_of_sync_manual(catalog, github):
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0", sync="OutOfSync",
                   since=timedelta(minutes=20), repo_url=github.repository, path=PROD, manual_sync=True)
    seed_pin(app, catalog.checkout, "1.7.0", path=f"{PROD}/values.yaml", line=4)
    return build_event(app, app.sync_since, timezone.now()), ("Sync in Argo CD", "Open in portal")


def _suspended(catalog, github):
    app = seed_app(catalog.prod_us, "checkout", service=catalog.checkout, version="1.6.0", tool="flux",
                   sync="OutOfSync", since=timedelta(minutes=20), repo_url=github.repository, path=PROD,
                   suspended=True)
    return build_event(app, app.sync_since, timezone.now()), ("Open in portal",)


def _pull_request(catalog, github, **fields) -> PullRequest:
    now = timezone.now()
    values = dict(kind="upgrade", services=["checkout"], environment="prod", image="ghcr.io/acme/checkout",
                  from_version="1.6.0", to_version="1.7.0", repository=github.repository, number=7,
                  branch="portal/checkout-1.7.0-prod", url=f"{github.server.url}/acme/gitops/pull/7",
                  title="Update checkout to 1.7.0 in prod", state="open", checks="fail", opened_at=now,
                  checks_failed_notified_at=now, forge_kind="github")
    values.update(fields)
    return PullRequest.objects.create(**values)


def _checks_failed(catalog, github):
    return delivery_events.checks_failed_event(_pull_request(catalog, github)), ("Pull request", "Delivery")


def _merged_not_deployed(catalog, github):
    pr = _pull_request(catalog, github, state="merged", merged_at=timezone.now() - timedelta(hours=2), checks="pass")
    progress = Progress(targets=["prod-eu-1"], waiting=[Waiting("prod-eu-1", "a sync window holds it")])
    return delivery_events.not_deployed_event(pr, progress, timezone.now()), ("Delivery", "Pull request")


def _rollback_offered(catalog, github):
    _degraded(catalog, github)
    app = GitOpsApp.objects.select_related("cluster__environment").get(name="checkout-prod")
    [offer] = offers_for_apps([app])[app.pk]
    return delivery_events.rollback_event(offer), ("Preview rollback PR", "Service")


KINDS = {
    "degraded": _degraded,
    "out_of_sync_manual": _out_of_sync_manual,
    "suspended": _suspended,
    "pr_checks_failed": _checks_failed,
    "merged_not_deployed": _merged_not_deployed,
    "rollback_offered": _rollback_offered,
}


def rendered_links(kind: str, channel: Channel, event, receiver) -> dict[str, str]:
    """label -> URL as the channel's message carries them."""
    if kind == Channel.Kind.EMAIL:
        mail.outbox.clear()
        Email(channel).notify(event)
        [message] = mail.outbox
        html = message.alternatives[0][0]
        anchors = re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', html)
        found = {unescape(label): unescape(url) for url, label in anchors}
        for label, url in found.items():
            assert f"{label}: {url}" in message.body  # the plain-text part carries them too
        return found
    before = len(receiver.requests)
    {Channel.Kind.SLACK: Slack, Channel.Kind.TEAMS: Teams, Channel.Kind.NTFY: Ntfy}[kind](channel).notify(event)
    [request] = receiver.requests[before:]
    if kind == Channel.Kind.SLACK:
        [actions] = [b for b in request.json()["blocks"] if b["type"] == "actions"]
        return {e["text"]["text"]: e["url"] for e in actions["elements"]}
    if kind == Channel.Kind.TEAMS:
        card = request.json()["attachments"][0]["content"]
        return {a["title"]: a["url"] for a in card["actions"]}
    header = request.headers["Actions"]
    assert request.headers["Click"] == event.action_url
    decoded = str(make_header(decode_header(header)))
    return {label: url for label, url in re.findall(r'view, "([^"]+)", (\S+?)(?:;|$)', decoded)}


def follow(client, url: str):
    assert url.startswith(BASE), url
    parts = urlsplit(url)
    return client.get(parts.path + (f"?{parts.query}" if parts.query else ""))


@pytest.mark.parametrize("alert", list(KINDS))
def test_each_alert_carries_its_action_links_on_every_channel_and_they_open_the_right_page(
    alert, catalog, github, receiver, client, users, eager_celery
):
    # eager_celery: a preview the link opens is read by its forge-queue task at once (preview_jobs).
    event, expected = KINDS[alert](catalog, github)
    assert [link.label for link in event.links][: len(expected)] == list(expected)
    channels = {
        Channel.Kind.SLACK: Channel(name="s", kind=Channel.Kind.SLACK, url=receiver.url("/slack")),
        Channel.Kind.TEAMS: Channel(name="t", kind=Channel.Kind.TEAMS, url=receiver.url("/teams")),
        Channel.Kind.EMAIL: Channel(name="e", kind=Channel.Kind.EMAIL, recipients="ops@example.com"),
        Channel.Kind.NTFY: Channel(name="n", kind=Channel.Kind.NTFY, url=receiver.url("/deploys")),
    }
    wanted = {link.label: link.url for link in event.links}
    for kind, channel in channels.items():
        got = rendered_links(kind, channel, event, receiver)
        for label in expected:
            assert got.get(label) == wanted[label], (kind, label, got)

    for label, url in wanted.items():
        if url.startswith(BASE):  # anonymous: sent to log in first
            response = follow(client, url)
            assert response.status_code == 302 and response["Location"].startswith(reverse("login")), (label, url)
    client.force_login(users["viewer"])
    for label, url in wanted.items():
        if not url.startswith(BASE):
            continue
        response = follow(client, url)
        assert response.status_code == 200, (label, url)
        page = response.content.decode()
        if label.startswith("Rollback PR") or label == "Preview rollback PR":
            assert "Roll back checkout to 1.6.0 in prod" in page  # the rollback's preview, its title
            assert f"{PROD}/values.yaml" in page
        elif label in ("Open in portal", "Service"):
            assert "<h1>checkout</h1>" in page
        elif label == "Delivery":
            assert response.resolver_match.url_name == "delivery"


def test_the_alert_words_say_the_fix(catalog, github):
    degraded, _ = _degraded(catalog, github)
    assert degraded.summary == "Degraded on prod-eu-1, 20 minutes after 1.7.0 replaced 1.6.0"
    assert degraded.details["rollback"]["to"] == "1.6.0"


def test_out_of_sync_says_git_pins_and_who_must_sync(catalog, github):
    event, _ = _out_of_sync_manual(catalog, github)
    assert event.summary.startswith("Argo CD waits for someone to sync it")
    assert ("Git", "Git pins 1.7.0, runs 1.6.0") in event.facts
    assert event.links[0].url == f"{ARGOCD}/applications/argocd/checkout-prod"


def test_a_suspended_flux_object_is_said_suspended(catalog, github):
    event, _ = _suspended(catalog, github)
    assert "suspended, deploys once resumed" in event.summary
    assert "sync window" not in event.summary


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_send_test_sends_each_sample_as_the_real_alert_looks_on_ntfy(name, receiver, db):
    channel = Channel.objects.create(name="phones", kind=Channel.Kind.NTFY, url=receiver.url("/deploys"),
                                     secret="tk_" + "x" * 29)
    assert send_test(channel, sample=name) is None
    [request] = receiver.requests
    assert request.path == "/deploys"
    title = str(make_header(decode_header(request.headers["Title"])))
    assert title.startswith("[Test] ")
    assert request.headers["Authorization"] == "Bearer tk_" + "x" * 29
    assert request.headers["Priority"] == "4"
    if sample(name, timezone.now()).links:
        assert str(make_header(decode_header(request.headers["Actions"]))).startswith("view, ")
    else:  # a made-up rollback offer (a fresh install has none): no button that would open an error
        assert name == "rollback_offered" and "Actions" not in request.headers
    assert request.body.decode().strip()


def test_the_send_test_button_sends_the_chosen_alert(receiver, admin_client, catalog, github, eager_celery):
    _degraded(catalog, github)
    app = GitOpsApp.objects.get(name="checkout-prod")
    channel = Channel.objects.create(name="ops", kind=Channel.Kind.SLACK, url=receiver.url("/slack"))
    page = admin_client.get(reverse("notifications")).content.decode()
    assert 'name="sample"' in page and "Degraded (with a rollback, if one is on offer)" in page
    response = admin_client.post(reverse("notification-channel-test"), {"id": channel.pk, "sample": "degraded"},
                                 follow=True)
    assert "Test degraded (with a rollback, if one is on offer) sent to" in response.content.decode()
    [request] = receiver.requests
    blocks = request.json()["blocks"]
    assert blocks[0]["text"]["text"] == "[Test] checkout-prod is Degraded on prod-eu-1"
    [actions] = [b for b in blocks if b["type"] == "actions"]
    assert actions["elements"][0]["text"]["text"] == "Rollback PR → 1.6.0"
    # The fleet's own degraded app and its offer: the button names that app, and opens its preview.
    rollback = actions["elements"][0]["url"]
    assert f"item={app.pk}%3Acheckout%3A1.6.0%3A1.7.0" in rollback
    assert "Roll back checkout to 1.6.0 in prod" in follow(admin_client, rollback).content.decode()
    assert admin_client.post(reverse("notification-channel-test"), {"id": channel.pk, "sample": "nope"}).status_code \
        == 404


def test_ntfy_headers_are_what_ntfy_reads(receiver, db):
    channel = Channel(name="n", kind=Channel.Kind.NTFY, url=receiver.url("/deploys"))
    event = delivery_events.rollback_event(offers_sample())
    Ntfy(channel).notify(event)
    [request] = receiver.requests
    # "→" is no latin-1: RFC 2047, which ntfy decodes.
    assert request.headers["Title"].startswith("=?UTF-8?B?")
    assert str(make_header(decode_header(request.headers["Title"]))) == event.title
    assert request.headers["Click"] == event.links[0].url and "Authorization" not in request.headers
    assert request.headers["Content-Type"] == "text/plain; charset=utf-8"
    body = request.body.decode()
    assert body.startswith(event.summary) and "Roll back to: 1.6.0" in body


def offers_sample():
    from portal.notifications.samples import _made_up_offer

    return _made_up_offer(timezone.now())


def portal_links(event) -> list[tuple[str, str]]:
    return [(link.label, link.url) for link in event.links if link.url.startswith(BASE)]


def assert_every_link_opens(client, user, event) -> None:
    """Anonymous, each portal link of `event` sends to the login page; logged in, it opens."""
    client.logout()
    for label, url in portal_links(event):
        response = follow(client, url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), (label, url)
    client.force_login(user)
    for label, url in portal_links(event):
        assert follow(client, url).status_code == 200, (event.kind, label, url)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_a_sample_on_a_fresh_install_carries_only_links_that_open(name, client, users):
    event = sample(name, timezone.now())
    # Worded from made-up rows: no preview of a rollback of an app that does not exist, no
    # made-up commit, pull request or Argo CD link; only portal pages that name no row.
    assert all(link.url.startswith(BASE) for link in event.links), event.links
    assert not any("kind=rollback" in link.url for link in event.links)
    assert ("Sample", MADE_UP) in event.facts
    assert_every_link_opens(client, users["viewer"], event)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_a_sample_is_built_from_the_fleet_and_every_link_opens(name, catalog, github, client, users):
    _degraded(catalog, github)
    seed_app(catalog.prod_us, "checkout", service=catalog.checkout, version="1.6.0", tool="flux",
             repo_url=github.repository, path=PROD)
    _pull_request(catalog, github)
    _pull_request(catalog, github, state="merged", number=8, branch="portal/checkout-1.6.1-prod", checks="pass",
                  merged_at=timezone.now() - timedelta(hours=2), url=f"{github.server.url}/acme/gitops/pull/8")
    event = sample(name, timezone.now())
    assert ("Sample", MADE_UP) not in event.facts
    assert event.links and portal_links(event)
    assert_every_link_opens(client, users["viewer"], event)
    app = GitOpsApp.objects.get(name="checkout-prod")
    if name in ("degraded", "rollback_offered"):  # the fleet's own offer, with its real ids
        assert f"item={app.pk}%3Acheckout%3A1.6.0%3A" in event.links[0].url
    if name == "pr_checks_failed":
        assert ("Pull request", f"{github.server.url}/acme/gitops/pull/7") in [(x.label, x.url) for x in event.links]


@pytest.mark.parametrize(("address", "url"), [
    ("127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("8080", "http://127.0.0.1:8080"),
    ("0.0.0.0:9000", "http://127.0.0.1:9000"),
    ("0:9000", "http://127.0.0.1:9000"),
    ("[::]:8000", "http://[::1]:8000"),
    ("portal.lan:8443", "http://portal.lan:8443"),
    ("portal.lan", "http://portal.lan:8000"),
])
def test_the_embedded_runs_base_url_is_where_it_serves(address, url):
    assert base_url_of_address(address) == url


def test_without_portal_base_url_the_settings_derive_it_from_portal_address():
    code = "from django.conf import settings; print(settings.PORTAL_BASE_URL)"
    env = {k: v for k, v in os.environ.items() if k != "PORTAL_BASE_URL"}
    env.update(PORTAL_ADDRESS="0.0.0.0:8765", DJANGO_SETTINGS_MODULE="portal.settings")
    out = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], env=env, check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]).stdout
    assert out.strip() == "http://127.0.0.1:8765"
    env["PORTAL_BASE_URL"] = "https://portal.example.com/"
    out = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], env=env, check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]).stdout
    assert out.strip() == "https://portal.example.com"


def test_an_alert_for_an_app_a_sync_window_holds_says_until_when(catalog, github):
    now = timezone.now()
    until = now + timedelta(hours=5)
    app = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, sync="OutOfSync",
                   since=timedelta(minutes=20), sync_blocked=True, sync_blocked_until=until,
                   sync_window={"kind": "deny", "description": "weekend freeze", "schedule": "0 18 * * 5"})
    event = build_event(app, app.sync_since, now)
    words = f"a sync window 'weekend freeze' holds payments-prod on prod-eu-1 until {utc_stamp(until)}"
    assert ("Sync window", words) in event.facts
    assert event.summary == words[:1].upper() + words[1:]  # why Git's change waits: it leads
    # Once the window has closed (the stored end has passed), the alert no longer says it.
    assert not any(label == "Sync window" for label, _ in build_event(app, app.sync_since, until).facts)


def test_a_window_with_no_end_is_said_so_and_a_degraded_app_keeps_its_cause_first(catalog, github):
    event, _ = _degraded(catalog, github)
    app = GitOpsApp.objects.select_related("cluster__environment").get(name="checkout-prod")
    app.sync_blocked, app.sync_window = True, {"kind": "deny", "schedule": "0 0 * * *", "duration": "24h"}
    app.save()
    held = build_event(app, app.health_since, timezone.now())
    words = "a sync window '0 0 * * *' holds checkout-prod on prod-eu-1 with no end in sight"
    assert ("Sync window", words) in held.facts and held.causes[-1] == words
    assert held.summary == event.summary  # the change that broke it still leads


def test_every_alert_the_portal_would_send_now_opens_every_link(catalog, github, client, users):
    """A small fleet as the store wrote it (the StateChange rows too), the notification pass as
    beat runs it, then every alert it opened, the delivery alerts and the plain test message:
    each portal link sends an anonymous visitor to log in and opens for a viewer."""
    now = timezone.now()
    old = timedelta(minutes=40)
    first_seen = now - timedelta(days=2)
    degraded = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.7.0",
                        health="Degraded", since=timedelta(minutes=20), repo_url=github.repository, path=PROD,
                        first_seen=first_seen, previous_synced_revision="9a8b7c6d5e4f30211223344556677889900aabbc",
                        revision_changed_at=now - old)
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.prod, cluster=catalog.prod_eu,
                                 app=degraded, from_version="1.6.0", to_version="1.7.0", at=now - old)
    write_store_rows(degraded)
    write_store_rows(seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout,
                              sync="OutOfSync", since=timedelta(minutes=20), manual_sync=True, first_seen=first_seen))
    write_store_rows(seed_app(catalog.prod_us, "payments", service=catalog.payments, tool="flux", sync="OutOfSync",
                              since=timedelta(minutes=20), suspended=True, first_seen=first_seen))
    write_store_rows(seed_app(catalog.prod_us, "payments-prod", service=catalog.payments, sync="OutOfSync",
                              since=timedelta(minutes=20), sync_blocked=True, first_seen=first_seen,
                              sync_window={"kind": "deny", "description": "weekend freeze"}))
    opened = emit_gitops_events(now)
    events = [episode.event for episode in opened]
    assert sorted(e.title for e in events) == [
        "checkout-prod is Degraded on prod-eu-1", "checkout-staging is OutOfSync on staging-eu-1",
        "payments is OutOfSync on prod-us-1", "payments-prod is OutOfSync on prod-us-1"]
    events.append(_checks_failed(catalog, github)[0])
    merged = _pull_request(catalog, github, state="merged", number=8, branch="portal/checkout-1.6.1-prod",
                           merged_at=now - timedelta(hours=2), checks="pass")
    progress = Progress(targets=["prod-eu-1"], waiting=[Waiting("prod-eu-1", "a sync window holds it")])
    events.append(delivery_events.not_deployed_event(merged, progress, now))
    [offer] = offers_for_apps([GitOpsApp.objects.select_related("cluster__environment").get(pk=degraded.pk)])[
        degraded.pk]
    events.append(delivery_events.rollback_event(offer))
    events.append(sample_event(Channel.objects.create(name="ops", kind=Channel.Kind.WEBHOOK), now))
    labels = set()
    for event in events:
        assert portal_links(event), event.title
        assert_every_link_opens(client, users["viewer"], event)
        labels |= {label for label, _ in portal_links(event)}
    assert labels >= {"Rollback PR → 1.6.0", "Open in portal", "Delivery", "Preview rollback PR", "Service",
                      "Open notifications"}
    held = next(e for e in events if e.title.startswith("payments-prod"))
    assert ("Sync window", "a sync window 'weekend freeze' holds payments-prod on prod-us-1 with no end in sight") \
        in held.facts
    changes = next(e for e in events if e.title.startswith("checkout-prod")).details["revision"]["changes_url"]
    assert changes.endswith("/compare/9a8b7c6d5e4f30211223344556677889900aabbc..." + degraded.synced_revision)

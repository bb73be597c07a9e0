"""A health disagreement is an alert like any trouble, through the real poll: the official client
over HTTP against the Kubernetes API emulator serving a Flux Kustomization and the DecisionModel
it deploys, with no health rule anywhere (the tool's blind spot, gitops.health.blindspot).

- the DecisionModel going RolledBack opens one episode once the grace period has passed: the
  webhook receiver gets one signed message whose summary is the disagreement's sentence and
  whose action link is the app's page (where the suggested rule is), e-mail says the same;
- going Ready again ends it: the channels that edit their message (Discord, the Slack app) say
  it recovered; Slack's and Teams' webhooks and ntfy carry the sentence as well;
- a disabled rule, or one routed to another cluster, sends nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.test import override_settings
from slack_sdk import WebClient

from gitops.models import GitOpsApp, StateChange
from portal.kernel.catalog.models import Cluster, Environment
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Episode, Rule, Trouble
from portal.notifications.senders import scan_and_send
from tests.fakes.chat_apis import DiscordWebhook, SlackWebAPI
from tests.fakes.receivers import HttpReceiver
from tests.gitops.test_health_rules_poll import TOKEN_ENV, flux_kustomization, model_for, serve
from tests.notifications.test_slack_app import CONVERSATION, TOKEN, texts_of

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
SENTENCE = "Flux says healthy, but DecisionModel dm-ready reports RolledBack: candidate failed the gate"
APP_PAGE = "http://127.0.0.1:8000/gitops?cluster=prod-1&q=ks-dm-ready"


@pytest.fixture
def cluster(kube_emulator, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    prod = Environment.objects.create(name="prod", order=3, production=True)
    return Cluster.objects.create(
        name="prod-1",
        environment=prod,
        connection=Cluster.Connection.API,
        api_url=kube_emulator.url,
        token_env=TOKEN_ENV,
    )


@pytest.fixture
def receiver():
    with HttpReceiver() as server:
        yield server


def webhook_rule(receiver: HttpReceiver, **routing) -> Rule:
    channel = Channel.objects.create(
        name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url("/portal-events"), secret="whsec-test"
    )
    return Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION], channel=channel, **routing)


def poll_at(cluster: Cluster, at: datetime) -> None:
    from gitops.polling import poll

    report = poll(Cluster.objects.select_related("environment").get(pk=cluster.pk), at=at)
    assert report.ok, report.error


def set_phase(kube_emulator, phase: str) -> None:
    obj = model_for("Ready")  # dm-ready, deployed by ks-dm-ready
    obj["status"] = model_for(phase)["status"]
    kube_emulator.add(obj)  # a new resourceVersion: the next poll reads it


def roll_back(cluster: Cluster, kube_emulator) -> datetime:
    """Ready at T0, RolledBack at the poll a minute later; returns that poll's time."""
    serve(kube_emulator, [model_for("Ready"), flux_kustomization("Ready", with_rule=False)])
    poll_at(cluster, T0)
    assert GitOpsApp.objects.get(name="ks-dm-ready").health_disagreement == ""
    set_phase(kube_emulator, "RolledBack")
    seen = T0 + timedelta(minutes=1)
    poll_at(cluster, seen)
    app = GitOpsApp.objects.get(name="ks-dm-ready")
    # Flux calls it healthy (a Kustomization has no sync status of Argo CD's kind): only the disagreement is news.
    assert (app.health_status, app.sync_status, app.health_disagreement) == ("Healthy", "Unknown", SENTENCE)
    return seen


def test_a_rolled_back_decision_model_alerts_once_past_the_grace_period_and_resolves(cluster, kube_emulator, receiver):
    webhook_rule(receiver)
    with DiscordWebhook() as discord:
        editing = Channel.objects.create(name="ops-discord", kind=Channel.Kind.DISCORD, url=discord.url)
        Rule.objects.create(name="discord", kinds=[EventKind.APP_ATTENTION], channel=editing)
        seen = roll_back(cluster, kube_emulator)
        [row] = StateChange.objects.filter(field="disagreement")
        assert (row.old, row.new, row.at) == ("", SENTENCE, seen)

        scan_and_send(seen + timedelta(minutes=5))  # within the grace period: nothing yet
        assert receiver.requests == [] and not Episode.objects.exists()
        assert Trouble.objects.get().disagreement == SENTENCE

        scan_and_send(seen + timedelta(minutes=11))
        scan_and_send(seen + timedelta(minutes=12))  # a later pass sends nothing again
        [request] = receiver.requests
        event = request.json()["event"]
        assert event["title"] == "ks-dm-ready is in health disagreement on prod-1"
        assert event["summary"] == SENTENCE
        assert event["causes"][0] == SENTENCE
        assert {"label": "Health disagreement", "value": SENTENCE} in event["facts"]
        assert event["links"][0] == {"label": "Suggested health rule", "url": APP_PAGE}
        assert event["details"]["app"]["health_disagreement"] == SENTENCE
        [rule] = event["details"]["suggested_health_rules"]
        assert (rule["tool"], rule["kind"]) == ("Flux", "DecisionModel")
        assert rule["where"] == "Kustomization flux-system/ks-dm-ready spec.healthCheckExprs"
        assert "RolledBack" in rule["rule"]
        [message] = discord.messages
        assert SENTENCE in message.embeds[0]["description"]

        set_phase(kube_emulator, "Ready")
        cleared = seen + timedelta(minutes=20)
        poll_at(cluster, cleared)
        assert GitOpsApp.objects.get(name="ks-dm-ready").health_disagreement == ""
        scan_and_send(cleared + timedelta(minutes=1))
        assert Episode.objects.get().ended_at == cleared + timedelta(minutes=1)
        assert not Trouble.objects.exists()
        assert len(receiver.requests) == 1  # a webhook hears of an episode once
        assert message.edits == 1
        assert "Recovered: ks-dm-ready is in sync and healthy on prod-1" in message.embeds[0]["description"]


def test_the_page_the_alert_links_shows_the_suggested_rule(cluster, kube_emulator, receiver, admin_client):
    webhook_rule(receiver)
    seen = roll_back(cluster, kube_emulator)
    scan_and_send(seen + timedelta(minutes=11))
    link = receiver.requests[0].json()["event"]["links"][0]["url"]
    page = admin_client.get(link.removeprefix("http://127.0.0.1:8000"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "The rule that would make Flux agree on DecisionModel" in html
    assert "healthCheckExprs" in html


@override_settings(
    EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend", DEFAULT_FROM_EMAIL="portal@example.com"
)
def test_e_mail_says_the_disagreement_too(cluster, kube_emulator):
    channel = Channel.objects.create(name="oncall", kind=Channel.Kind.EMAIL, recipients="oncall@example.com")
    Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION], channel=channel)
    seen = roll_back(cluster, kube_emulator)
    assert scan_and_send(seen + timedelta(minutes=11)).sent == 1
    [message] = mail.outbox
    assert message.subject == "[prod] ks-dm-ready is in health disagreement on prod-1"
    assert SENTENCE in message.body and APP_PAGE.replace("&", "&amp;") in message.alternatives[0][0]


@pytest.mark.parametrize("routing", ["disabled", "other cluster"])
def test_a_rule_that_is_off_or_routed_elsewhere_sends_nothing(cluster, kube_emulator, receiver, routing):
    if routing == "disabled":
        webhook_rule(receiver, enabled=False)
    else:
        elsewhere = Cluster.objects.create(name="prod-2", environment=cluster.environment)
        webhook_rule(receiver, cluster=elsewhere)
    seen = roll_back(cluster, kube_emulator)
    scan_and_send(seen + timedelta(minutes=11))
    assert Episode.objects.get().payload["summary"] == SENTENCE  # the episode is there, nobody is told
    assert receiver.requests == []


def test_every_channel_kind_carries_the_sentence_and_the_slack_app_edits_it_on_recovery(
    cluster, kube_emulator, receiver, monkeypatch
):
    monkeypatch.setenv("PORTAL_TEST_SLACK_TOKEN", TOKEN)
    posting = {Channel.Kind.SLACK: "/slack", Channel.Kind.TEAMS: "/teams", Channel.Kind.NTFY: "/ntfy-topic"}
    for kind, path in posting.items():
        channel = Channel.objects.create(name=kind, kind=kind, url=receiver.url(path))
        Rule.objects.create(name=kind, kinds=[EventKind.APP_ATTENTION], channel=channel)
    with SlackWebAPI(TOKEN, (CONVERSATION,)) as slack, override_settings(PORTAL_SLACK_API_URL=slack.base_url):
        app_channel = Channel.objects.create(
            name="slack-app",
            kind=Channel.Kind.SLACK_APP,
            token_env="PORTAL_TEST_SLACK_TOKEN",
            chat_channel=CONVERSATION,
        )
        Rule.objects.create(name="slack-app", kinds=[EventKind.APP_ATTENTION], channel=app_channel)
        seen = roll_back(cluster, kube_emulator)
        assert scan_and_send(seen + timedelta(minutes=11)).sent == 4
        bodies = {request.path: request.body.decode() for request in receiver.requests}
        assert set(bodies) == set(posting.values())
        for path, body in bodies.items():
            assert "DecisionModel dm-ready reports RolledBack: candidate failed the gate" in body, path
        [message] = slack.top_level(CONVERSATION)
        assert SENTENCE in texts_of(message.blocks)

        set_phase(kube_emulator, "Ready")
        cleared = seen + timedelta(minutes=20)
        poll_at(cluster, cleared)
        scan_and_send(cleared + timedelta(minutes=1))
        [message] = slack.top_level(CONVERSATION)
        assert message.edits == 1
        assert "*Now:* Recovered: ks-dm-ready is in sync and healthy on prod-1" in texts_of(message.blocks)
        replies = WebClient(token=TOKEN, base_url=slack.base_url).conversations_replies(
            channel=CONVERSATION, ts=message.ts
        )
        assert [m["text"] for m in replies["messages"][1:]] == [
            "Recovered: ks-dm-ready is in sync and healthy on prod-1"
        ]
        assert len(receiver.requests) == 3  # channels that only post hear of an episode once

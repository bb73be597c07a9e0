"""Release-note summaries against a local fake OpenAI-compatible chat endpoint: one request
per upgrade per day (counted), a failing or slow endpoint recorded and retried the next day,
the prompt holding the notes between the two versions only, the text on Updates and in the
pull request's description under its own heading; without the settings, nothing at all."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from portal.delivery.change_builders import change_forward
from portal.delivery.planner import describe
from portal.delivery.tasks import summarise_release_notes
from portal.releases import summaries
from portal.releases.models import Release, ReleaseSummary
from portal.releases.notes import notes_between
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

SUMMARY = "**Security**\n- 1.6.0 fixes CVE-2026-1234 in the token parser\n\n**Migrations needed first**\n- run 0042"


class FakeChat:
    """A chat-completions endpoint on a free local port: counts and keeps what it is asked."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.status = 200
        self.delay = 0.0
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                chat.requests.append(body)
                chat.headers.append(dict(self.headers))
                if chat.delay:
                    threading.Event().wait(chat.delay)
                answer = {"choices": [{"message": {"role": "assistant", "content": SUMMARY}}]}
                data = json.dumps(answer if chat.status == 200 else {"error": "overloaded"}).encode()
                try:
                    self.send_response(chat.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def prompts(self) -> list[str]:
        return [r["messages"][-1]["content"] for r in self.requests]


@pytest.fixture
def chat(settings, monkeypatch):
    fake = FakeChat()
    settings.PORTAL_LLM_URL = fake.url
    settings.PORTAL_LLM_MODEL = "tiny-model"
    settings.PORTAL_LLM_API_KEY_ENV = "TEST_LLM_KEY"
    settings.PORTAL_LLM_TIMEOUT = 2.0
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-secret")
    yield fake
    fake.server.shutdown()


@pytest.fixture
def upgrade(catalog):
    """checkout runs 1.4.2 in two prod apps; 1.5.0 and 1.6.0 came out since (1.4.0 before)."""
    now = timezone.now()
    notes = {"1.4.0": "OLD: the 1.4.0 notes", "1.4.2": "RUNNING: the 1.4.2 notes",
             "1.5.0": "Adds bulk refunds.", "1.6.0": "Fixes CVE-2026-1234. Run migration 0042 first."}
    for tag, text in notes.items():
        Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=now, notes=text,
                               notes_url=f"https://github.com/acme/checkout/releases/tag/{tag}")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.4.2")
    seed_app(catalog.prod_us, "checkout-prod-us", service=catalog.checkout, version="1.4.2")
    return catalog


def test_one_request_per_upgrade_per_day_and_none_again_for_the_same_notes(chat, upgrade):
    now = timezone.now()
    assert summarise_release_notes() == 1  # two apps, one upgrade (checkout 1.4.2 -> 1.6.0)
    assert len(chat.requests) == 1
    summarise_release_notes()
    summarise_release_notes()
    assert len(chat.requests) == 1  # the same day: never asked again
    row = ReleaseSummary.objects.get()
    assert (row.from_version, row.to_version, row.text, row.error) == ("1.4.2", "1.6.0", SUMMARY, "")
    assert summaries.model_name(row) == "tiny-model" and row.generated_at is not None
    assert chat.requests[0]["model"] == "tiny-model"
    assert chat.headers[0]["Authorization"] == "Bearer sk-test-secret"
    # The next day, with the same notes in between, the stored summary stands.
    summaries.summarise(upgrade.checkout, "1.4.2", "1.6.0", now=now + timedelta(days=1))
    assert len(chat.requests) == 1
    # Notes edited later are a new text to summarise, the next day.
    Release.objects.filter(tag="1.6.0").update(notes="Fixes CVE-2026-1234. Run migration 0042 first. Also 0043.")
    summaries.summarise(upgrade.checkout, "1.4.2", "1.6.0", now=now + timedelta(days=1))
    assert len(chat.requests) == 2


def test_the_prompt_holds_the_notes_between_the_two_versions_only(chat, upgrade):
    summarise_release_notes()
    [text] = chat.prompts()
    assert "Adds bulk refunds." in text and "Fixes CVE-2026-1234" in text
    assert "OLD" not in text and "RUNNING" not in text
    assert text.index("Release 1.5.0") < text.index("Release 1.6.0")
    assert "from 1.4.2 to 1.6.0" in text
    system = chat.requests[0]["messages"][0]["content"]
    assert "Security" in system and "Breaking changes" in system and "Migrations needed first" in system
    # …and nothing after the target either.
    assert [tag for tag, _ in notes_between(upgrade.checkout, "1.4.2", "1.5.0")] == ["1.5.0"]


def test_a_failing_or_slow_endpoint_is_recorded_and_retried_the_next_day(chat, upgrade):
    now = timezone.now().replace(hour=1, minute=0)  # three hours later is the same day
    chat.status = 503
    summaries.summarise(upgrade.checkout, "1.4.2", "1.6.0", now=now)
    row = ReleaseSummary.objects.get()
    assert row.text == "" and "HTTP 503" in row.error and row.error_at == now
    assert "sk-test-secret" not in row.error
    summaries.summarise(upgrade.checkout, "1.4.2", "1.6.0", now=now + timedelta(hours=3))
    assert len(chat.requests) == 1  # not again the same day
    chat.status, chat.delay = 200, 3.0  # slower than PORTAL_LLM_TIMEOUT (2 s)
    summaries.summarise(upgrade.checkout, "1.4.2", "1.6.0", now=now + timedelta(days=1))
    row.refresh_from_db()
    assert len(chat.requests) == 2 and row.text == "" and "Timeout" in row.error
    chat.delay = 0.0
    summaries.summarise(upgrade.checkout, "1.4.2", "1.6.0", now=now + timedelta(days=2))
    row.refresh_from_db()
    assert len(chat.requests) == 3 and row.text == SUMMARY and row.error == ""


def test_the_summary_is_on_updates_and_in_the_pull_request_under_its_own_heading(chat, upgrade, client, users):
    summarise_release_notes()
    client.force_login(users["viewer"])
    page = client.get("/updates").content.decode()
    assert "CVE-2026-1234 in the token parser" in page and "generated" in page
    assert "release notes" in page  # the link to the notes stays
    app = upgrade.prod_eu.apps.get(name="checkout-prod")
    change = change_forward("upgrade", app, upgrade.checkout, "1.6.0")
    body = describe([change], [], [], [])
    assert "Release notes for 1.6.0:" in body and "> Fixes CVE-2026-1234. Run migration 0042 first." in body
    heading = "Summary of the release notes for 1.4.2 → 1.6.0 (generated by a language model"
    assert heading in body
    assert body.index("Release notes for 1.6.0:") < body.index(heading)
    assert "> - 1.6.0 fixes CVE-2026-1234 in the token parser" in body


def test_without_the_settings_nothing_is_asked_nor_shown(settings, upgrade, client, users):
    settings.PORTAL_LLM_URL = ""
    ReleaseSummary.objects.create(service=upgrade.checkout, from_version="1.4.2", to_version="1.6.0",
                                  text="STALE SUMMARY", model="old#x")
    assert summarise_release_notes() == 0
    client.force_login(users["viewer"])
    assert "STALE SUMMARY" not in client.get("/updates").content.decode()
    app = upgrade.prod_eu.apps.get(name="checkout-prod")
    assert "Summary of the release notes" not in describe([change_forward("upgrade", app, upgrade.checkout,
                                                                          "1.6.0")], [], [], [])


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_updates_page_shows_the_generated_summary_beside_the_notes_link(chat, upgrade, live_server, page):

    from tests.fixtures.browser import log_in_as_member, screenshot

    summarise_release_notes()
    log_in_as_member(page, live_server.url)
    page.goto(f"{live_server.url}/updates")
    details = page.locator("tr[data-app=checkout-prod] details.release-summary")
    details.locator("summary").click()
    assert details.locator(".generated-summary").inner_text().startswith("**Security**")
    assert page.locator("tr[data-app=checkout-prod] a.release-notes").count() == 1
    screenshot(page, "updates-release-summary")

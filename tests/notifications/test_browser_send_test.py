"""/notifications in headless Chromium: an admin picks which alert to send as a test and gets
exactly that alert on the channel (a local ntfy-style receiver). Screenshot:
test-artifacts/notifications-send-test.png."""

from __future__ import annotations

from email.header import decode_header, make_header

import pytest
from django.contrib.auth import get_user_model

from portal.kernel.accounts.roles import Role, grant
from portal.notifications.models import Channel
from tests.fakes.receivers import HttpReceiver
from tests.fixtures.browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def receiver():
    with HttpReceiver() as server:
        yield server


def test_an_admin_sends_a_chosen_sample_alert_to_an_ntfy_topic(page, live_server, receiver):
    grant(get_user_model().objects.create_user("ada", password="ada-pass-123"), Role.ADMIN)
    Channel.objects.create(name="phones", kind=Channel.Kind.NTFY, url=receiver.url("/deploys"))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "ada-pass-123")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/notifications/")
    row = page.locator('tr[data-channel="phones"]')
    assert "ntfy push" in row.inner_text()
    row.locator("select[name=sample]").select_option("out_of_sync")
    row.get_by_role("button", name="Send test alert").click()
    page.get_by_text("Test out of sync, waiting for a manual sync sent to").wait_for()
    screenshot(page, "notifications-send-test")
    [request] = receiver.requests
    title = str(make_header(decode_header(request.headers["Title"])))
    assert title == "[Test] checkout-prod is OutOfSync on prod-eu-1"
    assert request.body.decode().startswith("Argo CD waits for someone to sync it")

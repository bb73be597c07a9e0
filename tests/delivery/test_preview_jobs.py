"""The preview page never reads the forge in the request (portal.delivery.preview_jobs): cold, it
answers at once with what is being read and queues one task on the forge queue; the task's result
fills the page through pr-preview-result; asked again, the kept result is shown with no forge call.
Against the GitHub fake over real HTTP, with the in-memory broker (nothing runs until the test
runs the queued task itself, as a forge worker would)."""

from __future__ import annotations

import time
from datetime import timedelta
from urllib.parse import parse_qsl, urlencode

import pytest
from django.urls import reverse

from portal.delivery import tasks
from portal.delivery.models import GitPinRead, PreviewResult
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

PROD = "apps/checkout/overlays/prod"
DIFF = "+    newTag: &quot;1.7.0&quot; # bumped by the portal"


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch) as harness:
        yield harness


@pytest.fixture
def query(catalog, github) -> str:
    app = seed_app(
        catalog.prod_eu,
        "checkout-prod",
        service=catalog.checkout,
        version="1.6.0",
        repo_url=github.repository,
        path=PROD,
    )
    return urlencode({"kind": "upgrade", "service": "checkout", "app": app.pk, "to": "1.7.0"})


def run_queued(memory_broker) -> int:
    """Run what the page queued, as the forge worker would; how many tasks there were."""
    queued = memory_broker.take("forge")
    for message in queued:
        assert message.task == "delivery.preview_pull_requests"
        tasks.preview_pull_requests(*message.args, **message.kwargs)
    return len(queued)


def test_a_cold_preview_answers_at_once_and_fills_in_from_the_task(memory_broker, client, users, github, query):
    client.force_login(users["member"])
    client.get(reverse("updates"))  # the process warmed (imports, templates): the page's own time is measured
    github.server.log.clear()
    started = time.perf_counter()
    response = client.get(reverse("pr-preview") + "?" + query)
    elapsed = time.perf_counter() - started
    html = response.content.decode()
    assert response.status_code == 200 and elapsed < 0.3, elapsed
    assert github.server.log == [], "no forge request in the page"
    assert 'id="preview-body"' in html and "hx-get=" in html and reverse("pr-preview-result") in html
    assert f"Reading {github.repository} at main…" in html
    assert DIFF not in html and "Open pull request" not in html
    assert '<noscript><meta http-equiv="refresh"' in html

    # Polled before the worker got to it: the progress block again.
    polled = client.get(reverse("pr-preview-result") + "?" + query).content.decode()
    assert "Reading " in polled and DIFF not in polled and github.server.log == []

    assert run_queued(memory_broker) == 1
    assert github.server.log, "the worker read the forge"
    filled = client.get(reverse("pr-preview-result") + "?" + query).content.decode()
    assert DIFF in filled and "hx-get=" not in filled
    assert "Open pull request" in filled and "csrfmiddlewaretoken" in filled

    # The same change asked again: the kept result, no forge call and nothing queued.
    github.server.log.clear()
    again = client.get(reverse("pr-preview") + "?" + query).content.decode()
    assert DIFF in again and "Open pull request" in again
    assert github.server.log == [] and memory_broker.take("forge") == []


def test_a_kept_preview_is_read_again_once_its_apps_pins_were_read_after_it(
        memory_broker, client, users, github, query):
    """A preview made before the app's pins were read (a fresh start) proposed from what ran:
    once they are read, the page asks the worker again instead of keeping it five minutes."""
    client.force_login(users["member"])
    client.get(reverse("pr-preview") + "?" + query)
    assert run_queued(memory_broker) == 1
    kept = PreviewResult.objects.get()
    app_id = int(dict(parse_qsl(query))["app"])

    GitPinRead.objects.create(app_id=app_id, last_read_at=kept.computed_at - timedelta(seconds=1),
                              last_ok_at=kept.computed_at - timedelta(seconds=1))
    assert DIFF in client.get(reverse("pr-preview") + "?" + query).content.decode()
    assert memory_broker.take("forge") == []  # read before the result: the kept one is shown

    read = kept.computed_at + timedelta(microseconds=1)  # read after the result, before the next one
    GitPinRead.objects.filter(app_id=app_id).update(last_read_at=read, last_ok_at=read)
    assert "Reading " in client.get(reverse("pr-preview") + "?" + query).content.decode()
    assert run_queued(memory_broker) == 1
    assert DIFF in client.get(reverse("pr-preview") + "?" + query).content.decode()
    assert memory_broker.take("forge") == []  # computed after the read: kept again


def test_ten_requests_for_one_change_queue_one_task(memory_broker, client, users, github, query):
    client.force_login(users["viewer"])
    for _ in range(10):
        assert "Reading " in client.get(reverse("pr-preview") + "?" + query).content.decode()
        client.get(reverse("pr-preview-result") + "?" + query)
    assert run_queued(memory_broker) == 1
    assert PreviewResult.objects.get().state == PreviewResult.DONE


def test_a_forge_error_in_the_task_is_shown_by_the_result_view(memory_broker, client, users, github, query):
    client.force_login(users["viewer"])
    client.get(reverse("pr-preview") + "?" + query)
    github.server.faults.append(
        Fault("GET", "/branches/|/git/|/contents/|/repos/acme/gitops$", 500, body={"message": "Server Error"}, times=50)
    )
    run_queued(memory_broker)
    shown = client.get(reverse("pr-preview-result") + "?" + query).content.decode()
    assert "Could not read the repository" in shown and "hx-get=" not in shown
    assert "Nothing here can be opened." in shown or "Viewers see the preview" in shown

    # Shown once: asked afresh, the repository is read again (one new task).
    client.get(reverse("pr-preview") + "?" + query)
    assert len(memory_broker.take("forge")) == 1


def test_a_task_that_fails_says_why_instead_of_polling_for_ever(
    memory_broker, client, users, github, query, monkeypatch
):
    client.force_login(users["viewer"])
    client.get(reverse("pr-preview") + "?" + query)

    def broken(*args, **kwargs):
        raise RuntimeError("the planner fell over")

    monkeypatch.setattr("portal.delivery.preview_jobs.preview_change", broken)
    run_queued(memory_broker)
    shown = client.get(reverse("pr-preview-result") + "?" + query).content.decode()
    assert "The preview failed: the planner fell over" in shown and "hx-get=" not in shown
    assert "Try again" in shown

"""Walk `make run`'s demo as a person would: after the demo's polls and its pin reads, collect
every pull request offer on every page, in the API, in the assistant's tools and in every alert
the portal would send now, follow each to its preview and judge it as a reviewer would
(`tests.journeys.walk.judge`). Every other link an alert carries must open too.

One test walks everything, so the demo (eight clusters collected, a Git repository built, its
pins read) is set up once; its failure message lists every offer that broke and where it was
shown. The assistant's tools are called as the MCP server calls them (`portal.api.mcp.tools`,
with a real API token); tests/assistant covers the protocol itself.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.urls import reverse
from django.utils import timezone

from gitops.models import GitOpsApp
from portal.kernel.accounts import tokens
from portal.kernel.catalog.models import Service
from tests.journeys.walk import Offers, judge, partials, template_leaks

# Opening through the page queues a job; here it runs in the request (these tests are not about the job).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

PAGES = ["/", "/matrix", "/updates", "/delivery", "/security", "/gitops", "/findings", "/clusters"]


def collect_from_pages(client, offers: Offers) -> None:
    names = list(Service.objects.values_list("name", flat=True))
    for path in PAGES + [reverse("service", args=[name]) for name in names]:
        response = client.get(path)
        assert response.status_code == 200, path
        page = response.content.decode()
        assert not template_leaks(page), (path, template_leaks(page))
        offers.from_html(page, path)
        for partial in partials(page):
            loaded = client.get(partial, HTTP_HX_REQUEST="true")
            assert loaded.status_code == 200, partial
            offers.from_html(loaded.content.decode(), f"{path} → {partial}")


def collect_from_api(client, offers: Offers) -> None:
    for route in ("api-services", "api-gitops", "api-security", "api-findings"):
        url: str | None = reverse(route)
        while url:
            response = client.get(url)
            assert response.status_code == 200, url
            body = response.json()
            offers.from_json(body, f"API {reverse(route)}")
            url = body.get("next") if isinstance(body, dict) else None


def collect_from_assistant(user, offers: Offers) -> None:
    from portal.api.mcp import tools
    from portal.api.mcp.api_pages import Caller

    _, plain = tokens.issue(user, "walk")
    caller = Caller(plain)
    for name in Service.objects.values_list("name", flat=True):
        offers.from_json(tools.service(caller, name), f"MCP service({name})")
        offers.from_json(tools.why_not_deployed(caller, service=name), f"MCP why_not_deployed({name})")
    offers.from_json(tools.gitops(caller, {}), "MCP gitops")


def alerts_now() -> list:
    """Every alert the portal would send now: each application's trouble, each rollback offer,
    and the sample alerts a channel's test sends."""
    from portal.delivery import rollbacks
    from portal.notifications import delivery_events, gitops_events, samples

    now = timezone.now()
    events = []
    troubled = GitOpsApp.objects.needing_attention(now).select_related("cluster__environment")
    for app in troubled:
        start = min(t for t in (app.sync_since, app.health_since, now) if t is not None)
        events.append(gitops_events.build_event(app, start, now))
    for offers in rollbacks.offers_for_apps(list(troubled), now=now).values():
        events += [delivery_events.rollback_event(offer) for offer in offers]
    events += [samples.sample(name, now) for name in samples.SAMPLE_NAMES]
    return events


def collect_from_alerts(client, settings, offers: Offers) -> list[str]:
    """The alerts' preview links into `offers`; every other link an alert carries into the portal
    is opened here, and what did not open is returned."""
    broken = []
    base = urlsplit(settings.PORTAL_BASE_URL)
    for event in alerts_now():
        for link in event.links:
            url = urlsplit(link.url)
            if (url.scheme, url.netloc) != (base.scheme, base.netloc):
                continue  # a forge's or Argo CD's page, not the portal's
            local = url.path + (f"?{url.query}" if url.query else "")
            if local.startswith("/pr/preview?"):
                offers.add(local, f"alert {event.title!r}")
                continue
            status = client.get(local).status_code
            if status != 200:
                broken.append(f"alert {event.title!r}: {link.label} {local} answered {status}")
    return broken


def test_every_offer_in_the_demo_leads_to_a_clean_preview(demo, client, member, settings):
    offers = Offers()
    collect_from_pages(client, offers)
    collect_from_api(client, offers)
    collect_from_assistant(member, offers)
    broken = collect_from_alerts(client, settings, offers)

    assert len(offers.found) >= 40, "the demo offers far fewer pull requests than it should"
    kinds = {url.split("kind=")[1].split("&")[0] for url in offers.found if "kind=" in url}
    assert {"upgrade", "promotion", "rollback"} <= kinds, kinds
    for url, where in sorted(offers.found.items()):
        response = client.get(url)
        verdict = judge(url, response.status_code, response.content.decode())
        verdict.problems += [f"template text shown: {leak}" for leak in template_leaks(response.content.decode())]
        if not verdict.clean:
            broken.append(f"{url} (shown on {', '.join(sorted(where))}): {'; '.join(verdict.problems)}")
    assert not broken, f"{len(broken)} of {len(offers.found)} offers or links broke:\n" + "\n".join(broken)

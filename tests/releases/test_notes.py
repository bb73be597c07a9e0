"""Release notes: a service's source repository (catalog, fleet file, admin), the forge
release that belongs to each image tag, reading them in the scheduled registry poll (cheaply,
failures recorded, tags untouched), and showing them: Updates page, service page, and the
upgrade and promotion pull requests, always escaped on pages."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from forges.forge import ReleaseInfo
from portal.delivery.automatic import run as open_automatic_prs
from portal.delivery.change_builders import change_for_upgrade
from portal.delivery.change_previews import open_change
from portal.delivery.models import ServicePolicy
from portal.kernel.catalog.fleetfile import FleetFileError, load_fleet
from portal.kernel.catalog.models import Service
from portal.releases.excerpts import defused, excerpt
from portal.releases.models import RegistryPoll, Release
from portal.releases.notes import NOTES_MAX_CHARS, match, read_release_notes
from portal.releases.registry_reads import poll_service
from portal.releases.tasks import poll_registry
from tests.fakes.forges.base import FakeServer, Fault, GitModel
from tests.fakes.forges.harness import FILES, TOKEN, environ_for, server_for, serving
from tests.fixtures.seed import seed_app

# tests.fakes.oci_registry is also the plugin below: have pytest rewrite its asserts before it is imported here.
pytest.register_assert_rewrite("tests.fakes.oci_registry")

from tests.fakes.oci_registry import Registry, free_port, push_image  # noqa: E402

pytest_plugins = ["tests.fakes.oci_registry"]

ZW = "\u200b"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PROD = "apps/checkout/overlays/prod"
NOTES_PAGE = "https://github.example/acme/checkout/releases/tag/{}"
IMAGE_TAGS = ["1.0.0", "1.1.0", "1.2.0-rc.1", "1.2.0", "1.2.0-alpine", "v2.0.0", "latest"]


def release(tag: str, body: str = "", days: int = 0) -> ReleaseInfo:
    return ReleaseInfo(tag=tag, title=tag, url=f"https://forge.example/r/{tag}", body=body,
                       published_at=T0 + timedelta(days=days))


# --- which forge release belongs to an image tag: pure ---------------------------------


def test_the_same_tag_wins_over_the_same_version() -> None:
    listed = [release("v1.7.0", days=2), release("1.7.0", days=1)]
    assert match("1.7.0", listed).tag == "1.7.0"
    assert match("v1.7.0", listed).tag == "v1.7.0"


def test_a_v_prefix_on_either_side_is_the_same_version() -> None:
    assert match("1.7.0", [release("v1.6.0"), release("v1.7.0")]).tag == "v1.7.0"
    assert match("v2.0.0", [release("2.0.0")]).tag == "2.0.0"


def test_a_prerelease_only_matches_the_same_prerelease() -> None:
    listed = [release("v1.7.0", days=2), release("v1.7.0-rc.1", days=1)]
    assert match("1.7.0-rc.1", listed).tag == "v1.7.0-rc.1"
    assert match("1.7.0", listed).tag == "v1.7.0"
    assert match("1.7.0-rc.2", listed) is None
    assert match("1.8.0-rc.1", [release("v1.8.0")]) is None


def test_a_suffixed_tag_prefers_its_own_suffix_then_none_and_other_versions_never() -> None:
    listed = [release("v1.7.0-slim", days=3), release("v1.7.0", days=2), release("v1.7.0-alpine", days=1)]
    assert match("1.7.0-alpine", listed).tag == "v1.7.0-alpine"
    assert match("1.7.0-bookworm", listed).tag == "v1.7.0"
    # A floating `1.7` tag is not release 1.7.0; tags that are not versions match only themselves.
    assert match("1.7", listed) is None
    assert match("latest", [release("latest"), release("v1.7.0")]).tag == "latest"
    assert match("nightly", listed) is None


# --- what a pull request quotes: pure ---------------------------------------------------


def test_references_and_mentions_are_defused_and_the_rest_kept() -> None:
    text = "## Fixes\n- Fixes #42 and !7, thanks @alice (see acme/other#9, mail a@b.example, #hashtag)"
    assert defused(text) == (
        f"## Fixes\n- Fixes #{ZW}42 and !{ZW}7, thanks @{ZW}alice (see acme/other#9, mail a@b.example, #hashtag)"
    )


def test_an_excerpt_keeps_the_first_lines_then_says_where_the_rest_is() -> None:
    url = NOTES_PAGE.format("v1.7.0")
    long = "\n".join(f"- change number {n}" for n in range(200))

    cut = excerpt(long, url)
    lines = cut.splitlines()

    assert lines[:60] == [f"- change number {n}" for n in range(60)]
    assert lines[60:] == ["…", f"… full notes: {url}"]
    assert excerpt("- one change", url) == "- one change"
    assert excerpt("", url) == ""
    wide = excerpt("x" * 50 + "\n" + "y" * 5000, url, max_chars=300)
    assert wide == "x" * 50 + f"\n…\n… full notes: {url}"  # cut at a line end


# --- reading in the scheduled registry poll --------------------------------------------


@pytest.fixture
def github_source(settings: Any) -> Iterator[FakeServer]:
    """A GitHub (Enterprise) fake serving acme/checkout, the service's source repository."""
    model = GitModel("acme", "checkout", {"README.md": "checkout service\n"})
    with server_for("github", model) as server:
        for name, value in environ_for("github", server).items():
            setattr(settings, name, value)
        yield server


def seed_forge_releases(model: GitModel) -> None:
    model.add_release("v1.1.0", body="One point one", published_at=T0 + timedelta(days=1))
    model.add_release("v1.2.0-rc.1", body="Candidate", prerelease=True, published_at=T0 + timedelta(days=2))
    model.add_release("1.2.0", body="Exact 1.2.0", published_at=T0 + timedelta(days=3))
    model.add_release("v1.2.0", body="Prefixed 1.2.0", published_at=T0 + timedelta(days=4))
    model.add_release("2.0.0", body="Two\x00 point oh", published_at=T0 + timedelta(days=5))
    model.add_release("v1.0.0", body="never published", draft=True, published_at=T0 + timedelta(days=6))


def push_tags(registry: Registry, repository: str, tags: list[str]) -> None:
    for number, tag in enumerate(tags):
        push_image(registry.url, repository, tag, T0 + timedelta(hours=number))


@pytest.fixture(scope="module")
def notes_app_image(open_registry: Registry) -> str:
    push_tags(open_registry, "acme/notes-app", IMAGE_TAGS)
    return open_registry.image("acme/notes-app")


@pytest.fixture
def plain_registry(settings: Any, open_registry: Registry) -> None:
    settings.PORTAL_REGISTRY_PLAIN_HTTP = [open_registry.host]
    settings.PORTAL_REGISTRY_AUTH = ""


@pytest.fixture
def checkout(db, notes_app_image: str, plain_registry: None, github_source: FakeServer) -> Service:
    seed_forge_releases(github_source.model)
    return Service.objects.create(name="checkout", image_repository=notes_app_image,
                                  source_repository=f"{github_source.url}/acme/checkout")


def notes_by_tag(service: Service) -> dict[str, tuple[str | None, str]]:
    return {r.tag: (r.notes_url, r.notes) for r in Release.objects.for_service(service)}


def release_reads(server: FakeServer) -> int:
    return len(server.requests_matching("GET", r"/releases$"))


def test_the_scheduled_poll_stores_each_tags_release_notes(checkout: Service, github_source: FakeServer) -> None:
    # What beat's fan-out runs for each service, run here in this process.
    result = poll_registry.apply(args=(checkout.pk,)).get()

    assert result["ok"] and result["error"] == ""
    assert notes_by_tag(checkout) == {
        "1.0.0": (None, ""),  # only a draft on the forge: not known
        "1.1.0": (NOTES_PAGE.format("v1.1.0"), "One point one"),
        "1.2.0-rc.1": (NOTES_PAGE.format("v1.2.0-rc.1"), "Candidate"),
        "1.2.0": (NOTES_PAGE.format("1.2.0"), "Exact 1.2.0"),  # the same tag wins
        "1.2.0-alpine": (NOTES_PAGE.format("v1.2.0"), "Prefixed 1.2.0"),  # same version, newest release
        "v2.0.0": (NOTES_PAGE.format("2.0.0"), "Two point oh"),  # no NUL: PostgreSQL refuses it
    }
    status = RegistryPoll.objects.get(service=checkout)
    assert status.notes_read_at is not None and status.notes_error == "" and status.last_error == ""
    assert {method for method, _path, _status in github_source.log} == {"GET"}


def test_notes_are_asked_for_new_tags_only_and_read_again_once_a_day(
    db, open_registry: Registry, plain_registry: None, github_source: FakeServer
) -> None:
    repository = f"acme/grow-{free_port()}"  # a repository of its own: this test pushes to it
    push_tags(open_registry, repository, ["1.0.0"])
    github_source.model.add_release("v1.0.0", body="First")
    service = Service.objects.create(name="grow", image_repository=open_registry.image(repository),
                                     source_repository=f"{github_source.url}/acme/checkout")

    poll_service(service, now=T0)
    first = release_reads(github_source)
    poll_service(service, now=T0 + timedelta(hours=1))
    assert first > 0 and release_reads(github_source) == first  # nothing new, not a day yet: no call

    github_source.model.releases[0].body = "First, edited"
    github_source.model.add_release("v1.1.0", body="Second")
    push_tags(open_registry, repository, ["1.1.0"])
    poll_service(service, now=T0 + timedelta(hours=2))
    second = release_reads(github_source)
    assert second > first
    # Only the new tag was filled; notes already known wait for the daily read.
    assert notes_by_tag(service) == {
        "1.0.0": (NOTES_PAGE.format("v1.0.0"), "First"),
        "1.1.0": (NOTES_PAGE.format("v1.1.0"), "Second"),
    }

    poll_service(service, now=T0 + timedelta(hours=3))
    assert release_reads(github_source) == second
    poll_service(service, now=T0 + timedelta(days=1, hours=2))
    assert release_reads(github_source) > second
    assert notes_by_tag(service)["1.0.0"] == (NOTES_PAGE.format("v1.0.0"), "First, edited")


FAILURES = {
    "unreachable": "cannot reach the forge",
    "repository gone": "404",
    "token refused": "401",
    "rate limited": "rate limited",
    "no token": "set PORTAL_GITOPS_TOKEN",
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_forge_failure_keeps_tags_and_notes_and_is_recorded(
    failure: str, checkout: Service, github_source: FakeServer, settings: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    poll_service(checkout, now=T0)
    before = notes_by_tag(checkout)
    read_at = RegistryPoll.objects.get(service=checkout).notes_read_at
    if failure == "unreachable":
        port = free_port()
        settings.PORTAL_GITOPS_GITHUB_API = f"http://127.0.0.1:{port}/api/v3"
        checkout.source_repository = f"http://127.0.0.1:{port}/acme/checkout"
    elif failure == "repository gone":
        checkout.source_repository = f"{github_source.url}/acme/gone"
    elif failure == "token refused":
        settings.PORTAL_GITOPS_TOKEN = "tok-refused-9a8b7c6d"
    elif failure == "rate limited":
        reset = str(int(timezone.now().timestamp()) + 3600)
        github_source.faults.append(Fault("GET", r"/releases$", 403,
                                          {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
                                          {"message": "API rate limit exceeded for user ID 1."}))
    else:
        settings.PORTAL_GITOPS_TOKEN = ""
    checkout.save()
    later = T0 + timedelta(days=1, hours=1)  # a day on: the daily read is due

    report = poll_service(checkout, now=later)

    assert report.ok and report.error == ""  # the tag poll itself went well
    assert FAILURES[failure] in report.notes_error and "checkout" in report.notes_error
    assert notes_by_tag(checkout) == before  # every tag and every note kept
    status = RegistryPoll.objects.get(service=checkout)
    assert status.notes_error == report.notes_error and status.notes_error_at == later
    assert status.notes_read_at == read_at and status.last_error == "" and status.last_ok_at == later
    assert TOKEN not in status.notes_error and "tok-refused-9a8b7c6d" not in status.notes_error
    warned = any(record.levelname == "WARNING" and report.notes_error in record.getMessage()
                 for record in caplog.records)
    # A forge no token can read is not asked at all: its reason is stored, not logged every poll.
    assert warned is (failure != "no token")


def test_the_next_good_read_clears_the_error(checkout: Service, github_source: FakeServer) -> None:
    reset = str(int(timezone.now().timestamp()) + 3600)
    github_source.faults.append(Fault("GET", r"/releases$", 403,
                                      {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
                                      {"message": "API rate limit exceeded for user ID 1."}))
    assert poll_service(checkout, now=T0).notes_error
    assert notes_by_tag(checkout)["1.1.0"] == (None, "")

    report = poll_service(checkout, now=T0 + timedelta(hours=1))  # the limit answered once only

    assert report.notes_error == ""
    status = RegistryPoll.objects.get(service=checkout)
    assert (status.notes_error, status.notes_error_at) == ("", None)
    assert notes_by_tag(checkout)["1.1.0"] == (NOTES_PAGE.format("v1.1.0"), "One point one")


def test_a_service_without_source_repository_asks_no_forge(
    db, notes_app_image: str, plain_registry: None, github_source: FakeServer
) -> None:
    seed_forge_releases(github_source.model)
    service = Service.objects.create(name="no-source", image_repository=notes_app_image)
    RegistryPoll.objects.create(service=service, notes_error="an old error of a repository since removed")

    report = poll_service(service, now=T0)

    assert report.ok and report.notes_error == ""
    assert github_source.log == []
    assert all(url is None for url, _notes in notes_by_tag(service).values())
    status = RegistryPoll.objects.get(service=service)
    assert status.notes_error == "" and status.notes_read_at is None

    def no_forge(url: str):
        raise AssertionError(f"a forge was asked for {url}")

    assert not read_release_notes(service, now=T0, forge_factory=no_forge).asked


def test_notes_are_cut_to_a_sane_size_and_only_http_pages_are_kept(db, catalog) -> None:
    Release.objects.create(service=catalog.checkout, tag="1.0.0", version="1.0.0", seen_at=T0)
    Release.objects.create(service=catalog.checkout, tag="1.1.0", version="1.1.0", seen_at=T0)
    catalog.checkout.source_repository = "https://github.com/acme/checkout"
    catalog.checkout.save()

    class Forge:
        def releases(self, limit: int) -> list[ReleaseInfo]:
            return [
                ReleaseInfo("v1.1.0", "1.1.0", "javascript:alert(1)", "sneaky"),
                ReleaseInfo("v1.0.0", "1.0.0", "https://github.com/acme/checkout/releases/tag/v1.0.0", "x" * 30_000),
            ]

    read_release_notes(catalog.checkout, now=T0, forge_factory=lambda url: Forge())

    rows = notes_by_tag(catalog.checkout)
    assert rows["1.1.0"] == (None, "")  # no http(s) page: not stored
    assert rows["1.0.0"][0] == "https://github.com/acme/checkout/releases/tag/v1.0.0"
    assert len(rows["1.0.0"][1]) <= NOTES_MAX_CHARS + 2 and rows["1.0.0"][1].endswith("…")


# --- the source repository in the catalog ----------------------------------------------


def test_the_fleet_file_names_a_services_source_repository(db, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "services:\n"
        "  - name: checkout\n    image: ghcr.io/acme/checkout\n    team: shop\n"
        "    source: https://gitlab.example.com/group/sub/checkout\n"
        "  - name: cart\n    image: ghcr.io/acme/cart\n    team: shop\n"
    )
    load_fleet(fleet)
    assert Service.objects.get(name="checkout").source_repository == "https://gitlab.example.com/group/sub/checkout"
    assert Service.objects.get(name="cart").source_repository == ""

    fleet.write_text("services:\n  - name: cart\n    image: ghcr.io/acme/cart\n    source: [nope]\n")
    with pytest.raises(FleetFileError, match="source must be a repository URL"):
        load_fleet(fleet)


def test_the_demo_fleet_declares_a_source_repository(db) -> None:
    load_fleet(Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml")
    assert Service.objects.get(name="checkout").source_repository == "https://github.com/acme-shop/checkout"


def test_admins_edit_the_source_repository(admin_client, catalog) -> None:
    url = reverse("admin:catalog_service_change", args=[catalog.checkout.pk])
    assert 'name="source_repository"' in admin_client.get(url).content.decode()

    data = {"name": "checkout", "image_repository": "ghcr.io/acme/checkout", "image_aliases": "[]", "team": "shop",
            "description": "", "source_repository": "https://github.com/acme/checkout"}
    assert admin_client.post(url, data).status_code == 302
    catalog.checkout.refresh_from_db()
    assert catalog.checkout.source_repository == "https://github.com/acme/checkout"


# --- pages -----------------------------------------------------------------------------


def add_releases(service: Service, *tags: str, notes: dict[str, tuple[str, str]] | None = None) -> None:
    for tag in tags:
        url, body = (notes or {}).get(tag, (None, ""))
        Release.objects.create(service=service, tag=tag, version=tag, seen_at=timezone.now(), notes_url=url,
                               notes=body)


def test_the_updates_page_links_the_release_notes_of_the_target(client, users, catalog) -> None:
    page = NOTES_PAGE.format("v1.7.0")
    add_releases(catalog.checkout, "1.6.0", "1.7.0", notes={"1.7.0": (page, "- Faster checkout")})
    add_releases(catalog.payments, "3.0.0", "3.1.0")
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0")
    client.force_login(users["viewer"])

    html = client.get(reverse("updates")).content.decode()

    assert f'<a class="release-notes" href="{page}" rel="noopener noreferrer">release notes</a>' in html
    assert html.count("release notes</a>") == 1  # payments 3.1.0 has none known


def test_release_note_links_are_escaped_and_only_http(client, users, catalog) -> None:
    hostile = 'https://notes.example/r?x="><script>alert(1)</script>'
    add_releases(catalog.checkout, "1.6.0", "1.7.0", notes={"1.7.0": (hostile, "")})
    add_releases(catalog.payments, "3.0.0", "3.1.0", notes={"3.1.0": ("javascript:alert(2)", "")})
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0")
    client.force_login(users["member"])

    for url in (reverse("updates"), reverse("service", args=["checkout"]), reverse("service", args=["payments"])):
        html = client.get(url).content.decode()
        assert "<script>alert(1)" not in html and "javascript:alert(2)" not in html
    html = client.get(reverse("updates")).content.decode()
    assert 'href="https://notes.example/r?x=&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in html
    assert html.count("release notes</a>") == 1


def test_the_service_page_offers_the_notes_beside_open_pr_and_links_the_source(client, users, catalog) -> None:
    page = NOTES_PAGE.format("v1.7.0")
    add_releases(catalog.checkout, "1.6.0", "1.7.0", notes={"1.7.0": (page, "- Faster checkout")})
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0")
    catalog.checkout.source_repository = "git@github.com:acme/checkout.git"
    catalog.checkout.save()
    client.force_login(users["member"])

    html = client.get(reverse("service", args=["checkout"])).content.decode()

    assert "Open PR → 1.7.0" in html
    assert f'<a class="release-notes" href="{page}" rel="noopener noreferrer">release notes</a>' in html
    assert '<a class="source-repository" href="https://github.com/acme/checkout" rel="noopener noreferrer">' in html

    catalog.checkout.source_repository = "javascript:alert(1)//github.com/acme/checkout"
    catalog.checkout.save()
    html = client.get(reverse("service", args=["checkout"])).content.decode()
    assert 'class="source-repository"' not in html and "javascript:alert" not in html


def test_the_updates_page_says_whose_notes_could_not_be_read(client, users, catalog) -> None:
    RegistryPoll.objects.create(service=catalog.checkout, notes_error="release notes of checkout not read: <b>401</b>",
                                notes_error_at=timezone.now())
    client.force_login(users["viewer"])

    html = client.get(reverse("updates")).content.decode()

    assert "Release notes not read" in html
    assert "release notes of checkout not read: &lt;b&gt;401&lt;/b&gt;" in html


# --- pull requests ----------------------------------------------------------------------

NOTES = '## Highlights\n- Faster checkout\n- Fixes #42, thanks @alice\n<script>alert("x")</script>'


@pytest.fixture
def gitops(monkeypatch: pytest.MonkeyPatch):
    files = dict(FILES)
    files[f"{PROD}/payments.yaml"] = "image:\n  repository: ghcr.io/acme/payments\n  tag: 3.0.0\n"
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.fixture
def app(catalog, gitops):
    add_releases(catalog.checkout, "1.6.0", "1.7.0", notes={"1.7.0": (NOTES_PAGE.format("v1.7.0"), NOTES)})
    return seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                    repo_url=gitops.repository, path=PROD)


def test_an_upgrade_pull_request_quotes_the_notes_defused(app, catalog, gitops) -> None:
    result = open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), None)

    assert result.ok, result.message
    [pull] = gitops.model.pulls
    assert "Release notes for 1.7.0:\n\n> ## Highlights\n> - Faster checkout\n" in pull.body
    assert f"> - Fixes #{ZW}42, thanks @{ZW}alice" in pull.body
    assert "Fixes #42" not in pull.body  # it would close issue 42 of the GitOps repository


def test_long_notes_are_cut_with_a_link_to_the_rest(app, catalog, gitops) -> None:
    Release.objects.filter(service=catalog.checkout, tag="1.7.0").update(
        notes="\n".join(f"- change {n}: " + "x" * 80 for n in range(400))
    )
    result = open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), None)

    assert result.ok, result.message
    body = gitops.model.pulls[0].body
    assert f"> … full notes: {NOTES_PAGE.format('v1.7.0')}" in body
    assert "- change 30:" in body and "- change 60:" not in body and len(body) < 6_000


def test_an_automatic_pull_request_carries_the_notes(app, catalog, gitops) -> None:
    ServicePolicy.objects.create(service=catalog.checkout, auto_pr={"prod": "minor"})

    report = open_automatic_prs(forge_factory=lambda url: gitops.new_forge())

    assert len(report.opened) == 1, report
    [pull] = gitops.model.pulls
    assert "**Automatic**" in pull.body and "> - Faster checkout" in pull.body


def test_the_promotion_preview_shows_the_notes_escaped(eager_celery, client, users, app, catalog) -> None:
    client.force_login(users["viewer"])
    query = urlencode({"kind": "promotion", "service": "checkout", "app": app.pk, "to": "1.7.0"})

    html = client.get(reverse("pr-preview") + "?" + query).content.decode()

    assert "Promote checkout 1.7.0 to prod" in html and "Release notes for 1.7.0:" in html
    assert "&gt; &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<script>alert(" not in html


@pytest.mark.usefixtures("eager_celery")  # opening queues a job: run it in the request here
def test_services_ticked_together_share_the_room_for_notes(client, users, app, catalog, gitops) -> None:
    add_releases(catalog.payments, "3.0.0", "3.1.0",
                 notes={"3.1.0": ("https://github.example/acme/payments/releases/tag/v3.1.0", "- Refunds")})
    payments = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0",
                        repo_url=gitops.repository, path=PROD)
    client.force_login(users["member"])
    items = [f"{app.pk}:checkout:1.7.0", f"{payments.pk}:payments:3.1.0"]

    client.post(reverse("pr-open"), {"kind": "upgrade", "mode": "grouped", "item": items})

    [pull] = gitops.model.pulls
    assert "Release notes for checkout 1.7.0:\n\n> ## Highlights" in pull.body
    assert "Release notes for payments 3.1.0:\n\n> - Refunds" in pull.body


def test_one_read_of_a_repository_fills_every_service_built_from_it(db, github_source: FakeServer) -> None:
    seed_forge_releases(github_source.model)
    source = f"{github_source.url}/acme/checkout"
    api = Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout", source_repository=source)
    # The same repository written another way: a monorepo building two images.
    worker = Service.objects.create(name="checkout-worker", image_repository="ghcr.io/acme/checkout-worker",
                                    source_repository=f"{source}.git")
    other = Service.objects.create(name="payments", image_repository="ghcr.io/acme/payments",
                                   source_repository=f"{github_source.url}/acme/payments")
    for service in (api, worker, other):
        for tag in ("1.1.0", "2.0.0"):
            Release.objects.create(service=service, tag=tag, version=tag, seen_at=T0)

    report = read_release_notes(api, now=T0)

    assert report.asked and report.ok
    listed = release_reads(github_source)  # one listing (GitHub answers it in pages)
    assert notes_by_tag(worker) == notes_by_tag(api) == {
        "1.1.0": (NOTES_PAGE.format("v1.1.0"), "One point one"),
        "2.0.0": (NOTES_PAGE.format("2.0.0"), "Two point oh"),
    }
    assert {tag: url for tag, (url, _) in notes_by_tag(other).items()} == {"1.1.0": None, "2.0.0": None}
    # The sibling's own registry poll, an hour later, finds nothing due and asks nothing.
    assert not read_release_notes(worker, now=T0 + timedelta(hours=1)).asked
    assert release_reads(github_source) == listed

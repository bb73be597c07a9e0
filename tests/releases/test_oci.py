"""Reading tags and build times from a real registry (tests/fakes/oci_registry.py): anonymous, basic
and bearer-token auth, paging, errors without secrets; then polling into Release rows."""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

import pytest

from portal.kernel.catalog.models import Service
from portal.releases.models import RegistryPoll, Release
from portal.releases.oci import (
    DOCKER_HUB_API,
    Credentials,
    RegistryClient,
    RegistryError,
    credentials_for,
    endpoint,
    parse_registry_auth,
)
from portal.releases.registry_reads import poll_service
from portal.releases.tasks import poll_all_registries, poll_registry

# tests.fakes.oci_registry is also the plugin below: have pytest rewrite its asserts before it is imported here.
pytest.register_assert_rewrite("tests.fakes.oci_registry")

from tests.fakes.oci_registry import (  # noqa: E402
    BASE_TIME,
    MULTI_ARCH,
    PASSWORD,
    SEED,
    SERVICE,
    USER,
    PagingProxy,
    Registry,
    TokenRegistry,
    free_port,
)

# The session fixtures (open_registry, basic_registry, token_registry) come from this plugin.
pytest_plugins = ["tests.fakes.oci_registry"]

CHECKOUT = "acme/checkout"
ALL_TAGS = sorted(SEED[CHECKOUT])
GOOD = Credentials(USER, PASSWORD, source="$REG_USER/$REG_PASS")
WRONG_PASSWORD = "pw-wrong-5e6f7a8b"
WRONG = Credentials(USER, WRONG_PASSWORD, source="$REG_USER/$REG_PASS")


def assert_no_secret(error: RegistryError) -> None:
    text = str(error)
    assert PASSWORD not in text and WRONG_PASSWORD not in text
    assert "Basic " not in text and "Bearer " not in text


# --- configuration: pure -------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "env", "expected"),
    [
        ("nginx", {}, ("docker.io", DOCKER_HUB_API, "library/nginx")),
        ("docker.io/library/nginx:1.25", {}, ("docker.io", DOCKER_HUB_API, "library/nginx")),
        ("index.docker.io/bitnami/nginx", {}, ("docker.io", DOCKER_HUB_API, "bitnami/nginx")),
        ("ghcr.io/acme/checkout:1.4.2@sha256:" + "a" * 64, {}, ("ghcr.io", "https://ghcr.io", "acme/checkout")),
        ("localhost:5000/acme/app", {}, ("localhost:5000", "https://localhost:5000", "acme/app")),
        (
            "localhost:5000/acme/app",
            {"PORTAL_REGISTRY_PLAIN_HTTP": "registry.lan, localhost:5000"},
            ("localhost:5000", "http://localhost:5000", "acme/app"),
        ),
    ],
)
def test_endpoint_maps_an_image_to_its_api(image: str, env: dict[str, str], expected: tuple[str, str, str]) -> None:
    assert endpoint(image, env) == expected


def test_registry_auth_names_variables_per_host() -> None:
    parsed = parse_registry_auth("ghcr.io=GHCR_USER:GHCR_TOKEN, index.docker.io=HUB_USER:HUB_TOKEN,broken,=A:B")
    assert parsed == {"ghcr.io": ("GHCR_USER", "GHCR_TOKEN"), "docker.io": ("HUB_USER", "HUB_TOKEN")}


def test_credentials_come_from_the_named_variables() -> None:
    env = {"PORTAL_REGISTRY_AUTH": "ghcr.io=GHCR_USER:GHCR_TOKEN", "GHCR_USER": "bot", "GHCR_TOKEN": PASSWORD}
    creds = credentials_for("ghcr.io", env)
    assert creds is not None and (creds.username, creds.password) == ("bot", PASSWORD)
    assert PASSWORD not in repr(creds)
    assert credentials_for("quay.io", env) is None


def test_credentials_with_an_unset_variable_are_an_error_naming_it() -> None:
    env = {"PORTAL_REGISTRY_AUTH": "ghcr.io=GHCR_USER:GHCR_TOKEN", "GHCR_USER": "bot"}
    with pytest.raises(RegistryError, match=r"\$GHCR_USER/\$GHCR_TOKEN"):
        credentials_for("ghcr.io", env)


# --- anonymous -----------------------------------------------------------------------


def test_lists_every_tag_anonymously(open_registry: Registry) -> None:
    assert sorted(RegistryClient(open_registry.url).tags(CHECKOUT)) == ALL_TAGS


def test_follows_link_pages_with_n_and_last(open_registry: Registry) -> None:
    with PagingProxy(open_registry.url) as proxy:
        tags = RegistryClient(proxy.url).tags(CHECKOUT, page_size=2)
    assert tags == ALL_TAGS
    assert proxy.tag_requests == [
        {"n": "2"},
        {"n": "2", "last": ALL_TAGS[1]},
        {"n": "2", "last": ALL_TAGS[3]},
        {"n": "2", "last": ALL_TAGS[5]},
    ]


def test_a_next_page_on_another_host_is_refused(open_registry: Registry, basic_registry: Registry) -> None:
    # Following it would send the credentials to whatever host the header names.
    with PagingProxy(basic_registry.url, link_base=open_registry.url) as proxy:
        client = RegistryClient(proxy.url, GOOD)
        with pytest.raises(RegistryError, match="another host"):
            client.tags(CHECKOUT, page_size=2)


def test_unknown_repository_is_a_clear_404(open_registry: Registry) -> None:
    with pytest.raises(RegistryError) as caught:
        RegistryClient(open_registry.url).tags("acme/nope")
    assert caught.value.status == 404
    assert str(caught.value) == (
        f"{open_registry.host}: acme/nope not found (NAME_UNKNOWN: repository name not known to registry)"
    )


def test_build_time_comes_from_the_image_config(open_registry: Registry) -> None:
    client = RegistryClient(open_registry.url)
    docker_v2 = client.details(CHECKOUT, "1.0.0")
    oci = client.details(CHECKOUT, "1.1.0")
    assert docker_v2.created_at == SEED[CHECKOUT]["1.0.0"]
    assert oci.created_at == SEED[CHECKOUT]["1.1.0"]
    assert oci.labels["org.opencontainers.image.version"] == "1.1.0"
    assert docker_v2.digest.startswith("sha256:") and docker_v2.digest != oci.digest


def test_an_index_is_read_through_its_linux_amd64_image(open_registry: Registry) -> None:
    details = RegistryClient(open_registry.url).details(*MULTI_ARCH)
    # arm64 (listed first) was built a day later.
    assert details.created_at == BASE_TIME


def test_no_answer_is_a_timeout_error() -> None:
    with socket.socket() as silent:
        # The kernel completes the handshake for a listening socket; nobody ever answers.
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        with pytest.raises(RegistryError, match=r"no answer within 0.3 s"):
            RegistryClient(f"http://127.0.0.1:{port}", timeout=0.3).tags(CHECKOUT)


def test_nothing_listening_is_a_connection_error() -> None:
    port = free_port()
    with pytest.raises(RegistryError, match=rf"127.0.0.1:{port}: cannot connect \(ConnectionError\)"):
        RegistryClient(f"http://127.0.0.1:{port}", timeout=2).tags(CHECKOUT)


# --- basic auth (htpasswd) -----------------------------------------------------------


def test_basic_auth_reads_tags(basic_registry: Registry) -> None:
    assert sorted(RegistryClient(basic_registry.url, GOOD).tags(CHECKOUT)) == ALL_TAGS


def test_basic_auth_wrong_password_names_the_variables_not_the_secret(basic_registry: Registry) -> None:
    with pytest.raises(RegistryError) as caught:
        RegistryClient(basic_registry.url, WRONG).tags(CHECKOUT)
    assert caught.value.status == 401
    assert str(caught.value).startswith(
        f"{basic_registry.host}: the credentials from $REG_USER/$REG_PASS were refused for {CHECKOUT}"
    )
    assert_no_secret(caught.value)


def test_basic_auth_without_credentials_says_how_to_give_them(basic_registry: Registry) -> None:
    with pytest.raises(RegistryError, match=f"{CHECKOUT} needs credentials; set PORTAL_REGISTRY_AUTH") as caught:
        RegistryClient(basic_registry.url).tags(CHECKOUT)
    assert caught.value.status == 401


def test_credentials_from_the_environment_reach_the_registry(basic_registry: Registry) -> None:
    env = {
        "PORTAL_REGISTRY_AUTH": f"{basic_registry.host}=REG_USER:REG_PASS",
        "PORTAL_REGISTRY_PLAIN_HTTP": basic_registry.host,
        "REG_USER": USER,
        "REG_PASS": PASSWORD,
    }
    client, repository = RegistryClient.for_image(basic_registry.image(CHECKOUT) + ":1.0.0", env)
    assert repository == CHECKOUT
    assert client.details(repository, "1.2.0").created_at == SEED[CHECKOUT]["1.2.0"]


# --- bearer tokens (auth: token + a local realm) -------------------------------------


def test_bearer_flow_gets_a_token_once_and_pages(token_registry: TokenRegistry) -> None:
    realm = token_registry.realm
    before = len(realm.requests)
    with PagingProxy(token_registry.registry.url) as proxy:
        client = RegistryClient(proxy.url, GOOD)
        assert client.tags(CHECKOUT, page_size=3) == ALL_TAGS
        assert client.details(CHECKOUT, "1.2.0-rc.1").created_at == SEED[CHECKOUT]["1.2.0-rc.1"]
    assert len(proxy.tag_requests) == 3
    issued = realm.requests[before:]
    # One token for the scope, reused for every page and the manifest and blob reads.
    assert [(r.user, r.scope, r.service) for r in issued] == [(USER, f"repository:{CHECKOUT}:pull", SERVICE)]


def test_bearer_flow_wrong_password_is_the_realm_refusing(token_registry: TokenRegistry) -> None:
    with pytest.raises(RegistryError) as caught:
        RegistryClient(token_registry.registry.url, WRONG).tags(CHECKOUT)
    realm_host = token_registry.realm.url.split("/")[2]
    assert str(caught.value) == (
        f"{token_registry.registry.host}: the token service {realm_host} rejected the credentials from "
        "$REG_USER/$REG_PASS"
    )
    assert_no_secret(caught.value)


def test_bearer_flow_anonymous_token_without_access_is_denied(token_registry: TokenRegistry) -> None:
    with pytest.raises(RegistryError, match="is unknown or needs credentials") as caught:
        RegistryClient(token_registry.registry.url).tags(CHECKOUT)
    assert caught.value.status == 401
    assert token_registry.realm.requests[-1].user is None


# --- polling into Release rows -------------------------------------------------------


@pytest.fixture
def plain_http(settings: Any, open_registry: Registry, basic_registry: Registry) -> None:
    settings.PORTAL_REGISTRY_PLAIN_HTTP = [open_registry.host, basic_registry.host]
    settings.PORTAL_REGISTRY_AUTH = ""


@pytest.fixture
def checkout(db, open_registry: Registry, plain_http: None) -> Service:
    return Service.objects.create(name="checkout", image_repository=open_registry.image(CHECKOUT))


def test_poll_stores_version_tags_with_build_times(checkout: Service) -> None:
    now = BASE_TIME + timedelta(days=60)
    report = poll_service(checkout, now=now)
    assert report.ok and report.error == ""
    versions = {"1.0.0", "1.1.0", "1.2.0-rc.1", "1.2.0", "1.2.0-alpine", "v2.0.0"}
    assert set(report.new_tags) == versions
    rows = {r.tag: r for r in Release.objects.for_service(checkout)}
    assert set(rows) == versions  # latest and sha-4f3a2b1 are not versions
    assert rows["v2.0.0"].version == "2.0.0" and not rows["v2.0.0"].prerelease
    assert rows["1.2.0-rc.1"].prerelease and rows["1.2.0-alpine"].version == "1.2.0"
    assert all(r.created_at == SEED[CHECKOUT][tag] and r.seen_at == now for tag, r in rows.items())
    assert all(r.digest.startswith("sha256:") for r in rows.values())
    status = RegistryPoll.objects.get(service=checkout)
    assert (status.last_ok_at, status.last_error, status.tags_seen) == (now, "", len(SEED[CHECKOUT]))


def test_a_second_poll_adds_nothing_and_keeps_first_seen(checkout: Service) -> None:
    first = BASE_TIME + timedelta(days=60)
    poll_service(checkout, now=first)
    again = poll_service(checkout, now=first + timedelta(hours=1))
    assert again.ok and again.new_tags == []
    assert set(Release.objects.for_service(checkout).values_list("seen_at", flat=True)) == {first}


def test_build_times_are_read_for_the_newest_tags_only(checkout: Service) -> None:
    poll_service(checkout, details_limit=2)
    with_time = set(Release.objects.for_service(checkout).exclude(created_at=None).values_list("tag", flat=True))
    # v2.0.0 is newest; 1.2.0 and 1.2.0-alpine are the same version, next in line.
    assert len(with_time) == 2 and "v2.0.0" in with_time and with_time - {"v2.0.0"} <= {"1.2.0", "1.2.0-alpine"}


def test_a_failed_poll_keeps_releases_and_records_the_error(checkout: Service, open_registry: Registry) -> None:
    poll_service(checkout)
    ok_at = RegistryPoll.objects.get(service=checkout).last_ok_at
    checkout.image_repository = open_registry.image("acme/gone")
    checkout.save()
    report = poll_service(checkout)
    assert not report.ok and "acme/gone not found" in report.error
    status = RegistryPoll.objects.get(service=checkout)
    assert status.failing and status.last_error == report.error and status.last_ok_at == ok_at
    assert Release.objects.for_service(checkout).count() == 6


def test_poll_with_bad_credentials_records_an_error_without_the_secret(
    db, basic_registry: Registry, plain_http: None, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.PORTAL_REGISTRY_AUTH = f"{basic_registry.host}=REG_USER:REG_PASS"
    monkeypatch.setenv("REG_USER", USER)
    monkeypatch.setenv("REG_PASS", WRONG_PASSWORD)
    service = Service.objects.create(name="private", image_repository=basic_registry.image(CHECKOUT))
    report = poll_service(service)
    assert not report.ok and "$REG_USER/$REG_PASS were refused" in report.error
    assert WRONG_PASSWORD not in RegistryPoll.objects.get(service=service).last_error


def test_beat_task_fans_out_one_poll_per_service(
    checkout: Service, open_registry: Registry, eager_celery: None
) -> None:
    Service.objects.create(name="gone", image_repository=open_registry.image("acme/gone"))
    assert poll_all_registries.delay().get() == 2
    assert Release.objects.for_service(checkout).count() == 6
    assert RegistryPoll.objects.get(service__name="gone").failing
    assert poll_registry.delay(checkout.pk).get() == {"service": "checkout", "ok": True, "new_tags": 0, "error": ""}
    assert poll_registry.delay(10**9).get() == {"skipped": "no such service"}

"""Sign-in through a real OpenID Connect provider (django-oidc-provider in its own process,
tests/fakes/oidc_provider): the portal's side is driven by Django's test client, the person's
side (the provider's login form) by an HTTP session, the code travels between them as a browser
would carry it. Groups → role at every sign-in, (issuer, sub) identity, next-url safety, the
provider's refusals, local login switched off, and sign-out at the provider."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urljoin, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client

from portal.kernel.accounts import oidc
from portal.kernel.accounts.models import OidcIdentity
from portal.kernel.accounts.roles import Role, grant, role_of
from tests.fakes.oidc_provider import CLIENT_SECRET, Person, free_port, start_provider, stop_provider

pytestmark = pytest.mark.django_db

PORTAL = "http://testserver"
PEOPLE = [
    Person("ada", "ada-pass-123", "ada@example.com", ("platform-admins", "payments-devs")),
    Person("mara", "mara-pass-123", "mara@example.com", ("payments-devs",)),
    Person("vic", "vic-pass-123", "vic@example.com", ("readers",)),
    Person("nobody", "nobody-pass-123", "nobody@example.com", ("marketing", "<b>loud</b>")),
    Person("ben", "ben-pass-123", "ben@example.com", ("platform-admins",)),
    Person("dup", "dup-pass-123", "shared@example.com", ("readers",)),
]


def _start(tmp_path_factory, name: str, groups_in_id_token: bool):
    provider = start_provider(
        tmp_path_factory.mktemp(name),
        people=PEOPLE,
        groups_in_id_token=groups_in_id_token,
        redirect_uris=[f"{PORTAL}/accounts/oidc/callback/"],
        post_logout_redirect_uris=[f"{PORTAL}/accounts/login/"],
    )
    oidc._clients.clear()  # each provider has its own keys: no client (and JWKS) kept from another
    return provider


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    started = _start(tmp_path_factory, "idp", groups_in_id_token=True)
    yield started
    stop_provider(started)


@pytest.fixture
def configured(settings, provider):
    for name, value in provider.portal_settings().items():
        setattr(settings, name, value)
    settings.PORTAL_OIDC_NAME = "Example SSO"
    settings.PORTAL_OIDC_ADMIN_GROUPS = ["platform-admins"]
    settings.PORTAL_OIDC_MEMBER_GROUPS = ["payments-devs", "checkout-devs"]
    settings.PORTAL_OIDC_VIEWER_GROUPS = ["readers"]
    return provider


def round_trip(client: Client, provider, person: Person, next_url: str = ""):
    """Portal → provider's login form → provider's redirect to the callback → portal's answer."""
    start = client.get("/accounts/oidc/login/" + (f"?next={quote(next_url)}" if next_url else ""))
    assert start.status_code == 302 and start["Location"].startswith(provider.issuer + "/authorize")
    query = parse_qs(urlsplit(start["Location"]).query)
    assert query["code_challenge_method"] == ["S256"] and query["nonce"] and query["state"]
    browser = requests.Session()
    to_login = browser.get(start["Location"], allow_redirects=False)
    login_url = urljoin(provider.site_url, to_login.headers["Location"])
    browser.get(login_url)
    signed = browser.post(
        f"{provider.site_url}/login/",
        allow_redirects=False,
        data={
            "username": person.username,
            "password": person.password,
            "next": parse_qs(urlsplit(login_url).query)["next"][0],
            "csrfmiddlewaretoken": browser.cookies["provider_csrftoken"],
        },
    )
    authorized = browser.get(urljoin(provider.site_url, signed.headers["Location"]), allow_redirects=False)
    callback = urlsplit(authorized.headers["Location"])
    assert f"{callback.scheme}://{callback.netloc}{callback.path}" == f"{PORTAL}/accounts/oidc/callback/"
    return client.get(f"{callback.path}?{callback.query}")


def user_of(client: Client):
    return get_user_model().objects.get(pk=client.session["_auth_user_id"])


def test_an_admin_group_makes_an_admin_found_by_issuer_and_subject(configured):
    client = Client()
    answer = round_trip(client, configured, PEOPLE[0])
    assert answer.status_code == 302 and answer["Location"] == "/"
    user = user_of(client)
    assert role_of(user) is Role.ADMIN and user.username == "ada" and user.email == "ada@example.com"
    identity = OidcIdentity.objects.get(user=user)
    assert identity.issuer == configured.issuer and identity.subject
    assert not user.has_usable_password()
    assert client.get("/discovery").status_code == 200  # an admin-only page


def test_member_and_viewer_groups_give_those_roles(configured):
    for person, role in ((PEOPLE[1], Role.MEMBER), (PEOPLE[2], Role.VIEWER)):
        client = Client()
        assert round_trip(client, configured, person).status_code == 302
        assert role_of(user_of(client)) is role


def test_the_role_follows_the_groups_at_each_sign_in(configured):
    ben = PEOPLE[4]
    first = Client()
    round_trip(first, configured, ben)
    assert role_of(user_of(first)) is Role.ADMIN
    configured.set_groups("ben", "readers")
    second = Client()
    round_trip(second, configured, ben)
    user = user_of(second)
    assert role_of(user) is Role.VIEWER and OidcIdentity.objects.filter(user__username="ben").count() == 1
    assert second.get("/discovery").status_code == 403
    configured.set_groups("ben", "marketing")
    assert round_trip(Client(), configured, ben).status_code == 403
    # No role left at all: a session still open elsewhere loses access on its next request.
    user = get_user_model().objects.get(username="ben")
    assert role_of(user) is None and first.get("/").status_code == 403


def test_a_user_in_no_mapped_group_is_told_why_and_not_signed_in(configured):
    client = Client()
    answer = round_trip(client, configured, PEOPLE[3])
    assert answer.status_code == 403
    text = answer.content.decode()
    assert "Your account <strong>nobody</strong> signed in through Example SSO" in text
    for group in ("platform-admins", "payments-devs", "checkout-devs", "readers", "marketing"):
        assert f"<code>{group}</code>" in text
    assert "&lt;b&gt;loud&lt;/b&gt;" in text and "<b>loud" not in text
    assert "_auth_user_id" not in client.session
    assert client.get("/")["Location"].startswith("/accounts/login/")


def test_the_highest_mapped_group_wins(settings):
    settings.PORTAL_OIDC_ADMIN_GROUPS = ["ops"]
    settings.PORTAL_OIDC_MEMBER_GROUPS = ["dev"]
    settings.PORTAL_OIDC_VIEWER_GROUPS = ["all"]
    assert oidc.role_for(["all", "dev"]) is Role.MEMBER
    assert oidc.role_for(["dev", "ops", "all"]) is Role.ADMIN
    assert oidc.role_for(["all"]) is Role.VIEWER
    assert oidc.role_for(["Ops", "developers"]) is None  # names compare exactly, as the provider sends them
    settings.PORTAL_OIDC_GROUPS_CLAIM = "roles"
    assert oidc.groups_of({"roles": "ops"}) == ["ops"] and oidc.groups_of({"groups": ["ops"]}) is None
    assert oidc.groups_of({"roles": {"not": "a list"}}) == []


def test_a_local_account_of_the_same_name_or_email_is_another_person(configured):
    local = get_user_model().objects.create_user("dup", email="shared@example.com", password="local-pass-123")
    grant(local, Role.ADMIN)
    client = Client()
    round_trip(client, configured, PEOPLE[5])
    user = user_of(client)
    assert user.pk != local.pk and user.username == "dup-2" and role_of(user) is Role.VIEWER
    assert role_of(local) is Role.ADMIN  # untouched


def test_next_is_kept_across_the_round_trip_when_it_is_this_portal(configured):
    assert round_trip(Client(), configured, PEOPLE[1], next_url="/updates?env=prod")["Location"] == "/updates?env=prod"
    for outside in ("https://evil.example/steal", "//evil.example/", "javascript:alert(1)"):
        assert round_trip(Client(), configured, PEOPLE[1], next_url=outside)["Location"] == "/"


def test_the_providers_refusal_ends_on_the_login_page(configured):
    client = Client()
    client.get("/accounts/oidc/login/")
    answer = client.get("/accounts/oidc/callback/?error=access_denied&state=whatever", follow=True)
    assert answer.status_code == 200 and answer.redirect_chain[-1][0] == "/accounts/login/"
    assert "Example SSO did not sign you in (access_denied)." in answer.content.decode()


def test_a_forged_state_ends_on_the_login_page(configured):
    client = Client()
    client.get("/accounts/oidc/login/")
    answer = client.get("/accounts/oidc/callback/?code=stolen&state=forged", follow=True)
    text = answer.content.decode()
    assert answer.status_code == 200 and "could not be verified" in text
    assert "_auth_user_id" not in client.session and CLIENT_SECRET not in text


def test_an_unreachable_provider_ends_on_the_login_page(configured, settings):
    settings.PORTAL_OIDC_ISSUER = f"http://127.0.0.1:{free_port()}/nothing"
    answer = Client().get("/accounts/oidc/login/", follow=True)
    text = answer.content.decode()
    assert answer.status_code == 200 and "Example SSO could not be reached" in text
    assert CLIENT_SECRET not in text


def test_sign_out_ends_the_session_here_and_at_the_provider(configured):
    client = Client()
    round_trip(client, configured, PEOPLE[1])
    id_token = client.session["portal_oidc_id_token"]
    answer = client.post("/accounts/logout/")
    assert "_auth_user_id" not in client.session
    end = urlsplit(answer["Location"])
    assert f"{end.scheme}://{end.netloc}{end.path}" == configured.end_session_url
    params = parse_qs(end.query)
    assert params["id_token_hint"] == [id_token]
    assert params["post_logout_redirect_uri"] == [f"{PORTAL}/accounts/login/"]
    # The provider accepts it and sends the browser back to the portal's login page.
    ended = requests.get(answer["Location"], allow_redirects=False, timeout=10)
    assert ended.status_code == 302 and ended.headers["Location"] == f"{PORTAL}/accounts/login/"


def test_local_login_switched_off_refuses_the_password_form(configured, settings):
    settings.PORTAL_LOCAL_LOGIN = False
    get_user_model().objects.create_user("local", password="local-pass-123")
    client = Client()
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Example SSO" in page and 'name="password"' not in page
    refused = client.post("/accounts/login/", {"username": "local", "password": "local-pass-123"})
    assert refused.status_code == 403 and "_auth_user_id" not in client.session
    assert "switched off" in refused.content.decode()


def test_without_oidc_the_local_form_is_all_there_is(settings):
    settings.PORTAL_OIDC_ISSUER = ""
    get_user_model().objects.create_user("local", password="local-pass-123")
    client = Client()
    page = client.get("/accounts/login/").content.decode()
    assert 'name="password"' in page and "Sign in with" not in page
    assert client.get("/accounts/oidc/login/").status_code == 404
    assert client.post("/accounts/login/", {"username": "local", "password": "local-pass-123"}).status_code == 302
    assert client.post("/accounts/logout/")["Location"] == "/accounts/login/"


@pytest.fixture(scope="module")
def userinfo_provider(tmp_path_factory):
    started = _start(tmp_path_factory, "idp-userinfo", groups_in_id_token=False)
    yield started
    stop_provider(started)


def test_groups_missing_from_the_id_token_are_read_from_userinfo(settings, userinfo_provider):
    for name, value in userinfo_provider.portal_settings().items():
        setattr(settings, name, value)
    settings.PORTAL_OIDC_MEMBER_GROUPS = ["payments-devs"]
    client = Client()
    assert round_trip(client, userinfo_provider, PEOPLE[1]).status_code == 302
    assert role_of(user_of(client)) is Role.MEMBER


def test_local_login_switched_off_closes_the_admin_sites_password_form_too(settings):
    settings.PORTAL_LOCAL_LOGIN = False
    get_user_model().objects.create_superuser("root", password="root-pass-123")
    client = Client()
    client.post("/admin/login/?next=/admin/", {"username": "root", "password": "root-pass-123"})
    assert "_auth_user_id" not in client.session
    settings.PORTAL_LOCAL_LOGIN = True
    assert (
        client.post("/admin/login/?next=/admin/", {"username": "root", "password": "root-pass-123"})["Location"]
        == "/admin/"
    )


def test_an_account_deactivated_in_the_portal_stays_out(configured):
    round_trip(Client(), configured, PEOPLE[2])
    get_user_model().objects.filter(username="vic").update(is_active=False)
    client = Client()
    answer = round_trip(client, configured, PEOPLE[2])
    assert answer["Location"] == "/accounts/login/" and "_auth_user_id" not in client.session


def test_teams_follow_the_mapped_groups_at_each_sign_in(configured, settings):
    """Team ownership (portal.kernel.accounts.teams) from the same groups as the role."""
    from portal.kernel.accounts.roles import teams_of

    settings.PORTAL_OIDC_TEAM_GROUPS = {"payments-devs": "payments", "checkout-devs": "checkout"}
    ben = PEOPLE[4]
    configured.set_groups("ben", "payments-devs", "marketing")
    client = Client()
    assert round_trip(client, configured, ben).status_code == 302
    assert teams_of(user_of(client)) == frozenset({"payments"})
    configured.set_groups("ben", "checkout-devs")
    again = Client()
    round_trip(again, configured, ben)
    assert teams_of(user_of(again)) == frozenset({"checkout"})  # payments gone with its group

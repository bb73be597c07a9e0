"""Personal API tokens end to end: made on the profile page and shown once, stored as a
hash, sent as a bearer token, revocable; the viewer role; a rate limit per token; one
error shape; and a token never appears in a log line or a later response."""

from __future__ import annotations

import hashlib
import logging
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.urls import reverse

from portal.kernel.accounts import tokens
from portal.kernel.accounts.models import ApiToken

pytestmark = pytest.mark.django_db

LIST = "/api/v1/gitops"


def bearer(plain: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {plain}"}


def create_on_profile(client, name: str = "release script") -> str:
    response = client.post(reverse("profile"), {"action": "create", "name": name})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    found = re.findall(r"gpat_[A-Za-z0-9_-]{43}", response.content.decode())
    assert len(set(found)) == 1
    return found[0]


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code and body["error"]["message"]
    assert isinstance(body["error"]["details"], dict)
    return body["error"]


def test_a_token_made_on_the_profile_page_is_shown_once_and_stored_hashed(client, users):
    client.force_login(users["viewer"])
    plain = create_on_profile(client)
    token = ApiToken.objects.get(user=users["viewer"])
    assert token.digest == hashlib.sha256(plain.encode()).hexdigest()
    stored = [str(getattr(token, f.attname)) for f in ApiToken._meta.concrete_fields]
    assert not any(plain in value for value in stored)
    assert plain.startswith(token.hint) and len(token.hint) < 16

    page = client.get(reverse("profile")).content.decode()
    assert plain not in page
    assert token.hint in page and "release script" in page and "never" in page


def test_the_token_authenticates_and_records_its_last_use(client, users):
    client.force_login(users["viewer"])
    plain = create_on_profile(client)
    client.logout()
    response = client.get(LIST, **bearer(plain))
    assert response.status_code == 200
    assert ApiToken.objects.get().last_used_at is not None


def test_a_revoked_token_gets_401(client, users):
    client.force_login(users["viewer"])
    plain = create_on_profile(client)
    token = ApiToken.objects.get()
    response = client.post(reverse("profile"), {"action": "revoke", "token": str(token.pk)})
    assert response.status_code == 302
    assert "revoked" in client.get(reverse("profile")).content.decode()
    client.logout()
    error = assert_error(client.get(LIST, **bearer(plain)), 401, "authentication_failed")
    assert "revoked" in error["message"]


def test_nobody_revokes_another_users_token(client, users):
    token, plain = tokens.issue(users["member"], "theirs")
    client.force_login(users["viewer"])
    client.post(reverse("profile"), {"action": "revoke", "token": str(token.pk)})
    token.refresh_from_db()
    assert token.revoked_at is None
    assert client.get(LIST, **bearer(plain)).status_code == 200


@pytest.mark.parametrize("header", [
    "Bearer gpat_" + "x" * 43,  # well-formed, unknown
    "Bearer not-a-portal-token",
    "Bearer",
    "Bearer two words",
])
def test_wrong_or_malformed_tokens_get_401(client, users, header):
    tokens.issue(users["viewer"], "real")
    response = client.get(LIST, HTTP_AUTHORIZATION=header)
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_no_credentials_get_401_with_the_error_shape(client, db):
    response = client.get(LIST)
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_token_of_an_inactive_user_gets_401(client, users):
    _, plain = tokens.issue(users["viewer"], "old")
    get_user_model().objects.filter(pk=users["viewer"].pk).update(is_active=False)
    assert_error(client.get(LIST, **bearer(plain)), 401, "authentication_failed")


def test_without_the_viewer_role_the_api_answers_403(client, db):
    nobody = get_user_model().objects.create_user("nobody")
    _, plain = tokens.issue(nobody, "no role")
    error = assert_error(client.get(LIST, **bearer(plain)), 403, "permission_denied")
    assert "viewer" in error["message"]
    client.force_login(nobody)
    assert_error(client.get(LIST), 403, "permission_denied")


@pytest.mark.parametrize("role", ["viewer", "member", "admin"])
def test_the_browser_session_works_for_every_role(client, users, role):
    client.force_login(users[role])
    assert client.get(LIST).status_code == 200
    assert client.get("/api/v1/pull-requests").status_code == 200


def test_the_api_is_read_only(client, users):
    _, plain = tokens.issue(users["admin"], "admin")
    response = client.post(LIST, {}, **bearer(plain))
    assert_error(response, 405, "method_not_allowed")


def test_the_rate_limit_is_per_token(client, users, settings):
    settings.PORTAL_API_RATE = "3/minute"
    cache.clear()
    _, first = tokens.issue(users["viewer"], "busy script")
    _, second = tokens.issue(users["viewer"], "other script")
    for _ in range(3):
        assert client.get(LIST, **bearer(first)).status_code == 200
    response = client.get(LIST, **bearer(first))
    error = assert_error(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0 and error["details"]["retry_after"] > 0
    assert client.get(LIST, **bearer(second)).status_code == 200
    cache.clear()


def test_a_token_never_reaches_a_log_line_or_a_response(client, users, settings, caplog):
    settings.DEBUG = True  # also logs every SQL statement: the token must not be in any of them
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django.db.backends")
    client.force_login(users["viewer"])
    plain = create_on_profile(client)
    client.logout()
    token = ApiToken.objects.get()
    caplog.clear()
    bodies = []
    for url, header in [
        (LIST, plain),
        (LIST + "?unknown=1", plain),
        ("/api/v1/nothing", plain),
        ("/api/v1/gitops/prod/argocd/missing", plain),
        ("/api/schema", plain),
        (LIST, plain[:-1] + ("A" if plain[-1] != "A" else "B")),  # one character off
    ]:
        response = client.get(url, **bearer(header))
        bodies.append(response.content.decode())
        assert header not in response.content.decode()
    tokens.revoke(users["viewer"], token.pk)
    bodies.append(client.get(LIST, **bearer(plain)).content.decode())
    client.force_login(users["viewer"])
    bodies.append(client.get(reverse("profile")).content.decode())

    assert caplog.records, "nothing was logged: the check below would prove nothing"
    assert any("accounts_apitoken" in record.getMessage() for record in caplog.records)  # SQL was logged
    logged = "\n".join(record.getMessage() for record in caplog.records)
    secret = plain[len(tokens.PREFIX):]
    assert secret not in logged
    assert not any(secret in body for body in bodies)

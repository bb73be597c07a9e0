"""portal.redaction.redact: the one scrubber for error text from registries, forges, the
Kubernetes API and webhook receivers (issue 19, defect 5)."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import pytest

from forges.forge import error_message
from forges.forge import redact as forge_redact
from portal.redaction import MASK, basic_pair, redact

USER, PASSWORD = "ci-reader", "pw-registry-7f3e9c1d"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJl"


@pytest.mark.parametrize(
    "text",
    [
        f"Authorization: Basic {BASIC}\r\nAccept: */*",  # an echoing proxy's debug page
        f"authorization: basic {BASIC}",
        f"AUTHORIZATION:Basic {BASIC}",
        f'{{"Authorization": "Basic {BASIC}", "Accept": "*/*"}}',  # JSON
        f"{{'Proxy-Authorization': 'Basic {BASIC}'}}",  # a Python repr of the headers
        f"headers=Authorization%3A%20Basic%20{quote(BASIC, safe='')}&x=1",  # URL-encoded
        f"upstream said: invalid credentials Basic {BASIC} for registry",  # the credential alone
        f"proxy rejected request with Authorization: Bearer {JWT}",
        f"request failed (BEARER {JWT})",
    ],
)
def test_authorization_values_and_basic_or_bearer_credentials_go_in_any_spelling(text: str) -> None:
    out = redact(text)
    assert BASIC not in out and BASIC.rstrip("=") not in out and JWT not in out
    assert quote(BASIC, safe="") not in out
    assert MASK in out


def test_the_header_name_and_the_rest_of_the_text_stay() -> None:
    assert redact(f"Authorization: Basic {BASIC}\nHost: ghcr.io") == f"Authorization: {MASK}\nHost: ghcr.io"
    assert redact(f'{{"Authorization": "Bearer {JWT}", "x": 1}}') == f'{{"Authorization": "{MASK}", "x": 1}}'


@pytest.mark.parametrize(
    "prose",
    [
        "Basic authentication required",
        'unauthorized: WWW-Authenticate: Bearer realm="https://ghcr.io/token",service="ghcr.io"',
        "UNAUTHORIZED: authentication required",
        "the Authorization header is missing",
        "manifest unknown: manifest tagged by \"v1.2.0\" is not found",
    ],
)
def test_prose_about_authentication_is_left_alone(prose: str) -> None:
    assert redact(prose) == prose


def test_known_secrets_go_plain_base64_and_url_encoded() -> None:
    password = "p@ss/w0rd+x"
    pair = basic_pair(USER, password)
    encoded = base64.b64encode(pair.encode()).decode()
    text = (
        f"password {password}; pair {pair}; b64 {encoded}; unpadded {encoded.rstrip('=')}; "
        f"url {quote(password, safe='')}; b64 of the password {base64.b64encode(password.encode()).decode()}"
    )
    out = redact(text, [password, pair, None, ""])
    for form in (password, pair, encoded, encoded.rstrip("="), quote(password, safe="")):
        assert form not in out
    assert out.startswith(f"password {MASK}; pair {MASK}; b64 {MASK}")


def test_the_forge_tokens_from_settings_go_without_being_passed(settings: Any) -> None:
    settings.PORTAL_GITOPS_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    settings.PORTAL_GITOPS_GITLAB_TOKEN = "glpat-xXyYzZ0123456789abcd"
    settings.PORTAL_GITOPS_GITEA_TOKEN = "8f3c2a1b9d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"
    text = (
        f"bad token ghp_16C7e42F292c6912E7710c838347Ae178B4a, glpat-xXyYzZ0123456789abcd and "
        f"{quote('8f3c2a1b9d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a')}"
    )
    assert redact(text) == f"bad token {MASK}, {MASK} and {MASK}"


def test_url_userinfo_goes_and_the_host_stays() -> None:
    text = "fatal: could not read from https://bot:ghp_abc123@github.com/acme/deploy.git (ssh://git@host/x)"
    assert redact(text) == f"fatal: could not read from https://{MASK}@github.com/acme/deploy.git (ssh://{MASK}@host/x)"
    assert redact("see https://github.com/acme/deploy/pull/7") == "see https://github.com/acme/deploy/pull/7"


def test_short_values_are_not_secrets_and_empty_text_stays_empty() -> None:
    assert redact("a 1 ok", ["a", "1", "ok"]) == "a 1 ok"
    assert redact("", [PASSWORD]) == ""


# --- every client goes through it ----------------------------------------------------


def test_a_forge_error_body_echoing_the_authorization_header_is_redacted() -> None:
    # GitHub's error shape; a proxy in front of GitHub Enterprise put the request in `message`.
    body = json.dumps({
        "message": f"Bad credentials (request Authorization: token-less Basic {BASIC})",
        "documentation_url": "https://docs.github.com/rest",
    }).encode()
    assert BASIC not in error_message(body) and error_message(body).startswith("Bad credentials")
    assert BASIC not in error_message(f"<html>Authorization: Bearer {JWT}</html>")
    github = forge_redact(f"GitHub: read: 401 Authorization: Bearer {JWT}", [])
    assert github == f"GitHub: read: 401 Authorization: {MASK}"
    gitlab = forge_redact("GitLab: token glpat-abcdefgh1234 refused", ["glpat-abcdefgh1234"])
    assert gitlab == "GitLab: token *** refused"


def test_a_webhook_receiver_echoing_the_authorization_header_is_redacted(db) -> None:
    from portal.notifications.channels import Webhook
    from portal.notifications.models import Channel

    url = "https://hooks.example/T0/B1/secretpath"
    channel = Channel(name="hook", kind=Channel.Kind.WEBHOOK, url=url, secret="s3cret-sign")
    error = Webhook(channel).error_for(
        502, f"bad gateway; upstream got Authorization: Bearer {JWT} for /T0/B1/secretpath, sig s3cret-sign".encode()
    )
    assert JWT not in error.message and "secretpath" not in error.message and "s3cret-sign" not in error.message
    assert error.message.startswith("HTTP 502: bad gateway") and not error.permanent

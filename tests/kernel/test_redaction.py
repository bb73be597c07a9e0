"""portal.kernel.redaction.redact: the one scrubber for error text from registries, forges, the
Kubernetes API and webhook receivers (issue 19, defect 5)."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import pytest

from forges.forge import error_message
from forges.forge import redact as forge_redact
from portal.kernel.redaction import MASK, basic_pair, redact

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


# --- SMTP AUTH and git (issue 19: the gaps left after the first redaction) ------------

SMTP_USER, SMTP_PASSWORD = "mailer@acme.example", "smtp-Pa55-4d9e"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


PLAIN = _b64(chr(0) + SMTP_USER + chr(0) + SMTP_PASSWORD)  # what smtplib sends (RFC 4616)
PLAIN_AUTHZID = _b64(SMTP_USER + chr(0) + SMTP_USER + chr(0) + SMTP_PASSWORD)
XOAUTH2 = _b64("user=" + SMTP_USER + chr(1) + "auth=Bearer ya29.a0AfH6SMBx" + chr(1) * 2)


@pytest.mark.parametrize(
    ("echo", "credential"),
    [
        (f"535 5.7.8 Error: authentication failed: AUTH PLAIN {PLAIN}", PLAIN),
        (f"5.7.8 rejected auth plain {PLAIN_AUTHZID}", PLAIN_AUTHZID),
        (f"501 bad command AUTH XOAUTH2 {XOAUTH2}", XOAUTH2),
    ],
)
def test_smtp_auth_responses_go_even_when_the_password_is_not_given(echo: str, credential: str) -> None:
    out = redact(echo)
    assert credential not in out and credential.rstrip("=") not in out
    assert out == echo.replace(credential, MASK)


def test_the_smtp_password_from_settings_goes_in_its_auth_plain_form(settings: Any) -> None:
    settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = SMTP_USER, SMTP_PASSWORD
    plain = PLAIN
    # A server that names the credential without the AUTH verb in front of it.
    out = redact(f"535 authentication failed for {plain}; password was {SMTP_PASSWORD}")
    assert plain not in out and plain.rstrip("=") not in out and SMTP_PASSWORD not in out
    assert out == f"535 authentication failed for {MASK}; password was {MASK}"


@pytest.mark.parametrize("prose", ["AUTH LOGIN failed", "504 5.5.4 AUTH PLAIN mechanism not supported",
                                   "530 5.7.0 Must issue a STARTTLS command first"])
def test_smtp_prose_is_left_alone(prose: str) -> None:
    assert redact(prose) == prose


def test_a_failed_git_command_line_keeps_no_userinfo(tmp_path) -> None:
    import subprocess

    token = "ghp_R3alLooking0Token4Git"
    remote = f"https://x-access-token:{token}@127.0.0.1:9/acme/deploy.git"
    result = subprocess.run(["git", "ls-remote", remote], cwd=tmp_path, capture_output=True, text=True,
                            env={"GIT_TERMINAL_PROMPT": "0", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    error = subprocess.CalledProcessError(result.returncode, ["git", "ls-remote", remote], stderr=result.stderr)
    assert error.returncode != 0 and token in str(error)  # Python's message quotes the command line

    out = redact(f"{error}: {result.stderr.strip()}")

    assert token not in out and "x-access-token" not in out
    assert "https://***@127.0.0.1:9/acme/deploy.git" in out


@pytest.mark.parametrize(
    "text",
    [
        "fatal: unable to access 'https://bot:p@ss-w0rd@git.corp.example/acme/deploy.git/': 403",
        "remote=https%3A%2F%2Fbot%3Ap%40ss-w0rd%40git.corp.example%2Facme%2Fdeploy.git&branch=main",
        "protocol=https\nhost=git.corp.example\nusername=bot\npassword=p@ss-w0rd\n",
    ],
)
def test_git_userinfo_goes_with_an_at_sign_in_the_password_or_url_encoded(text: str) -> None:
    out = redact(text)
    assert "p@ss-w0rd" not in out and "ss-w0rd" not in out and "p%40ss" not in out
    assert "git.corp.example" in out and MASK in out


def test_an_at_sign_in_a_query_or_path_is_not_userinfo() -> None:
    for text in ("see https://github.com/acme/deploy/commits?author=bot@acme.example",
                 "https://registry.example/v2/acme/app/manifests/sha256@abc"):
        assert redact(text) == text


def test_a_calendar_feed_secret_in_a_request_line_is_masked():
    line = 'GET /calendar/feeds/gcal_Ab3-_x9Zq/environments/prod.ics HTTP/1.1" 200'
    assert redact(line) == 'GET /calendar/feeds/gcal_***/environments/prod.ics HTTP/1.1" 200'

"""The one redaction for error text that comes back from another system.

Registries, forges, webhooks and proxies sometimes echo the request back in an error
body: its Authorization header, a URL with user:password in it, a token. Such text is
stored, logged and shown on pages, so every client passes it through `redact` first.

`redact` removes, whatever the secrets it is given:
- the values of Authorization / Proxy-Authorization headers (as a header line, JSON or
  a repr, plain or URL-encoded), and any `Basic …` / `Bearer …` credential;
- the SASL responses an SMTP server may echo back (`AUTH PLAIN <base64 of
  "\\0user\\0password">`, `AUTH LOGIN …`, XOAUTH2);
- the userinfo of URLs (`https://user:pw@host` -> `https://***@host`), also URL-encoded and
  with an unescaped `@` in the password, as a failing `git` prints its command line or
  remote in stderr, and the `password=` lines of git's credential protocol;
- the secret of a calendar feed's address (`gcal_…`, portal.kernel.accounts.calendarfeeds):
  a calendar app can only send it in the path, which request log lines print;
and every known secret: the values passed in, the forge tokens and the SMTP password from
settings, each also as base64 (how `user:password` travels in Basic auth and
`\\0user\\0password` in SMTP AUTH PLAIN) and URL-encoded.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
_MIN_SECRET = 4  # shorter "secrets" would blank out ordinary words
_SETTINGS_TOKENS = (
    "PORTAL_GITOPS_TOKEN", "PORTAL_GITOPS_GITLAB_TOKEN", "PORTAL_GITOPS_GITEA_TOKEN", "EMAIL_HOST_PASSWORD",
)

_SEP = r"""(["']?\s*(?::|=|%3A|%3D)\s*["']?(?:\s|%20|\+)*)"""
# The header's value runs to the end of the line, a closing quote or the next field.
_HEADER = re.compile(rf"""(?i)\b((?:proxy-)?authorization){_SEP}(?:[^\r\n"',;}}\]&]|%[0-9a-f]{{2}})+""")
_TOKEN_CHAR = r"(?:[A-Za-z0-9._~+/\-]|%[0-9A-Fa-f]{2})"
# A credential is at least 8 characters; an all-lowercase word ("Basic authentication")
# is prose, not base64 or a token.
_SCHEME = re.compile(
    rf"(?i)\b(basic|bearer)(?:\s+|%20|\+)(?!(?-i:[a-z]+)(?!{_TOKEN_CHAR}|=|%3D)){_TOKEN_CHAR}{{8,}}(?:=|%3D)*"
)
# An SMTP AUTH command with its initial response (RFC 4954), as a server may quote it back.
# A lower-case word after it ("AUTH LOGIN failed") is prose, not base64.
_SASL = re.compile(
    r"(?i:\b(AUTH\s+(?:PLAIN|LOGIN|XOAUTH2|OAUTHBEARER|CRAM-MD5)))\s+(?![a-z]+(?![A-Za-z0-9+/=]))[A-Za-z0-9+/]{4,}={0,2}"
)
# Greedy up to the last `@` before the path: a password with an unescaped `@` goes whole.
_USERINFO = re.compile(r"""(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s"'<>]+@""")
_ENCODED_USERINFO = re.compile(r"""(?i)\b([a-z][a-z0-9+.\-]*%3A%2F%2F)(?:(?!%2F|%3F|%23)[^/?#\s"'<>&])+%40""")
_CREDENTIAL_LINE = re.compile(r"(?im)^(\s*password=).+$")
_FEED_SECRET = re.compile(r"\b(gcal_)[A-Za-z0-9_-]+")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` without credentials: see the module docstring. `secrets` are extra known values
    (a password, `user:password`, a token); forms of each are removed too."""
    if not text:
        return text
    for form in sorted(_forms([*secrets, *_settings_tokens()]), key=len, reverse=True):
        text = text.replace(form, MASK)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _SCHEME.sub(lambda m: f"{m.group(1)} {MASK}", text)
    text = _SASL.sub(lambda m: f"{m.group(1)} {MASK}", text)
    text = _ENCODED_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}%40", text)
    text = _CREDENTIAL_LINE.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _FEED_SECRET.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)


def basic_pair(username: str, password: str) -> str:
    """What Basic auth encodes; pass it to `redact` so its base64 form is removed."""
    return f"{username}:{password}"


def plain_auth(username: str, password: str) -> list[str]:
    """What SMTP AUTH PLAIN encodes (RFC 4616), with and without the authorization identity
    smtplib and other clients may send; pass them to `redact` so their base64 goes too."""
    return [f"\0{username}\0{password}", f"{username}\0{username}\0{password}"]


def _forms(secrets: Iterable[str | None]) -> set[str]:
    forms: set[str] = set()
    for secret in secrets:
        if not secret or len(secret) < _MIN_SECRET:
            continue
        raw = secret.encode()
        encoded = base64.b64encode(raw).decode("ascii")
        urlsafe = base64.urlsafe_b64encode(raw).decode("ascii")
        for form in (secret, quote(secret, safe=""), quote_plus(secret), encoded, urlsafe):
            forms.add(form)
            forms.add(form.rstrip("="))
    return {f for f in forms if len(f) >= _MIN_SECRET}


def _settings_tokens() -> list[str]:
    from django.conf import settings

    if not settings.configured:
        return []
    tokens = [str(getattr(settings, name, "") or "") for name in _SETTINGS_TOKENS]
    smtp_user, smtp_password = str(settings.EMAIL_HOST_USER or ""), str(settings.EMAIL_HOST_PASSWORD or "")
    if smtp_password:
        tokens.extend(plain_auth(smtp_user, smtp_password))
    return tokens

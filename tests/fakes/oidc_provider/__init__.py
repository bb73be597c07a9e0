"""A real OpenID Connect provider for the sign-in tests: django-oidc-provider (PyPI) in a Django
project of its own (settings.py, urls.py, manage.py here), run as its own process on 127.0.0.1
with its own SQLite, an RSA signing key made by its `creatersakey`, the portal registered as a
confidential client, and users in groups. Discovery, JWKS, the authorization code flow with PKCE,
userinfo and end-session are the library's, not ours.

The process is started with an environment of its own: nothing of the portal's settings
(DJANGO_SETTINGS_MODULE, PORTAL_*) nor Playwright's DJANGO_ALLOW_ASYNC_UNSAFE.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[3]
CLIENT_ID = "gitops-portal"
CLIENT_SECRET = "provider-test-secret-4f7c2a"  # noqa: S105 - a throwaway test client


@dataclass(frozen=True)
class Person:
    username: str
    password: str
    email: str
    groups: tuple[str, ...]


@dataclass
class Provider:
    site_url: str
    workdir: Path
    env: dict[str, str]
    process: subprocess.Popen | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.workdir / "provider.log"

    @property
    def issuer(self) -> str:
        return f"{self.site_url}/openid"

    @property
    def end_session_url(self) -> str:
        return f"{self.issuer}/end-session"

    def manage(self, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "tests.fakes.oidc_provider.manage", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"provider manage {args[0]} failed: {done.stdout}{done.stderr}")

    def set_groups(self, username: str, *groups: str) -> None:
        self.manage("set_groups", username, *groups)

    def portal_settings(self) -> dict[str, str]:
        return {
            "PORTAL_OIDC_ISSUER": self.issuer,
            "PORTAL_OIDC_CLIENT_ID": CLIENT_ID,
            "PORTAL_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def provider_environment(workdir: Path, site_url: str, groups_in_id_token: bool) -> dict[str, str]:
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PORTAL_", "DJANGO_", "DATABASE_URL", "PYTHONPATH"))
    }
    return {
        **inherited,
        "PYTHONPATH": str(ROOT),
        "FAKE_OIDC_DATABASE": str(workdir / "provider.sqlite3"),
        "FAKE_OIDC_SITE_URL": site_url,
        "FAKE_OIDC_GROUPS_IN_ID_TOKEN": "1" if groups_in_id_token else "0",
    }


def start_provider(
    workdir: Path,
    *,
    redirect_uris: list[str],
    post_logout_redirect_uris: list[str],
    people: list[Person],
    groups_in_id_token: bool = True,
) -> Provider:
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    site_url = f"http://127.0.0.1:{port}"
    provider = Provider(
        site_url=site_url, workdir=workdir, env=provider_environment(workdir, site_url, groups_in_id_token)
    )
    spec = workdir / "seed.json"
    spec.write_text(
        json.dumps(
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": redirect_uris,
                "post_logout_redirect_uris": post_logout_redirect_uris,
                "users": [
                    {"username": p.username, "password": p.password, "email": p.email, "groups": list(p.groups)}
                    for p in people
                ],
            }
        )
    )
    provider.manage("seed_provider", str(spec))
    with provider.log.open("wb") as log:
        provider.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.oidc_provider.manage", "runserver", "--noreload", "--skip-checks",
             f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=provider.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    _wait_until_answering(provider)
    return provider


def _wait_until_answering(provider: Provider, deadline_seconds: float = 120.0) -> None:
    """Until discovery answers: runserver says nothing reliable on stdout once it listens. A
    process that exits fails at once; one that is slow to start on a busy CI (set-ups of 30 s
    were seen beside seven other test processes) is waited for."""
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        assert provider.process is not None
        if provider.process.poll() is not None:
            raise RuntimeError(f"the identity provider exited: {provider.log.read_text()[-2000:]}")
        try:
            if requests.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=2).ok:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    stop_provider(provider)
    raise RuntimeError(f"the identity provider did not answer within {deadline_seconds} s")


def stop_provider(provider: Provider) -> None:
    if provider.process is None:
        return
    provider.process.terminate()
    try:
        provider.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        provider.process.kill()
        provider.process.wait()

"""Every view that @requires_role guards holds its line for each role, and anonymous
visitors are sent to log in. The list of views comes from the URL conf, so a new
write view is covered the day it is added."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from portal.delivery.models import PullRequest
from portal.kernel.accounts.roles import Role
from portal.kernel.catalog.models import AgentToken

# Arguments for URL patterns that take some (objects made by the `catalog` fixture).
URL_KWARGS = {"name": {"service": "checkout", "service-panels": "checkout"},
              "token_id": {"cluster-agent-token-revoke": 1},  # the token the test makes
              "pk": {"pr-rendered": 1}}  # the pull request the test makes
DEFAULT_NAME = "prod-eu-1"
# Views whose object comes in the query string (htmx partials).
URL_QUERY = {"matrix-cell": "?service=checkout&environment=prod"}


def guarded_urls() -> list[tuple[str, str, Role]]:
    found = []

    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + (p.namespace + ":" if p.namespace else ""))
            elif isinstance(p, URLPattern) and hasattr(p.callback, "required_role") and p.name:
                kwargs = {}
                for key in p.pattern.converters:
                    kwargs[key] = URL_KWARGS.get(key, {}).get(p.name, DEFAULT_NAME)
                url = reverse(prefix + p.name, kwargs=kwargs) + URL_QUERY.get(p.name, "")
                found.append((prefix + p.name, url, p.callback.required_role))

    walk(get_resolver().url_patterns)
    return found


def test_the_url_conf_has_guarded_reads_and_writes():
    roles = {role for _, _, role in guarded_urls()}
    assert roles == {Role.VIEWER, Role.MEMBER, Role.ADMIN}


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["anonymous", "viewer", "member", "admin"])
def test_each_role_gets_exactly_its_rights(client, catalog, users, who):
    if who != "anonymous":
        client.force_login(users[who])
    held = {"anonymous": None, "viewer": Role.VIEWER, "member": Role.MEMBER, "admin": Role.ADMIN}[who]
    AgentToken.objects.create(pk=1, cluster=catalog.prod_eu, token_hash="0" * 64, prefix="gpa_xxxxxx", created_by="t")
    PullRequest.objects.create(pk=1, kind="upgrade", repository="https://github.com/acme/gitops", forge_kind="github",
                               title="Upgrade checkout", branch="portal/1", base_branch="main", state="open")
    for name, url, needed in guarded_urls():
        response = client.post(url) if name.startswith("cluster-") else client.get(url)
        if response.status_code == 405:  # a write view takes POST only
            response = client.post(url)
        if held is None:
            assert response.status_code == 302, name
            assert response["Location"].startswith(reverse("login")), name
        elif held < needed:
            assert response.status_code == 403, (name, who)
        else:
            # Let through: a read answers, a write redirects; a write posted with no form may say
            # what it lacks (400, or 404 for the object it names) — past the role, never 403.
            allowed = (200, 302, 400, 404) if response.request["REQUEST_METHOD"] == "POST" else (200, 302)
            assert response.status_code in allowed, (name, who, response.status_code)
            if response.status_code == 302:
                assert not response["Location"].startswith(reverse("login")), (name, who)


@pytest.mark.django_db
def test_a_signed_in_user_without_a_role_reads_nothing(client, catalog):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_user("nobody"))
    assert client.get(reverse("overview")).status_code == 403


@pytest.mark.django_db
def test_configuration_and_member_actions_are_audited(client, catalog, users):
    from portal.kernel.audit.models import AuditLog

    client.force_login(users["admin"])
    client.post(reverse("cluster-enabled", kwargs={"name": "prod-eu-1"}), {"enabled": "0"})
    catalog.prod_eu.refresh_from_db()
    assert catalog.prod_eu.enabled is False
    row = AuditLog.objects.get(action="cluster.disabled")
    assert (row.actor_name, row.target) == ("admin", "prod-eu-1")

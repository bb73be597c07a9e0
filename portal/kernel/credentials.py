"""The one lookup of a credential the configuration names by variable: a cluster's token, a
registry's user and password, the release-notes model's key, an agent's token.

The value is never stored, logged or shown; callers pass it straight to the client that needs it.
The environment itself is read by portal.settings (the only module that does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from django.conf import settings


class HasTokenEnv(Protocol):
    token_env: str


def named_secret(name: str) -> str:
    """The value of the variable `name` ("" when it is unset or `name` is empty)."""
    return settings.PORTAL_NAMED_SECRET(name) if name else ""


def cluster_token(cluster: HasTokenEnv) -> str:
    """A cluster's bearer token, from the variable its `token_env` names ("" without one)."""
    return named_secret(cluster.token_env)


def in_cluster_environment() -> Mapping[str, str]:
    """The variables Kubernetes sets in a pod to find its API server."""
    return settings.PORTAL_IN_CLUSTER_ENVIRONMENT()

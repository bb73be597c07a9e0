"""How settings read their less obvious values: the text of an environment variable in, the value
out. Pure functions, no environment read here (portal/settings.py is the one reader), so the
rules are tested without starting Django."""

from __future__ import annotations


def base_url_of_address(address: str) -> str:
    """The URL people open for an address `manage.py runserver` serves ("8000", "0.0.0.0:8080",
    "[::]:8000", "portal.lan:8000"): the embedded run's default PORTAL_BASE_URL, so that links in
    alerts point where it serves. A wildcard names no host to open: the loopback of its family."""
    host, _, port = address.strip().rpartition(":")
    if not port.isdigit():
        host, port = address.strip(), "8000"  # runserver's own default port
    host = {"": "127.0.0.1", "0": "127.0.0.1", "0.0.0.0": "127.0.0.1", "[::]": "[::1]"}.get(host, host)  # noqa: S104 - read, not bound
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # a bare IPv6 address in a URL takes brackets
    return f"http://{host}:{port}"


def team_groups(text: str) -> dict[str, str]:
    """The mapping parsed once here, so a typo stops the start instead of mapping nothing."""
    pairs: dict[str, str] = {}
    for item in text.split(","):
        group, sep, team = item.partition("=")
        if not item.strip():
            continue
        if not sep or not group.strip() or not team.strip():
            raise ValueError(f"PORTAL_OIDC_TEAM_GROUPS: {item.strip()!r} is not idp-group=team")
        pairs[group.strip()] = team.strip()
    return pairs


def osv_offline_sources(text: str) -> list[str]:
    """PORTAL_OSV_OFFLINE: OSV exports to import and refresh, comma-separated; each an absolute
    path (a zip or a directory of OSV JSON records) or an http(s) URL of a zip. Empty: off."""
    sources = [item.strip() for item in text.split(",") if item.strip()]
    for source in sources:
        if not source.startswith(("/", "https://", "http://")):
            raise ValueError(f"PORTAL_OSV_OFFLINE: {source!r} is neither an absolute path nor an http(s) URL")
    return sources

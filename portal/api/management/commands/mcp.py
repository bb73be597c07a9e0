"""`manage.py mcp --stdio`: the portal's MCP server for a local assistant, over stdin/stdout.

The same tools as /mcp, as the owner of a personal API token named by an environment
variable (PORTAL_MCP_TOKEN unless --token-env names another), never by an argument (it
would show in the process list). The token is checked once at start, with the viewer
role, and again by every read, as over HTTP. Links in answers point at PORTAL_BASE_URL.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework import exceptions

from portal.api.mcp.api_pages import Caller, authorized
from portal.api.mcp.server import SERVER, current_caller
from portal.kernel.credentials import named_secret

DEFAULT_TOKEN_ENV = "PORTAL_MCP_TOKEN"


def caller_from_env(name: str) -> Caller:
    plain = named_secret(name)
    if not plain:
        raise CommandError(f"No token: set {name} to a personal API token (gpat_…) from your profile page.")
    try:
        authorized(plain)
    except exceptions.PermissionDenied:
        raise CommandError(f"The owner of the token in {name} lacks the viewer role.") from None
    except exceptions.APIException:
        raise CommandError(f"The token in {name} is invalid or revoked.") from None
    base = urlsplit(settings.PORTAL_BASE_URL)
    return Caller(token=plain, scheme=base.scheme or "http", host=base.netloc or "127.0.0.1:8000")


class Command(BaseCommand):
    help = "Serve the portal's read-only MCP tools to a local assistant over stdio."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--stdio", action="store_true", help="speak MCP over stdin/stdout (the only mode here; "
                            "over HTTP the portal serves /mcp itself)")
        parser.add_argument("--token-env", default=DEFAULT_TOKEN_ENV,
                            help=f"environment variable holding the API token (default {DEFAULT_TOKEN_ENV})")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["stdio"]:
            raise CommandError("Pass --stdio (HTTP clients use the portal's /mcp endpoint).")
        current_caller.set(caller_from_env(options["token_env"]))
        SERVER.run("stdio")

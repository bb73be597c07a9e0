"""Prepares the provider in one process: its tables (migrate), its RSA signing key
(creatersakey), the portal registered as a confidential client (PKCE allowed, no consent
screen), and the users and their groups the tests sign in as, from a JSON file the harness
writes. One process, not three: each start of Python and Django costs seconds on a busy CI."""

import json

from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import BaseCommand
from oidc_provider.models import Client, ResponseType


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("spec")

    def handle(self, *args, spec, **options):
        call_command("migrate", interactive=False, verbosity=0)
        call_command("creatersakey", verbosity=0)
        data = json.loads(open(spec).read())
        client = Client.objects.create(
            name="gitops portal",
            client_type="confidential",
            client_id=data["client_id"],
            client_secret=data["client_secret"],
            jwt_alg="RS256",
            require_consent=False,
            reuse_consent=True,
        )
        client.redirect_uris = data["redirect_uris"]
        client.post_logout_redirect_uris = data["post_logout_redirect_uris"]
        client.save()
        client.response_types.add(ResponseType.objects.get(value="code"))
        for person in data["users"]:
            user = User.objects.create_user(
                person["username"],
                email=person["email"],
                password=person["password"],
                first_name=person.get("first_name", ""),
            )
            for name in person["groups"]:
                user.groups.add(Group.objects.get_or_create(name=name)[0])

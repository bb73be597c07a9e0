"""Registers the portal as a confidential client (PKCE allowed, no consent screen) and creates
the users and their groups the tests sign in as, from a JSON file the harness writes."""

import json

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from oidc_provider.models import Client, ResponseType


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("spec")

    def handle(self, *args, spec, **options):
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

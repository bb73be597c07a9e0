"""`set_groups <username> [group ...]`: what an identity-provider admin does between two sign-ins."""

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("groups", nargs="*")

    def handle(self, *args, username, groups, **options):
        user = User.objects.get(username=username)
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])

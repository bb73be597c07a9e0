"""Create the local demo admin for `make run`; refuses outside demo mode."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from portal.kernel.accounts.roles import Role, ensure_role_groups, grant


class Command(BaseCommand):
    help = "Create (or reset) the local demo admin account. Only in demo mode (PORTAL_DEMO=1)."

    def handle(self, *args, **options):
        if not settings.DEMO_MODE:
            raise CommandError("refusing: demo accounts are only created when PORTAL_DEMO=1 (make run)")
        ensure_role_groups()
        username = settings.PORTAL_DEMO_ADMIN
        password = settings.PORTAL_DEMO_PASSWORD
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        user.is_staff = True
        user.is_superuser = True
        user.save()
        grant(user, Role.ADMIN)
        login = f"{settings.PORTAL_BASE_URL}/accounts/login/"
        self.stdout.write(f"Demo admin ready: log in at {login} as {username} / {password}")

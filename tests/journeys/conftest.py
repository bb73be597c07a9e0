"""The demo as `make run` leaves it, and a member signed in: the journeys' fixtures."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from forges.demo import build_demo_repo
from portal.delivery.current_pins import batch_apps, due_batches, read_pins
from portal.delivery.deployments import announce_rollbacks
from portal.kernel.accounts.roles import Role, grant


@pytest.fixture
def demo(settings, tmp_path: Path) -> None:
    """The demo as `make run` leaves it once its workers have read the pins."""
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", verbosity=0, stdout=StringIO())
    call_command("load_demo_releases", stdout=StringIO())
    for batch in due_batches():
        reports = read_pins(batch_apps(batch.repository, batch.revision, batch.app_ids))
        assert all(report.ok for report in reports.values()), reports
    # The background pass that reads Git at the commits failing apps' histories name.
    announce_rollbacks(timezone.now())


@pytest.fixture
def member(client, django_user_model):
    user = django_user_model.objects.create_user("walker", password="pw")
    grant(user, Role.MEMBER)
    client.force_login(user)
    return user

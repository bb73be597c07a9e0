"""Stuck progressing and a failed last sync need attention (gitops.derive.attention), judged on real
Argo CD Applications read through the real poll path: `fakeAppOperationRunning` from Argo CD's
own metrics tests (Progressing, a sync operation Running since 2025-01-29T08:42:34Z), and
redhat-developer/gitops-backend's application3 with its last operation turned Failed the way
Argo CD writes one (phase Failed, message "one or more synchronization tasks completed
unsuccessfully")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from gitops.derive.attention import Attention
from gitops.models import GitOpsApp
from gitops.polling import poll
from portal.kernel.catalog.models import Cluster, Environment
from portal.web.badges import STUCK_PROGRESSING, SYNC_FAILED, badges_for

pytestmark = pytest.mark.django_db
CORPUS = Path("/work/shared/testdata/real-objects/argocd")
STARTED = datetime(2025, 1, 29, 8, 42, 34, tzinfo=UTC)  # the Running object's operationState.startedAt
FINISHED = datetime(2022, 4, 22, 17, 11, 29, tzinfo=UTC)  # application3's operationState.finishedAt


def _read(name: str) -> dict:
    return yaml.safe_load((CORPUS / name).read_text())


@pytest.fixture
def apps(tmp_path, settings):
    settings.PORTAL_ATTENTION_GRACE_MINUTES = 10
    settings.PORTAL_STUCK_PROGRESSING_MINUTES = 30
    running = _read("argo-cd__metrics_test-fakeAppOperationRunning.yaml")
    failed = _read("gitops-backend__application3.yaml")
    failed["status"]["operationState"].update(phase="Failed",
                                              message="one or more synchronization tasks completed unsuccessfully")
    (tmp_path / "running.yaml").write_text(yaml.safe_dump(running))
    (tmp_path / "failed.yaml").write_text(yaml.safe_dump(failed))
    env = Environment.objects.create(name="prod", order=1, production=True)
    cluster = Cluster.objects.create(name="prod-eu-1", environment=env, connection=Cluster.Connection.MANIFESTS,
                                     manifests_path=str(tmp_path))
    report = poll(cluster)
    assert report.ok, report.error
    return GitOpsApp.objects.get(name="my-app"), GitOpsApp.objects.get(name="dev-app-taxi")


def _names(at: datetime) -> set[str]:
    return set(GitOpsApp.objects.needing_attention(at).values_list("name", flat=True))


def test_a_sync_operation_running_past_the_limit_is_stuck(apps):
    running, _ = apps
    assert running.operation_phase == "Running" and running.operation_started_at == STARTED
    # Health Progressing began at the poll; the operation began at startedAt: the earlier counts.
    GitOpsApp.objects.filter(pk=running.pk).update(health_since=timezone.now(), sync_since=timezone.now())
    running.refresh_from_db()
    before, after = STARTED + timedelta(minutes=29), STARTED + timedelta(minutes=30)
    def stuck(at: datetime) -> bool:
        return GitOpsApp.objects.filter(Attention.at(at).stuck_q(), pk=running.pk).exists()

    assert not stuck(before) and stuck(after)
    assert running.needs_attention(after)
    labels = [b.label for b in badges_for(running, running.cluster, after)]
    assert STUCK_PROGRESSING in labels
    assert STUCK_PROGRESSING not in [b.label for b in badges_for(running, running.cluster, before)]


def test_progressing_health_past_the_limit_is_stuck_and_the_limit_is_a_setting(apps, settings):
    running, _ = apps
    now = timezone.now()
    GitOpsApp.objects.filter(pk=running.pk).update(operation_phase="Succeeded", sync_status="Synced",
                                                   health_since=now - timedelta(minutes=45))
    assert "my-app" in _names(now)
    settings.PORTAL_STUCK_PROGRESSING_MINUTES = 60
    assert "my-app" not in _names(now)
    app = GitOpsApp.objects.get(pk=running.pk)
    assert not app.needs_attention(now)
    assert app.needs_attention(now + timedelta(minutes=16))


def test_a_failed_last_sync_needs_attention_though_the_app_is_healthy_and_synced(apps):
    _, failed = apps
    assert failed.health_status == "Healthy" and failed.operation_phase == "Failed"
    assert failed.operation_finished_at == FINISHED
    assert "dev-app-taxi" in _names(timezone.now())
    # Not before the grace period has passed since it finished.
    assert "dev-app-taxi" not in _names(FINISHED + timedelta(minutes=9))
    badge = next(b for b in badges_for(failed, failed.cluster, timezone.now()) if b.label == SYNC_FAILED)
    assert "completed unsuccessfully" in badge.title and badge.kind == "bad"
    # Succeeded again: nothing to see.
    GitOpsApp.objects.filter(pk=failed.pk).update(operation_phase="Succeeded")
    assert "dev-app-taxi" not in _names(timezone.now())


def test_the_matrix_flags_say_stuck_and_failed(apps, catalog_free_service):
    from portal.web.fleet import attention_flags

    running, failed = apps
    at = STARTED + timedelta(hours=2)
    flags = [f for fs in attention_flags(at).values() for f in fs]
    by_app = {(f.app, f.label) for f in flags}
    assert ("my-app", f"Argo: {STUCK_PROGRESSING}") in by_app
    assert ("dev-app-taxi", f"Argo: {SYNC_FAILED}") in by_app
    stuck = next(f for f in flags if f.label.endswith(STUCK_PROGRESSING))
    assert stuck.since is not None and abs(stuck.since - STARTED) < timedelta(seconds=1)


@pytest.fixture
def catalog_free_service(apps):
    """Flags are per service: link both apps to one."""
    from portal.kernel.catalog.models import Service

    service = Service.objects.create(name="taxi", image_repository="quay.io/test/taxi", team="t")
    for app in apps:
        app.services.add(service)
    return service

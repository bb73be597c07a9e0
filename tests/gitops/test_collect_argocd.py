"""Argo CD Applications and AppProjects → rows, on real objects and hand-made edge cases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gitops.collectors.argocd import application_row, automated_sync, project_row
from gitops.rows import ARGO, OUT_OF_SYNC, SYNCED, UNKNOWN, ResourceKey, SourceSpec
from tests.fixtures.real_objects import REAL_OBJECTS as REAL
from tests.fixtures.real_objects import load_objects


def real_app(file_name: str, index: int = 0) -> dict[str, Any]:
    return load_objects(REAL / "argocd" / file_name)["Application"][index]


def test_four_source_app() -> None:
    row = application_row(
        real_app("argocd-monorepo-controller__mrp_service_test-syncedMSAppWithSingleHistory1Annotated.yaml")
    )
    assert row.key == (ARGO, "Application", "argocd", "demo-ms-a")
    assert [s.path for s in row.sources] == [
        "demo-applications/try-ms02a",
        "demo-applications/try-ms02b",
        "demo-applications/try-ms01a",
        "demo-applications/try-ms01b",
    ]
    assert row.sources[2] == SourceSpec(
        repo_url="https://github.com/dudinea/cfrepo01.git", path="demo-applications/try-ms01a", target_revision="main"
    )
    assert row.synced_revisions == [
        "CURRENT_REPO_02_000000000000000000000000",
        "CURRENT_REPO_02_000000000000000000000000",
        "CURRENT_REPO_01_000000000000000000000000",
        "CURRENT_REPO_01_000000000000000000000000",
    ]
    assert row.synced_revision == "CURRENT_REPO_02_000000000000000000000000"
    # syncResult.revision is "" next to the list: the list is what was synced.
    assert row.operation_revisions == row.synced_revisions
    assert row.operation_revision == "CURRENT_REPO_02_000000000000000000000000"
    assert row.operation_initiated_by == "automated"
    assert row.automated is True and row.manual_sync is False
    assert row.destination_name == "in-cluster" and row.destination_server == ""
    assert [h["id"] for h in row.history] == [3, 4, 5]  # oldest first, as Argo CD keeps it
    assert row.history[0]["revisions"][2] == "HISTORY-1_REPO01_00000000000000000000000"
    assert row.history[-1]["deployed_at"] == "2025-08-10T12:01:33Z"
    assert row.history[-1]["initiated_by"] == "automated"
    assert row.history[1]["initiated_by"] == "admin"
    assert row.health_since == datetime(2025, 8, 10, 12, 1, 35, tzinfo=UTC)
    assert row.reconciled_at == datetime(2025, 8, 11, 14, 5, 27, tzinfo=UTC)
    assert ResourceKey("", "ConfigMap", "demo-ms-a", "config-cm-ms01a") in row.resources
    assert row.images == []


def test_api_response_without_apiversion_and_kind() -> None:
    obj = real_app("roadie-backstage-plugins__applications-test-app.json")
    assert "kind" not in obj and "apiVersion" not in obj
    row = application_row(obj)
    assert row.kind == "Application"
    assert (row.namespace, row.name, row.uid) == ("argocd", "test-app", "059f1d64-f5cb-4887-a142-0aeea61d5817")
    assert (row.sync_status, row.health_status) == (SYNCED, "Healthy")
    assert row.synced_revision == "53e28ff20cc530b9ada2173fbbd64d48338583ba"
    assert row.sources[0].path == "guestbook" and row.sources[0].target_revision == "HEAD"
    assert row.operation_phase == "Succeeded"
    assert row.images and all(isinstance(i, str) for i in row.images)
    assert len(row.history) == 2
    assert row.generation == 2520


def test_operation_started_automatically_without_a_sync_policy_is_manual() -> None:
    obj = real_app("gitops-backend__application3.yaml")
    assert "syncPolicy" not in obj["spec"]
    assert obj["status"]["operationState"]["operation"]["initiatedBy"]["automated"] is True
    row = application_row(obj)
    assert row.automated is False and row.manual_sync is True
    assert row.operation_initiated_by == "automated"
    assert row.operation_phase == "Succeeded"
    assert row.operation_message == "successfully synced (all tasks run)"
    assert row.operation_started_at == datetime(2022, 4, 22, 17, 11, 29, tzinfo=UTC)
    assert row.operation_finished_at == datetime(2022, 4, 22, 17, 11, 29, tzinfo=UTC)
    assert row.operation_revision == "a0c7298faead28f7f60a5106afbb18882ad220a7"
    assert len(row.history) == 6
    assert row.history[-1]["revision"] == "a0c7298faead28f7f60a5106afbb18882ad220a7"
    assert row.history[0]["revision"] == "e5585fcf22366e2d066e0936cbd8a0508756d02d"
    assert row.images == ["nginxinc/nginx-unprivileged:latest"]
    assert ResourceKey("apps", "Deployment", "dev", "taxi") in row.resources
    assert row.namespace == "test-namespace"  # an app outside the control-plane namespace


def test_app_without_status_and_helm_chart_source() -> None:
    row = application_row(real_app("argo-cd__live-child-application.yaml"))
    assert row.sources == [
        SourceSpec(repo_url="https://argoproj.github.io/argo-helm", chart="argo-workflows", target_revision="0.45.27")
    ]
    assert (row.sync_status, row.health_status) == (UNKNOWN, UNKNOWN)
    assert row.automated is True
    assert row.history == [] and row.resources == []
    assert any("no status" in w for w in row.warnings)


def test_default_project_and_running_operation() -> None:
    assert application_row(real_app("argo-cd__metrics_test-fakeDefaultApp.yaml")).project == "default"
    running = application_row(real_app("argo-cd__metrics_test-fakeAppOperationRunning.yaml"))
    assert (running.sync_status, running.health_status, running.operation_phase) == (
        OUT_OF_SYNC,
        "Progressing",
        "Running",
    )
    assert running.operation_finished_at is None


def test_metrics_fixtures_policies_and_conditions() -> None:
    apps = [
        application_row(a)
        for a in load_objects(REAL / "argocd" / "argo-cd__metrics_test-fakeApp1-4.yaml")["Application"]
    ]
    assert [a.automated for a in apps] == [False, True, True, False]
    assert apps[0].project == "important-project"
    # fakeApp2's top-level `operation` is a request, not a result.
    assert apps[1].operation_phase == ""
    assert [c["type"] for c in apps[3].conditions] == [
        "OrphanedResourceWarning",
        "ExcludedResourceWarning",
        "ExcludedResourceWarning",
    ]
    assert apps[3].conditions[0]["last_transition_time"] == "2024-08-07T12:25:40Z"


def test_missing_health_and_running_operation_from_a_real_dump() -> None:
    row = application_row(real_app("media-construct__r.yaml"))
    assert (row.sync_status, row.health_status, row.operation_phase) == (OUT_OF_SYNC, "Missing", "Running")
    assert "waiting for healthy state" in row.operation_message


def test_history_entries_with_only_deployed_at() -> None:
    row = application_row(real_app("gitops-backend__application2.yaml"))
    assert row.history and all(h["revision"] == "" and h["deployed_at"] for h in row.history)


def test_destination_by_name_and_plugin_source() -> None:
    row = application_row(real_app("argo-cd__diff-cache.yaml"))
    assert row.destination_server == "" and row.destination_name
    assert row.synced_revision == "rev1"
    assert len(row.history) == 10
    assert row.automated is False


# --- hand-made shapes ----------------------------------------------------------------------


def _app(spec: dict[str, Any] | None = None, status: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "web", "namespace": "team-a"}, "spec": spec or {}}
    if status is not None:
        obj["status"] = status
    return obj


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (None, False),
        ({}, False),
        ({"automated": None}, False),
        ({"automated": {}}, True),
        ({"automated": {"prune": True}}, True),
        ({"automated": {"enabled": True}}, True),
        ({"automated": {"enabled": False}}, False),
        ({"automated": {"enabled": False, "selfHeal": True}}, False),
        ({"syncOptions": ["CreateNamespace=true"]}, False),
    ],
)
def test_automated_sync_policy(policy: dict[str, Any] | None, expected: bool) -> None:
    spec = {} if policy is None else {"syncPolicy": policy}
    assert automated_sync(spec) is expected
    row = application_row(_app(spec))
    assert row.automated is expected and row.manual_sync is (not expected)


def test_sources_win_over_source_and_ref_is_kept() -> None:
    spec = {
        "source": {"repoURL": "https://ignored.example/repo.git"},
        "sources": [
            {
                "repoURL": "https://charts.example",
                "chart": "web",
                "targetRevision": "1.2.*",
                "helm": {"valueFiles": ["$values/web.yaml"]},
            },
            {"repoURL": "https://git.example/values.git", "targetRevision": "main", "ref": "values"},
        ],
    }
    row = application_row(_app(spec, {"sync": {"status": "Synced", "revision": "", "revisions": ["1.2.3", "abc"]}}))
    assert [s.repo_url for s in row.sources] == ["https://charts.example", "https://git.example/values.git"]
    assert row.sources[0].chart == "web" and row.sources[1].ref == "values"
    assert row.synced_revision == "1.2.3" and row.synced_revisions == ["1.2.3", "abc"]


def test_source_hydrator_sync_source() -> None:
    spec = {
        "sourceHydrator": {
            "drySource": {"repoURL": "https://git.example/dry.git", "targetRevision": "HEAD", "path": "apps/web"},
            "syncSource": {"targetBranch": "env/prod", "path": "apps/web-prod"},
        }
    }
    row = application_row(_app(spec))
    assert row.sources == [
        SourceSpec(repo_url="https://git.example/dry.git", path="apps/web-prod", target_revision="env/prod")
    ]


def test_odd_values_never_crash() -> None:
    row = application_row(
        _app(
            {"project": "", "source": "not-a-map", "destination": ["x"], "syncPolicy": {"automated": "yes"}},
            {
                "sync": {"status": "Weird"},
                "health": {"status": "Sleepy", "message": 3},
                "history": [None, {"id": "7"}],
                "summary": {"images": ["a", None, 5]},
                "operationState": {"phase": "Running", "startedAt": "not a time"},
                "conditions": "x",
                "reconciledAt": 12,
            },
        )
    )
    assert row.project == "default" and row.sources == []
    assert (row.sync_status, row.health_status, row.health_message) == (UNKNOWN, UNKNOWN, "3")
    assert row.automated is False
    assert row.history == [
        {"id": 7, "revision": "", "revisions": [], "deployed_at": "", "started_at": "", "initiated_by": ""}
    ]
    assert row.images == ["a", "5"]
    assert row.operation_started_at is None and row.reconciled_at is None
    assert row.conditions == []


def test_app_without_name_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        application_row({"metadata": {"namespace": "argocd"}})


# --- projects ------------------------------------------------------------------------------


def test_project_with_windows_destinations_and_source_namespaces() -> None:
    row = project_row(load_objects(REAL / "argocd" / "argo-cd__project.yaml")["AppProject"][0])
    assert (row.namespace, row.name) == ("argocd", "my-project")
    assert [w["kind"] for w in row.sync_windows] == ["allow", "allow", "deny", "allow"]
    assert row.sync_windows[0] == {
        "kind": "allow",
        "schedule": "10 1 * * *",
        "duration": "1h",
        "applications": ["*-prod"],
        "manualSync": True,
    }
    assert row.destinations[0] == {
        "namespace": "guestbook",
        "server": "https://kubernetes.default.svc",
        "name": "in-cluster",
    }
    assert row.source_repos == ["*"]
    assert row.source_namespaces == ["argocd-apps-*"]


def test_projects_without_namespace_or_windows() -> None:
    default = project_row(
        load_objects(REAL / "argocd" / "argo-cd__sync_windows.md-default-project.yaml")["AppProject"][0]
    )
    assert (default.namespace, default.name) == ("", "default")
    assert default.sync_windows[2]["timeZone"] == "Europe/Amsterdam"
    assert default.destinations == []
    foo = project_row(load_objects(REAL / "argocd" / "argocd-training__appproj_foo.yaml")["AppProject"][0])
    assert foo.sync_windows == []


def test_only_the_history_the_store_keeps_is_read() -> None:
    # A revisionHistoryLimit above Argo CD's default of 10: the newest 10, oldest first.
    history = [{"id": i, "revision": f"{i:040x}", "deployedAt": f"2026-11-{i:02d}T10:00:00Z"} for i in range(1, 26)]
    row = application_row(_app(status={"history": history}))
    assert [h["id"] for h in row.history] == list(range(16, 26))
    assert row.history[-1]["deployed_at"] == "2026-11-25T10:00:00Z"

"""portal.findings: each rule positive and negative on real-shaped objects; derivation at
poll time (with the notification rules portal.notifications hands down), muting (audited,
survives a poll), the Git rule from the pin reader's files, the page, the overview count and
the API."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from django.urls import reverse

from gitops.collectors import application_row
from gitops.models import AppProject, Finding, FindingMute, GitOpsApp
from portal.delivery.models import GitPinRead
from portal.delivery.plainsecrets import plain_secret_files
from portal.findings import derivation, mutes
from portal.findings import discipline as f
from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.notifications.finding_rules import judge_silence

REAL = Path("/work/shared/testdata/real-objects/argocd")


def application(**spec_extra) -> dict:
    """An Argo CD Application as its controller stores it."""
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "checkout-prod", "namespace": "argocd", "annotations": {}},
        "spec": {
            "project": "shop",
            "source": {"repoURL": "https://github.com/acme/deploy.git", "path": "apps/checkout/prod",
                       "targetRevision": "main"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
            "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
            **spec_extra,
        },
        "status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}},
    }


def argo_app(raw: dict | None = None, **fields) -> GitOpsApp:
    raw = raw or application()
    values = {"pk": 7, "tool": "argo", "kind": "Application", "namespace": "argocd", "name": "checkout-prod",
              "project": raw["spec"].get("project", ""), "raw": raw, "sync_status": "Synced",
              "conditions": raw.get("status", {}).get("conditions", [])}
    values.update(fields)
    return GitOpsApp(**values)


def kustomization(**spec) -> dict:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": "./apps/prod", "prune": True, "wait": True,
                 "sourceRef": {"kind": "GitRepository", "name": "fleet"}, **spec},
    }


def flux_app(raw: dict, kind: str = "Kustomization", **fields) -> GitOpsApp:
    values = {"pk": 8, "tool": "flux", "kind": kind, "namespace": raw["metadata"]["namespace"],
              "name": raw["metadata"]["name"], "raw": raw, "interval": raw["spec"].get("interval", ""),
              "sync_status": "Synced", "flux_alerts": ["flux-system/on-call"]}
    values.update(fields)
    return GitOpsApp(**values)


def project(destinations: list[dict], annotations: dict | None = None) -> AppProject:
    raw = {"metadata": {"name": "shop", "namespace": "argocd", "annotations": annotations or {}},
           "spec": {"destinations": destinations}}
    return AppProject(name="shop", namespace="argocd", destinations=destinations, raw=raw)


CTX = f.FindingContext()


# --- one test pair per rule ----------------------------------------------------------


def test_self_heal_off():
    raw = application(syncPolicy={"automated": {"prune": True, "selfHeal": False}})
    assert f.self_heal_off(argo_app(raw), production=True).rule == "self-heal-off"
    assert f.self_heal_off(argo_app(raw), production=False) is None
    assert f.self_heal_off(argo_app(), production=True) is None  # selfHeal: true
    manual = application()
    del manual["spec"]["syncPolicy"]
    assert f.self_heal_off(argo_app(manual), production=True) is None  # not automated at all


def test_project_allowing_any_destination():
    wide = project([{"server": "*", "namespace": "*"}])
    assert f.project_any_destination(argo_app(), wide, production=True).rule == "project-any-destination"
    assert f.project_any_destination(argo_app(), wide, production=False) is None
    narrow = project([{"server": "https://kubernetes.default.svc", "namespace": "shop"}])
    assert f.project_any_destination(argo_app(), narrow, production=True) is None
    any_server_one_namespace = project([{"server": "*", "namespace": "shop"}])
    assert f.project_any_destination(argo_app(), any_server_one_namespace, production=True) is None


def test_default_project_from_a_real_application():
    raw = yaml.safe_load((REAL / "argo-cd__metrics_test-fakeDefaultApp.yaml").read_text())
    # No spec.project: Argo CD's GetProject() reads it as "default".
    app = argo_app(raw, project=application_row(raw).project)
    assert f.default_project(app, production=True).rule == "default-project"
    assert f.default_project(app, production=False) is None
    assert f.default_project(argo_app(), production=True) is None


def test_sync_failure_with_no_notification_argo():
    assert f.no_failure_notification(argo_app(), None, CTX).rule == "no-failure-notification"
    subscribed = application()
    subscribed["metadata"]["annotations"]["notifications.argoproj.io/subscribe.on-sync-failed.slack"] = "deploys"
    assert f.no_failure_notification(argo_app(subscribed), None, CTX) is None
    listed = application()
    listed["metadata"]["annotations"]["notifications.argoproj.io/subscriptions"] = (
        "- trigger: [on-sync-failed]\n  destinations:\n  - service: slack\n    recipients: [deploys]\n")
    assert f.no_failure_notification(argo_app(listed), None, CTX) is None
    by_project = project([], {"notifications.argoproj.io/subscribe.on-sync-failed.email": "ops@example.com"})
    assert f.no_failure_notification(argo_app(), by_project, CTX) is None
    assert f.no_failure_notification(argo_app(), None, f.FindingContext(notified_by_portal={7})) is None


def test_sync_failure_with_no_notification_flux():
    assert f.no_failure_notification(flux_app(kustomization(), flux_alerts=[]), None, CTX).rule == \
        "no-failure-notification"
    assert f.no_failure_notification(flux_app(kustomization()), None, CTX) is None  # an Alert names it
    assert f.no_failure_notification(flux_app(kustomization(), flux_alerts=None), None, CTX) is None  # unknown


def helmrelease(version: str | None) -> dict:
    chart = {"chart": "podinfo", "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}
    if version is not None:
        chart["version"] = version
    return {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "podinfo", "namespace": "podinfo"},
            "spec": {"interval": "50m", "chart": {"spec": chart}}}


@pytest.mark.parametrize("version", ["*", ">=6.0.0", "6.x", "~6.5", "^6.5.0", None])
def test_chart_version_not_pinned(version):
    found = f.chart_unpinned(flux_app(helmrelease(version), "HelmRelease"))
    assert found is not None and found.rule == "chart-unpinned"


@pytest.mark.parametrize("version", ["6.5.4", "v1.2.3", "1.0.0-rc.1"])
def test_chart_version_pinned(version):
    assert f.chart_unpinned(flux_app(helmrelease(version), "HelmRelease")) is None


def test_wide_interval():
    daily = kustomization(interval="24h")
    assert f.wide_interval(flux_app(daily), production=True).rule == "wide-interval"
    assert f.wide_interval(flux_app(kustomization(interval="25h30m")), production=True) is not None
    assert f.wide_interval(flux_app(daily), production=False) is None
    assert f.wide_interval(flux_app(kustomization(interval="23h59m")), production=True) is None


def test_no_health_gate():
    bare = kustomization()
    del bare["spec"]["wait"]
    assert f.no_health_gate(flux_app(bare), production=True).rule == "no-health-gate"
    assert f.no_health_gate(flux_app(bare), production=False) is None
    assert f.no_health_gate(flux_app(kustomization()), production=True) is None  # wait: true
    checked = copy.deepcopy(bare)
    checked["spec"]["healthChecks"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                        "namespace": "web"}]
    assert f.no_health_gate(flux_app(checked), production=True) is None


def test_orphaned_resources_from_a_real_application():
    docs = [d for d in yaml.safe_load_all((REAL / "argo-cd__metrics_test-fakeApp1-4.yaml").read_text()) if d]
    orphaned = next(d for d in docs if any(c.get("type") == "OrphanedResourceWarning"
                                           for c in d.get("status", {}).get("conditions", [])))
    found = f.orphaned_resources(argo_app(orphaned))
    assert found is not None and "orphaned" in found.message
    assert f.orphaned_resources(argo_app()) is None


def test_hand_change():
    context = f.FindingContext(git_pins={(7, "checkout"): ["3.4.0"]})
    drifted = argo_app(sync_status="OutOfSync", running={"checkout": ["3.3.9-hotfix"]})
    assert f.hand_change(drifted, context).rule == "hand-change"
    assert f.hand_change(argo_app(sync_status="OutOfSync", running={"checkout": ["3.4.0"]}), context) is None
    assert f.hand_change(argo_app(sync_status="Synced", running={"checkout": ["3.3.9-hotfix"]}), context) is None
    syncing = argo_app(sync_status="OutOfSync", operation_phase="Running", running={"checkout": ["3.3.9-hotfix"]})
    assert f.hand_change(syncing, context) is None
    assert f.hand_change(drifted, CTX) is None  # Git's pins not read yet


SECRET = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: aHVudGVyMg==\n"
SEALED = "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: db\nspec:\n  encryptedData: {}\n"
SOPS = SECRET + "sops:\n  version: 3.8.1\n  age:\n  - recipient: age1xyz\n"


def test_raw_secret_names_the_file_never_its_content():
    files = {"apps/checkout/prod/secret.yaml": SECRET, "apps/checkout/prod/sealed.yaml": SEALED,
             "apps/checkout/prod/sops.yaml": SOPS, "apps/checkout/prod/deploy.yaml": "kind: Deployment\n"}
    assert plain_secret_files(files) == ["apps/checkout/prod/secret.yaml"]
    found = f.raw_secret(argo_app(), plain_secret_files(files))
    assert found.rule == "raw-secret" and "secret.yaml" in found.message
    assert "aHVudGVyMg" not in found.message
    assert f.raw_secret(argo_app(), []) is None


# --- stored, re-derived, muted ---------------------------------------------------------


def derive(cluster_id: int) -> int:
    """What a poll of the cluster judges again: every rule (portal.findings) and whether a failure
    is heard (portal.notifications' rules, handed down); how many findings were written."""
    return derivation.derive_findings(cluster_id) + judge_silence(cluster_id)


@pytest.fixture
def fleet(db):
    prod = Environment.objects.create(name="prod", order=3, production=True)
    cluster = Cluster.objects.create(name="prod-1", environment=prod, connection=Cluster.Connection.MANIFESTS)
    raw = application(project="default", syncPolicy={"automated": {"prune": True, "selfHeal": False}})
    app = GitOpsApp.objects.create(cluster=cluster, read_from=cluster, tool="argo", kind="Application",
                                   namespace="argocd", name="checkout-prod", project="default", raw=raw)
    service = Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout", team="payments")
    app.services.add(service)
    return cluster, app


def test_findings_are_derived_and_a_mute_survives_the_next_derivation(fleet, admin_user):
    cluster, app = fleet
    assert derive(cluster.pk) == 3
    assert set(mutes.open_findings().values_list("rule", flat=True)) == {"self-heal-off", "default-project",
                                                                     "no-failure-notification"}
    mutes.mute(app, "default-project", "moving to its own project in Q1", admin_user)
    audit = AuditLog.objects.get(action="finding.mute")
    assert audit.details == {"rule": "default-project", "reason": "moving to its own project in Q1"}
    derive(cluster.pk)
    assert FindingMute.objects.filter(app=app, rule="default-project").exists()
    assert set(mutes.open_findings().values_list("rule", flat=True)) == {"self-heal-off", "no-failure-notification"}
    # Fixed in the cluster: the finding is gone at the next derivation.
    app.raw = application(project="default")
    app.save()
    derive(cluster.pk)
    assert "self-heal-off" not in set(Finding.objects.values_list("rule", flat=True))


def test_a_portal_rule_covers_the_failure_path(fleet):
    from portal.notifications.events import EventKind
    from portal.notifications.models import Channel, Rule

    cluster, _ = fleet
    channel = Channel.objects.create(name="ops", kind=Channel.Kind.WEBHOOK)
    Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION], environment=cluster.environment,
                        channel=channel)
    derive(cluster.pk)
    assert not Finding.objects.filter(rule__in=["no-failure-notification", f.SILENT]).exists()


def test_git_findings_are_kept_by_a_poll(fleet):
    cluster, app = fleet
    read = GitPinRead.objects.create(app=app, plain_secrets=["apps/checkout/prod/secret.yaml"])
    assert derivation.sync_git_findings() == 1
    derive(cluster.pk)
    assert Finding.objects.filter(rule="raw-secret", app=app).exists()
    assert derivation.sync_git_findings() == 0  # said as it was: kept
    read.plain_secrets = []
    read.save()
    derivation.sync_git_findings()
    assert not Finding.objects.filter(rule="raw-secret").exists()


def test_a_git_finding_stays_until_a_read_says_otherwise(fleet):
    """Stored before the pin reader kept its plain Secrets (null): the next read decides."""
    _, app = fleet
    Finding.objects.create(app=app, rule="raw-secret", message="kept", at=app.updated_at)
    GitPinRead.objects.create(app=app)
    assert derivation.sync_git_findings() == 0
    assert Finding.objects.filter(rule="raw-secret", app=app).exists()


def test_findings_page_api_and_overview(fleet, client, admin_user):
    cluster, app = fleet
    derive(cluster.pk)
    client.force_login(admin_user)
    page = client.get(reverse("findings"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Automated production app without selfHeal" in text
    assert "Set spec.syncPolicy.automated.selfHeal: true" in text
    assert "payments" in text and "prod" in text
    assert f"?q={app.name}" in text
    overview = client.get(reverse("overview")).content.decode()
    assert 'href="/findings"' in overview and "<strong>3</strong>findings" in overview
    api = client.get("/api/v1/findings?rule=default-project").json()
    assert api["count"] == 1 and api["results"][0]["name"] == "checkout-prod"
    assert api["results"][0]["group"] is None
    assert api["results"][0]["fix"].startswith("Move the Application")
    assert client.get("/api/v1/findings?bogus=1").status_code == 400
    response = client.post(reverse("finding-mute"), {"app": app.pk, "rule": "self-heal-off", "reason": "drift ok"})
    assert response.status_code == 302
    assert FindingMute.objects.get(app=app, rule="self-heal-off").muted_by == admin_user.get_username()
    assert client.get("/api/v1/findings").json()["count"] == 2
    gitops = client.get(reverse("gitops")).content.decode()
    # default-project; the grouped "Notifications: no rule" is the environment's, not the app's badge.
    assert "1 finding<" in gitops


# --- a missing notification rule: one finding per environment and tool ------------------------


@pytest.fixture
def silent_fleet(db):
    """A fresh install: two prod clusters with three Argo CD apps each and a Flux Kustomization,
    a staging cluster with one Argo CD app; no app subscribes, no portal rule exists."""
    prod = Environment.objects.create(name="prod", order=3, production=True)
    staging = Environment.objects.create(name="staging", order=2)
    clusters = {name: Cluster.objects.create(name=name, environment=env, connection=Cluster.Connection.MANIFESTS)
                for name, env in (("prod-eu-1", prod), ("prod-us-1", prod), ("staging-eu-1", staging))}
    for cluster in clusters.values():
        for n in range(1 if cluster.environment == staging else 3):
            GitOpsApp.objects.create(cluster=cluster, read_from=cluster, tool="argo", kind="Application",
                                     namespace="argocd", name=f"app{n}-{cluster.name}", project="shop",
                                     raw=application())
        if cluster.environment == prod:
            GitOpsApp.objects.create(cluster=cluster, read_from=cluster, tool="flux", kind="Kustomization",
                                     namespace="flux-system", name="apps", raw=kustomization(), flux_alerts=[])
    return clusters


def grouped():
    return sorted(mutes.open_findings().filter(rule=f.GROUPED).values_list("app__cluster__environment__name",
                                                                        "app__tool", "message"))


def test_a_missing_rule_is_one_finding_per_environment_and_tool_not_one_per_app(silent_fleet):
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    found = grouped()
    assert [(env, tool) for env, tool, _ in found] == [("prod", "argo"), ("prod", "flux"), ("staging", "argo")]
    assert mutes.open_findings().count() == 3  # not 9: nothing else is wrong with these apps
    _, _, message = found[0]
    assert message == (
        "No notification rule in prod: a failed sync of 6 Argo CD applications notifies nobody (app0-prod-eu-1 on "
        "prod-eu-1, app1-prod-eu-1 on prod-eu-1, app2-prod-eu-1 on prod-eu-1, app0-prod-us-1 on prod-us-1, "
        "app1-prod-us-1 on prod-us-1 and 1 more); no portal rule covers them and no on-sync-failed subscription "
        "or Flux Alert names them")
    assert f.RULES[f.GROUPED].title == "Notifications: no rule"
    # Polling one cluster again writes its group again, whole, once.
    derive(silent_fleet["prod-us-1"].pk)
    assert grouped() == found


def test_a_portal_rule_for_the_environment_ends_its_finding(silent_fleet):
    from portal.notifications.events import EventKind
    from portal.notifications.models import Channel, Rule

    channel = Channel.objects.create(name="ops", kind=Channel.Kind.WEBHOOK)
    Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION],
                        environment=silent_fleet["prod-eu-1"].environment, channel=channel)
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    assert [(env, tool) for env, tool, _ in grouped()] == [("staging", "argo")]


def test_a_muted_group_stays_muted_across_polls_and_a_changed_group(silent_fleet, admin_user):
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    carrier = mutes.open_findings().get(rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod").app
    mutes.mute(carrier, f.GROUPED, "prod alerts go through PagerDuty", admin_user)
    assert [(env, tool) for env, tool, _ in grouped()] == [("prod", "flux"), ("staging", "argo")]
    # Another prod app appears and the cluster is polled again: the group changes, the mute holds.
    GitOpsApp.objects.create(cluster=silent_fleet["prod-us-1"], read_from=silent_fleet["prod-us-1"], tool="argo",
                             kind="Application", namespace="argocd", name="aaa-first", project="shop",
                             raw=application())
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    assert [(env, tool) for env, tool, _ in grouped()] == [("prod", "flux"), ("staging", "argo")]
    held = Finding.objects.get(rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod")
    assert held.app_id == carrier.pk and "7 Argo CD applications" in held.message
    mutes.unmute(carrier, f.GROUPED, admin_user)
    assert [(env, tool) for env, tool, _ in grouped()] == [("prod", "argo"), ("prod", "flux"), ("staging", "argo")]


def test_a_large_group_is_said_from_its_count_and_first_members_as_from_all_of_them(silent_fleet, admin_user):
    """group_silent reads a group's count and first few members, not all of them (30,000 at
    1,000 clusters): what it writes is what the whole list says, its carrier the muted member."""
    cluster = silent_fleet["prod-us-1"]
    for n in range(12):
        GitOpsApp.objects.create(cluster=cluster, read_from=cluster, tool="argo", kind="Application",
                                 namespace="argocd", name=f"bulk-{n:02d}", project="shop", raw=application())
    for each in silent_fleet.values():
        derive(each.pk)
    members = list(Finding.objects.filter(rule=f.SILENT, app__tool="argo", app__cluster__environment__name="prod")
                   .order_by("app__cluster__name", "app__namespace", "app__name")
                   .values_list("app__name", "app__cluster__name"))
    assert len(members) == 18
    held = Finding.objects.get(rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod")
    assert held.message == f.group_message("argo", "prod", members)[: derivation.MESSAGE_CHARS]
    assert "18 Argo CD applications" in held.message and "and 13 more" in held.message
    # A mute on a member past the named ones makes it the carrier.
    last = GitOpsApp.objects.get(name="bulk-11")
    mutes.mute(last, f.GROUPED, "heard elsewhere", admin_user)
    derive(cluster.pk)
    assert Finding.objects.get(rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod").app == last


def test_the_group_message_names_a_few_and_counts_the_rest():
    assert f.group_message("flux", None, [("apps", "edge-1")]) == (
        "No notification rule on unregistered destinations: a failed sync of 1 Flux application notifies nobody "
        "(apps on edge-1); no portal rule covers them and no on-sync-failed subscription or Flux Alert names them")


def test_a_poll_that_changes_nothing_keeps_the_grouped_finding_as_it_was(silent_fleet):
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    before = set(Finding.objects.filter(rule=f.GROUPED).values_list("pk", "app_id", "message", "at"))
    for cluster in silent_fleet.values():
        assert derive(cluster.pk) == 0  # nothing new to say
    assert set(Finding.objects.filter(rule=f.GROUPED).values_list("pk", "app_id", "message", "at")) == before


def test_the_page_says_a_grouped_finding_as_its_environment_and_tool(silent_fleet, client, admin_user):
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    client.force_login(admin_user)
    html = client.get(reverse("findings")).content.decode()
    for group in ("prod · Argo CD", "prod · Flux", "staging · Argo CD"):
        assert f'<strong class="finding-group">{group}</strong>' in html
    assert html.count(f'<a href="{reverse("notifications")}">add a notification rule</a>') == 3
    assert "finding<" not in client.get(reverse("gitops")).content.decode()  # no app carries it as a badge
    api = client.get("/api/v1/findings?rule=no-failure-notification").json()
    assert sorted(r["group"] for r in api["results"]) == ["prod · Argo CD", "prod · Flux", "staging · Argo CD"]
    assert api["counts"] == {"no-failure-notification": 3}


def test_a_partial_poll_whose_apps_stay_as_silent_leaves_the_groups_alone(silent_fleet, monkeypatch):
    """Regrouping locks the environment and reads its whole group: a partial poll (its changed apps
    only, gitops.signals' every_app=False) does it only when one of their SILENT rows moved."""
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    cluster = silent_fleet["prod-us-1"]
    apps = derivation.judged_apps(cluster.pk, [GitOpsApp.objects.get(name="app1-prod-us-1").pk])
    regrouped = []
    real = derivation.group_silent
    monkeypatch.setattr(derivation, "group_silent", lambda groups, at: regrouped.append(groups) or real(groups, at))

    derivation.derive_silence(cluster.pk, apps, heard=set(), every_app=False)
    assert regrouped == []
    # The same app now heard by a portal rule: its SILENT row goes, and its group is said anew.
    derivation.derive_silence(cluster.pk, apps, heard={apps[0].pk}, every_app=False)
    assert regrouped == [{(cluster.environment_id, "argo")}]
    assert "5 Argo CD applications" in Finding.objects.get(
        rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod").message


def test_a_full_poll_regroups_after_an_app_left_with_its_silent_row(silent_fleet):
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    cluster = silent_fleet["prod-us-1"]
    GitOpsApp.objects.get(name="app2-prod-us-1").delete()  # what a full poll's store does to a gone app
    apps = derivation.judged_apps(cluster.pk)
    derivation.derive_silence(cluster.pk, apps, heard=set(), every_app=True)
    assert "5 Argo CD applications" in Finding.objects.get(
        rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod").message


def test_muting_a_member_of_a_group_moves_its_finding_there_at_once(silent_fleet, admin_user):
    for cluster in silent_fleet.values():
        derive(cluster.pk)
    member = GitOpsApp.objects.get(name="app2-prod-us-1")
    mutes.mute(member, f.GROUPED, "heard elsewhere", admin_user)
    assert Finding.objects.get(rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod").app == member
    assert [(env, tool) for env, tool, _ in grouped()] == [("prod", "flux"), ("staging", "argo")]
    mutes.unmute(member, f.GROUPED, admin_user)
    carrier = Finding.objects.get(rule=f.GROUPED, app__tool="argo", app__cluster__environment__name="prod").app
    assert carrier.name == "app0-prod-eu-1"  # the first by cluster, namespace and name again

"""The matrix's read model (portal.delivery.version_matrix): Placement and VersionLine rows stay
equal to what RunningVersion, GitPin and the clusters say, through every writer — seeds,
real polls through the store, pin reads, cluster saves and deletes, and two refreshes of
one environment at once on PostgreSQL."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops.models import GitOpsApp, RunningVersion
from gitops.polling import store_snapshot
from gitops.rows import ARGO, HEALTHY, SYNCED, AppRow, ContainerImage, Snapshot, WorkloadRow
from portal.delivery import version_matrix
from portal.delivery.current_pins import read_app_pins
from portal.delivery.models import GitPin, Placement, VersionLine
from portal.kernel.catalog.models import Cluster
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app, seed_pin

pytestmark = pytest.mark.django_db

PROD_PATH = "apps/checkout/overlays/prod"  # the fake forge pins checkout 1.6.0 there (3 places)


# --- helpers ---------------------------------------------------------------------------------


def ids(*clusters: Cluster) -> str:
    return ",".join(str(c.id) for c in clusters)


def lines_of(service, environment) -> list[tuple[str, str, str, str]]:
    """One cell's lines: (versions, pinned, cluster_ids, cluster_names), sorted."""
    return sorted(
        VersionLine.objects.filter(service=service, environment=environment).values_list(
            "versions", "pinned", "cluster_ids", "cluster_names"
        )
    )


def stored_lines() -> list[tuple]:
    """Every VersionLine, as a sorted list (a duplicate row shows up twice)."""
    return sorted(
        VersionLine.objects.values_list(
            "service_id", "environment_id", "versions", "pinned", "cluster_ids", "cluster_names"
        )
    )


def stored_placements() -> list[tuple]:
    return sorted(Placement.objects.values_list("service_id", "cluster_id", "versions", "pinned"))


def placements_from_scratch() -> list[tuple]:
    """(service, cluster, versions, pins) straight from RunningVersion and GitPin."""
    running: dict[tuple[int, int], set[str]] = defaultdict(set)
    pinned: dict[tuple[int, int], set[str]] = defaultdict(set)
    for service_id, cluster_id, version in RunningVersion.objects.values_list("service_id", "cluster_id", "version"):
        running[(service_id, cluster_id)].add(version)
    for service_id, cluster_id, version in GitPin.objects.values_list("service_id", "app__cluster_id", "version"):
        pinned[(service_id, cluster_id)].add(version)
    return sorted(
        (service_id, cluster_id, ",".join(sorted(versions)), ",".join(sorted(pinned[(service_id, cluster_id)])))
        for (service_id, cluster_id), versions in running.items()
    )


def lines_from_scratch() -> list[tuple]:
    """What the VersionLine table must hold: enabled clusters grouped per (service, environment,
    distinct versions, distinct pins), cluster lists sorted by name."""
    clusters = {c.id: c for c in Cluster.objects.filter(enabled=True)}
    groups: dict[tuple, list[tuple[str, int]]] = defaultdict(list)
    for service_id, cluster_id, versions, pins in placements_from_scratch():
        if cluster_id in clusters:
            cluster = clusters[cluster_id]
            groups[(service_id, cluster.environment_id, versions, pins)].append((cluster.name, cluster.id))
    return sorted(
        (*key, ",".join(str(i) for _, i in sorted(found)), ",".join(n for n, _ in sorted(found)))
        for key, found in groups.items()
    )


def deployments(*running: tuple[str, str, str]) -> Snapshot:
    """What a poll reads: per (name, image repository, tag), one Argo CD app and its Deployment."""
    apps, workloads = [], []
    for name, repository, tag in running:
        registry, path = repository.split("/", 1)
        apps.append(AppRow(tool=ARGO, kind="Application", namespace="argocd", name=name, sync_status=SYNCED,
                           health_status=HEALTHY, raw={"metadata": {"name": name, "resourceVersion": "7"}}))
        workloads.append(WorkloadRow(
            kind="Deployment", namespace="shop", name=name, health_status="Current", replicas_desired=2,
            replicas_ready=2, containers=[ContainerImage(name, f"{repository}:{tag}", registry, path, tag, "")],
            app_key=(ARGO, "Application", "argocd", name),
        ))
    return Snapshot(apps=apps, workloads=workloads, listed_kinds={"Application", "Deployment"})


def set_version(app: GitOpsApp, version: str) -> int:
    """The app's workload now runs `version`, refreshed as a writer would."""
    RunningVersion.objects.filter(app=app).update(version=version, image=f"x:{version}")
    return version_matrix.refresh(app.cluster_id)


# --- grouping --------------------------------------------------------------------------------


def test_clusters_running_the_same_version_share_one_line_that_splits_and_merges_again(catalog):
    eu, us = catalog.prod_eu, catalog.prod_us
    seed_app(eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    us_app = seed_app(us, "checkout-us", service=catalog.checkout, version="1.6.0")
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu, us), "prod-eu-1,prod-us-1")]

    assert set_version(us_app, "1.7.0") == 1
    assert lines_of(catalog.checkout, catalog.prod) == [
        ("1.6.0", "", ids(eu), "prod-eu-1"),
        ("1.7.0", "", ids(us), "prod-us-1"),
    ]

    assert set_version(us_app, "1.6.0") == 1
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu, us), "prod-eu-1,prod-us-1")]
    assert VersionLine.objects.count() == 1


def test_several_versions_are_stored_distinct_and_sorted_by_code_point(catalog):
    eu, us = catalog.prod_eu, catalog.prod_us
    for name, version in [("a", "1.9.0"), ("b", "1.10.0"), ("c", "1.9.0")]:
        seed_app(eu, f"checkout-{name}", service=catalog.checkout, version=version)
    seed_app(us, "checkout-us-b", service=catalog.checkout, version="1.10.0")
    seed_app(us, "checkout-us-a", service=catalog.checkout, version="1.9.0")

    joined = version_matrix.joined(["1.9.0", "1.10.0", "1.9.0"])
    assert joined == "1.10.0,1.9.0" == ",".join(sorted({"1.9.0", "1.10.0"}))
    assert stored_placements() == [
        (catalog.checkout.id, eu.id, "1.10.0,1.9.0", ""),
        (catalog.checkout.id, us.id, "1.10.0,1.9.0", ""),
    ]
    assert lines_of(catalog.checkout, catalog.prod) == [("1.10.0,1.9.0", "", ids(eu, us), "prod-eu-1,prod-us-1")]


# --- a real poll through the store -----------------------------------------------------------


def test_a_poll_places_its_services_and_the_same_poll_again_writes_nothing(catalog):
    eu, us = catalog.prod_eu, catalog.prod_us
    at = timezone.now()
    poll = deployments(("checkout", "ghcr.io/acme/checkout", "1.6.0"), ("payments", "ghcr.io/acme/payments", "2.5.0"))
    store_snapshot(eu, poll, at)
    store_snapshot(us, deployments(("checkout", "ghcr.io/acme/checkout", "1.6.0")), at)

    assert stored_placements() == [
        (catalog.checkout.id, eu.id, "1.6.0", ""),
        (catalog.checkout.id, us.id, "1.6.0", ""),
        (catalog.payments.id, eu.id, "2.5.0", ""),
    ]
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu, us), "prod-eu-1,prod-us-1")]
    assert lines_of(catalog.payments, catalog.prod) == [("2.5.0", "", ids(eu), "prod-eu-1")]
    line_ids = sorted(VersionLine.objects.values_list("id", flat=True))
    placement_ids = sorted(Placement.objects.values_list("id", flat=True))

    with CaptureQueriesContext(connection) as queries:
        store_snapshot(eu, deployments(("checkout", "ghcr.io/acme/checkout", "1.6.0"),
                                       ("payments", "ghcr.io/acme/payments", "2.5.0")), at + timedelta(minutes=1))
    writes = [q["sql"] for q in queries if ("delivery_placement" in q["sql"] or "delivery_versionline" in q["sql"])
              and q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == []
    assert version_matrix.refresh(eu.id) == 0
    assert sorted(VersionLine.objects.values_list("id", flat=True)) == line_ids
    assert sorted(Placement.objects.values_list("id", flat=True)) == placement_ids
    assert stored_lines() == lines_from_scratch()


def test_a_workload_gone_from_the_next_poll_leaves_its_placement_and_its_line(catalog):
    eu, us = catalog.prod_eu, catalog.prod_us
    at = timezone.now()
    store_snapshot(eu, deployments(("checkout", "ghcr.io/acme/checkout", "1.6.0"),
                                   ("payments", "ghcr.io/acme/payments", "2.5.0")), at)
    store_snapshot(us, deployments(("payments", "ghcr.io/acme/payments", "2.5.0")), at)
    assert lines_of(catalog.payments, catalog.prod) == [("2.5.0", "", ids(eu, us), "prod-eu-1,prod-us-1")]

    store_snapshot(eu, deployments(("checkout", "ghcr.io/acme/checkout", "1.6.0")), at + timedelta(minutes=1))

    assert stored_placements() == [
        (catalog.checkout.id, eu.id, "1.6.0", ""),
        (catalog.payments.id, us.id, "2.5.0", ""),
    ]
    assert lines_of(catalog.payments, catalog.prod) == [("2.5.0", "", ids(us), "prod-us-1")]
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu), "prod-eu-1")]


# --- pins ------------------------------------------------------------------------------------


def test_a_cluster_whose_pins_differ_from_its_neighbours_gets_its_own_line(catalog):
    eu, us = catalog.prod_eu, catalog.prod_us
    eu_app = seed_app(eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    us_app = seed_app(us, "checkout-us", service=catalog.checkout, version="1.6.0")

    seed_pin(eu_app, catalog.checkout, "1.6.0")
    assert Placement.objects.get(cluster=eu, service=catalog.checkout).pinned == "1.6.0"
    assert lines_of(catalog.checkout, catalog.prod) == [
        ("1.6.0", "", ids(us), "prod-us-1"),
        ("1.6.0", "1.6.0", ids(eu), "prod-eu-1"),
    ]

    seed_pin(us_app, catalog.checkout, "1.6.0")
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "1.6.0", ids(eu, us), "prod-eu-1,prod-us-1")]

    seed_pin(us_app, catalog.checkout, "1.7.0", line=2)
    seed_pin(us_app, catalog.checkout, "1.10.0", line=3)
    assert Placement.objects.get(cluster=us, service=catalog.checkout).pinned == "1.10.0,1.6.0,1.7.0"
    assert lines_of(catalog.checkout, catalog.prod) == [
        ("1.6.0", "1.10.0,1.6.0,1.7.0", ids(us), "prod-us-1"),
        ("1.6.0", "1.6.0", ids(eu), "prod-eu-1"),
    ]


def test_pins_read_from_the_forge_set_the_placement_and_split_the_line(catalog, monkeypatch):
    eu, us = catalog.prod_eu, catalog.prod_us
    with serving("github", monkeypatch) as github:
        app = seed_app(eu, "checkout-prod", service=catalog.checkout, version="1.5.0",
                       repo_url=github.repository, path=PROD_PATH, target_revision="HEAD")
        seed_app(us, "checkout-us", service=catalog.checkout, version="1.5.0")
        assert lines_of(catalog.checkout, catalog.prod) == [("1.5.0", "", ids(eu, us), "prod-eu-1,prod-us-1")]

        assert read_app_pins(app).ok

    assert Placement.objects.get(cluster=eu, service=catalog.checkout).pinned == "1.6.0"  # 3 pins, one version
    assert lines_of(catalog.checkout, catalog.prod) == [
        ("1.5.0", "", ids(us), "prod-us-1"),
        ("1.5.0", "1.6.0", ids(eu), "prod-eu-1"),
    ]


# --- cluster changes redraw the lines --------------------------------------------------------


@pytest.fixture
def checkout_in_prod(catalog):
    """checkout 1.6.0 on both prod clusters and staging; payments 2.5.0 on prod-us-1 only."""
    apps = {
        "eu": seed_app(catalog.prod_eu, "checkout-eu", service=catalog.checkout, version="1.6.0"),
        "us": seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, version="1.6.0"),
        "staging": seed_app(catalog.staging_cluster, "checkout-st", service=catalog.checkout, version="1.6.0"),
        "payments-us": seed_app(catalog.prod_us, "payments-us", service=catalog.payments, version="2.5.0"),
    }
    assert lines_of(catalog.checkout, catalog.prod) == [
        ("1.6.0", "", ids(catalog.prod_eu, catalog.prod_us), "prod-eu-1,prod-us-1")
    ]
    return apps


def test_renaming_a_cluster_renames_it_in_its_line_in_name_order(catalog, checkout_in_prod):
    eu, us = catalog.prod_eu, catalog.prod_us
    eu.name = "prod-zz-1"
    eu.save()
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(us, eu), "prod-us-1,prod-zz-1")]
    assert stored_lines() == lines_from_scratch()


def test_moving_a_cluster_takes_it_from_the_old_environments_line_to_the_new_ones(catalog, checkout_in_prod):
    eu, us, staging = catalog.prod_eu, catalog.prod_us, catalog.staging_cluster
    us.environment = catalog.staging
    us.save()
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu), "prod-eu-1")]
    assert lines_of(catalog.checkout, catalog.staging) == [("1.6.0", "", ids(us, staging), "prod-us-1,staging-eu-1")]
    assert lines_of(catalog.payments, catalog.prod) == []
    assert lines_of(catalog.payments, catalog.staging) == [("2.5.0", "", ids(us), "prod-us-1")]
    assert stored_lines() == lines_from_scratch()


def test_a_disabled_cluster_leaves_the_lines_and_comes_back_when_enabled(catalog, checkout_in_prod):
    eu, us = catalog.prod_eu, catalog.prod_us
    us.enabled = False
    us.save()
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu), "prod-eu-1")]
    assert lines_of(catalog.payments, catalog.prod) == []

    us.enabled = True
    us.save()
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu, us), "prod-eu-1,prod-us-1")]
    assert lines_of(catalog.payments, catalog.prod) == [("2.5.0", "", ids(us), "prod-us-1")]


def test_a_deleted_cluster_leaves_its_line_and_a_line_left_empty_disappears(catalog, checkout_in_prod):
    eu, us = catalog.prod_eu, catalog.prod_us
    us.delete()
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(eu), "prod-eu-1")]
    assert lines_of(catalog.payments, catalog.prod) == []
    assert stored_lines() == lines_from_scratch()


# --- refresh_all -----------------------------------------------------------------------------


@pytest.fixture
def varied_fleet(catalog):
    """Several versions, pins, a disabled cluster and a moved one."""
    extra = Cluster.objects.create(name="prod-ap-1", environment=catalog.prod, connection=Cluster.Connection.MANIFESTS)
    eu_app = seed_app(catalog.prod_eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, version="1.6.0")
    seed_app(extra, "checkout-ap", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "payments-eu", service=catalog.payments, version="2.5.0")
    seed_app(catalog.staging_cluster, "checkout-st", service=catalog.checkout, version="1.7.0")
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.8.0")
    seed_pin(eu_app, catalog.checkout, "1.7.0")
    catalog.dev_cluster.enabled = False
    catalog.dev_cluster.save()
    extra.environment = catalog.staging
    extra.save()
    assert stored_lines() == lines_from_scratch()
    return catalog


def test_refresh_all_rebuilds_a_wiped_read_model_exactly(varied_fleet):
    before_lines, before_placements = stored_lines(), stored_placements()
    Placement.objects.all().delete()
    VersionLine.objects.all().delete()

    assert version_matrix.refresh_all() == len(before_placements)
    assert stored_placements() == before_placements
    assert stored_lines() == before_lines


def test_refresh_all_rebuilds_lost_lines_even_when_the_placements_are_intact(varied_fleet):
    before = stored_lines()
    VersionLine.objects.all().delete()

    assert version_matrix.refresh_all() == 0  # no placement changed
    assert stored_lines() == before


# --- every writer, in any order --------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_lines_equal_a_computation_from_scratch_after_random_operations(catalog, seed):
    rng = random.Random(seed)
    environments = [catalog.dev, catalog.staging, catalog.prod]
    clusters = [catalog.dev_cluster, catalog.staging_cluster, catalog.prod_eu, catalog.prod_us]
    clusters += [Cluster.objects.create(name=f"prod-{zone}-2", environment=catalog.prod,
                                        connection=Cluster.Connection.MANIFESTS) for zone in ("ap", "sa")]
    services = [catalog.checkout, catalog.payments]
    versions = ["1.9.0", "1.10.0", "2.0.0"]
    apps: list[tuple[GitOpsApp, object]] = []
    done: list[str] = []

    def add_app(i: int) -> str:
        cluster, service, version = rng.choice(clusters), rng.choice(services), rng.choice(versions)
        apps.append((seed_app(cluster, f"app-{i}", service=service, version=version), service))
        return f"add {service.name} {version} on {cluster.name}"

    def change_version(i: int) -> str:
        row = RunningVersion.objects.order_by("id")[rng.randrange(RunningVersion.objects.count())]
        version = rng.choice(versions)
        RunningVersion.objects.filter(pk=row.pk).update(version=version)
        version_matrix.refresh(row.cluster_id)
        return f"running {row.pk} -> {version}"

    def add_pin(i: int) -> str:
        app, service = rng.choice(apps)
        version = rng.choice(versions)
        seed_pin(app, service, version, line=i)
        return f"pin {service.name} {version} on {app.name}"

    def delete_app(i: int) -> str:
        app, _ = apps.pop(rng.randrange(len(apps)))
        cluster_id = app.cluster_id
        app.delete()
        version_matrix.refresh(cluster_id)
        return f"delete {app.name}"

    def rename(i: int) -> str:
        cluster = rng.choice(clusters)
        cluster.name = f"{rng.choice('amz')}-{i}"
        cluster.save()
        return f"rename -> {cluster.name}"

    def move(i: int) -> str:
        cluster = rng.choice(clusters)
        cluster.environment = rng.choice(environments)
        cluster.save()
        return f"move {cluster.name} -> {cluster.environment.name}"

    def toggle(i: int) -> str:
        cluster = rng.choice(clusters)
        cluster.enabled = not cluster.enabled
        cluster.save()
        return f"{'enable' if cluster.enabled else 'disable'} {cluster.name}"

    operations = [add_app, add_app, change_version, add_pin, delete_app, rename, move, toggle]
    for i in range(40):
        operation = rng.choice(operations)
        if operation in (change_version, add_pin, delete_app) and not apps:
            operation = add_app
        done.append(operation(i))
        assert stored_placements() == placements_from_scratch(), done
        assert stored_lines() == lines_from_scratch(), done
    assert VersionLine.objects.exists()


# --- PostgreSQL: two refreshes of one environment at once ----------------------------------


def _in_thread(target, errors: list[BaseException], finished: threading.Event) -> threading.Thread:
    def run() -> None:
        try:
            target()
        except BaseException as error:  # reported by the test
            errors.append(error)
        finally:
            finished.set()
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _advisory_lock_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return cursor.fetchone()[0]


def _lock_waiters() -> int:
    """Sessions waiting on any lock (a row lock, say)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(DISTINCT pid) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0]


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _race(first, second, second_waits, waits_on: str) -> None:
    """Run `first` in a transaction held open, then `second` in another, which must wait
    (`second_waits()` says when it does) until `first` commits; both must finish cleanly."""
    errors: list[BaseException] = []
    first_ready, may_commit, first_done, second_done = (threading.Event() for _ in range(4))

    def held() -> None:
        with transaction.atomic():
            first()
            first_ready.set()
            if not may_commit.wait(10):
                raise TimeoutError("the first transaction was never told to commit")

    def after() -> None:
        with transaction.atomic():
            second()

    threads = [_in_thread(held, errors, first_done)]
    try:
        assert first_ready.wait(10) and not errors, errors
        threads.append(_in_thread(after, errors, second_done))
        assert _wait_for(second_waits, 5), f"the second transaction never waited on {waits_on}"
        assert not second_done.wait(0.3), "the second finished while the first held its transaction"
        assert not errors, errors
    finally:
        may_commit.set()
    assert first_done.wait(10) and second_done.wait(10), "a thread hung"
    for thread in threads:
        thread.join(5)
    assert not errors, errors


@pytest.mark.django_db(transaction=True)
def test_a_second_refresh_of_an_environment_waits_for_the_first_and_both_changes_stay(catalog):
    if connection.vendor != "postgresql":
        pytest.skip("the advisory lock is PostgreSQL's; SQLite runs one writer at a time")
    eu, us = catalog.prod_eu, catalog.prod_us
    eu_app = seed_app(eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    us_app = seed_app(us, "checkout-us", service=catalog.checkout, version="1.6.0")

    def poll_eu() -> None:
        RunningVersion.objects.filter(app_id=eu_app.id).update(version="1.7.0")
        version_matrix.refresh(eu.id)

    def poll_us() -> None:
        RunningVersion.objects.filter(app_id=us_app.id).update(version="1.8.0")
        version_matrix.refresh(us.id)

    _race(poll_eu, poll_us, lambda: _advisory_lock_waiters() == 1, "the environment's advisory lock")

    assert lines_of(catalog.checkout, catalog.prod) == [
        ("1.7.0", "", ids(eu), "prod-eu-1"),
        ("1.8.0", "", ids(us), "prod-us-1"),
    ]
    assert stored_lines() == lines_from_scratch()


@pytest.mark.django_db(transaction=True)
def test_a_refresh_that_waited_on_a_cluster_move_redraws_the_environment_the_cluster_moved_to(catalog):
    """A poll of prod-us-1 starts while prod-us-1 is being moved to staging: the poll's
    refresh must land in the staging lines, where the cluster now is."""
    if connection.vendor != "postgresql":
        pytest.skip("the advisory lock is PostgreSQL's; SQLite runs one writer at a time")
    us, staging = catalog.prod_us, catalog.staging_cluster
    seed_app(catalog.prod_eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    us_app = seed_app(us, "checkout-us", service=catalog.checkout, version="1.6.0")
    seed_app(staging, "checkout-st", service=catalog.checkout, version="1.6.0")

    def move() -> None:
        cluster = Cluster.objects.get(pk=us.pk)
        cluster.environment = catalog.staging
        cluster.save()  # redraws prod and staging under both environments' locks

    def poll_us() -> None:
        RunningVersion.objects.filter(app_id=us_app.id).update(version="1.8.0")
        version_matrix.refresh(us.id)

    # The poll waits on the cluster's row, which the move holds until it commits.
    _race(move, poll_us, lambda: _lock_waiters() == 1, "the cluster's row")

    assert lines_of(catalog.checkout, catalog.staging) == [
        ("1.6.0", "", ids(staging), "staging-eu-1"),
        ("1.8.0", "", ids(us), "prod-us-1"),
    ]
    assert stored_lines() == lines_from_scratch()


def test_the_hourly_safety_net_is_scheduled_and_mends_what_no_writer_announced(catalog, settings):
    from portal.delivery.tasks import refresh_placements

    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "delivery.refresh_placements")
    assert entry["schedule"] == 3600.0
    seed_app(catalog.prod_eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    app = seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, version="1.6.0")
    assert refresh_placements() == 0  # in order: nothing written
    # A workload deleted in the admin takes its running versions along and tells nobody.
    app.workloads.all().delete()
    assert refresh_placements() == 1
    assert lines_of(catalog.checkout, catalog.prod) == [("1.6.0", "", ids(catalog.prod_eu), "prod-eu-1")]

"""Git pins are read per repository and revision, never per application: a hundred due
applications in one repository are one queued task and one tree read on the forge (a GitHub
fake over real HTTP, requests counted), and a repository no forge token can read queues nothing
and says so once on its applications, without a log line per application."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from portal.delivery import current_pins
from portal.delivery.current_pins import batch_key, due_batches, git_pins
from portal.delivery.models import GitPinRead
from portal.delivery.tasks import read_due_git_pins, read_repository_pins
from tests.fakes.forges.harness import serving
from tests.fixtures.celery_state import MemoryBroker
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

APPS = 100
FOLDERS = 50  # two applications per overlay (two clusters deploying the same folder)


def overlay(i: int) -> str:
    return f"apps/shop-{i:03}/overlays/prod"


def tree_files() -> dict[str, str]:
    files = {
        "apps/base/deployment.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: checkout\nspec:\n  template:\n"
            "    spec:\n      containers:\n        - name: checkout\n          image: ghcr.io/acme/checkout\n"
        ),
        "README.md": "acme/gitops\n",
    }
    for i in range(FOLDERS):
        files[f"{overlay(i)}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../../base\n"
            f'images:\n  - name: ghcr.io/acme/checkout\n    newTag: "1.6.{i}"\n'
        )
    return files


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch, files=tree_files()) as harness:
        yield harness


def tree_reads(github) -> int:
    return sum(1 for method, path, _status in github.server.log if method == "GET" and "/git/trees/" in path)


def head_reads(github) -> int:
    """Asks for the branch's head: one per read of the repository, whether or not its tree is kept."""
    return sum(1 for method, path, _status in github.server.log if method == "GET" and "/branches/" in path)


def test_a_hundred_due_apps_in_one_repository_are_one_task_and_one_tree_read(
    catalog, github, memory_broker: MemoryBroker
):
    clusters = [catalog.prod_eu, catalog.prod_us, catalog.staging_cluster, catalog.dev_cluster]
    apps = [
        seed_app(clusters[i % 4], f"shop-{i:03}", service=catalog.checkout, version="1.5.0",
                 # One repository, written three ways, followed at its default branch.
                 repo_url=[github.repository, github.repository.removesuffix(".git"),
                           github.repository.replace("/acme/gitops", "/Acme/GitOps")][i % 3],
                 path=overlay(i % FOLDERS), target_revision=["HEAD", ""][i % 2])
        for i in range(APPS)
    ]

    assert read_due_git_pins() == 1
    assert read_due_git_pins() == 0  # queued: not queued again

    (task,) = memory_broker.take("forge")
    assert task.task == "delivery.read_repository_pins"
    assert sorted(task.args[2]) == sorted(app.pk for app in apps)
    assert github.server.log == []  # the fan-out itself never asks the forge

    report = read_repository_pins.apply(args=task.args, kwargs=task.kwargs).get()

    assert report["ok"] and report["apps"] == APPS, report
    assert tree_reads(github) == 1
    # Each file under an application's path is read once, however many applications share it.
    contents = [path for method, path, _ in github.server.log if "/contents/" in path]
    assert len(contents) == len(set(contents)) == FOLDERS
    for i in (0, 37, 50, 99):
        assert git_pins(apps[i]) == [{"service": "checkout", "version": f"1.6.{i % FOLDERS}",
                                      "path": f"{overlay(i % FOLDERS)}/kustomization.yaml", "line": 7}]
    assert due_batches() == []
    assert set(GitPinRead.objects.values_list("branch", "last_error")) == {("main", "")}
    assert read_due_git_pins() == 0  # read: the repository is due again in ten minutes, not before
    assert memory_broker.take("forge") == []


def test_apps_of_one_repository_at_two_revisions_are_two_batches(catalog, github, memory_broker: MemoryBroker):
    seed_app(catalog.prod_eu, "shop-000", service=catalog.checkout, repo_url=github.repository, path=overlay(0),
             target_revision="main")
    seed_app(catalog.prod_us, "shop-001", service=catalog.checkout, repo_url=github.repository, path=overlay(1),
             target_revision="release-9")

    assert read_due_git_pins() == 2
    keys = {batch_key(t.args[0], t.args[1]) for t in memory_broker.take("forge")}
    assert len(keys) == 2


@pytest.mark.parametrize("row_chunk", [7, 2000])  # 7: the reads and writes go a chunk at a time
def test_no_token_queues_nothing_and_says_so_once_without_a_log_line_per_app(
    catalog, memory_broker: MemoryBroker, monkeypatch, caplog: pytest.LogCaptureFixture, row_chunk
):
    monkeypatch.setattr(current_pins, "ROW_CHUNK", row_chunk)
    monkeypatch.delenv("PORTAL_GITOPS_TOKEN", raising=False)
    monkeypatch.setattr(settings, "PORTAL_GITOPS_TOKEN", "")
    monkeypatch.setattr(settings, "PORTAL_GITOPS_GITHUB_API", "https://api.github.com")
    apps = [
        seed_app(catalog.prod_eu, f"shop-{i:03}", service=catalog.checkout,
                 repo_url="https://github.com/acme/gitops.git", path=overlay(i))
        for i in range(APPS)
    ]
    caplog.set_level(logging.DEBUG)

    assert read_due_git_pins() == 0

    assert memory_broker.sizes() == {"forge": 0, "notify": 0, "poll": 0, "registry": 0}
    reasons = set(GitPinRead.objects.filter(app__in=apps).values_list("last_error", flat=True))
    assert reasons == {"no token for github.com (github): set PORTAL_GITOPS_TOKEN"}
    assert GitPinRead.objects.filter(app__in=apps).count() == APPS
    pins_logs = [r for r in caplog.records if r.name.startswith("portal.delivery")]
    assert [r.levelname for r in pins_logs] == ["INFO"]  # one line for the repository, at most
    assert "github.com" in pins_logs[0].getMessage()

    # Ten minutes on, the repository is looked at again: still nothing queued, nothing logged.
    caplog.clear()
    GitPinRead.objects.update(last_read_at=timezone.now() - timedelta(minutes=11))
    assert read_due_git_pins() == 0
    assert memory_broker.sizes()["forge"] == 0
    assert [r for r in caplog.records if r.name.startswith("portal.delivery")] == []
    assert set(GitPinRead.objects.values_list("last_error", flat=True)) == reasons


def test_a_repository_falls_due_as_one_and_a_new_app_waits_a_minute(catalog, github, memory_broker: MemoryBroker):
    """Due-ness is the repository's: its applications are read together and stay on one schedule,
    so clusters appearing one by one (a fleet's first sweep) never make a read per application."""
    from portal.delivery.current_pins import NEW_APP_WAIT, READ_INTERVAL

    first = [seed_app(catalog.prod_eu, f"shop-{i:03}", service=catalog.checkout, repo_url=github.repository,
                      path=overlay(i)) for i in range(3)]
    [batch] = due_batches()
    assert read_repository_pins.apply(args=(batch.repository, batch.revision, list(batch.app_ids))).get()["ok"]
    assert tree_reads(github) == 1 and head_reads(github) == 1
    read_at = GitPinRead.objects.get(app=first[0]).last_read_at

    newcomer = seed_app(catalog.prod_us, "shop-003", service=catalog.checkout, repo_url=github.repository,
                        path=overlay(3))
    assert due_batches(read_at + NEW_APP_WAIT / 2) == [], "not a read a minute per new application"
    [batch] = due_batches(read_at + NEW_APP_WAIT)
    assert sorted(batch.app_ids) == sorted(app.pk for app in [*first, newcomer]), "the whole repository"

    # One application read long ago makes the whole repository due, and it is read as one.
    GitPinRead.objects.filter(app=first[0]).update(last_read_at=read_at - READ_INTERVAL)
    [batch] = due_batches(read_at + NEW_APP_WAIT / 2)
    assert len(batch.app_ids) == 4
    assert read_repository_pins.apply(args=(batch.repository, batch.revision, list(batch.app_ids))).get()["ok"]
    # One read of the repository; its head has not moved, so its tree is the one already read.
    assert head_reads(github) == 2 and tree_reads(github) == 1
    assert GitPinRead.objects.values("last_read_at").distinct().count() == 1, "one schedule"
    assert due_batches() == []


def test_an_app_that_appears_while_its_batch_waits_is_read_with_it(catalog, github, memory_broker: MemoryBroker):
    """A fleet's first sweep adds applications while the repository's read waits in the forge
    queue: the read takes them too, so the repository is not due again a minute later."""
    from portal.delivery.current_pins import NEW_APP_WAIT

    seed_app(catalog.prod_eu, "shop-000", service=catalog.checkout, repo_url=github.repository, path=overlay(0))
    assert read_due_git_pins() == 1
    (task,) = memory_broker.take("forge")
    late = seed_app(catalog.prod_us, "shop-001", service=catalog.checkout,
                    repo_url=github.repository.replace("/acme/gitops", "/Acme/GitOps"), path=overlay(1))
    elsewhere = seed_app(catalog.prod_us, "shop-002", service=catalog.checkout,
                         repo_url="https://github.com/acme/other.git", path=overlay(2))

    report = read_repository_pins.apply(args=task.args, kwargs=task.kwargs).get()

    assert report["ok"] and report["apps"] == 2, report
    assert git_pins(late) == [{"service": "checkout", "version": "1.6.1",
                               "path": f"{overlay(1)}/kustomization.yaml", "line": 7}]
    assert not GitPinRead.objects.filter(app=elsewhere, last_read_at__isnull=False).exists()
    read_at = GitPinRead.objects.get(app=late).last_read_at
    assert [batch.repository for batch in due_batches(read_at + NEW_APP_WAIT)] == [elsewhere.repo_url]


def commit_file(github, path: str, text: str) -> None:
    """A commit on main changing one file, as a person's merge would."""
    model = github.model
    files = dict(model.commits[model.branches["main"]].files)
    files[path] = ("100644", model.put_blob(text.encode()))
    model.branches["main"] = model.commit(files, [model.branches["main"]], f"change {path}")


def read_batch(memory_broker: MemoryBroker) -> dict:
    GitPinRead.objects.update(last_read_at=timezone.now() - timedelta(minutes=11))
    assert read_due_git_pins() == 1
    (task,) = memory_broker.take("forge")
    return read_repository_pins.apply(args=task.args, kwargs=task.kwargs).get()


def test_a_read_that_finds_the_stored_pins_writes_none_and_a_changed_pin_only_its_own(
    catalog, github, memory_broker: MemoryBroker
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from portal.delivery.models import GitPin

    apps = [seed_app([catalog.prod_eu, catalog.prod_us][i % 2], f"shop-{i:03}", service=catalog.checkout,
                     repo_url=github.repository, path=overlay(i)) for i in range(6)]
    assert read_batch(memory_broker)["ok"]
    rows = dict(GitPin.objects.values_list("app_id", "pk"))
    assert len(rows) == 6
    read_at = GitPinRead.objects.get(app=apps[0]).last_read_at

    with CaptureQueriesContext(connection) as queries:
        assert read_batch(memory_broker)["ok"]

    written = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(("INSERT", "UPDATE", "DELETE"))]
    assert [sql for sql in written if '"delivery_gitpinread"' not in sql] == [], "nothing but the read status"
    assert GitPinRead.objects.get(app=apps[0]).last_read_at > read_at
    assert dict(GitPin.objects.values_list("app_id", "pk")) == rows

    commit_file(github, f"{overlay(3)}/kustomization.yaml", tree_files()[f"{overlay(3)}/kustomization.yaml"]
                .replace('newTag: "1.6.3"', 'newTag: "1.7.0"'))
    assert read_batch(memory_broker)["ok"]

    after = dict(GitPin.objects.values_list("app_id", "pk"))
    assert {app_id for app_id in after if after[app_id] != rows[app_id]} == {apps[3].pk}
    assert git_pins(apps[3])[0]["version"] == "1.7.0"


def test_each_file_is_parsed_once_however_many_apps_build_it(catalog, github, memory_broker: MemoryBroker,
                                                              monkeypatch):
    from forges.pins.formats import yamltree

    parsed: list[str] = []
    real = yamltree._read

    def counting(text: str):
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(yamltree, "_read", counting)
    for i in range(APPS):  # two applications per folder, every folder over the one base
        seed_app([catalog.prod_eu, catalog.prod_us][i % 2], f"shop-{i:03}", service=catalog.checkout,
                 repo_url=github.repository, path=overlay(i % FOLDERS))
    assert read_due_git_pins() == 1
    (task,) = memory_broker.take("forge")

    assert read_repository_pins.apply(args=task.args, kwargs=task.kwargs).get()["apps"] == APPS

    assert parsed, "the positioned reader ran"
    assert len(parsed) == len(set(parsed)) <= FOLDERS + 1


def test_a_batch_read_makes_no_query_per_app(catalog, github, memory_broker: MemoryBroker):
    """What a read loads of each application is loaded with the batch: ten applications or forty
    cost the same queries (a deferred column read per application was 1,250 queries a batch)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries_for(count: int) -> int:
        for i in range(count):
            seed_app([catalog.prod_eu, catalog.prod_us][i % 2], f"shop-{count}-{i:03}", service=catalog.checkout,
                     repo_url=github.repository, path=overlay(i % FOLDERS))
        assert read_due_git_pins() == 1
        (task,) = memory_broker.take("forge")
        with CaptureQueriesContext(connection) as queries:
            assert read_repository_pins.apply(args=task.args, kwargs=task.kwargs).get()["ok"]
        GitPinRead.objects.all().delete()
        from gitops.models import GitOpsApp

        GitOpsApp.objects.all().delete()
        return len(queries.captured_queries)

    assert queries_for(40) == queries_for(10)

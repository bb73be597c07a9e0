"""The fleet benchmark's forge mode (bench/fleet.py) rests on two fakes tested here (tests/fakes/fleet.py,
tests/fakes/forges/fleet_github.py): the forge fake answers each of
many repositories from its own files and counts tree reads per repository (the figure the
"at most 40 tree reads per 10 minutes" target is read from), and the fleet it builds spreads
the apps over exactly the repositories asked for, every app following `main`, so the portal's
pin batching (`portal.delivery.current_pins.batch_key`) sees one batch per repository.

The forge is read with the portal's own GitHub client over HTTP, configured as a GitHub
Enterprise Server is (PORTAL_GITOPS_GITHUB_API + PORTAL_GITOPS_TOKEN)."""

from __future__ import annotations

import json

import pytest
import urllib3

from forges.forge import ForgeError
from forges.hosts import forge_for
from tests.fakes import fleet as fleet_fakes
from tests.fakes.forges.base import GitModel
from tests.fakes.forges.fleet_github import FleetGitHub

TOKEN = "tok-bench-fleet-forge-never-shown"


@pytest.fixture
def fleet_forge():
    repositories = fleet_fakes.forge_repositories(40)
    models = {}
    for name, files in repositories.items():
        owner, repository = name.split("/")
        models[(owner, repository)] = GitModel(owner, repository, files, branch="main")
    with FleetGitHub(models, TOKEN) as server:
        yield server, fleet_fakes


def environ(server) -> dict[str, str]:
    return {"PORTAL_GITOPS_GITHUB_API": server.api, "PORTAL_GITOPS_TOKEN": TOKEN}


def counts(server) -> dict:
    answer = urllib3.PoolManager().request("GET", server.url + "/_bench/counts")
    return json.loads(answer.data)["repositories"]


def test_each_repository_answers_its_own_files_and_its_tree_reads_are_counted(fleet_forge):
    server, fleet = fleet_forge
    seven = forge_for(f"{server.url}/acme/fleet-07.git", environ(server), demo=False)
    eight = forge_for(f"{server.url}/acme/fleet-08.git", environ(server), demo=False)

    entries, files = seven.pin_files("apps", "main")
    assert {e.path for e in entries} == {f"apps/svc{s:03d}/{leaf}" for s in range(7, 200, 40)
                                         for leaf in ("prod/kustomization.yaml", "base/deployment.yaml")}
    assert "newTag: 1.2.0" in files["apps/svc007/prod/kustomization.yaml"]
    seven.tree("apps/svc047", "main")
    assert {e.path for e in eight.tree("", "main")} >= {"apps/svc008/prod/kustomization.yaml", "README.md"}

    seen = counts(server)
    assert seen["acme/fleet-07"]["tree"] == 2
    assert seen["acme/fleet-08"]["tree"] == 1
    assert seen["acme/fleet-07"]["contents"] == 10  # each pin-holding file once
    assert "acme/fleet-09" not in seen


def test_a_wrong_token_or_an_unknown_repository_is_refused_and_counted_apart(fleet_forge):
    server, _fleet = fleet_forge
    wrong = forge_for(f"{server.url}/acme/fleet-01.git", {**environ(server), "PORTAL_GITOPS_TOKEN": "nope"},
                      demo=False)
    with pytest.raises(ForgeError) as refused:
        wrong.tree("", "main")
    assert refused.value.status == 401
    with pytest.raises(ForgeError) as missing:
        forge_for(f"{server.url}/acme/elsewhere.git", environ(server), demo=False).tree("", "main")
    assert missing.value.status == 404
    seen = counts(server)
    assert seen["acme/fleet-01"] == {"branch": 1}  # refused at its first request
    assert seen["(no such repository)"] == {"other": 1}


def test_the_fleet_spreads_its_apps_over_the_repositories_asked_for_all_following_main(fleet_forge, settings):
    server, fleet = fleet_forge
    from portal.delivery.current_pins import batch_key

    for name, value in environ(server).items():
        setattr(settings, name, value)
    place = fleet.ForgeFleet(server.url, 40)
    built = fleet.build_fleet(clusters=10, apps=100, forge=place)
    keys = set()
    for cluster in built:
        if cluster.argo:
            for app in cluster.apps():
                source = app["spec"]["source"]
                assert app["status"]["sync"]["comparedTo"]["source"] == source
                keys.add(batch_key(source["repoURL"], source["targetRevision"]))
        else:
            sources = {r["metadata"]["name"]: r["spec"]
                       for r in cluster.lists["/apis/source.toolkit.fluxcd.io/v1/gitrepositories"]["items"]}
            for app in cluster.apps():
                spec = sources[app["spec"]["sourceRef"]["name"]]
                keys.add(batch_key(spec["url"], spec["ref"]["branch"]))
    assert keys == {f"127.0.0.1/acme/fleet-{r:02d}@main" for r in range(40)}

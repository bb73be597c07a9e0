"""Self-check of the demo fleet: every file parses and the pieces agree with each other.

    .venv/bin/python examples/check_fleet.py

Exits 0 and prints a summary when everything holds; otherwise prints each problem and
exits 1. Stdlib + PyYAML only, so it runs without Django.
"""

from __future__ import annotations

import re
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE / "gitops-repo"
REPO_URL = "https://github.com/acme-shop/gitops.git"
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
SHA40 = re.compile(r"^[0-9a-f]{40}$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet"}
IN_CLUSTER = "https://kubernetes.default.svc"
# Images the catalog deliberately does not list yet: the Discovery page offers them.
UNLISTED = {"ghcr.io/acme-shop/loyalty": "loyalty"}

# The only places where what runs differs from what Git pins (cluster, service): git, runs.
EXPECTED_DRIFT = {
    ("prod-eu-1", "payments"): ("2.4.1", "2.4.0"),  # deny window (change freeze) blocks auto-sync
    ("prod-eu-1", "search"): ("1.7.0", "1.6.0"),  # manual-sync app, not synced yet
}

problems: list[str] = []


def fail(message: str) -> None:
    problems.append(message)


def load_docs(path: Path) -> list[dict[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except yaml.YAMLError as exc:
        fail(f"{path.relative_to(HERE)}: does not parse: {exc}")
        return []
    for d in docs:
        if not isinstance(d, dict):
            fail(f"{path.relative_to(HERE)}: a document is not a mapping")
    return [d for d in docs if isinstance(d, dict)]


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    m = obj.get("metadata") or {}
    return (obj.get("kind", ""), m.get("namespace", ""), m.get("name", ""))


def image_repo_tag(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":")
    if "/" in tag or not name:
        return image, ""
    return name, tag


# ---------------------------------------------------------------------------------------
def check_catalog() -> tuple[dict[str, Any], dict[str, str]]:
    catalog = yaml.safe_load((HERE / "fleet.yaml").read_text())
    envs = {e["name"]: e for e in catalog["environments"]}
    orders = [e["order"] for e in catalog["environments"]]
    if len(set(orders)) != len(orders):
        fail("fleet.yaml: environment orders are not unique")
    if not any(e.get("production") for e in envs.values()):
        fail("fleet.yaml: no production environment")
    names = [c["name"] for c in catalog["clusters"]]
    if len(set(names)) != len(names):
        fail("fleet.yaml: duplicate cluster names")
    for c in catalog["clusters"]:
        if c["environment"] not in envs:
            fail(f"fleet.yaml: cluster {c['name']} names unknown environment {c['environment']}")
        if c.get("connection") == "none":
            if not c.get("api_url", "").startswith("https://") or "manifests" in c:
                fail(f"fleet.yaml: cluster {c['name']} is not read: it needs the api_url its Argo CD knows")
            continue
        folder = HERE / c["manifests"]
        if not folder.is_dir():
            fail(f"fleet.yaml: cluster {c['name']}: folder {c['manifests']} does not exist")
        elif not list(folder.rglob("*.yaml")):
            fail(f"fleet.yaml: cluster {c['name']}: folder {c['manifests']} has no *.yaml")
    repo_to_service: dict[str, str] = {}
    for s in catalog["services"]:
        for field in ("name", "image", "team"):
            if not s.get(field):
                fail(f"fleet.yaml: service {s} lacks {field}")
        for repo in [s["image"], *(s.get("aliases") or [])]:
            if repo in repo_to_service:
                fail(f"fleet.yaml: image {repo} belongs to two services")
            if ":" in repo.split("/")[-1] or "@" in repo:
                fail(f"fleet.yaml: {repo} must be a repository without tag")
            repo_to_service[repo] = s["name"]
    return catalog, repo_to_service


# ---------------------------------------------------------------------------------------
def git_pin(path: str, service: str) -> str | None:
    """The tag Git pins for a service at an overlay path (kustomize images or Helm values)."""
    folder = REPO / path
    if folder.is_file():  # a Helm values file given directly ($values/… of a multi-source app)
        folder = folder.parent
    values = folder / "values.yaml"
    if values.is_file():
        data = yaml.safe_load(values.read_text())
        return str(data["image"]["tag"])
    kust = folder / "kustomization.yaml"
    if not kust.is_file():
        return None
    data = yaml.safe_load(kust.read_text())
    for entry in data.get("images") or []:
        if entry["name"].endswith(f"/{service}"):
            return str(entry.get("newTag"))
    return None


def check_repo() -> None:
    """Every kustomization's resources exist; every base image is a service image."""
    for kust in REPO.rglob("kustomization.yaml"):
        data = yaml.safe_load(kust.read_text()) or {}
        for res in data.get("resources") or []:
            if not (kust.parent / res).exists():
                fail(f"gitops-repo/{kust.relative_to(REPO)}: resource {res} does not exist")
        for gen in data.get("configMapGenerator") or []:
            for f in gen.get("files") or []:
                if not (kust.parent / f).exists():
                    fail(f"gitops-repo/{kust.relative_to(REPO)}: generator file {f} does not exist")
    for path in REPO.rglob("*.yaml"):
        try:
            list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as exc:
            fail(f"gitops-repo/{path.relative_to(REPO)}: does not parse: {exc}")


# ---------------------------------------------------------------------------------------
def folder_objects(folder: Path) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("*.yaml")):
        objects.extend(load_docs(path))
    return objects


def destination_of(app: dict[str, Any], catalog: dict[str, Any]) -> tuple[str, Path | None] | None:
    """Where an app deploys when that is another cluster: (name, its folder or None when the
    portal does not read it); None for the cluster the app's Argo CD runs on."""
    dest = app["spec"]["destination"]
    server, name = (dest.get("server") or "").rstrip("/"), dest.get("name") or ""
    if server == IN_CLUSTER or name == "in-cluster":
        return None
    for c in catalog["clusters"]:
        known = {c["name"], c.get("api_url", ""), *(c.get("argocd_aliases") or [])} - {""}
        if server in known or name in known:
            return c["name"], (HERE / c["manifests"]) if c.get("manifests") else None
    return name or server, None


def check_cluster(cluster: dict[str, Any], repo_to_service: dict[str, str], stats: dict[str, Any],
                  catalog: dict[str, Any]) -> None:
    name = cluster["name"]
    folder = HERE / cluster["manifests"]
    objects = folder_objects(folder)
    by_key: dict[tuple[str, str, str], dict[str, Any]] = {}
    for obj in objects:
        k = key(obj)
        if k in by_key:
            fail(f"{name}: duplicate object {k}")
        by_key[k] = obj
        m = obj.get("metadata") or {}
        for field in ("uid", "creationTimestamp", "resourceVersion"):
            if not m.get(field):
                fail(f"{name}: {k} lacks metadata.{field}")
        if m.get("uid") and not UUID.match(m["uid"]):
            fail(f"{name}: {k} uid {m['uid']} is not a UUID")
        if m.get("creationTimestamp") and not str(m["creationTimestamp"]).startswith("2026-11-"):
            fail(f"{name}: {k} creationTimestamp {m['creationTimestamp']} is not in 2026-11")
        if "apiVersion" not in obj:
            fail(f"{name}: {k} lacks apiVersion")

    def find(kind: str, namespace: str, obj_name: str) -> dict[str, Any] | None:
        return by_key.get((kind, namespace, obj_name))

    # Workloads: images belong to services, tags are semver, status is complete.
    running: dict[str, tuple[str, dict[str, Any]]] = {}  # service -> (tag, workload)
    for obj in objects:
        if obj["kind"] not in WORKLOAD_KINDS:
            continue
        k = key(obj)
        for c in obj["spec"]["template"]["spec"]["containers"]:
            repo, tag = image_repo_tag(c["image"])
            service = repo_to_service.get(repo) or UNLISTED.get(repo)
            if service is None:
                fail(f"{name}: {k} runs {c['image']}, not an image of any service")
                continue
            if not SEMVER.match(tag):
                fail(f"{name}: {k} image tag {tag!r} is not semver")
            running[service] = (tag, obj)
        st = obj.get("status") or {}
        for field in ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas", "observedGeneration"):
            if field not in st:
                fail(f"{name}: {k} status lacks {field}")
        if obj["kind"] == "Deployment" and not st.get("conditions"):
            fail(f"{name}: {k} status lacks conditions")

    # Flux-labelled objects: the owner exists.
    for obj in objects:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for group, kind in (("kustomize", "Kustomization"), ("helm", "HelmRelease")):
            owner = labels.get(f"{group}.toolkit.fluxcd.io/name")
            if owner is None:
                continue
            owner_ns = labels.get(f"{group}.toolkit.fluxcd.io/namespace", "")
            if find(kind, owner_ns, owner) is None:
                fail(f"{name}: {key(obj)} is labelled with {kind} {owner_ns}/{owner}, which does not exist")

    # Argo CD.
    projects = {o["metadata"]["name"]: o for o in objects if o["kind"] == "AppProject"}
    apps = [o for o in objects if o["kind"] == "Application"]
    for app in apps:
        m, spec, st = app["metadata"], app["spec"], app.get("status") or {}
        label = f"{name}: Application {m['namespace']}/{m['name']}"
        # A hub's app: its resources and workloads are on the destination (when that is read).
        where, app_find, app_running = name, find, running
        destination = destination_of(app, catalog)
        if destination is not None:
            where, dest_folder = destination
            dest_objects = folder_objects(dest_folder) if dest_folder else []
            dest_by_key = {key(o): o for o in dest_objects}

            def app_find(kind: str, namespace: str, obj_name: str, index=dest_by_key) -> dict[str, Any] | None:
                return index.get((kind, namespace, obj_name))

            app_running = {}
            for obj in dest_objects:
                for c in obj["spec"]["template"]["spec"]["containers"] if obj["kind"] in WORKLOAD_KINDS else []:
                    repo, tag = image_repo_tag(c["image"])
                    if repo_to_service.get(repo) or UNLISTED.get(repo):
                        app_running[repo_to_service.get(repo) or UNLISTED[repo]] = (tag, obj)
            if dest_folder is None:
                # Not read: what runs is what Argo CD reports.
                for image in (st.get("summary") or {}).get("images") or []:
                    repo, tag = image_repo_tag(image)
                    if repo_to_service.get(repo) or UNLISTED.get(repo):
                        app_running[repo_to_service.get(repo) or UNLISTED[repo]] = (tag, {})
        project = projects.get(spec.get("project") or "default")
        if project is None:
            fail(f"{label}: project {spec.get('project')} does not exist")
        elif m["namespace"] != "argocd":
            allowed = project["spec"].get("sourceNamespaces") or []
            if not any(fnmatchcase(m["namespace"], p) for p in allowed):
                fail(f"{label}: namespace not in project {project['metadata']['name']} sourceNamespaces")
        sources = spec.get("sources") or [spec["source"]]
        paths = []
        for src in sources:
            if src.get("path"):
                paths.append(src["path"])
            if src.get("repoURL") == REPO_URL and not src.get("ref") and not src.get("path"):
                fail(f"{label}: Git source without path or ref")
            for vf in (src.get("helm") or {}).get("valueFiles") or []:
                if vf.startswith("$values/"):
                    paths.append(vf[len("$values/"):])
        for p in paths:
            if not (REPO / p).exists():
                fail(f"{label}: path {p} does not exist in gitops-repo")
        sync = st.get("sync") or {}
        revs = sync.get("revisions") or [sync.get("revision")]
        if not any(r and SHA40.match(r) for r in revs):
            fail(f"{label}: no 40-hex sync revision in {revs}")
        for h in st.get("history") or []:
            for r in h.get("revisions") or [h.get("revision")]:
                if not (SHA40.match(r) or SEMVER.match(r)):
                    fail(f"{label}: history revision {r} is neither a SHA nor a chart version")
            if "deployedAt" not in h:
                fail(f"{label}: history entry without deployedAt")
        health = (st.get("health") or {}).get("status")
        for res in st.get("resources") or []:
            target = app_find(res["kind"], res.get("namespace", ""), res["name"])
            if destination is not None and destination[1] is None:
                if "health" not in res:
                    fail(f"{label}: {res['kind']} {res['name']} has no health, and nothing else reports it")
            elif health == "Missing":
                if target is not None:
                    fail(f"{label}: health Missing but {res['kind']} {res['name']} exists")
            elif target is None:
                fail(f"{label}: status.resources lists {res['kind']} {res.get('namespace')}/{res['name']}, "
                     "which is not in the folder")
        # Git pin vs what runs.
        service = m["name"].removesuffix(f"-{where}") if destination else m["name"].rsplit("-", 1)[0]
        pin_path = paths[0] if paths else None
        pin = git_pin(pin_path, service) if pin_path else None
        if pin is None:
            fail(f"{label}: no Git pin found at {pin_path}")
            continue
        stats["pins"].append((where, service, pin, app_running.get(service, ("-",))[0]))
        if health != "Missing":
            images = (st.get("summary") or {}).get("images") or []
            if service in app_running and not any(i.endswith(":" + app_running[service][0]) for i in images):
                fail(f"{label}: summary.images {images} does not include the running tag")
        stats["apps"][(name, m["name"])] = (sync.get("status"), health)

    # Flux.
    git_repos = {key(o)[1:]: o for o in objects if o["kind"] == "GitRepository"}
    helm_repos = {key(o)[1:]: o for o in objects if o["kind"] == "HelmRepository"}
    for gr in git_repos.values():
        if gr["spec"]["url"] != REPO_URL:
            fail(f"{name}: GitRepository url {gr['spec']['url']} is not {REPO_URL}")
        rev = gr["status"]["artifact"]["revision"]
        if not re.match(r"^main@sha1:[0-9a-f]{40}$", rev):
            fail(f"{name}: GitRepository revision {rev} is not main@sha1:<40hex>")
    for hr in helm_repos.values():
        if hr["spec"].get("type") == "oci" and "status" in hr:
            fail(f"{name}: OCI HelmRepository {hr['metadata']['name']} has a status")
    for ks in (o for o in objects if o["kind"] == "Kustomization"):
        m, spec, st = ks["metadata"], ks["spec"], ks["status"]
        label = f"{name}: Kustomization {m['namespace']}/{m['name']}"
        src = spec["sourceRef"]
        if (src.get("namespace", m["namespace"]), src["name"]) not in git_repos:
            fail(f"{label}: sourceRef {src} does not exist")
        path = spec["path"].removeprefix("./")
        if not (REPO / path).is_dir():
            fail(f"{label}: path {spec['path']} does not exist in gitops-repo")
        for field in ("lastAppliedRevision", "lastAttemptedRevision"):
            if not re.match(r"^main@sha1:[0-9a-f]{40}$", st.get(field, "")):
                fail(f"{label}: {field} {st.get(field)!r} is not main@sha1:<40hex>")
        conds = {c["type"]: c for c in st["conditions"]}
        if "Ready" not in conds:
            fail(f"{label}: no Ready condition")
        for entry in st.get("inventory", {}).get("entries", []):
            ns, rest = entry["id"].split("_", 1)
            obj_name, group, kind = rest.rsplit("_", 2)
            if kind in WORKLOAD_KINDS | {"HelmRelease", "Kustomization"} and find(kind, ns, obj_name) is None:
                fail(f"{label}: inventory entry {entry['id']} is not in the folder")
        if m["name"] != "flux-system":
            service = m["name"]
            pin = git_pin(path, service)
            stats["pins"].append((name, service, pin, running.get(service, ("-",))[0]))
        stats["flux"][(name, m["name"])] = (conds["Ready"]["status"], conds["Ready"]["reason"],
                                            bool(spec.get("suspend")))
    for hr in (o for o in objects if o["kind"] == "HelmRelease"):
        m, spec, st = hr["metadata"], hr["spec"], hr["status"]
        label = f"{name}: HelmRelease {m['namespace']}/{m['name']}"
        if hr["apiVersion"] != "helm.toolkit.fluxcd.io/v2":
            fail(f"{label}: apiVersion {hr['apiVersion']} is not v2")
        ref = spec["chart"]["spec"]["sourceRef"]
        if (ref.get("namespace", m["namespace"]), ref["name"]) not in helm_repos:
            fail(f"{label}: chart sourceRef {ref} does not exist")
        if not st.get("history"):
            fail(f"{label}: no status.history")
        chart_ns, chart_name = st["helmChart"].split("/")
        if find("HelmChart", chart_ns, chart_name) is None:
            fail(f"{label}: status.helmChart {st['helmChart']} does not exist")
        conds = {c["type"]: c for c in st["conditions"]}
        stats["flux"][(name, f"hr/{m['name']}")] = (conds["Ready"]["status"], conds["Ready"]["reason"],
                                                   bool(spec.get("suspend")))


def main() -> int:
    catalog, repo_to_service = check_catalog()
    check_repo()
    stats: dict[str, Any] = {"pins": [], "apps": {}, "flux": {}}
    for cluster in catalog["clusters"]:
        if cluster.get("manifests") and (HERE / cluster["manifests"]).is_dir():
            check_cluster(cluster, repo_to_service, stats, catalog)

    drift = {}
    seen = set()
    for cluster, service, pin, runs in stats["pins"]:
        seen.add((cluster, service))
        if runs == "-":
            continue  # nothing runs (Missing app)
        if pin != runs:
            drift[(cluster, service)] = (pin, runs)
    if drift != EXPECTED_DRIFT:
        fail(f"Git pins vs running tags: expected drift {EXPECTED_DRIFT}, found {drift}")

    # The stories the demo promises (README.md) are all present.
    apps, flux = stats["apps"], stats["flux"]
    want = {
        ("staging-eu-1", "payments-staging"): ("Synced", "Degraded"),
        ("prod-eu-1", "payments-prod"): ("OutOfSync", "Healthy"),
        ("prod-eu-1", "search-prod"): ("OutOfSync", "Healthy"),
        ("prod-ap-1", "recommendations-prod"): ("OutOfSync", "Missing"),
    }
    for k, v in want.items():
        if apps.get(k) != v:
            fail(f"story: {k} should be {v}, is {apps.get(k)}")
    if flux.get(("prod-us-1", "orders")) != ("False", "HealthCheckFailed", False):
        fail(f"story: prod-us-1 orders Kustomization should fail its health check: {flux.get(('prod-us-1', 'orders'))}")
    if not flux.get(("prod-us-1", "hr/notifications"), ("",) * 3)[2]:
        fail("story: prod-us-1 notifications HelmRelease should be suspended")

    if problems:
        for p in problems:
            print("FAIL", p)
        print(f"{len(problems)} problem(s)")
        return 1
    n_apps = len(apps)
    n_flux = len(flux)
    print(f"ok: {len(catalog['clusters'])} clusters, {len(catalog['services'])} services, "
          f"{n_apps} Argo CD applications, {n_flux} Flux Kustomizations/HelmReleases, "
          f"{len(seen)} (cluster, service) pins checked; drift only where expected: "
          + ", ".join(f"{c}/{s} git {g} runs {r}" for (c, s), (g, r) in sorted(drift.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

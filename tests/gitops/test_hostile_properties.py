"""Property tests over the real-object corpus (issue 19): real Argo CD, Flux and workload
objects, mutated as a broken or hostile cluster would write them, put through the real poll
path: the Kubernetes API emulator over HTTP (KubeSource) and a manifest folder
(ManifestSource).

Whatever one object holds, the poll must not raise, the cluster must not go stale, every
other object of the corpus must be stored, and an object that is not stored must be named
(kind namespace/name, or its file) in a warning. The mutations are the ones the issue
probed: fields deleted, types swapped, huge strings, nesting beyond MAX_DEPTH, odd unicode,
timestamps at and past the calendar's edges, and strings meant to break out of HTML.

The strategies live here and are reused by tests/web/test_hostile_pages.py, which stores
mutants the same way and requests every page for them. Examples are few and derandomized
(CI repeats the same run); the corpus itself is what makes them real.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitops import kinds
from gitops.collectors import MAX_NAME
from gitops.models import AppProject, GitOpsApp, Workload
from gitops.polling import PollReport, poll
from gitops.rawobjects import MAX_DEPTH, as_str
from gitops.sources.manifests import ManifestSource
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster, Service
from tests.fakes.kube_emulator import KubeEmulator
from tests.fixtures.real_objects import REAL_OBJECTS, load_real

ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_HOSTILE_TOKEN"
CLUSTER = "prod-eu-1"

Obj = dict[str, Any]
Path_ = tuple[str | int, ...]

# ------------------------------------------------------------------------ the corpus

APP_KINDS = {"Application", "Kustomization", "HelmRelease"}
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Rollout"}
ROW_KINDS = APP_KINDS | WORKLOAD_KINDS | {"AppProject"}


def _with_type(obj: Obj, folder: str) -> Obj:
    """Argo CD API-server responses carry no apiVersion/kind; the emulator needs them (an API
    server's CRD list would carry them too)."""
    if folder == "argocd" and "kind" not in obj:
        return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **obj}
    return obj


def _as_api_json(obj: Obj) -> Obj:
    """The object as an API server sends it: a YAML loader read its unquoted timestamps as
    datetimes, the API writes RFC 3339 strings."""

    def rfc3339(value: Any) -> str:
        if isinstance(value, datetime):
            return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        raise TypeError(type(value).__name__)

    return json.loads(json.dumps(obj, default=rfc3339))


def corpus() -> list[Obj]:
    """Every object of tests/data/real-objects, each once, as the files hold them."""
    objects: list[Obj] = []
    seen: set[tuple[str, str, str]] = set()
    for path in sorted(REAL_OBJECTS.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json"):
            continue
        for obj in load_real(path.relative_to(REAL_OBJECTS)):
            obj = _with_type(_as_api_json(obj), path.parent.name)
            key = identity(obj)
            if key not in seen:  # two karmada cases of one object would be one object in a cluster
                seen.add(key)
                objects.append(obj)
    return objects


def identity(obj: Any) -> tuple[str, str, str]:
    """(kind, namespace, name) as the collectors and the store key an object."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    return as_str(obj.get("kind")), as_str(metadata.get("namespace")), as_str(metadata.get("name"))


CORPUS = corpus()


def test_the_corpus_is_the_real_one():
    kinds_found = {o["kind"] for o in CORPUS}
    assert {"Application", "AppProject", "Kustomization", "HelmRelease", "GitRepository", "Deployment",
            "StatefulSet", "Rollout"} <= kinds_found
    assert len(CORPUS) >= 45


# ------------------------------------------------------------------------ mutations

# Strings meant to break out of HTML text, attributes and links. Each calls alert() with a
# marker, so a browser that ran one raises a dialog (tests/web/test_hostile_pages.py).
HOSTILE_STRINGS = [
    '<script>alert("xss-script")</script>',
    '"><img src=x onerror=alert("xss-img")>',
    "javascript:alert('xss-href')",
    "' onmouseover='alert(\"xss-attr\")' x='",
    '<svg/onload=alert("xss-svg")>',
    "https://evil.example/\"><script>alert('xss-url')</script>",
    "</textarea></title><script>alert('xss-close')</script>",
    "{{ 7|add:7 }}{% now 'Y' %}",  # template syntax must stay text
]
# What YAML and JSON can carry: RTL override, zero-width, BOM, combining marks, astral
# characters, NUL, and lone surrogates (JSON's "\ud800"; YAML refuses those).
ODD_UNICODE = [
    "\u202egnp.exe\u202c",
    "zero\u200bwidth\u200d\u2060",
    "\ufeffbom",
    "e\u0301\u0301\u0301",
    "\U0001f4a3\U0001f525",
    "nul\x00byte",
    "lone\ud800surrogate",
    "\udfff",
    "\u0000",
    "\u2028line\u2029separators",
]
EDGE_TIMES = [
    "0001-01-01T00:00:00Z",  # Go's zero time (an unset metav1.Time)
    "9999-12-31T23:59:59Z",
    "1969-12-31T23:59:59Z",
    "9000-01-01T00:00:01Z",
    "2024-06-01T12:00:00",  # naive
    "2024-13-45T99:99:99Z",
    "not a time",
    "",
    "+275760-09-13T00:00:00Z",
    "2024-06-01T12:00:00+14:00",
    "2024-06-01T12:00:00.999999999-12:00",
    1717243200,
]
TIME_KEYS = ("time", "at", "timestamp", "date")
HUGE = [4096, 262_144]


def paths_in(value: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every path into `value` (walked without recursion, so a deep value costs no stack)."""
    stack = [(path, value)]
    while stack:
        here, current = stack.pop()
        yield here
        if isinstance(current, dict):
            stack.extend(((*here, k), v) for k, v in current.items())
        elif isinstance(current, list):
            stack.extend(((*here, i), v) for i, v in enumerate(current))


def value_at(obj: Any, path: Path_) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def set_at(obj: Any, path: Path_, value: Any) -> None:
    value_at(obj, path[:-1])[path[-1]] = value


def delete_at(obj: Any, path: Path_) -> None:
    del value_at(obj, path[:-1])[path[-1]]


# The emulator (and an API server) files an object under apiVersion/kind/metadata.name:
# those stay typed; their values may still be hostile strings.
_FIXED = {("apiVersion",), ("kind",), ("metadata",)}
_STRING_ONLY = {("metadata", "name"), ("metadata", "namespace")}


# How deep the "deep" mutation nests: just past the limit, and as deep as the issue found
# crashing the poll (a decoder recursing once per level hits the interpreter's stack).
DEEP_LEVELS = [MAX_DEPTH + 1, MAX_DEPTH + 60, 650, 1200, 2500]
# json.dumps and yaml.safe_dump recurse too, so a deep value is a placeholder in the object
# and becomes its text only once the rest is serialised (`with_deep_text`).
_DEEP = re.compile(r"""["']@DEEP:(\d+)@["']""")


def deep_placeholder(levels: int) -> str:
    return f"@DEEP:{levels}@"


def with_deep_text(text: str) -> str:
    """Serialised JSON or YAML with every placeholder replaced by that many nested flow
    collections (arrays and objects alternating), which both formats read."""

    def nested(match: re.Match[str]) -> str:
        levels = int(match.group(1))
        opens = "".join('{"a":' if i % 2 else "[" for i in range(levels))
        closes = "".join("}" if i % 2 else "]" for i in reversed(range(levels)))
        return opens + '"deep"' + closes

    return _DEEP.sub(nested, text)


def _swapped(value: Any, choice: int) -> Any:
    options: list[Any] = [None, 0, -1, 2**63, 1.5e308, True, "", "text", [], [value], {}, {"value": value}]
    same = [o for o in options if type(o) is not type(value)]
    return same[choice % len(same)]


@dataclass
class Mutant:
    """One corpus object, mutated, and what was done to it (for the failure message)."""

    original: Obj
    obj: Obj
    done: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return identity(self.obj)

    @property
    def original_key(self) -> tuple[str, str, str]:
        return identity(self.original)


@st.composite
def mutants(draw: st.DrawFn, pool: list[Obj] | None = None, max_mutations: int = 4) -> Mutant:
    original = draw(st.sampled_from(pool or CORPUS))
    obj = copy.deepcopy(original)
    mutant = Mutant(original, obj)
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = [p for p in paths_in(obj) if p and p not in _FIXED]
        if not paths:
            break
        operation = draw(st.sampled_from(["delete", "swap", "huge", "deep", "unicode", "time", "hostile"]))
        if operation == "time":
            timed = [p for p in paths if isinstance(p[-1], str) and p[-1].lower().endswith(TIME_KEYS)]
            paths = timed or paths
        path = draw(st.sampled_from(sorted(paths, key=repr)))
        if path in _STRING_ONLY and operation in ("delete", "swap", "deep", "time"):
            operation = "hostile"
        if operation == "delete":
            delete_at(obj, path)
        elif operation == "swap":
            set_at(obj, path, _swapped(value_at(obj, path), draw(st.integers(0, 20))))
        elif operation == "huge":
            # Up to 256 KiB: what the API server allows for all of an object's annotations.
            unit, length = draw(st.sampled_from(["x", "\u00e9", HOSTILE_STRINGS[0]])), draw(st.sampled_from(HUGE))
            set_at(obj, path, (unit * length)[:length])
        elif operation == "deep":
            set_at(obj, path, deep_placeholder(draw(st.sampled_from(DEEP_LEVELS))))
        elif operation == "unicode":
            set_at(obj, path, draw(st.sampled_from(ODD_UNICODE)) + as_str(value_at(obj, path)))
        elif operation == "time":
            set_at(obj, path, draw(st.sampled_from(EDGE_TIMES)))
        else:
            set_at(obj, path, draw(st.sampled_from(HOSTILE_STRINGS)))
        mutant.done.append(f"{operation} {'.'.join(map(str, path))}")
    return mutant


# ------------------------------------------------------------------------ polling them


def stored_keys() -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every row a poll stored, apps, projects and workloads alike."""
    keys = set(GitOpsApp.objects.values_list("kind", "namespace", "name"))
    keys |= {("AppProject", ns, name) for ns, name in AppProject.objects.values_list("namespace", "name")}
    return keys | set(Workload.objects.values_list("kind", "namespace", "name"))


def expected_keys(objects: list[Obj]) -> set[tuple[str, str, str]]:
    return {identity(o) for o in objects if o["kind"] in ROW_KINDS}


def names_it(warnings: list[str], key: tuple[str, str, str], file: str | None = None) -> bool:
    """Whether a warning names the object (`Kind namespace/name`, as sources and collectors
    write it), or, for a manifest file skipped whole, the file."""
    kind, namespace, name = key
    if max(len(namespace), len(name)) > MAX_NAME:  # named by the start of each (gitops.collectors)
        namespace, name = namespace[:60], name[:60]
    named = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    return any(named in w or (file is not None and f"skipped {file}" in w) for w in warnings)


def write_manifests(folder: Path, untouched: list[Obj], mutated: list[tuple[Mutant, str]]) -> None:
    """The untouched corpus as one JSON List, each mutant in a file of its own format."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": untouched}))
    for index, (mutant, suffix) in enumerate(mutated):
        path = folder / f"mutant-{index}{suffix}"
        if suffix == ".yaml":
            try:
                path.write_text(with_deep_text(yaml.safe_dump(mutant.obj, allow_unicode=True)),
                                encoding="utf-8", errors="surrogatepass")
                continue
            except (yaml.YAMLError, UnicodeEncodeError):
                path = path.with_suffix(".json")  # YAML cannot carry it; JSON can
        path.write_text(with_deep_text(json.dumps(mutant.obj)))


@dataclass
class PolledFleet:
    cluster: Cluster
    report: PollReport
    untouched: list[Obj]
    mutated: list[tuple[Mutant, str]]


def _file_of(index: int, suffix: str, folder: Path) -> str:
    name = f"mutant-{index}{suffix}"
    return name if (folder / name).exists() else f"mutant-{index}.json"


def assert_poll_held(fleet: PolledFleet, folder: Path | None = None) -> None:
    """The properties of the issue: the poll neither raised nor dropped the cluster, every
    untouched object is stored, and every mutant that is not is named in a warning."""
    what = [m.done for m, _ in fleet.mutated]
    assert fleet.report.ok, (fleet.report.error, what)
    fleet.cluster.refresh_from_db()
    assert fleet.cluster.poll.last_error == "" and fleet.cluster.poll.stale_since is None, what
    stored = stored_keys()
    replaced = {m.original_key for m, _ in fleet.mutated}
    missing = expected_keys(fleet.untouched) - replaced - stored
    assert not missing, (missing, what, fleet.report.warnings)
    for index, (mutant, suffix) in enumerate(fleet.mutated):
        if mutant.obj["kind"] not in ROW_KINDS or mutant.key in stored:
            continue
        file = _file_of(index, suffix, folder) if folder is not None else None
        assert names_it(fleet.report.warnings, mutant.key, file), (mutant.key, mutant.done, fleet.report.warnings)


def manifest_fleet(folder: Path, mutated: list[tuple[Mutant, str]], pool: list[Obj] | None = None) -> PolledFleet:
    """Poll prod-eu-1 from a folder holding the corpus with `mutated` in place of the originals."""
    replaced = {m.original_key for m, _ in mutated}
    untouched = [o for o in (pool or CORPUS) if identity(o) not in replaced]
    write_manifests(folder, untouched, mutated)
    Cluster.objects.filter(name=CLUSTER).update(connection=Cluster.Connection.MANIFESTS, manifests_path=str(folder))
    cluster = Cluster.objects.get(name=CLUSTER)
    return PolledFleet(cluster, poll(cluster), untouched, mutated)


def load_catalog() -> None:
    """The demo fleet's environments and clusters, and a service for each image of the corpus
    (so the service pages show the mutants)."""
    load_fleet(ROOT / "examples" / "fleet.yaml")
    for name, repository in (("podinfo", "ghcr.io/stefanprodan/podinfo"),
                             ("guestbook", "gcr.io/heptio-images/ks-guestbook-demo"),
                             ("redis", "docker.io/bitnami/redis"),
                             ("rollouts-demo", "docker.io/argoproj/rollouts-demo"),
                             ("alertmanager", "quay.io/prometheus/alertmanager")):
        Service.objects.get_or_create(name=name, defaults={"image_repository": repository})


def rolled_back(body: Callable[[], None]) -> None:
    """Run one example inside a transaction that is rolled back: the next starts clean."""
    with transaction.atomic():
        body()
        transaction.set_rollback(True)


EXAMPLES = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


@pytest.fixture
def fleet_catalog(db) -> None:
    load_catalog()


@EXAMPLES
@given(batch=st.lists(st.tuples(mutants(), st.sampled_from([".json", ".yaml"])), min_size=1, max_size=3))
def test_mutated_manifests_never_take_down_the_poll(fleet_catalog, tmp_path_factory, batch):
    # One mutant per original: two mutants of one object would be one object twice.
    mutated = list({m.original_key: (m, suffix) for m, suffix in batch}.values())
    folder = tmp_path_factory.mktemp("manifests")

    def example() -> None:
        assert_poll_held(manifest_fleet(folder, mutated), folder)

    rolled_back(example)


class DeepKubeEmulator(KubeEmulator):
    """The emulator, with deep placeholders expanded in the pages it sends (its json.dumps
    could not serialise a value 2,500 levels deep; an API server's encoder can)."""

    def _page(self, *args: Any, **kwargs: Any) -> bytes:
        return with_deep_text(super()._page(*args, **kwargs).decode()).encode()


@pytest.fixture
def emulated(fleet_catalog, monkeypatch) -> Iterator[KubeEmulator]:
    with DeepKubeEmulator() as emulator:
        monkeypatch.setenv(TOKEN_ENV, emulator.token)
        Cluster.objects.filter(name=CLUSTER).update(connection=Cluster.Connection.API, api_url=emulator.url,
                                                    token_env=TOKEN_ENV)
        yield emulator


def _serve(emulator: KubeEmulator, objects: list[Obj]) -> None:
    """Exactly `objects`, every kind the portal lists installed (most of them empty)."""
    with emulator._lock:  # the emulator has no "remove all"; a fresh store per example
        emulator._resources.clear()
        emulator._page_cache.clear()
    for spec in kinds.KINDS:
        emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    emulator.add_all(_served_version(o) for o in objects)


def _served_version(obj: Obj) -> Obj:
    """An API server serves a CRD's objects at every version it has (converting them); the
    emulator serves each at the version it was added with, so add it at the one listed."""
    spec = next((k for k in kinds.KINDS if k.matches(str(obj.get("apiVersion")), str(obj.get("kind")))), None)
    return obj if spec is None else {**obj, "apiVersion": spec.api_version(spec.versions[0])}


@EXAMPLES
@given(batch=st.lists(mutants(), min_size=1, max_size=3))
def test_mutated_objects_from_the_api_never_take_down_the_poll(emulated, batch):
    mutated = list({m.original_key: m for m in batch}.values())
    replaced = {m.original_key for m in mutated}
    untouched = [o for o in CORPUS if identity(o) not in replaced]
    _serve(emulated, untouched + [m.obj for m in mutated])

    def example() -> None:
        cluster = Cluster.objects.get(name=CLUSTER)
        assert_poll_held(PolledFleet(cluster, poll(cluster), untouched, [(m, "") for m in mutated]))

    rolled_back(example)


def test_the_unmutated_corpus_is_stored_whole(fleet_catalog, tmp_path):
    # The baseline the properties compare with: every row kind of the corpus is stored.
    fleet = manifest_fleet(tmp_path, [])
    assert fleet.report.ok, fleet.report.error
    assert expected_keys(CORPUS) <= stored_keys()
    assert ManifestSource(tmp_path).list_objects(kinds.KINDS[0]).warnings == []


# ------------------------------------------------------------------ defects found here

PAYMENTS = next(o for o in CORPUS if o["kind"] == "Application" and o.get("status", {}).get("summary"))


def _with_unstorable_text(surrogates: bool = True) -> Obj:
    """A real Application whose strings hold what JSON carries and no database column can:
    NUL (PostgreSQL rejects it in text and jsonb) and unpaired surrogates (not UTF-8; YAML
    refuses them, so `surrogates=False` leaves them out)."""
    half, other_half = ("\ud800", "\udfff") if surrogates else ("", "")
    app = copy.deepcopy(PAYMENTS)
    app["metadata"]["annotations"] = {"note": "line\x00break", "team\x00": "x"}
    app["metadata"]["labels"] = {"owner": f"lone{half}half"}
    app["status"]["health"] = {"status": "Degraded", "message": f"probe said \x00{other_half}"}
    return app


def _assert_unstorable_text_stored(cluster: Cluster, report: PollReport, surrogates: bool = True) -> None:
    assert report.ok, report.error
    assert report.warnings == []
    assert expected_keys(CORPUS) <= stored_keys()
    app = GitOpsApp.objects.get(kind="Application", namespace=PAYMENTS["metadata"].get("namespace", ""),
                                name=PAYMENTS["metadata"]["name"])
    replaced = "\ufffd" if surrogates else ""
    assert app.health_message == f"probe said \ufffd{replaced}"
    assert app.raw["metadata"]["annotations"] == {"note": "line\ufffdbreak", "team\ufffd": "x"}
    assert app.raw["metadata"]["labels"] == {"owner": f"lone{replaced}half"}


def test_nul_and_lone_surrogates_from_the_api_are_stored_as_replacement_characters(emulated):
    # Found by the properties above on PostgreSQL: one NUL in one annotation failed the whole
    # cluster's store ("unsupported Unicode escape sequence"), so the cluster went stale.
    _serve(emulated, [o for o in CORPUS if o is not PAYMENTS] + [_with_unstorable_text()])
    cluster = Cluster.objects.get(name=CLUSTER)
    _assert_unstorable_text_stored(cluster, poll(cluster))


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_nul_and_lone_surrogates_in_manifests_are_stored_as_replacement_characters(fleet_catalog, tmp_path,
                                                                                  suffix):
    surrogates = suffix == ".json"
    mutant = Mutant(PAYMENTS, _with_unstorable_text(surrogates), ["unstorable text"])
    fleet = manifest_fleet(tmp_path, [(mutant, suffix)])
    assert (tmp_path / f"mutant-0{suffix}").exists()
    _assert_unstorable_text_stored(fleet.cluster, fleet.report, surrogates)


def test_names_and_uids_longer_than_kubernetes_allows_cost_only_their_object(fleet_catalog, tmp_path):
    # Found by the properties on PostgreSQL: one name longer than its varchar(253) column (a
    # hand-written manifest; an API server refuses them) failed the whole cluster's store.
    deployment = next(o for o in CORPUS if o["kind"] == "Deployment")
    app, workload = copy.deepcopy(PAYMENTS), copy.deepcopy(deployment)
    app["metadata"]["name"] = "a" * 254
    workload["metadata"]["namespace"] = "n" * 300
    project = next(o for o in CORPUS if o["kind"] == "Kustomization")
    with_uid = copy.deepcopy(project)
    with_uid["metadata"]["uid"] = "u" * 65
    mutated = [(Mutant(PAYMENTS, app, ["long name"]), ".json"), (Mutant(deployment, workload, ["long ns"]), ".yaml"),
               (Mutant(project, with_uid, ["long uid"]), ".json")]
    fleet = manifest_fleet(tmp_path, mutated)
    assert_poll_held(fleet, tmp_path)
    assert f"Application {PAYMENTS['metadata']['namespace']}/{'a' * 60}: skipped: name or namespace longer than " \
        in "\n".join(fleet.report.warnings)
    assert not GitOpsApp.objects.filter(name__startswith="aaaa").exists()
    assert any("skipped: metadata.uid longer than 64" in w for w in fleet.report.warnings)


def test_a_container_name_longer_than_its_column_costs_only_its_workload(fleet_catalog, tmp_path):
    rollout = next(o for o in CORPUS if o["kind"] == "Rollout")
    mutant = copy.deepcopy(rollout)
    mutant["spec"]["template"]["spec"]["containers"][0]["name"] = "c" * 300
    fleet = manifest_fleet(tmp_path, [(Mutant(rollout, mutant, ["long container name"]), ".json")])
    # Found by the properties on PostgreSQL: the name overflowed RunningVersion.container and
    # failed the whole cluster's store. The workload is kept, without that container.
    assert fleet.report.ok, fleet.report.error[:200]
    assert expected_keys(CORPUS) <= stored_keys()
    kind, namespace, name = identity(rollout)
    stored = Workload.objects.get(kind=kind, namespace=namespace, name=name)
    assert all(len(json.dumps(c)) < 2000 for c in stored.containers), "the long container is not kept"

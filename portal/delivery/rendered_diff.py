"""What a change does to the rendered manifests of one application: object by object, the fields
that move, as a reviewer reads it.

The two sides are what a real renderer made (Argo CD's repo server, or Helm's own engine); this
module renders nothing. It compares them as Kubernetes would see them:

- **Objects by identity**, not position: API group, kind, namespace and name (an object with no
  namespace is in the application's destination namespace, as Argo CD applies it; a version bump
  of its apiVersion is the same object).
- **Ordering ignored**: maps by key, and lists whose items all carry a `name` (containers, env,
  ports, volumes, mounts) by that name; other lists (args, command) keep their order, which means
  something there.
- **Defaults ignored**: a field a chart writes out at the value the API server would give it
  anyway (`replicas: 1`, `protocol: TCP`, `type: ClusterIP`, ...) equals the same field left out;
  `_DEFAULTS` lists them, from the Kubernetes API's defaulting (`pkg/apis/*/v1/defaults.go`).
  Server-written fields (`status`, uid, resourceVersion, managedFields) are not compared.
- **Secrets stay secret**: Argo CD masks a Secret's data already; a changed key is shown as
  changed, never with a value.

Each changed field is a dotted path (`spec.template.spec.containers[checkout].image`) with its
value before and after, shortened to a reviewer's line.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

Obj = dict[str, Any]

CHANGED = "changed"
ADDED = "added"
REMOVED = "removed"

# Shown per object and per application; past these, the count of what was left out.
MAX_FIELDS_PER_OBJECT = 40
MAX_OBJECTS = 200
MAX_VALUE_CHARS = 200
HIDDEN = "(hidden)"
# What an application without a renderer in reach says instead of a diff (the words).
NO_RENDERER = "no renderer is available for this application; reach only"

_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
_WORKLOADS = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "CronJob"}
# Field → the value the API server defaults it to, per place in an object.
_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "Deployment.spec": {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
    "StatefulSet.spec": {"replicas": 1, "revisionHistoryLimit": 10, "podManagementPolicy": "OrderedReady"},
    "ReplicaSet.spec": {"replicas": 1},
    "DaemonSet.spec": {"revisionHistoryLimit": 10},
    "Service.spec": {"type": "ClusterIP", "sessionAffinity": "None"},
    "pod": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30},
    "container": {"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
    "port": {"protocol": "TCP"},
}


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: str | None  # None: the field is not there
    after: str | None


@dataclass(frozen=True)
class ObjectDiff:
    kind: str
    namespace: str
    name: str
    change: str  # CHANGED, ADDED or REMOVED
    fields: tuple[FieldChange, ...] = ()
    more_fields: int = 0  # changed fields past MAX_FIELDS_PER_OBJECT

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class Comparison:
    objects: tuple[ObjectDiff, ...] = ()
    unchanged: int = 0
    more_objects: int = 0  # changed objects past MAX_OBJECTS

    @property
    def changed(self) -> int:
        return len(self.objects) + self.more_objects


@dataclass(frozen=True)
class AppDiff:
    """One application's rendered diff, or why there is none (`error`, `no_renderer`)."""

    app: str  # how the pages name it: "<Argo CD namespace>/<name>"
    cluster: str
    renderer: str  # "Argo CD" or "Helm <version>"; "" when none is in reach
    before_revision: str = ""
    after_revision: str = ""
    comparison: Comparison = field(default_factory=Comparison)
    error: str = ""


def compare(before: Iterable[Obj], after: Iterable[Obj], namespace: str = "") -> Comparison:
    """The objects that differ between two renders, and how many are the same in both.
    `namespace` is where objects without one land (the application's destination namespace)."""
    old = _by_identity(before, namespace)
    new = _by_identity(after, namespace)
    diffs: list[ObjectDiff] = []
    unchanged = 0
    for key in sorted(old.keys() | new.keys()):
        _group, kind, ns, name = key
        if key not in new:
            diffs.append(ObjectDiff(kind, ns, name, REMOVED))
            continue
        if key not in old:
            diffs.append(ObjectDiff(kind, ns, name, ADDED))
            continue
        changes = list(_changes(_comparable(old[key], ns), _comparable(new[key], ns), ""))
        if not changes:
            unchanged += 1
            continue
        if _is_secret(new[key]):
            changes = [_hidden(c) for c in changes]
        diffs.append(ObjectDiff(kind, ns, name, CHANGED, tuple(changes[:MAX_FIELDS_PER_OBJECT]),
                                max(0, len(changes) - MAX_FIELDS_PER_OBJECT)))
    return Comparison(tuple(diffs[:MAX_OBJECTS]), unchanged, max(0, len(diffs) - MAX_OBJECTS))


def _by_identity(objects: Iterable[Obj], namespace: str) -> dict[tuple[str, str, str, str], Obj]:
    found: dict[tuple[str, str, str, str], Obj] = {}
    for obj in objects:
        if not isinstance(obj, dict) or not obj.get("kind"):
            continue
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        key = (group, str(obj["kind"]), str(metadata.get("namespace") or namespace), str(metadata.get("name") or ""))
        found[key] = obj
    return found


def _comparable(obj: Obj, namespace: str) -> Obj:
    """The object without what the server writes, in the namespace it lands in, with the API's
    defaults filled in."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    out.pop("apiVersion", None)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        for key in _SERVER_METADATA:
            metadata.pop(key, None)
        if namespace:
            metadata["namespace"] = namespace
    kind = str(out.get("kind") or "")
    spec = out.get("spec")
    if isinstance(spec, dict):
        _fill(spec, _DEFAULTS.get(f"{kind}.spec", {}))
        if kind == "Service":
            for port in _dicts(spec.get("ports")):
                _fill(port, _DEFAULTS["port"])
        if kind in _WORKLOADS:
            _fill_pod(_pod_spec(kind, spec))
    return _pruned(out)


def _pod_spec(kind: str, spec: Obj) -> Obj | None:
    if kind == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {}) if isinstance(spec.get("jobTemplate"), dict) else {}
    template = spec.get("template") if isinstance(spec, dict) else None
    pod = template.get("spec") if isinstance(template, dict) else None
    return pod if isinstance(pod, dict) else None


def _fill_pod(pod: Obj | None) -> None:
    if pod is None:
        return
    _fill(pod, _DEFAULTS["pod"])
    for key in ("containers", "initContainers"):
        for container in _dicts(pod.get(key)):
            _fill(container, _DEFAULTS["container"])
            for port in _dicts(container.get("ports")):
                _fill(port, _DEFAULTS["port"])


def _fill(target: Obj, defaults: Mapping[str, Any]) -> None:
    for key, value in defaults.items():
        if target.get(key) is None:
            target[key] = value


def _dicts(value: Any) -> list[Obj]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _pruned(value: Any) -> Any:
    """Nulls, empty maps and empty lists are the same as no field at all."""
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _named(value: Any) -> dict[str, Any] | None:
    """A list whose items are maps that each carry a distinct `name`, by name; else None."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in value):
        return None
    names = [item["name"] for item in value]
    return dict(zip(names, value, strict=True)) if len(set(names)) == len(names) else None


def _changes(before: Any, after: Any, path: str) -> Iterable[FieldChange]:
    if before == after:
        return
    # A map that appears or goes is told field by field, like one that changes.
    if isinstance(before, dict) and after is None:
        after = {}
    elif isinstance(after, dict) and before is None:
        before = {}
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            yield from _changes(before.get(key), after.get(key), f"{path}.{key}" if path else key)
        return
    old, new = _named(before), _named(after)
    if old is not None and new is not None:
        for name in sorted(old.keys() | new.keys()):
            yield from _changes(old.get(name), new.get(name), f"{path}[{name}]")
        return
    yield FieldChange(path, _shown(before), _shown(after))


def _shown(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _is_secret(obj: Obj) -> bool:
    return obj.get("kind") == "Secret" and str(obj.get("apiVersion") or "v1") == "v1"


def masked(objects: Iterable[Obj]) -> list[Obj]:
    """The objects with every Secret's values replaced by HIDDEN (not by Argo CD's run of `+`, whose
    length tells the value's). What is stored and shown of a render goes through here: a chart
    rendered by Helm here carries its Secrets' values in the clear."""
    out: list[Obj] = []
    for obj in objects:
        if isinstance(obj, dict) and _is_secret(obj):
            obj = {**obj, **{key: dict.fromkeys(obj[key], HIDDEN) for key in ("data", "stringData")
                             if isinstance(obj.get(key), dict)}}
        out.append(obj)
    return out


def _hidden(change: FieldChange) -> FieldChange:
    if not change.path.startswith(("data", "stringData")):
        return change
    return FieldChange(change.path, None if change.before is None else HIDDEN,
                       None if change.after is None else HIDDEN)


APP_DIFFS = TypeAdapter(list[AppDiff])  # how a list of AppDiff is stored as JSON and read back


def stored_diffs(apps: Any) -> list[AppDiff]:
    """The app diffs as stored (`RenderedDiff.apps`)."""
    return APP_DIFFS.validate_python(apps or [])

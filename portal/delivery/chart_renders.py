"""A Helm chart application's rendered diff: the chart rendered by Helm's own engine
(`portal.delivery.helm_render`) with its values at the base branch and at the pull request's head.

The chart comes from its repository or OCI registry (`portal.releases.chart_archives`) at the
version the application runs: the version it pins, or for a range the one its tool last fetched
(`source_revision`). A change of the chart's own version renders the new version on the head side.

The values are those a pull request can edit, read from the forge at each revision:

- a Flux HelmRelease: the `spec.values` of the HelmRelease document of that name in the change's
  folder (`valuesFrom` names ConfigMaps and Secrets in the cluster, which a pull request does not
  change, and is left out on both sides);
- an Argo CD Helm source: its `$ref/...` value files from the ref source in the pull request's
  repository, in Argo CD's order, then its inline `values` and `valuesObject` (Argo CD's order of
  precedence); a value file inside the chart is the chart's and is not read.
Maps merge as Helm coalesces them: later files win key by key, a null removes the key.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from forges.forge import Forge, ForgeError
from forges.pins.layouts.app_specs import same_repository
from gitops.models import GitOpsApp
from portal.delivery.helm_render import RenderError, engine_version, render_chart
from portal.delivery.rendered_diff import NO_RENDERER, AppDiff, compare
from portal.releases.chart_archives import chart_archive
from portal.releases.charts import ChartPin, ChartReadError, chart_pin

Obj = dict[str, Any]
NOT_INSTALLED = f"{NO_RENDERER} (Helm's engine, the `helm` extra, is not installed)"


class ValuesError(Exception):
    """The values could not be read at a revision (the message is safe to show)."""


def chart_diff(
    app: GitOpsApp, forge: Forge, repository: str, *, base: str, head: str, folder: str, chart_version: str = ""
) -> tuple[AppDiff, list[Obj], list[Obj]] | None:
    """The app's diff rendered by Helm (with both sides' objects), or None when it installs no chart
    from a chart repository. `chart_version`: the version the change moves the chart to, if it does."""
    pin = chart_pin(app)
    if pin is None:
        return None
    label = f"{app.namespace}/{app.name}"
    renderer = engine_version()
    diff = AppDiff(app=label, cluster=app.cluster.name, renderer=renderer, before_revision=base, after_revision=head)
    if not renderer:
        return replace(diff, error=NOT_INSTALLED), [], []
    version = _running_version(app, pin)
    if not version:
        return replace(diff, error=f"the chart version {pin.version!r} is a range and none was fetched yet"), [], []
    release, namespace = _release(app)
    try:
        old_values = values_at(app, forge, repository, base, folder)
        new_values = values_at(app, forge, repository, head, folder)
        old_chart = chart_archive(pin.ref, version)
        new_chart = chart_archive(pin.ref, chart_version) if chart_version and chart_version != version else old_chart
        before = render_chart(old_chart, old_values, release=release, namespace=namespace)
        after = render_chart(new_chart, new_values, release=release, namespace=namespace)
    except (ValuesError, ChartReadError, RenderError) as error:
        return replace(diff, error=str(error)[:500]), [], []
    return replace(diff, comparison=compare(before, after, namespace)), before, after


def values_at(app: GitOpsApp, forge: Forge, repository: str, revision: str, folder: str) -> Obj:
    spec = _spec(app)
    if app.kind == "HelmRelease":
        return _helm_release_values(app, forge, revision, folder)
    sources = [s for s in spec.get("sources") or [spec.get("source")] if isinstance(s, dict)]
    refs = {s["ref"]: s for s in sources if isinstance(s.get("ref"), str)}
    merged: Obj = {}
    for source in sources:
        helm = source.get("helm") if isinstance(source.get("helm"), dict) else None
        if not source.get("chart") or helm is None:
            continue
        for value_file in helm.get("valueFiles") or []:
            ref, _, path = str(value_file).removeprefix("$").partition("/")
            if not str(value_file).startswith("$") or ref not in refs:
                continue  # a file inside the chart: the chart's own, the same on both sides
            if not same_repository(str(refs[ref].get("repoURL") or ""), repository):
                continue  # another repository: the pull request does not change it
            merged = coalesce(merged, _yaml_map(_read(forge, path, revision), path))
        if isinstance(helm.get("values"), str):
            merged = coalesce(merged, _yaml_map(helm["values"], "the app's helm.values"))
        if isinstance(helm.get("valuesObject"), dict):
            merged = coalesce(merged, helm["valuesObject"])
    return merged


def coalesce(base: Obj, over: Obj) -> Obj:
    """`over` merged into `base` as Helm merges value files: maps key by key, null deletes."""
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = coalesce(out[key], value)
        else:
            out[key] = value
    return out


def _helm_release_values(app: GitOpsApp, forge: Forge, revision: str, folder: str) -> Obj:
    try:
        entries = forge.tree(folder, revision)
    except ForgeError as error:
        raise ValuesError(f"the folder {folder or '/'} could not be read at {revision[:12]}: {error}") from None
    for entry in entries:
        if not entry.path.endswith((".yaml", ".yml")):
            continue
        try:
            documents = list(yaml.safe_load_all(_read(forge, entry.path, revision)))
        except yaml.YAMLError:
            continue
        for doc in documents:
            metadata = doc.get("metadata") if isinstance(doc, dict) else None
            if (isinstance(metadata, dict) and doc.get("kind") == "HelmRelease" and metadata.get("name") == app.name
                    and metadata.get("namespace", app.namespace) == app.namespace):
                values = (doc.get("spec") or {}).get("values")
                return values if isinstance(values, dict) else {}
    raise ValuesError(f"no HelmRelease {app.namespace}/{app.name} in {folder or '/'} at {revision[:12]}")


def _read(forge: Forge, path: str, revision: str) -> str:
    try:
        return forge.read_file(path, revision)
    except ForgeError as error:
        raise ValuesError(f"{path} could not be read at {revision[:12]}: {error}") from None


def _yaml_map(text: str, where: str) -> Obj:
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ValuesError(f"{where} is not YAML") from None
    return loaded if isinstance(loaded, dict) else {}


def _spec(app: GitOpsApp) -> Obj:
    spec = app.raw.get("spec") if isinstance(app.raw, dict) else None
    return spec if isinstance(spec, dict) else {}


def _running_version(app: GitOpsApp, pin: ChartPin) -> str:
    if not pin.is_range:
        return pin.version
    return app.source_revision if app.kind == "HelmRelease" else ""


def _release(app: GitOpsApp) -> tuple[str, str]:
    """The release's name and namespace as the tool installs it."""
    spec = _spec(app)
    if app.kind == "HelmRelease":
        target = str(spec.get("targetNamespace") or "")
        default = f"{target}-{app.name}" if target else app.name  # Flux's default release name
        return str(spec.get("releaseName") or default), target or app.namespace
    sources = [s for s in spec.get("sources") or [spec.get("source")] if isinstance(s, dict)]
    helm: Obj = next((s["helm"] for s in sources if s.get("chart") and isinstance(s.get("helm"), dict)), {})
    return str(helm.get("releaseName") or app.name), app.destination_namespace or app.namespace

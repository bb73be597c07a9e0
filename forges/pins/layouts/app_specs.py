"""What an Argo CD Application or a Flux Kustomization / HelmRelease declares about its sources,
read from the object as the cluster holds it, and where in a tree that object is defined.

Argo CD: `spec.source` or `spec.sources[]` (`repoURL`, `path`, `chart`, `targetRevision`,
`ref`, `helm`, `kustomize`, `plugin`, `directory`). A generated Application names its
ApplicationSet in `ownerReferences`; its spec is edited in the ApplicationSet, never in the
child. Flux: a Kustomization's `spec.path` (for an ExternalArtifact source, mapped back to
the Git path through the ArtifactGenerator's `copy` rules), a HelmRelease's `chart.spec` or
`chartRef`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field
from typing import Any

from forges.pins.formats import FormatError, Node, yamltree
from forges.pins.layouts.documents import document_spans, plain_documents
from forges.repourls import parse_repo_url

APPLICATION = "Application"
APPLICATION_SET = "ApplicationSet"
KUSTOMIZATION = "Kustomization"
HELM_RELEASE = "HelmRelease"

_EXPRESSION = re.compile(r"{{-?\s*(.*?)\s*-?}}")


@dataclass(frozen=True)
class Source:
    index: int
    repo_url: str
    path: str | None
    chart: str
    target_revision: str
    ref: str
    helm: dict[str, Any]
    kustomize: dict[str, Any]
    plugin: bool
    directory: dict[str, Any]


@dataclass
class App:
    kind: str
    name: str
    namespace: str
    spec: dict[str, Any]
    owner_set: str = ""  # the ApplicationSet that generated this Application
    labels: dict[str, str] = field(default_factory=dict)
    sources: list[Source] = field(default_factory=list)


@dataclass
class Definition:
    """A document in the tree, positioned: the file and the document's tree."""

    path: str
    text: str
    tree: Node


def read_app(app: MappingType[str, Any]) -> App:
    metadata = app.get("metadata") or {}
    spec = app.get("spec") or {}
    kind = app.get("kind") or _guess_kind(spec)
    owner = next(
        (ref.get("name", "") for ref in metadata.get("ownerReferences") or [] if ref.get("kind") == APPLICATION_SET),
        "",
    )
    result = App(kind, metadata.get("name", ""), metadata.get("namespace", ""), spec, owner)
    result.labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    raw_sources = spec.get("sources") or ([spec["source"]] if spec.get("source") else [])
    for index, raw in enumerate(raw_sources):
        result.sources.append(
            Source(
                index=index,
                repo_url=str(raw.get("repoURL") or ""),
                path=raw.get("path"),
                chart=str(raw.get("chart") or ""),
                target_revision=str(raw.get("targetRevision") or ""),
                ref=str(raw.get("ref") or ""),
                helm=dict(raw.get("helm") or {}),
                kustomize=dict(raw.get("kustomize") or {}),
                plugin=bool(raw.get("plugin")),
                directory=dict(raw.get("directory") or {}),
            )
        )
    return result


def same_repository(one: str, other: str) -> bool:
    """Whether two clone URLs name one repository (`git@github.com:a/b.git` = `https://github.com/a/b`)."""
    first, second = parse_repo_url(one), parse_repo_url(other)
    if first is not None and second is not None:
        return first.key == second.key
    return _bare(one) == _bare(other)


def _bare(url: str) -> str:
    # Hosts no forge kind is known for: compare host and path, without scheme, user, `.git`.
    text = url.strip().lower().split("://", 1)[-1].split("@", 1)[-1].replace(":", "/", 1)
    return text.rstrip("/").removesuffix(".git")


def definitions(files: MappingType[str, str], kind: str, name: str) -> list[Definition]:
    """The documents of that kind and name in the tree (YAML files only)."""
    found = []
    for path in sorted(files):
        if not path.endswith((".yaml", ".yml")) or f"kind: {kind}" not in files[path]:
            continue
        text = files[path]
        try:
            trees = yamltree.read(text)
        except FormatError:
            continue
        docs = document_spans(text)
        if len(docs) != len(trees):
            continue
        for (_, _, doc_kind, doc_name), tree in zip(docs, trees, strict=True):
            if doc_kind == kind and doc_name == name:
                found.append(Definition(path, text, tree))
    return found


def flux_path(files: MappingType[str, str], app: App) -> tuple[str | None, str]:
    """The Git path a Flux Kustomization builds: (path, "") or (None, why not)."""
    path = posixpath.normpath(str(app.spec.get("path") or ".").lstrip("/")).removeprefix("./")
    path = "" if path == "." else path
    source = app.spec.get("sourceRef") or {}
    if source.get("kind") != "ExternalArtifact":
        return path, ""
    for generator in _documents_of_kind(files, "ArtifactGenerator"):
        for artifact in (generator.get("spec") or {}).get("artifacts") or []:
            if artifact.get("name") != source.get("name"):
                continue
            for copy in artifact.get("copy") or []:
                origin, target = str(copy.get("from", "")), str(copy.get("to", ""))
                origin_dir = origin.split("/", 1)[1] if "/" in origin else ""
                origin_dir = origin_dir.removesuffix("**").rstrip("/")
                target_dir = target.removeprefix("@artifact").strip("/")
                if not target_dir or path == target_dir or path.startswith(target_dir + "/"):
                    return posixpath.join(origin_dir, path[len(target_dir) :].lstrip("/")).rstrip("/"), ""
    return (
        None,
        f"the ExternalArtifact {source.get('name')} is built by no ArtifactGenerator copy rule in this repository",
    )


def template_values(template: object, rendered: object) -> dict[str, str]:
    """What an ApplicationSet's template expressions rendered to, read off a generated
    Application: `$values/environments/{{.metadata.labels.environment}}/...` against
    `$values/environments/prod/...` gives `metadata.labels.environment` = `prod`."""
    found: dict[str, str] = {}
    if isinstance(template, dict) and isinstance(rendered, dict):
        for key, value in template.items():
            if key in rendered:
                found.update(template_values(value, rendered[key]))
    elif isinstance(template, list) and isinstance(rendered, list):
        for item, other in zip(template, rendered, strict=False):
            found.update(template_values(item, other))
    elif isinstance(template, str) and isinstance(rendered, str) and "{{" in template:
        names: list[str] = []
        pattern = ""
        position = 0
        for match in _EXPRESSION.finditer(template):
            pattern += re.escape(template[position : match.start()]) + "(.*?)"
            names.append(expression_name(match.group(1)))
            position = match.end()
        pattern += re.escape(template[position:])
        matched = re.fullmatch(pattern, rendered)
        if matched:
            for name, value in zip(names, matched.groups(), strict=True):
                found.setdefault(name, value)
    return found


def expression_name(expression: str) -> str:
    """`.values.addonChartVersion` and `values.addonChartVersion` name the same parameter."""
    return expression.strip().lstrip(".")


def _documents_of_kind(files: MappingType[str, str], kind: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted(files):
        if path.endswith((".yaml", ".yml")) and f"kind: {kind}" in files[path]:
            for doc in plain_documents(files[path]):
                if isinstance(doc, dict) and doc.get("kind") == kind:
                    found.append(doc)
    return found


def _guess_kind(spec: MappingType[str, Any]) -> str:
    # Argo CD's API server answers without apiVersion/kind.
    if "source" in spec or "sources" in spec:
        return APPLICATION
    if "chart" in spec or "chartRef" in spec:
        return HELM_RELEASE
    return KUSTOMIZATION

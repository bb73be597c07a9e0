"""Raw objects from a folder of manifests: demo clusters, `kubectl get -o yaml` snapshots.

A folder is read exactly as the same objects would be read from the API (DESIGN's public
contract): typed and untyped lists are unwrapped, Argo CD API-server answers (which carry no
`apiVersion`/`kind`) are typed by their shape, label selectors and kept-data cuts apply as a
`KubeSource` applies them. Decoding is bounded (gitops.sources.decoding).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from gitops.kinds import KindSpec, selector_matches, split_api_version
from gitops.rawobjects import as_dict, dig
from gitops.sources.base import NOT_FOUND, UNREACHABLE, ListResult, Obj, SourceError, fill_type, only_kept_data
from gitops.sources.decoding import holds_cut, load_json, load_yaml, too_deep_warning

logger = logging.getLogger(__name__)

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestSource:
    """Objects from every *.yaml/*.yml/*.json file under a folder: demo clusters, snapshots.

    Files are read on every call so an updated snapshot is seen by the next poll. A file
    that does not parse is skipped with a warning on the result; one bad file never hides
    the others.

    A poll lists a dozen kinds, and each listing read every file again: parsing the demo's
    600 KB of YAML took 7.4 s a poll. What a text decodes to is kept by its digest
    (`_PARSED`), so the same bytes are parsed once per process and a changed file at once;
    each listing gets its own copy of the objects it returns, as it got from parsing.
    """

    def __init__(self, folder: str | os.PathLike[str], *, name: str | None = None) -> None:
        self.folder = Path(folder)
        self.name = name or self.folder.name

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        result = ListResult()
        versions_seen: list[str] = []
        any_of_kind = False
        for obj in self._objects(result):
            if not kind.matches(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))):
                continue
            any_of_kind = True
            if namespace is not None and as_dict(obj.get("metadata")).get("namespace") != namespace:
                continue
            if kind.label_selector and not selector_matches(kind.label_selector, _labels(obj)):
                continue
            if kind.kept_data is not None:
                obj = only_kept_data(obj, kind.kept_data)
            result.items.append(obj)
            version = split_api_version(str(obj["apiVersion"]))[1]
            if version not in versions_seen:
                versions_seen.append(version)
        if kind.kept_data is not None and not any_of_kind:
            # A folder of `kubectl get` snapshots rarely holds Secrets: none at all means they
            # were not taken, not that Argo CD has no clusters (an API's empty list would).
            raise SourceError(NOT_FOUND, f"the snapshot in {self.folder.name} holds no {kind.kind} objects")
        # Report the most preferred version present; items keep their own apiVersion.
        ranked = sorted(versions_seen, key=lambda v: kind.versions.index(v) if v in kind.versions else 99)
        result.version = ranked[0] if ranked else None
        return result

    def _files(self) -> list[Path]:
        if not self.folder.is_dir():
            raise SourceError(UNREACHABLE, f"{self.name}: manifest folder {self.folder} does not exist")
        found: list[Path] = []
        for root, dirs, files in os.walk(self.folder):
            dirs[:] = [d for d in dirs if not d.startswith(".")]  # .git and friends
            found.extend(Path(root, f) for f in files if f.endswith(MANIFEST_SUFFIXES))
        return sorted(found)

    def _objects(self, result: ListResult) -> Iterator[Obj]:
        for path in self._files():
            result.pages += 1
            relative = path.relative_to(self.folder)
            try:
                documents, cut = self._load(path)
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
                warning = f"{self.name}: skipped {relative}: {_describe_parse_error(exc)}"
                logger.warning(warning)
                result.warnings.append(warning)
                continue
            for index, document in enumerate(documents):
                if document is None:
                    continue
                if not isinstance(document, (dict, list)):
                    result.warnings.append(f"{self.name}: {relative} document {index + 1} is not an object")
                    continue
                for obj in _unwrap(document):
                    # Without a type and not an Argo CD API answer it is no Kubernetes object
                    # (a Helm values file, a kustomize config): not one to list.
                    if not (obj.get("apiVersion") and obj.get("kind")) and not _type_argocd_api_object(obj):
                        continue
                    if cut and holds_cut(obj):
                        warning = too_deep_warning(f"{self.name}: {relative}", obj)
                        logger.warning(warning)
                        result.warnings.append(warning)
                        continue
                    yield obj

    @staticmethod
    def _load(path: Path) -> tuple[list[Any], bool]:
        """The file's documents (a copy of its own to the caller), and whether parts nested too
        deep were cut out (JSON)."""
        data = path.read_bytes()
        key = (path.suffix == ".json", hashlib.blake2b(data, digest_size=20).digest())
        kept = _PARSED.get(key)
        if kept is None:
            kept = pickle.dumps(_parse(data, json_text=key[0]), pickle.HIGHEST_PROTOCOL)
            if len(kept) <= _PARSED_BYTES // 4:
                _PARSED[key] = kept
                while sum(map(len, _PARSED.values())) > _PARSED_BYTES:
                    _PARSED.pop(next(iter(_PARSED)))
        documents: tuple[list[Any], bool] = pickle.loads(kept)  # noqa: S301 - bytes this process pickled
        return documents


# What each file's bytes decode to, pickled (a fresh copy per load), by (is JSON, digest); the
# oldest entries go first past the bound, and a file that would take a quarter of it is not kept.
_PARSED: dict[tuple[bool, bytes], bytes] = {}
_PARSED_BYTES = 64 * 1024 * 1024


def _parse(data: bytes, *, json_text: bool) -> tuple[list[Any], bool]:
    text = data.decode("utf-8")
    if json_text:
        document, cut = load_json(text.encode("utf-8"))
        return [document], cut
    # A YAML file too deep to compose, or with a syntax error anywhere, is skipped whole.
    return load_yaml(text), False



def _unwrap(document: Obj | list[Any]) -> Iterator[Obj]:
    """Objects in a document: itself, the items of a (typed) List, or a JSON array's members."""
    if isinstance(document, list):
        for member in document:
            if isinstance(member, (dict, list)):
                yield from _unwrap(member)
        return
    kind = document.get("kind")
    items = document.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        # A typed list (DeploymentList) names its items' type; a plain `List` does not.
        item_kind = kind[: -len("List")]
        api_version = str(document.get("apiVersion", ""))
        for item in items:
            if not isinstance(item, dict):
                continue
            if item_kind:
                fill_type(item, api_version, item_kind)
            yield from _unwrap(item)
        return
    if kind is None and isinstance(items, list) and "spec" not in document:
        # The Argo CD API's list answer ({"metadata": {"resourceVersion"}, "items": [...]}) is untyped too.
        for item in items:
            if isinstance(item, dict):
                yield from _unwrap(item)
        return
    # Untyped objects too: the caller types an Argo CD API-server response or names the skip.
    yield document


# What the Argo CD API server returns (`argocd app get -o json`, /api/v1/applications) has no
# TypeMeta: the Go types are marshalled without it (gitops.sources.argocd_api). Saved to a file, such
# an object is known by its shape: an Application's spec names a destination and what to
# deploy; an AppProject's spec lists its allowed sources or destinations or sync windows.
_ARGOCD_API_VERSION = "argoproj.io/v1alpha1"
_APPLICATION_SPEC = ("source", "sources", "sourceHydrator")
_PROJECT_SPEC = ("sourceRepos", "destinations", "syncWindows", "clusterResourceWhitelist")


def _type_argocd_api_object(obj: Obj) -> bool:
    """Fill apiVersion/kind of an untyped Argo CD API-server response; False if it is none."""
    metadata, spec = obj.get("metadata"), obj.get("spec")
    if obj.get("apiVersion") or obj.get("kind") or not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        return False
    if isinstance(spec.get("destination"), Mapping) and any(key in spec for key in _APPLICATION_SPEC):
        kind = "Application"
    elif any(key in spec for key in _PROJECT_SPEC) and "destination" not in spec:
        kind = "AppProject"
    else:
        return False
    fill_type(obj, _ARGOCD_API_VERSION, kind)
    return True


def _describe_parse_error(exc: BaseException) -> str:
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.YAMLError) and mark is not None:
        problem = getattr(exc, "problem", None) or "syntax error"
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)


def _labels(obj: Obj) -> dict[str, Any]:
    labels = dig(obj, "metadata", "labels")
    return labels if isinstance(labels, dict) else {}

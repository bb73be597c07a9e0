"""Rendering a Helm chart with Helm's own engine, where it is installed.

The engine is the `helm-python-sdk` package (the `helm` extra: Helm v4's Go SDK in a wheel, bound
with ctypes; Apache-2.0, a 75 MB wheel and about 250 MB installed, which is why it is optional).
Without it the portal renders no chart and says so: a home-made template engine would render
something else than the cluster gets.

The chart is rendered as `helm template` does it for an install: offline (no `lookup`), with the
release's name and namespace, and the values given merged over the chart's own by Helm.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import yaml

Obj = dict[str, Any]


class RenderError(Exception):
    """Helm refused the chart or its values (the message is Helm's)."""


def engine() -> ModuleType | None:
    """Helm's engine when the `helm` extra is installed, else None."""
    try:
        return importlib.import_module("helm_python")
    except ImportError:
        return None


def engine_version() -> str:
    """"Helm v4.2.3": the Helm SDK the engine embeds; "" without the engine."""
    helm = engine()
    return f"Helm {helm.helm_sdk_version()}" if helm is not None else ""


def render_chart(archive: bytes, values: Obj, *, release: str, namespace: str) -> list[Obj]:
    """Every object the packaged chart renders with `values`, by template path."""
    helm = engine()
    if helm is None:
        raise RenderError("Helm's engine is not installed (pip install 'gitops-portal[helm]')")
    try:
        with helm.Chart.load_archive(archive) as chart:
            rendered: dict[str, str] = chart.render(values, name=release, namespace=namespace, is_install=True)
    except helm.HelmError as error:
        raise RenderError(str(error)[:500]) from None
    objects: list[Obj] = []
    for path in sorted(rendered):
        if not path.endswith((".yaml", ".yml")):
            continue  # NOTES.txt and the like
        try:
            documents = list(yaml.safe_load_all(rendered[path]))
        except yaml.YAMLError as error:
            raise RenderError(f"{path} does not render to YAML: {str(error)[:200]}") from None
        objects += [doc for doc in documents if isinstance(doc, dict) and doc.get("kind")]
    return objects

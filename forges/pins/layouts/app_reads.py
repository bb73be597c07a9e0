"""What an app reads from a tree: the files, and the documents of files it shares with other
objects, that can set its images.

A folder of a monorepo holds many apps' manifests: a Kustomization path `./apps` with one
HelmRelease per service, overlays beside each other, `$values` files of several charts. The
pins that are an app's own are only those in what its tool builds for it — for a HelmRelease,
its own documents (its definition and the patches that target it) and the files its
`valuesFrom` ConfigMaps are generated from; for a kustomize path, what `kustomize build`
includes, less the pins it overrides (a base's tag under an overlay's `images:`); for an
Argo CD Helm source, the chart's values.yaml and its value files in Argo CD's order. For
either tool's Helm values, a tag a higher layer overrides is not the app's, and an effective
tag with no repository beside it (`image.tag` alone in an environment's values file, a
`.argocd-source-<app>.yaml` parameter) is: `Reads.pins` is what the app renders.
`forges.pins.layouts.tree.tree_reads` says it for one app with the same readers that place its
edits (`tree_edits`), so the pins shown and the pins changed are the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.pins.formats import Mapping, Node, Scalar, Sequence
from forges.pins.layouts import helm, kustomize
from forges.pins.sites import Pin, line_of, to_pin


@dataclass
class Reads:
    """Files read whole, and (file -> line spans) the documents read from files shared with others."""

    whole: set[str] = field(default_factory=set)
    documents: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    overridden: set[tuple[str, int]] = field(default_factory=set)  # (file, line) of pins a build overrides
    skipped: list[str] = field(default_factory=list)  # what the build could not follow, and why
    # Effective Helm tags no file-level reader sees as a pin (no repository beside them).
    values_pins: list[Pin] = field(default_factory=list)
    # What a Helm build reads besides its value layers (`helm.chart_files`), for who-builds-what
    # (portal.delivery.reach), never for pins: the Chart.yaml files (a line edited there is a
    # dependency's version, so it moves the build) and `file://` dependencies' values.yaml.
    charts: set[str] = field(default_factory=set)
    chart_defaults: set[str] = field(default_factory=set)

    @property
    def paths(self) -> list[str]:
        return sorted(self.whole | set(self.documents))

    def add_files(self, files: MappingType[str, str], paths: Iterable[str]) -> None:
        self.whole.update(path for path in paths if path in files)

    def add_chart(self, files: MappingType[str, str], folder: str) -> None:
        """The chart in `folder` and its `file://` dependencies, as rendering it reads them."""
        metas, defaults = helm.chart_files(files, folder)
        self.charts.update(metas)
        self.chart_defaults.update(defaults)

    def add_build(self, files: MappingType[str, str], built: kustomize.Build) -> None:
        """What a kustomize build reads, less the pins it overrides (a base's tag under an
        overlay's `images:`): the pins that are the app's are those it renders."""
        self.skipped.extend(built.skipped)
        self.add_files(files, built.files())
        for candidate in kustomize.overridden_pins(files, built):
            self.overridden.add((candidate.path, to_pin(candidate.path, files[candidate.path], candidate.site).line))

    def add_values(
        self,
        files: MappingType[str, str],
        layers: list[helm.Layer],
        bindings: list[helm.Binding],
        post_rendered: Iterable[str] = (),
    ) -> None:
        """What Helm renders from value layers (lowest first): the tags higher layers override
        are not the app's pins, and the effective ones are, wherever they are set, unless a
        post-renderer sets that image's tag after Helm (`post_rendered`: the names it matches)."""
        pins, overridden = helm.effective_pins(layers, bindings)
        after = set(post_rendered)
        overridden += [(t.layer.path, t.site.node) for t in pins if after.intersection(t.site.names())]
        pins = [t for t in pins if not after.intersection(t.site.names())]
        for path, node in overridden:
            if path in files:
                self.overridden.add((path, line_of(files[path], node.start)))
        for target in pins:
            path = target.layer.path
            if path in files:
                self.values_pins.append(to_pin(path, files[path], target.site))

    def pins(self, scanned: Iterable[Pin]) -> list[Pin]:
        """The image pins the app renders, from `scanned` (`forges.pins.scan` of the files it
        reads): those it does not override, then the effective Helm tags (`add_values`) that
        no scanned pin holds, once per place."""
        found = [pin for pin in scanned if self.holds(pin.path, pin.line)]
        places = {(pin.path, pin.line) for pin in found}
        for pin in self.values_pins:
            if (pin.path, pin.line) not in places and self.holds(pin.path, pin.line):
                places.add((pin.path, pin.line))
                found.append(pin)
        return found

    def add_document(self, files: MappingType[str, str], path: str, document: Node) -> None:
        """The lines one positioned document spans (from its first to its last value)."""
        offsets = [offset for scalar in _scalars(document) for offset in (scalar.start, scalar.end) if offset >= 0]
        if path not in files or not offsets:
            return
        text = files[path]
        self.documents.setdefault(path, []).append((line_of(text, min(offsets)), line_of(text, max(offsets))))

    def as_stored(self) -> dict[str, object]:
        """What a store keeps to answer `builds` and `holds` later without the files: the files
        read whole, the spans of shared files' documents, the overridden pins (JSON-ready)."""
        return {
            "whole": sorted(self.whole),
            "documents": {path: [list(span) for span in spans] for path, spans in sorted(self.documents.items())},
            "overridden": sorted([path, line] for path, line in self.overridden),
            "charts": sorted(self.charts),
            "chart_defaults": sorted(self.chart_defaults),
        }

    @classmethod
    def from_stored(cls, stored: MappingType[str, object]) -> Reads:
        """The reads `as_stored` kept (what they cannot answer, the pins, is left empty)."""
        whole = stored.get("whole")
        documents = stored.get("documents")
        overridden = stored.get("overridden")
        charts, chart_defaults = stored.get("charts"), stored.get("chart_defaults")
        return cls(
            whole={str(path) for path in whole} if isinstance(whole, list) else set(),
            documents={
                str(path): [(int(span[0]), int(span[1])) for span in spans]
                for path, spans in documents.items()
                if isinstance(spans, list)
            }
            if isinstance(documents, dict)
            else {},
            overridden={(str(path), int(line)) for path, line in overridden} if isinstance(overridden, list) else set(),
            charts={str(path) for path in charts} if isinstance(charts, list) else set(),
            chart_defaults={str(path) for path in chart_defaults} if isinstance(chart_defaults, list) else set(),
        )

    def builds(self, path: str) -> bool:
        """Whether the app's build includes `path` (whole, some of its documents, or a chart's file)."""
        return path in self.whole or path in self.documents or path in self.charts or path in self.chart_defaults

    def moves(self, path: str, line: int) -> bool:
        """Whether a change of `line` of `path` changes what the app renders: a line it holds, or
        any line of a Chart.yaml it renders (a dependency's version). A `file://` dependency's
        default is built but not known to win over the layers above it: not said to move."""
        return self.holds(path, line) or path in self.charts

    def holds(self, path: str, line: int) -> bool:
        """Whether a pin at `line` of `path` is in what the app reads."""
        if (path, line) in self.overridden:
            return False
        if path in self.whole:
            return True
        return any(first <= line <= last for first, last in self.documents.get(path, ()))


def _scalars(node: Node) -> Iterable[Scalar]:
    if isinstance(node, Scalar):
        yield node
    elif isinstance(node, Sequence):
        for item in node.items:
            yield from _scalars(item)
    elif isinstance(node, Mapping):
        for _, value in node.pairs:
            yield from _scalars(value)

"""What an app reads from a tree: the files, and the documents of files it shares with other
objects, that can set its images.

A folder of a monorepo holds many apps' manifests: a Kustomization path `./apps` with one
HelmRelease per service, overlays beside each other, `$values` files of several charts. The
pins that are an app's own are only those in what its tool builds for it — for a HelmRelease,
its own documents (its definition and the patches that target it) and the files its
`valuesFrom` ConfigMaps are generated from; for a kustomize path, what `kustomize build`
includes, less the pins it overrides (a base's tag under an overlay's `images:`); for an
Argo CD Helm source, the chart's values.yaml and its value files in
Argo CD's order. `forges.layouts.tree.tree_reads` says it for one app with the same readers
that place its edits (`tree_edits`), so the pins shown and the pins changed are the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.layouts import kustomize
from forges.pinformats import Mapping, Node, Scalar, Sequence
from forges.pinsites import line_of, to_pin


@dataclass
class Reads:
    """Files read whole, and (file -> line spans) the documents read from files shared with others."""

    whole: set[str] = field(default_factory=set)
    documents: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    overridden: set[tuple[str, int]] = field(default_factory=set)  # (file, line) of pins a build overrides
    skipped: list[str] = field(default_factory=list)  # what the build could not follow, and why

    @property
    def paths(self) -> list[str]:
        return sorted(self.whole | set(self.documents))

    def add_files(self, files: MappingType[str, str], paths: Iterable[str]) -> None:
        self.whole.update(path for path in paths if path in files)

    def add_build(self, files: MappingType[str, str], built: kustomize.Build) -> None:
        """What a kustomize build reads, less the pins it overrides (a base's tag under an
        overlay's `images:`): the pins that are the app's are those it renders."""
        self.skipped.extend(built.skipped)
        self.add_files(files, built.files())
        for candidate in kustomize.overridden_pins(files, built):
            self.overridden.add((candidate.path, to_pin(candidate.path, files[candidate.path], candidate.site).line))

    def add_document(self, files: MappingType[str, str], path: str, document: Node) -> None:
        """The lines one positioned document spans (from its first to its last value)."""
        offsets = [offset for scalar in _scalars(document) for offset in (scalar.start, scalar.end) if offset >= 0]
        if path not in files or not offsets:
            return
        text = files[path]
        self.documents.setdefault(path, []).append((line_of(text, min(offsets)), line_of(text, max(offsets))))

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

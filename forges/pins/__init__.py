"""Image pins in a GitOps repository: find them, and change one image's tag in place.

A pin is one place in a file that fixes which tag (or digest) of an image runs:
- a whole reference in a string under an image key (`image: ghcr.io/acme/api:1.4.2`,
  `inline_image: …`, a Nomad/Terraform `image = "…"`, an ECS `"image": "…"`, and the
  `name=newName:tag` strings of Argo CD's `kustomize.images`),
- a Helm-values map: `repository` (+ optional `registry`) with `tag` or `version`, or
  `name` + `tag` under an image key; a non-empty `digest` overrides the tag,
- a kustomize `images:` entry: `newName` (else `name`) with `newTag` and/or `digest`. In
  one file (`retag`, `find`) the entry pins the image it renders; across a build
  (`tree_edits`) it is also the pin of the image it matches by `name`, which it overrides
  below it (`Pin.renamed_from`; `forges.pins.layouts.kustomize`).

Files are read with a real parser that reports positions (`forges.pins.formats`), and an
edit replaces only the characters of the old tag at the located offsets, so comments,
quotes, indentation, key order, other documents, CRLF and a BOM stay byte for byte.
Nothing is ever re-serialised.

Numeric-looking tags: when an edit leaves an unquoted YAML value (or a JSON/HCL
number) that would no longer read back as a string — `1.26`, `16`, `1e3`, `2024-01-15`,
`yes` — the new value is written in double quotes (`tag: 1.25` → `tag: "1.26"`).
Helm and kustomize would otherwise turn it into a number, and `1.30` would render as
`1.3`. That is the one case in which more than the tag's characters change.

The package, in the order a change flows through it:
- `formats`: position-aware readers (YAML, JSON, HCL) that give every scalar its offsets;
  `parsecache` shares their parses among the readers of a batch;
- `sites`: where in one file's tree an image's tag sits, and the splice that rewrites it;
- `file_pins`: one file at a time — `retag`, `scan`, `find`, `unified_diff`;
- `layouts`: a whole repository as an Argo CD or Flux object builds it — `tree_edits` and
  `chart_edits` (the public contract), `tree_reads` (the pins that are an app's own);
- `file_edits`: a retag over a set of files as the `FileEdit`s a pull request writes.
This module is the package's public face: the contract's names are imported from here.
"""

from forges.pins.file_pins import RetagResult, TreeScan, find, retag, retag_with_reason, scan, unified_diff
from forges.pins.layouts.tree import (
    NOT_PINNED_TAIL,
    Edit,
    EditResult,
    chart_edit_result,
    chart_edits,
    tree_edit_result,
    tree_edits,
)
from forges.pins.sites import HCL, HELM, IMAGE, JSON, KUSTOMIZE, YAML, Pin, pin_format

__all__ = [
    "HCL",
    "HELM",
    "IMAGE",
    "JSON",
    "KUSTOMIZE",
    "NOT_PINNED_TAIL",
    "YAML",
    "Edit",
    "EditResult",
    "Pin",
    "RetagResult",
    "TreeScan",
    "chart_edit_result",
    "chart_edits",
    "find",
    "pin_format",
    "retag",
    "retag_with_reason",
    "scan",
    "tree_edit_result",
    "tree_edits",
    "unified_diff",
]

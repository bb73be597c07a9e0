"""Repository layouts: what an Argo CD or Flux object builds from a Git tree, and where in it
an image tag or a chart version is set.

`forges.pins.file_pins` knows one file; a real repository spreads an app over kustomize bases
and overlays, Helm values files in Argo CD's order, `$ref` sources, HelmRelease values and
Argo CD's `.argocd-source-<app>.yaml` overrides. These modules follow the app the way its
tool does: `kustomize` (what a kustomize path includes, which pins win), `helm` (values
layers and image keys), `app_specs` (what an object declares, where it is defined),
`argocd_builds` and `flux_builds` (what each tool's objects build, and their chart versions),
`documents` (reading a tree's files), `app_reads` (the files and documents an app reads) and
`line_edits` (turning a located value into whole-line edits); `tree` holds the public contract
`forges.pins.tree_edits` / `chart_edits`. Everything here is pure: files in, edits and
reasons out; no forge, no cluster, no database.
"""

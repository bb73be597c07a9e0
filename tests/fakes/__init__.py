"""Every server a test (or a benchmark) talks to in place of one that cannot run here, speaking
the real wire format over HTTP on 127.0.0.1: the Kubernetes API (kube_emulator), Argo CD's API
(argocd_api), the forges (forges/: GitHub, GitLab, Gitea), OSV and CISA KEV feeds (osv),
Nomad, Docker and ECS (platforms), chat and webhook receivers (receivers); and the harness of a
real registry process with the images tests push to it (oci_registry, sbom_images).
bench/ uses them too; tests never import bench/."""

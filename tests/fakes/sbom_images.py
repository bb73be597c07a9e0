"""Pushing images with SBOMs attached, the three ways real tools attach them, to the real
registry of tests.fakes.oci_registry (distribution v2.8, no referrers API):

- `attach_referrers_tag`: an OCI artifact manifest (`artifactType`, `subject`) holding the
  document, listed in an index tagged `sha256-<hex>` — the OCI 1.1 referrers tag schema that
  `oras attach` and `cosign attach --registry-referrers-mode` fall back to without the API;
- `push_buildkit_index`: a multi-platform index with an attestation manifest per image
  (`vnd.docker.reference.type: attestation-manifest`), whose layer is an in-toto statement
  with an SPDX predicate — what `docker buildx build --sbom=true` pushes;
- `attach_cosign_att`: `sha256-<hex>.att`, a manifest whose layer is a DSSE envelope around an
  in-toto statement (`cosign attest --type spdxjson|cyclonedx`).
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime

import requests

from tests.fakes.oci_registry import OCI_INDEX, OCI_MANIFEST, push_blob, push_image, push_manifest

EMPTY = "application/vnd.oci.empty.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
PREDICATES = {"spdx": "https://spdx.dev/Document", "cyclonedx": "https://cyclonedx.org/bom"}
MEDIA = {"spdx": "application/spdx+json", "cyclonedx": "application/vnd.cyclonedx+json"}


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _size(registry_url: str, repository: str, digest: str, media_type: str = OCI_MANIFEST) -> int:
    got = requests.get(f"{registry_url}/v2/{repository}/manifests/{digest}", headers={"Accept": media_type}, timeout=10)
    assert got.status_code == 200, got.text
    return len(got.content)


def statement(document: dict, kind: str, subject: str) -> dict:
    return {
        "_type": "https://in-toto.io/Statement/v0.6",
        "predicateType": PREDICATES[kind],
        "subject": [{"name": "image", "digest": {"sha256": subject.removeprefix("sha256:")}}],
        "predicate": document,
    }


def _empty_config(registry_url: str, repository: str) -> dict:
    data = b"{}"
    return {"mediaType": CONFIG, "digest": push_blob(registry_url, repository, data), "size": len(data)}


def attach_referrers_tag(
    registry_url: str, repository: str, subject: str, data: bytes, kind: str, declared_size: int | None = None
) -> str:
    """The document `data` as a referrer of `subject`, in the referrers tag schema."""
    blob = push_blob(registry_url, repository, data)
    artifact = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": MEDIA[kind],
        "config": _empty_config(registry_url, repository),
        "layers": [{"mediaType": MEDIA[kind], "digest": blob, "size": declared_size or len(data)}],
        "subject": {
            "mediaType": OCI_MANIFEST,
            "digest": subject,
            "size": _size(registry_url, repository, subject, OCI_MANIFEST + ", " + OCI_INDEX),
        },
    }
    digest = _push_by_digest(registry_url, repository, artifact)
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {
                "mediaType": OCI_MANIFEST,
                "digest": digest,
                "artifactType": MEDIA[kind],
                "size": _size(registry_url, repository, digest),
            }
        ],
    }
    push_manifest(registry_url, repository, subject.replace(":", "-"), index)
    return digest


def _push_by_digest(registry_url: str, repository: str, manifest: dict) -> str:
    body = json.dumps(manifest).encode()
    return push_manifest(registry_url, repository, _digest(body), manifest)


def attach_cosign_att(registry_url: str, repository: str, subject: str, document: dict, kind: str) -> None:
    payload = json.dumps(statement(document, kind, subject)).encode()
    envelope = {
        "payloadType": "application/vnd.in-toto+json",
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": "", "sig": base64.b64encode(b"not verified by the portal").decode()}],
    }
    data = json.dumps(envelope).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": _empty_config(registry_url, repository),
        "layers": [
            {
                "mediaType": "application/vnd.dsse.envelope.v1+json",
                "digest": push_blob(registry_url, repository, data),
                "size": len(data),
                "annotations": {"predicateType": PREDICATES[kind]},
            }
        ],
    }
    push_manifest(registry_url, repository, subject.replace(":", "-") + ".att", manifest)


def push_buildkit_index(
    registry_url: str, repository: str, tag: str, created: datetime, sboms: dict[str, tuple[dict, str]]
) -> tuple[str, dict[str, str]]:
    """An index of linux/arm64 then linux/amd64 images, each with an attestation manifest holding
    `sboms[arch]` = (document, kind). Returns the index digest and arch -> image digest."""
    images = {
        arch: push_image(registry_url, repository, "", created, oci=True, arch=arch) for arch in ("arm64", "amd64")
    }
    entries = []
    for arch, image in images.items():
        entries.append(
            {
                "mediaType": OCI_MANIFEST,
                "digest": image,
                "size": _size(registry_url, repository, image),
                "platform": {"os": "linux", "architecture": arch},
            }
        )
    for arch, image in images.items():
        if arch not in sboms:
            continue
        document, kind = sboms[arch]
        data = json.dumps(statement(document, kind, image)).encode()
        attestation = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": _empty_config(registry_url, repository),
            "layers": [
                {
                    "mediaType": "application/vnd.in-toto+json",
                    "digest": push_blob(registry_url, repository, data),
                    "size": len(data),
                    "annotations": {"in-toto.io/predicate-type": PREDICATES[kind]},
                }
            ],
        }
        digest = _push_by_digest(registry_url, repository, attestation)
        entries.append(
            {
                "mediaType": OCI_MANIFEST,
                "digest": digest,
                "size": _size(registry_url, repository, digest),
                "platform": {"os": "unknown", "architecture": "unknown"},
                "annotations": {
                    "vnd.docker.reference.digest": image,
                    "vnd.docker.reference.type": "attestation-manifest",
                },
            }
        )
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}
    return push_manifest(registry_url, repository, tag, index), images


def attach_cosign_sbom(registry_url: str, repository: str, subject: str, data: bytes, kind: str) -> None:
    """`cosign attach sbom`: the document itself as the layer of `sha256-<hex>.sbom`."""
    media = {"spdx": "text/spdx+json", "cyclonedx": "application/vnd.cyclonedx+json"}[kind]
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": _empty_config(registry_url, repository),
        "layers": [{"mediaType": media, "digest": push_blob(registry_url, repository, data), "size": len(data)}],
    }
    push_manifest(registry_url, repository, subject.replace(":", "-") + ".sbom", manifest)


class ReferrersAPI:
    """A registry with the OCI 1.1 referrers API in front of distribution v2.8: answers
    `GET /v2/<name>/referrers/<digest>` with the index the referrers tag schema holds (what a
    1.1 registry answers from its own index), 404 when there is none; forwards everything else."""

    def __init__(self, upstream: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.upstream = upstream
        self.referrer_requests: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                proxy._forward(self)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _forward(self, handler) -> None:  # type: ignore[no-untyped-def]
        path = handler.path
        if "/referrers/" in path:
            name, digest = path[len("/v2/") :].split("/referrers/", 1)
            self.referrer_requests.append(digest)
            got = requests.get(
                f"{self.upstream}/v2/{name}/manifests/{digest.replace(':', '-')}",
                headers={"Accept": OCI_INDEX},
                timeout=10,
            )
            body = (
                got.content
                if got.status_code == 200
                else json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}).encode()
            )
            status, headers = 200, {"Content-Type": OCI_INDEX}
        else:
            accept = handler.headers.get("Accept", "")
            got = requests.get(f"{self.upstream}{path}", headers={"Accept": accept} if accept else {}, timeout=10)
            body, status = got.content, got.status_code
            headers = {k: got.headers[k] for k in ("Content-Type", "Docker-Content-Digest") if k in got.headers}
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

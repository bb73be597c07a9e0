"""Plain Secrets in Git: which of the files the pin reader read hold a `kind: Secret` document.

The pin reader (portal.delivery.current_pins) applies `plain_secret_files` to the files each
application builds and keeps the paths on the application's `GitPinRead` — a fact about Git,
never the content; portal.findings turns it into the raw-Secret finding.
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from gitops.rawobjects import as_str


# A Secret document: encrypted (SOPS) files carry a top-level "sops" map and are fine.
def plain_secret_files(files: Mapping[str, str]) -> list[str]:
    """The paths among ``files`` (path -> text) holding a plain ``kind: Secret`` document.

    Not a SealedSecret or an ExternalSecret (other kinds), nor a SOPS-encrypted one (its
    document carries ``sops``). Only the path is ever kept: never the content."""
    found = []
    for path, text in sorted(files.items()):
        if "kind: Secret" not in text and '"kind": "Secret"' not in text:
            continue
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError:
            continue
        for document in documents:
            if isinstance(document, Mapping) and document.get("kind") == "Secret" and "sops" not in document \
                    and as_str(document.get("apiVersion")) == "v1":
                found.append(path)
                break
    return found

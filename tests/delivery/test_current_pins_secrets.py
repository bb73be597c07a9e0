"""The pin reader keeps the plain Secrets among the files it reads, which portal.findings turns
into a finding (raw-secret): the path, never the content; a SealedSecret or a SOPS file is no finding, a Secret
the app does not build (another folder, a file its kustomization does not include) is not its
finding, and the next read that no longer sees the file clears it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from forges.pins.layouts.tree import tree_reads
from gitops.models import Finding
from portal.delivery import current_pins
from portal.delivery.models import GitPinRead
from portal.findings.derivation import sync_git_findings
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

PROD = "apps/checkout/overlays/prod"
KUSTOMIZATION = (
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- db-secret.yaml\n- sealed.yaml\n"
)
SECRET = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: aHVudGVyMg==\n"
SEALED = "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: db\nspec:\n  encryptedData: {}\n"


def test_a_plain_secret_read_for_pins_is_a_finding_named_by_path(catalog):
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.5.0", path=PROD)
    files = {f"{PROD}/kustomization.yaml": KUSTOMIZATION, f"{PROD}/db-secret.yaml": SECRET,
             f"{PROD}/sealed.yaml": SEALED, f"{PROD}/unused-secret.yaml": SECRET, "apps/other/secret.yaml": SECRET}
    store(app, files)
    finding = Finding.objects.get(app=app, rule="raw-secret")
    assert f"{PROD}/db-secret.yaml" in finding.message
    assert "sealed.yaml" not in finding.message and "apps/other" not in finding.message
    assert "unused-secret" not in finding.message
    assert "aHVudGVyMg" not in finding.message
    assert GitPinRead.objects.get(app=app).plain_secrets == [f"{PROD}/db-secret.yaml"]
    store(app, {f"{PROD}/kustomization.yaml": KUSTOMIZATION.replace("- db-secret.yaml\n", ""),
                f"{PROD}/sealed.yaml": SEALED})
    assert not Finding.objects.filter(app=app, rule="raw-secret").exists()
    assert GitPinRead.objects.get(app=app).plain_secrets == []


def store(app, files: dict[str, str]) -> None:
    """What the reader stores for `app` after reading `files` (the pins and plain Secrets of what
    it builds), and the findings' minute pass after it."""
    obj = {"kind": "Kustomization", "metadata": {"name": app.name}, "spec": {"path": PROD}}
    GitPinRead.objects.get_or_create(app=app)  # read_pins makes it before reading
    current_pins._store([app], files, "main", timezone.now(), {app.pk: tree_reads(files, obj)}, "acme/gitops")
    sync_git_findings()

"""gitops.revisions: Flux and Argo CD revision strings -> the commit they name."""

import pytest

from gitops.revisions import argocd_commit, flux_commit, parse_argocd_revision, parse_flux_revision, short_revision

SHA = "0647aea75b85755411b007a290b9321668370be5"
DIGEST_HEX = "043536cc6ec06ff978777ca31cf0adc3d654575a2aa8050988aadf90b9f9877c"


@pytest.mark.parametrize(
    "revision, kind, commit, short",
    [
        # Formats as Flux writes them (the first three are from the real objects in testdata).
        (f"master@sha1:{SHA}", None, SHA, "master@0647aea"),
        (f"refs/heads/main@sha1:{SHA}", "GitRepository", SHA, "main@0647aea"),
        (f"latest@sha256:{DIGEST_HEX}", "OCIRepository", None, "latest@sha256:043536cc6ec0"),
        (f"sha1:{SHA}", None, SHA, "0647aea"),
        (f"refs/tags/v1.2.0@sha1:{SHA}", None, SHA, "v1.2.0@0647aea"),
        (f"v1.0@sha256:{DIGEST_HEX}", None, None, "v1.0@sha256:043536cc6ec0"),
        (f"sha256:{DIGEST_HEX}", "Bucket", None, "sha256:043536cc6ec0"),
        (f"main@sha256:{DIGEST_HEX}", "GitRepository", DIGEST_HEX, "main@043536c"),
        (f"main/{SHA}", None, SHA, "main@0647aea"),
        (f"feature/x/{SHA}", None, SHA, "feature/x@0647aea"),
        (f"latest/{DIGEST_HEX}", "OCIRepository", None, "latest@sha256:043536cc6ec0"),
        (SHA.upper(), None, SHA, "0647aea"),
        ("4.0.11", "HelmChart", None, "4.0.11"),
        ("0.1.0+0647aea75b85", "HelmChart", None, "0.1.0+0647aea75b85"),
        (f"main@sha1:{SHA[:12]}", None, None, "main@sha1:0647aea75b85"),
        (f"sha1:{SHA}", "OCIRepository", None, "sha1:0647aea75b85"),
        ("", None, None, ""),
        ("main@md5:abc", None, None, "main@md5:abc"),
    ],
)
def test_flux_revisions(revision, kind, commit, short):
    parsed = parse_flux_revision(revision, kind)
    assert parsed.commit == commit
    assert flux_commit(revision, kind) == commit
    assert parsed.short == short


@pytest.mark.parametrize(
    "revision, source_type, commit, short",
    [
        ("041eab7439ece92c99b043f0e171788185b8fc1d", None, "041eab7439ece92c99b043f0e171788185b8fc1d", "041eab7"),
        ("041eab7439ece92c99b043f0e171788185b8fc1d", "git", "041eab7439ece92c99b043f0e171788185b8fc1d", "041eab7"),
        ("6.3.5", "helm", None, "6.3.5"),
        ("6.3.5", None, None, "6.3.5"),
        ("v1.2.0", None, None, "v1.2.0"),
        ("HEAD", None, None, "HEAD"),
        ("rev1", None, None, "rev1"),
        ("041eab7", None, None, "041eab7"),  # a short hex string might be a tag: not a commit
        (f"sha256:{DIGEST_HEX}", "oci", None, "sha256:043536cc6ec0"),
        ("", None, None, ""),
    ],
)
def test_argocd_revisions(revision, source_type, commit, short):
    parsed = parse_argocd_revision(revision, source_type)
    assert parsed.commit == commit
    assert argocd_commit(revision, source_type) == commit
    assert parsed.short == short


def test_helm_source_never_names_a_commit_even_when_hex():
    assert argocd_commit("1" * 40, "helm") is None


def test_short_revision_reads_any_form():
    assert short_revision(f"main@sha1:{SHA}") == "main@0647aea"
    assert short_revision(SHA) == "0647aea"
    assert short_revision("1.2.3") == "1.2.3"

import pytest

from portal.kernel.catalog.images import normalise_name, parse_image


@pytest.mark.parametrize(
    "text, registry, repository, tag, digest",
    [
        ("nginx", "docker.io", "library/nginx", "", ""),
        ("nginx:1.25", "docker.io", "library/nginx", "1.25", ""),
        ("docker.io/nginx:1.25", "docker.io", "library/nginx", "1.25", ""),
        ("index.docker.io/library/nginx", "docker.io", "library/nginx", "", ""),
        ("bitnami/redis:7.2", "docker.io", "bitnami/redis", "7.2", ""),
        ("ghcr.io/acme/checkout:1.4.2", "ghcr.io", "acme/checkout", "1.4.2", ""),
        ("localhost:5000/app:1.0", "localhost:5000", "app", "1.0", ""),
        ("localhost/app", "localhost", "app", "", ""),
        ("registry.example.com:8443/team/sub/app:v1.2.3", "registry.example.com:8443", "team/sub/app", "v1.2.3", ""),
        (
            "ghcr.io/acme/api@sha256:" + "a" * 64,
            "ghcr.io", "acme/api", "", "sha256:" + "a" * 64,
        ),
        (
            "ghcr.io/acme/api:1.0@sha256:" + "b" * 64,
            "ghcr.io", "acme/api", "1.0", "sha256:" + "b" * 64,
        ),
    ],
)
def test_parse_image_normalises_like_docker(text, registry, repository, tag, digest):
    ref = parse_image(text)
    assert ref is not None
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)


@pytest.mark.parametrize("text", ["", "  ", "a b:1", "app:bad tag", "app@sha256:xyz", ":1.0", "ghcr.io/acme/:1"])
def test_parse_image_rejects_what_is_not_an_image(text):
    assert parse_image(text) is None


def test_version_is_tag_else_digest():
    assert parse_image("nginx:1.25").version == "1.25"
    assert parse_image("nginx@sha256:" + "c" * 64).version == "sha256:" + "c" * 64


def test_normalise_name_equates_short_and_long_hub_names():
    assert normalise_name("nginx") == normalise_name("docker.io/library/nginx") == "docker.io/library/nginx"
    assert normalise_name("GHCR.io/acme/app") == "ghcr.io/acme/app"

"""forges.pins: whole-file before/after cases for every format and every refusal."""

from pathlib import Path

import pytest
import yaml

from forges.pins import find, retag, retag_with_reason, scan, unified_diff

DATA = Path(__file__).parent.parent / "data" / "pins"
DIGEST = "sha256:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def read(name: str) -> str:
    # newline="" keeps CRLF exactly as stored.
    with open(DATA / name, encoding="utf-8", newline="") as handle:
        return handle.read()


# (id, file_name, image, from_tag, to_tag, before, after)
CHANGED = [
    (
        "two-images-share-a-tag",
        "deploy.yaml",
        "ghcr.io/acme/checkout",
        "1.4.2",
        "1.5.0",
        "spec:\n  containers:\n  - name: app\n    image: ghcr.io/acme/checkout:1.4.2\n"
        "  - name: sidecar\n    image: ghcr.io/acme/checkout-proxy:1.4.2\n",
        "spec:\n  containers:\n  - name: app\n    image: ghcr.io/acme/checkout:1.5.0\n"
        "  - name: sidecar\n    image: ghcr.io/acme/checkout-proxy:1.4.2\n",
    ),
    (
        "commented-out-old-image-stays",
        "deploy.yaml",
        "nginx",
        "1.25.3",
        "1.27.0",
        "containers:\n- name: web\n  # image: nginx:1.25.3  (before the CVE fix)\n  image: nginx:1.25.3\n",
        "containers:\n- name: web\n  # image: nginx:1.25.3  (before the CVE fix)\n  image: nginx:1.27.0\n",
    ),
    (
        "v-prefixed-tag-single-quoted",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "v1.2.3",
        "v1.10.0",
        "image: 'ghcr.io/acme/api:v1.2.3'\n",
        "image: 'ghcr.io/acme/api:v1.10.0'\n",
    ),
    (
        "windows-line-endings",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        "kind: Deployment\r\nspec:\r\n  containers:\r\n  - image: ghcr.io/acme/api:1.4.2 # api\r\n    name: api\r\n",
        "kind: Deployment\r\nspec:\r\n  containers:\r\n  - image: ghcr.io/acme/api:1.5.0 # api\r\n    name: api\r\n",
    ),
    (
        "byte-order-mark",
        "values.yaml",
        "bitnami/redis",
        "7.2.4",
        "7.2.5",
        "\ufeffimage:\n  registry: docker.io\n  repository: bitnami/redis\n  tag: 7.2.4\n",
        "\ufeffimage:\n  registry: docker.io\n  repository: bitnami/redis\n  tag: 7.2.5\n",
    ),
    (
        "registry-with-port",
        "deploy.yaml",
        "registry.example.com:8443/team/app",
        "2.0.0",
        "2.1.0",
        "containers:\n- image: registry.example.com:8443/team/app:2.0.0\n"
        "- image: registry.example.com:8443/team/app2:2.0.0\n",
        "containers:\n- image: registry.example.com:8443/team/app:2.1.0\n"
        "- image: registry.example.com:8443/team/app2:2.0.0\n",
    ),
    (
        "docker-hub-long-name-asked-short-name-written",
        "deploy.yaml",
        "docker.io/library/redis",
        "7.2",
        "7.4",
        "containers:\n- image: redis:7.2\n- image: index.docker.io/library/redis:7.2\n- image: quay.io/redis:7.2\n",
        "containers:\n- image: redis:7.4\n- image: index.docker.io/library/redis:7.4\n- image: quay.io/redis:7.2\n",
    ),
    (
        "anchor-alias-same-image-edits-the-anchor",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "api:\n  image: &api ghcr.io/acme/api:1.0.0\nworker:\n  image: *api\n",
        "api:\n  image: &api ghcr.io/acme/api:1.1.0\nworker:\n  image: *api\n",
    ),
    (
        "flow-mapping-helm-values",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "image: {repository: ghcr.io/acme/api, tag: 1.0.0, pullPolicy: IfNotPresent}\n",
        "image: {repository: ghcr.io/acme/api, tag: 1.1.0, pullPolicy: IfNotPresent}\n",
    ),
    (
        "helm-numeric-tag-gets-quoted",
        "values.yaml",
        "nginx",
        "1.25",
        "1.26",
        "image:\n  repository: nginx\n  tag: 1.25   # float in YAML\n",
        'image:\n  repository: nginx\n  tag: "1.26"   # float in YAML\n',
    ),
    (
        "helm-numeric-to-word-stays-plain",
        "values.yaml",
        "nginx",
        "1.25",
        "1.25-alpine",
        "image:\n  repository: nginx\n  tag: 1.25\n",
        "image:\n  repository: nginx\n  tag: 1.25-alpine\n",
    ),
    (
        "helm-name-and-tag-under-image-key",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.0.1",
        "image:\n  name: ghcr.io/acme/api\n  tag: 1.0.0\nserviceAccount:\n  name: api\n",
        "image:\n  name: ghcr.io/acme/api\n  tag: 1.0.1\nserviceAccount:\n  name: api\n",
    ),
    (
        "kustomize-entry-matched-by-name-no-newname",
        "kustomization.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        "resources:\n- ../../base\nimages:\n- name: ghcr.io/acme/api\n  newTag: 1.4.2\n"
        "- name: ghcr.io/acme/web\n  newTag: 1.4.2\n",
        "resources:\n- ../../base\nimages:\n- name: ghcr.io/acme/api\n  newTag: 1.5.0\n"
        "- name: ghcr.io/acme/web\n  newTag: 1.4.2\n",
    ),
    (
        "kustomize-numeric-plain-newtag-quoted",
        "kustomization.yaml",
        "my-image1",
        "1234",
        "1235",
        "images:\n- name: image1\n  newName: my-image1\n  newTag: 1234\n",
        'images:\n- name: image1\n  newName: my-image1\n  newTag: "1235"\n',
    ),
    (
        "argocd-kustomize-image-override-strings",
        "application.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        "spec:\n  source:\n    kustomize:\n      images:\n      - api=ghcr.io/acme/api:1.4.2\n"
        "      - ghcr.io/acme/web:1.4.2\n",
        "spec:\n  source:\n    kustomize:\n      images:\n      - api=ghcr.io/acme/api:1.5.0\n"
        "      - ghcr.io/acme/web:1.4.2\n",
    ),
    (
        "flux-helmrelease-values-in-multi-doc",
        "release.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "---\nkind: HelmRepository\n...\n---\nkind: HelmRelease\nspec:\n  chart:\n    spec:\n      version: 1.0.0\n"
        '  values:\n    image:\n      repository: ghcr.io/acme/api\n      tag: "1.0.0"\n',
        "---\nkind: HelmRepository\n...\n---\nkind: HelmRelease\nspec:\n  chart:\n    spec:\n      version: 1.0.0\n"
        '  values:\n    image:\n      repository: ghcr.io/acme/api\n      tag: "1.1.0"\n',
    ),
    (
        "no-final-newline",
        "pod.yaml",
        "busybox",
        "1.36",
        "1.37",
        "containers:\n- image: busybox:1.36",
        "containers:\n- image: busybox:1.37",
    ),
    (
        "json-container-definitions",
        "taskdef.json",
        "ghcr.io/acme/checkout",
        "1.4.2",
        "1.5.0",
        read("taskdef.json"),
        read("taskdef.after.json"),
    ),
    (
        "nomad-job",
        "vault.nomad",
        "hashicorp/vault",
        "1.17.2",
        "1.17.3",
        read("vault.nomad"),
        read("vault.after.nomad"),
    ),
    (
        "terraform-ecs-jsonencode",
        "main.tf",
        "123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme/api",
        "v1.2.3",
        "v1.3.0",
        read("main.tf"),
        read("main.api.after.tf"),
    ),
    (
        "terraform-helm-values-number-tag",
        "main.tf",
        "ghcr.io/acme/web",
        "1.25",
        "1.26",
        read("main.tf"),
        read("main.web.after.tf"),
    ),
    (
        "compose-crlf-short-and-long-docker-hub-names",
        "compose.yaml",
        "nginx",
        "1.25.3",
        "1.27.0",
        read("compose.yaml"),
        read("compose.after.yaml"),
    ),
]


@pytest.mark.parametrize(
    "file_name, image, from_tag, to_tag, before, after", [c[1:] for c in CHANGED], ids=[c[0] for c in CHANGED]
)
def test_retag_changes_only_the_tag(file_name, image, from_tag, to_tag, before, after):
    result = retag_with_reason(before, file_name, image, from_tag, to_tag)
    assert result.reason == ""
    assert result.changed
    assert result.text == after
    assert retag(before, file_name, image, from_tag, to_tag) == after
    assert result.locations


# (id, file_name, image, from_tag, to_tag, text, words expected in the reason)
UNCHANGED = [
    (
        "digest-pinned-tag-and-digest",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        f"containers:\n- image: ghcr.io/acme/api:1.4.2@{DIGEST}\n",
        "digest",
    ),
    (
        "digest-pinned-digest-only",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        f"containers:\n- image: ghcr.io/acme/api@{DIGEST}\n",
        "digest",
    ),
    (
        "helm-digest-field-overrides-tag",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        f"image:\n  repository: ghcr.io/acme/api\n  tag: 1.4.2\n  digest: {DIGEST}\n",
        "digest",
    ),
    (
        "kustomize-tag-and-digest",
        "kustomization.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        f"images:\n- name: ghcr.io/acme/api\n  newTag: 1.4.2\n  digest: {DIGEST}\n",
        "digest",
    ),
    (
        "other-tag",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "1.4.1",
        "1.5.0",
        "containers:\n- image: ghcr.io/acme/api:1.4.2\n",
        "not pinned",
    ),
    (
        "same-tag-other-image",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        "containers:\n- image: ghcr.io/acme/web:1.4.2\n- image: docker.io/acme/api:1.4.2\n",
        "not pinned",
    ),
    (
        "only-in-a-comment",
        "deploy.yaml",
        "nginx",
        "1.25.3",
        "1.27.0",
        "containers:\n# - image: nginx:1.25.3\n- image: nginx:1.27.0\n",
        "not pinned",
    ),
    (
        "kustomize-name-does-not-normalise-on-newname",
        "kustomization.yaml",
        "ghcr.io/acme/api",
        "1.4.2",
        "1.5.0",
        "images:\n- name: ghcr.io/acme/api\n  newName: ghcr.io/acme/api-fips\n  newTag: 1.4.2\n",
        "not pinned",
    ),
    (
        "anchor-shared-by-two-images",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "api:\n  repository: ghcr.io/acme/api\n  tag: &v 1.0.0\nweb:\n  repository: ghcr.io/acme/web\n  tag: *v\n",
        "shared",
    ),
    (
        "merge-key-shares-tag-with-other-image",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "api: &base\n  repository: ghcr.io/acme/api\n  tag: 1.0.0\nweb:\n  <<: *base\n  repository: ghcr.io/acme/web\n",
        "shared",
    ),
    (
        "tag-and-version-both-set",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "image:\n  repository: ghcr.io/acme/api\n  tag: 1.0.0\n  version: 2.0.0\n",
        "both",
    ),
    (
        "duplicate-tag-key",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "image:\n  repository: ghcr.io/acme/api\n  tag: 0.9.0\n  tag: 1.0.0\n",
        "twice",
    ),
    (
        "escaped-double-quoted-value",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        'containers:\n- image: "ghcr.io\\/acme/api:1.0.0"\n',
        "escapes",
    ),
    (
        "bad-yaml",
        "deploy.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "containers:\n- image: ghcr.io/acme/api:1.0.0\n  name: [unclosed\n",
        "YAML",
    ),
    (
        "bad-json",
        "taskdef.json",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        '{"image": "ghcr.io/acme/api:1.0.0",}',
        "JSON",
    ),
    (
        "bad-hcl",
        "job.nomad",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        'job "x" {\n  image = "ghcr.io/acme/api:1.0.0"\n',
        "HCL",
    ),
    (
        "hcl-interpolated-tag",
        "main.tf",
        "registry.example.com:5000/platform/redis",
        "7.2",
        "7.4",
        read("main.tf"),
        "not pinned",
    ),
    (
        "unsupported-file-type",
        "Dockerfile",
        "nginx",
        "1.25",
        "1.27",
        "FROM nginx:1.25\n",
        "file type",
    ),
    (
        "invalid-new-tag",
        "deploy.yaml",
        "nginx",
        "1.25",
        "1.27 #x",
        "containers:\n- image: nginx:1.25\n",
        "valid image tag",
    ),
    (
        "helm-templated-tag",
        "values.yaml",
        "ghcr.io/acme/api",
        "1.0.0",
        "1.1.0",
        "image:\n  repository: ghcr.io/acme/api\n  tag: '{{ .Chart.AppVersion }}'\n",
        "not pinned",
    ),
]


@pytest.mark.parametrize(
    "file_name, image, from_tag, to_tag, text, reason_word",
    [c[1:] for c in UNCHANGED],
    ids=[c[0] for c in UNCHANGED],
)
def test_retag_refuses_and_says_why(file_name, image, from_tag, to_tag, text, reason_word):
    result = retag_with_reason(text, file_name, image, from_tag, to_tag)
    assert result.text == text
    assert not result.changed
    assert reason_word in result.reason
    assert retag(text, file_name, image, from_tag, to_tag) == text


def test_refusal_for_ambiguity_names_the_line():
    text = "image:\n  repository: ghcr.io/acme/api\n  tag: 1.0.0\n  version: 2.0.0\n"
    result = retag_with_reason(text, "values.yaml", "ghcr.io/acme/api", "1.0.0", "1.1.0")
    assert "line 3" in result.reason
    assert [(p.line, p.tag) for p in result.locations] == [(3, "1.0.0")]


def test_quoted_numeric_tag_reads_back_as_a_string():
    text = "images:\n- name: app\n  newTag: 16\n"
    after = retag(text, "kustomization.yaml", "app", "16", "17")
    assert yaml.safe_load(after) == {"images": [{"name": "app", "newTag": "17"}]}


@pytest.mark.parametrize("new_tag", ["1.26", "17", "1e3", "2024-01-15", "yes", "on", "0x1F", "1_000"])
def test_tags_that_would_change_type_are_quoted(new_tag):
    text = "image:\n  repository: nginx\n  tag: v1\n"
    after = retag(text, "values.yaml", "nginx", "v1", new_tag)
    assert after == f'image:\n  repository: nginx\n  tag: "{new_tag}"\n'
    assert yaml.safe_load(after)["image"]["tag"] == new_tag


def test_json_number_tag_becomes_a_string():
    text = '{"image": {"repository": "nginx", "tag": 1.25}}'
    assert retag(text, "values.json", "nginx", "1.25", "1.26") == '{"image": {"repository": "nginx", "tag": "1.26"}}'


def test_find_reports_lines_tags_and_digests():
    files = {
        "apps/api/deploy.yaml": (
            "spec:\n  containers:\n  - name: api\n    image: ghcr.io/acme/api:1.4.2\n"
            f"  - name: init\n    image: ghcr.io/acme/api:1.4.1@{DIGEST}\n"
        ),
        "apps/api/values.yaml": 'image:\n  repository: ghcr.io/acme/api\n  tag: "1.4.2"\n',
        "apps/api/README.md": "image: ghcr.io/acme/api:0.0.1\n",
        "apps/api/broken.yaml": "a: [\n",
    }
    pins = find(files, "ghcr.io/acme/api")
    assert [(p.path, p.line, p.tag, p.digest_pinned, p.kind) for p in pins] == [
        ("apps/api/deploy.yaml", 4, "1.4.2", False, "image"),
        ("apps/api/deploy.yaml", 6, "1.4.1", True, "image"),
        ("apps/api/values.yaml", 3, "1.4.2", False, "helm"),
    ]
    assert pins[0].line_text == "    image: ghcr.io/acme/api:1.4.2"
    assert pins[0].column == len("    image: ghcr.io/acme/api:") + 1
    assert [p.path for p in find(files, "ghcr.io/acme/api", "1.4.2")] == [
        "apps/api/deploy.yaml",
        "apps/api/values.yaml",
    ]
    assert find(files, "ghcr.io/acme/web") == []
    assert "apps/api/broken.yaml" in scan(files).skipped


def test_find_skips_helm_chart_templates_but_not_other_templates_dirs():
    files = {
        "charts/api/Chart.yaml": "name: api\nversion: 0.1.0\n",
        "charts/api/values.yaml": "image:\n  repository: ghcr.io/acme/api\n  tag: 1.0.0\n",
        "charts/api/templates/job.yaml": "image: ghcr.io/acme/api:0.0.9\n",
        "templates/pod.yaml": "image: ghcr.io/acme/api:0.0.8\n",
    }
    assert [(p.path, p.tag) for p in find(files, "ghcr.io/acme/api")] == [
        ("charts/api/values.yaml", "1.0.0"),
        ("templates/pod.yaml", "0.0.8"),
    ]


def test_find_line_numbers_with_crlf_and_bom():
    files = {"a.yaml": "\ufeffimage: nginx:1.25\r\nother: x\r\nsidecar_image: nginx:1.24\r\n"}
    pins = find(files, "nginx")
    assert [(p.line, p.column, p.line_text, p.tag) for p in pins] == [
        (1, 14, "image: nginx:1.25", "1.25"),
        (3, 22, "sidecar_image: nginx:1.24", "1.24"),
    ]


def test_scan_finds_every_image_with_its_tags_across_formats():
    files = {
        "base/deploy.yaml": "containers:\n- image: nginx:1.25\n- image: docker.io/library/nginx:1.27\n",
        "job.nomad": 'task "x" {\n  config {\n    image = "hashicorp/vault:1.17.2"\n  }\n}\n',
        "values.yaml": f"image:\n  repository: ghcr.io/acme/api\n  digest: {DIGEST}\n",
    }
    assert sorted({(pin.image, pin.version) for pin in scan(files).pins}) == [
        ("docker.io/hashicorp/vault", "1.17.2"),
        ("docker.io/library/nginx", "1.25"),
        ("docker.io/library/nginx", "1.27"),
        ("ghcr.io/acme/api", DIGEST),
    ]


def test_unified_diff_reads_like_git():
    before = "a: 1\nimage: nginx:1.25\nb: 2\n"
    after = retag(before, "x.yaml", "nginx", "1.25", "1.27")
    assert unified_diff("deploy/x.yaml", before, after) == (
        "--- a/deploy/x.yaml\n+++ b/deploy/x.yaml\n@@ -1,3 +1,3 @@\n"
        " a: 1\n-image: nginx:1.25\n+image: nginx:1.27\n b: 2\n"
    )
    assert unified_diff("x.yaml", before, before) == ""


def test_unified_diff_marks_a_missing_final_newline():
    before = "image: nginx:1.25"
    after = retag(before, "x.yaml", "nginx", "1.25", "1.27")
    assert unified_diff("x.yaml", before, after).endswith(
        "-image: nginx:1.25\n\\ No newline at end of file\n+image: nginx:1.27\n\\ No newline at end of file\n"
    )

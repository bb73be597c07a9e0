"""Properties of forges.pins.retag over generated files in every format."""

import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from forges.pins import find, retag, retag_with_reason
from portal.kernel.catalog.images import normalise_name

IMAGES = [
    "nginx",
    "docker.io/library/nginx",
    "bitnami/redis",
    "ghcr.io/acme/api",
    "ghcr.io/acme/api-proxy",
    "quay.io/nginx",
    "localhost:5000/team/app",
    "registry.example.com:8443/a/b",
]
DIGEST = "sha256:" + "0123456789abcdef" * 4
_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
_NUMBERISH = re.compile(r"[-+]?[0-9_.]+(e[-+]?[0-9]+)?|0x[0-9a-f]+|0o[0-7]+|[0-9]+(-[0-9]+){2}", re.I)

# Any Docker tag, numeric-looking ones included.
any_tag = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,12}", fullmatch=True)
# Tags whose unquoted YAML form is already a string, so no quotes are ever added.
string_tag = any_tag.filter(lambda t: t.lower() not in _WORDS and not _NUMBERISH.fullmatch(t))

YAML_STYLES = ["plain", "single", "double", "digest", "commented", "helm", "helm-quoted", "kustomize"]
FLAT_STYLES = ["double", "digest", "helm-quoted"]


@st.composite
def files(draw, tags=any_tag):
    """(text, file name, placed pins as (normalised image, tag, digest_pinned))."""
    fmt = draw(st.sampled_from(["yaml", "json", "hcl"]))
    styles = YAML_STYLES if fmt == "yaml" else FLAT_STYLES
    entries = draw(st.lists(st.tuples(st.sampled_from(IMAGES), tags, st.sampled_from(styles)), min_size=1, max_size=6))
    placed = [(normalise_name(image), tag, style == "digest") for image, tag, style in entries if style != "commented"]
    if fmt == "yaml":
        text = _yaml(entries, draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans()))
        return text, draw(st.sampled_from(["deploy.yaml", "values.yml", "kustomization.yaml"])), placed
    if fmt == "json":
        return _json(entries, draw(st.sampled_from(["", "  ", "\t"]))), "taskdef.json", placed
    return _hcl(entries), "job.nomad", placed


def _yaml(entries, newline, bom):
    containers, values, images = [], [], []
    for index, (image, tag, style) in enumerate(entries):
        if style == "plain":
            containers.append(f"      - name: c{index}\n        image: {image}:{tag}  # c{index}")
        elif style == "single":
            containers.append(f"      - image: '{image}:{tag}'\n        name: c{index}")
        elif style == "double":
            containers.append(f'      - name: c{index}\n        image: "{image}:{tag}"')
        elif style == "digest":
            containers.append(f"      - name: c{index}\n        image: {image}:{tag}@{DIGEST}")
        elif style == "commented":
            containers.append(f"      # - image: {image}:{tag}\n      - name: c{index}\n        image: busybox")
        elif style in ("helm", "helm-quoted"):
            quoted = f'"{tag}"' if style == "helm-quoted" else tag
            values.append(f"component{index}:\n  image:\n    repository: {image}\n    tag: {quoted}")
        else:
            images.append(f"- name: {image}\n  newTag: '{tag}'")
    documents = [
        "# generated\napiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:"
        + ("\n" + "\n".join(containers) if containers else " []"),
        "\n\n".join(values) or "values: {}",
        "images:\n" + "\n".join(images) if images else "resources: []",
    ]
    text = "\n---\n".join(documents) + "\n"
    return ("\ufeff" if bom else "") + text.replace("\n", newline)


def _json(entries, indent):
    items = []
    for index, (image, tag, style) in enumerate(entries):
        if style == "double":
            items.append(f'{indent}{{"name": "c{index}", "image": "{image}:{tag}"}}')
        elif style == "digest":
            items.append(f'{indent}{{"image": "{image}:{tag}@{DIGEST}", "essential": true}}')
        else:
            items.append(f'{indent}{{"image": {{"repository": "{image}", "tag": "{tag}"}}}}')
    return '{"containerDefinitions": [\n' + ",\n".join(items) + "\n]}\n"


def _hcl(entries):
    tasks = []
    for index, (image, tag, style) in enumerate(entries):
        if style == "double":
            body = f'    config {{\n      image = "{image}:{tag}" # c{index}\n    }}'
        elif style == "digest":
            body = f'    config {{\n      image = "{image}:{tag}@{DIGEST}"\n    }}'
        else:
            body = f'    values = {{\n      image = {{ repository = "{image}", tag = "{tag}" }}\n    }}'
        tasks.append(f'  task "t{index}" {{\n{body}\n  }}')
    return 'job "j" {\n' + "\n".join(tasks) + "\n}\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(generated=files(tags=string_tag), data=st.data())
def test_there_and_back_again_gives_the_original_bytes(generated, data):
    text, file_name, placed = generated
    candidates = sorted({(name, tag) for name, tag, digest in placed if not digest})
    assume(candidates)
    image, from_tag = data.draw(st.sampled_from(candidates))
    to_tag = data.draw(string_tag.filter(lambda t: t != from_tag))
    assume(all((name, tag) != (image, to_tag) for name, tag, _ in placed))

    there = retag_with_reason(text, file_name, image, from_tag, to_tag)
    assert there.changed, there.reason
    expected_count = sum(1 for name, tag, digest in placed if (name, tag, digest) == (image, from_tag, False))
    assert len(find({file_name: there.text}, image, to_tag)) == expected_count
    # Every other pin is where and what it was.
    others_before = [(p.line, p.tag, p.digest) for p in find({file_name: text}, image) if p.digest or p.tag != from_tag]
    others_after = [
        (p.line, p.tag, p.digest) for p in find({file_name: there.text}, image) if p.digest or p.tag != to_tag
    ]
    assert others_after == others_before
    assert retag(there.text, file_name, image, to_tag, from_tag) == text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(generated=files(), image=st.sampled_from(IMAGES), from_tag=any_tag, to_tag=any_tag)
def test_a_file_that_does_not_pin_the_image_at_from_tag_comes_back_identical(generated, image, from_tag, to_tag):
    text, file_name, placed = generated
    assume(to_tag != from_tag)
    assume((normalise_name(image), from_tag, False) not in placed)
    result = retag_with_reason(text, file_name, image, from_tag, to_tag)
    assert result.text == text
    assert not result.changed
    assert result.reason


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=files(), data=st.data())
def test_any_tag_change_keeps_the_file_parseable_and_the_tag_a_string(generated, data):
    text, file_name, placed = generated
    candidates = sorted({(name, tag) for name, tag, digest in placed if not digest})
    assume(candidates)
    image, from_tag = data.draw(st.sampled_from(candidates))
    to_tag = data.draw(any_tag.filter(lambda t: t != from_tag))
    result = retag_with_reason(text, file_name, image, from_tag, to_tag)
    assert result.changed, result.reason
    assert {p.tag for p in find({file_name: result.text}, image, to_tag)} == {to_tag}


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("image: nginx:1.25\n-#{}[]\"'&*!|>@=\t\r\ufeff\x00"))),
    file_name=st.sampled_from(["a.yaml", "a.json", "a.tf", "Kustomization"]),
)
def test_arbitrary_text_never_raises(text, file_name):
    result = retag_with_reason(text, file_name, "nginx", "1.25", "1.27")
    if result.changed:
        assert find({file_name: text}, "nginx", "1.25")
    else:
        assert result.text == text

"""The object-by-object comparison of two renders (portal.delivery.rendered_diff): identity, order
and defaults ignored, the fields that move named by path, Secrets never shown."""

from __future__ import annotations

from typing import Any

from portal.delivery.rendered_diff import (
    ADDED,
    APP_DIFFS,
    CHANGED,
    HIDDEN,
    MAX_FIELDS_PER_OBJECT,
    REMOVED,
    AppDiff,
    FieldChange,
    compare,
    masked,
    stored_diffs,
)


def deployment(**spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "web", "image": "ghcr.io/acme/web:1.0.0"}])
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {**spec, "template": {"spec": {"containers": containers}}}}


def test_the_same_objects_in_another_order_are_unchanged() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}}
    result = compare([deployment(), service], [service, deployment()])

    assert result.objects == () and result.unchanged == 2


def test_named_lists_are_matched_by_name_and_the_moving_fields_named() -> None:
    before = deployment(containers=[
        {"name": "web", "image": "ghcr.io/acme/web:1.0.0",
         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
        {"name": "proxy", "image": "envoyproxy/envoy:v1.30.1"},
    ])
    after = deployment(replicas=3, containers=[
        {"name": "proxy", "image": "envoyproxy/envoy:v1.30.1"},
        {"name": "web", "image": "ghcr.io/acme/web:1.1.0",
         "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "9"}],
         "resources": {"limits": {"memory": "512Mi"}}},
    ])

    [diff] = compare([before], [after]).objects

    assert diff.change == CHANGED and diff.label == "Deployment shop/web"
    assert diff.fields == (
        FieldChange("spec.replicas", "1", "3"),  # absent is the API's default of 1
        FieldChange("spec.template.spec.containers[web].env[A].value", "1", "9"),
        FieldChange("spec.template.spec.containers[web].image", "ghcr.io/acme/web:1.0.0", "ghcr.io/acme/web:1.1.0"),
        FieldChange("spec.template.spec.containers[web].resources.limits.memory", None, "512Mi"),
    )


def test_defaults_written_out_and_server_fields_are_not_changes() -> None:
    written = deployment(replicas=1, revisionHistoryLimit=10, containers=[
        {"name": "web", "image": "ghcr.io/acme/web:1.0.0", "ports": [{"containerPort": 80, "protocol": "TCP"}],
         "terminationMessagePolicy": "File"},
    ])
    written["metadata"]["uid"] = "6c4b3f58-0d7e-4a62-9a57-1b1f0c8d2e11"
    written["status"] = {"replicas": 1}
    left_out = deployment(containers=[
        {"name": "web", "image": "ghcr.io/acme/web:1.0.0", "ports": [{"containerPort": 80}], "env": []},
    ])

    assert compare([written], [left_out]).unchanged == 1


def test_objects_without_a_namespace_land_in_the_destination_namespace() -> None:
    bare = deployment()
    del bare["metadata"]["namespace"]

    assert compare([bare], [deployment()], namespace="shop").unchanged == 1
    assert {d.change for d in compare([bare], [deployment()], namespace="other").objects} == {ADDED, REMOVED}


def test_added_and_removed_objects_and_a_new_api_version_is_the_same_object() -> None:
    old_ingress = {"apiVersion": "networking.k8s.io/v1beta1", "kind": "Ingress",
                   "metadata": {"name": "web", "namespace": "shop"}}
    new_ingress = {**old_ingress, "apiVersion": "networking.k8s.io/v1"}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "shop"}}

    result = compare([old_ingress, deployment()], [new_ingress, job])

    # In the order of their identity: API group, kind, namespace, name.
    assert [(d.label, d.change) for d in result.objects] == [("Deployment shop/web", REMOVED),
                                                             ("Job shop/migrate", ADDED)]
    assert result.unchanged == 1


def test_secret_values_are_never_shown() -> None:
    def secret(data: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"}, "data": data}

    [diff] = compare([secret({"password": "++++++++"})], [secret({"password": "+++++++++", "user": "+++++"})]).objects

    assert diff.fields == (FieldChange("data.password", HIDDEN, HIDDEN), FieldChange("data.user", None, HIDDEN))


def test_stored_renders_keep_no_secret_value() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"},
              "data": {"password": "aHVudGVyMg=="}, "stringData": {"user": "admin"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"mode": "fast"}}

    kept = masked([secret, config])

    assert kept[0]["data"] == {"password": HIDDEN} and kept[0]["stringData"] == {"user": HIDDEN}
    assert kept[1] == config and secret["data"] == {"password": "aHVudGVyMg=="}  # the input is left alone


def test_many_changed_fields_are_counted_past_the_bound() -> None:
    labels = {f"l{i:03}": "a" for i in range(MAX_FIELDS_PER_OBJECT + 5)}
    before, after = deployment(), deployment()
    after["metadata"]["labels"] = labels

    [diff] = compare([before], [after]).objects

    assert len(diff.fields) == MAX_FIELDS_PER_OBJECT and diff.more_fields == 5


def test_a_stored_diff_reads_back_the_same() -> None:
    comparison = compare([deployment()], [deployment(replicas=2)])
    diff = AppDiff(app="argocd/web", cluster="prod", renderer="Argo CD", comparison=comparison)

    assert stored_diffs(APP_DIFFS.dump_python([diff], mode="json")) == [diff]

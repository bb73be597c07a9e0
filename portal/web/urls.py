from django.urls import path

from portal.web.views import clusters, delivery, discovery, findings, gitops, matrix, overview, pr, service, updates

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("matrix", matrix.matrix, name="matrix"),
    path("matrix/cell", matrix.matrix_cell, name="matrix-cell"),
    path("gitops", gitops.gitops_list, name="gitops"),
    path("services/<slug:name>", service.service_page, name="service"),
    path("services/<slug:name>/panels", service.service_panels, name="service-panels"),
    path("services/<slug:name>/policy/check", service.service_policy_check, name="service-policy-check"),
    path("services/<slug:name>/policy", service.service_policy_save, name="service-policy"),
    path("clusters", clusters.cluster_list, name="clusters"),
    path("clusters/<slug:name>/poll", clusters.poll_now, name="cluster-poll"),
    path("clusters/<slug:name>/enabled", clusters.set_enabled, name="cluster-enabled"),
    path("clusters/<slug:name>/add", clusters.add_discovered, name="cluster-add"),
    path("clusters/<slug:name>/agent-tokens", clusters.create_agent_token, name="cluster-agent-token"),
    path("clusters/<slug:name>/agent-tokens/<int:token_id>/revoke", clusters.revoke_agent_token,
         name="cluster-agent-token-revoke"),
    path("discovery", discovery.discovery, name="discovery"),
    path("findings", findings.findings, name="findings"),
    path("findings/mute", findings.mute_finding, name="finding-mute"),
    path("updates", updates.updates, name="updates"),
    path("updates/put-off", updates.put_off_version, name="updates-put-off"),
    path("updates/freezes", updates.freeze_create, name="freeze-create"),
    path("updates/freezes/end", updates.freeze_end, name="freeze-end"),
    path("delivery", delivery.delivery, name="delivery"),
    path("pr/preview", pr.pr_preview, name="pr-preview"),
    path("pr/open", pr.pr_open, name="pr-open"),
    path("pr/opened", pr.pr_opened, name="pr-opened"),
]

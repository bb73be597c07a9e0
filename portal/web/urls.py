from django.urls import path

from portal.web.views import clusters, delivery, discovery, gitops, matrix, overview, pr, security, service, updates

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("matrix", matrix.matrix, name="matrix"),
    path("matrix/cell", matrix.matrix_cell, name="matrix-cell"),
    path("gitops", gitops.gitops_list, name="gitops"),
    path("services/<slug:name>", service.service_page, name="service"),
    path("services/<slug:name>/panels", service.service_panels, name="service-panels"),
    path("clusters", clusters.cluster_list, name="clusters"),
    path("clusters/<slug:name>/poll", clusters.poll_now, name="cluster-poll"),
    path("clusters/<slug:name>/enabled", clusters.set_enabled, name="cluster-enabled"),
    path("clusters/<slug:name>/add", clusters.add_discovered, name="cluster-add"),
    path("discovery", discovery.discovery, name="discovery"),
    path("updates", updates.updates, name="updates"),
    path("updates/put-off", updates.put_off_version, name="updates-put-off"),
    path("updates/freezes", updates.freeze_create, name="freeze-create"),
    path("updates/freezes/end", updates.freeze_end, name="freeze-end"),
    path("delivery", delivery.delivery, name="delivery"),
    path("security", security.security, name="security"),
    path("pr/preview", pr.pr_preview, name="pr-preview"),
    path("pr/open", pr.pr_open, name="pr-open"),
    path("pr/opened", pr.pr_opened, name="pr-opened"),
]

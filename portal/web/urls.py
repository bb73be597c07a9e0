from django.urls import path

from portal.delivery import views_delivery
from portal.web.views import clusters, gitops_list, matrix, overview, service, updates

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("matrix", matrix.matrix, name="matrix"),
    path("gitops", gitops_list.gitops_list, name="gitops"),
    path("services/<slug:name>", service.service_page, name="service"),
    path("services/<slug:name>/panels", service.service_panels, name="service-panels"),
    path("clusters", clusters.cluster_list, name="clusters"),
    path("clusters/<slug:name>/poll", clusters.poll_now, name="cluster-poll"),
    path("clusters/<slug:name>/enabled", clusters.set_enabled, name="cluster-enabled"),
    path("updates", updates.updates, name="updates"),
    path("delivery", views_delivery.delivery, name="delivery"),
]

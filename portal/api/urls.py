from django.urls import path, re_path

from portal.api import (
    agent_views,
    base_views,
    docs_views,
    finding_views,
    gitops_views,
    project_views,
    pull_request_views,
    security_views,
    service_views,
    workload_views,
)

# Path segments are what Kubernetes and the catalog allow; anything else falls through to a JSON 404.
urlpatterns = [
    path("v1/gitops", gitops_views.GitOpsListView.as_view(), name="api-gitops"),
    re_path(
        r"^v1/gitops/(?P<cluster>[-a-zA-Z0-9_]+)/(?P<namespace>[a-z0-9][-a-z0-9.]*)/(?P<name>[a-z0-9][-a-z0-9.]*)$",
        gitops_views.GitOpsDetailView.as_view(),
        name="api-gitops-detail",
    ),
    path("v1/findings", finding_views.FindingListView.as_view(), name="api-findings"),
    path("v1/pull-requests", pull_request_views.PullRequestListView.as_view(), name="api-pull-requests"),
    path("v1/pull-requests/<int:pk>", pull_request_views.PullRequestDetailView.as_view(),
         name="api-pull-request-detail"),
    path("v1/agents/<slug:cluster>/snapshots", agent_views.receive_snapshot, name="api-agent-snapshots"),
    path("v1/projects", project_views.ProjectListView.as_view(), name="api-projects"),
    path("v1/workloads", workload_views.WorkloadListView.as_view(), name="api-workloads"),
    path("v1/services", service_views.ServiceListView.as_view(), name="api-services"),
    path("v1/security", security_views.SecurityView.as_view(), name="api-security"),
    path("schema", docs_views.SchemaView.as_view(), name="api-schema"),
    path("docs", docs_views.api_docs, name="api-docs"),
    re_path(r"^.*$", base_views.NotFoundView.as_view(), name="api-not-found"),
]
